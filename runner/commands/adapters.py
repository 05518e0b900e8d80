"""`runner adapters`: the toolchains detected here, with confidence, evidence and the commands as they would run."""

from __future__ import annotations

from pathlib import Path

from ..adapters import detect, resolve
from ..load import load_project_adapters
from . import Command, Invocation, echo, print_json


def adapters_report(root: Path) -> tuple[str, dict]:
    """The toolchains detected in root, surest first, with the evidence and the commands as they would run."""
    root = Path(root)
    adapters = load_project_adapters(root)
    found = detect(root, adapters)
    detected = []
    lines = []
    for d in found:
        res = resolve(adapters[d.adapter], root, adapters, variants=d.variants)
        cmds = {n: {"run": c.run, "parse": list(c.parse)} for n, c in res.commands.items()}
        detected.append({**d.to_json(), "source": adapters[d.adapter].source, "commands": cmds})
        lines.append(f"{d.adapter} (confidence {d.confidence:.2f}" + (f", variant {d.variant})" if d.variant else ")"))
        lines += [f"  because {e}" for e in d.evidence]
        width = max(len(n) for n in cmds)
        lines += [
            f"  {n:<{width}}  {c['run']}" + (f"   [parsed by {', '.join(c['parse'])}]" if c["parse"] else "")
            for n, c in cmds.items()
        ]
    missing = sorted(set(adapters) - {d.adapter for d in found})
    if not found:
        lines.append(f"no toolchain detected in {root.resolve()}; known adapters: {', '.join(sorted(adapters))}")
    elif missing:
        lines.append(f"not detected: {', '.join(missing)}")
    obj = {
        "root": str(root.resolve()),
        "detected": detected,
        "adapters": {
            n: {
                "source": a.source,
                "detected": n not in missing,
                "markers": list(a.markers),
                "confidence": a.confidence,
                "variants": [v.name for v in a.variants],
            }
            for n, a in sorted(adapters.items())
        },
    }
    return "\n".join(lines), obj


def run(inv: Invocation) -> None:
    from ..workspace import find_root

    text, obj = adapters_report(find_root(inv.directory))
    if inv.as_json:
        print_json(obj)
    else:
        echo(text)


COMMAND = Command(
    "adapters", "The toolchains detected here, with confidence, evidence and the commands as they would run.", run=run
)
