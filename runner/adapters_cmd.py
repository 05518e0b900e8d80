"""What `runner adapters` and `runner parse` print: functions returning (text, JSON object); click stays in cli.py."""

from __future__ import annotations

import sys
from pathlib import Path

from .adapters import Resolved, detect, resolve
from .errors import UsageError, UserError
from .load import load_project_adapters


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


def read_log(source: str | Path) -> str:
    """A saved log, or stdin for '-'; undecodable bytes become U+FFFD rather than an error."""
    if str(source) == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace")
    path = Path(source)
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise UsageError(f"no such log file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder: give a log file, or '-' for stdin") from None


def _library(root: Path):
    from .parse import builtin_dir, load_library

    return load_library([builtin_dir(), Path(root) / "regexes"])


def families_for(
    root: Path,
    adapter: str | None = None,
    command: str | None = None,
    families: tuple[str, ...] = (),
    variants: tuple[str, ...] | None = None,
) -> tuple[list[str], str]:
    """The family names to parse with, and where they came from (for the report)."""
    if families and (adapter or command):
        raise UsageError("give either --family or --adapter/--command, not both")
    if families:
        return list(families), "--family"
    if not adapter or not command:
        raise UsageError(
            "say how to parse the log: --adapter NAME --command CMD (e.g. --adapter python "
            "--command test), or --family FAMILY"
        )
    res: Resolved = resolve(adapter, root, load_project_adapters(root), variants=variants)
    cmd = res.command(command)
    if not cmd.parse:
        raise UsageError(
            f"command '{command}' of adapter '{res.adapter.name}' names no regex family "
            "(parse = [...]); use --family FAMILY"
        )
    flavour = f" ({'+'.join(res.variants)})" if res.variants else ""
    return list(cmd.parse), f"adapter {res.adapter.name}{flavour}, command {command}: {cmd.run}"


def parse_report(
    root: Path,
    text: str | None = None,
    adapter: str | None = None,
    command: str | None = None,
    families: tuple[str, ...] = (),
    variants: tuple[str, ...] | None = None,
    source: str | Path | None = None,
) -> tuple[str, dict]:
    """The regex library's findings for a log (its text, or its file or '-' as `source`): what the runner understood.

    The options are checked before the log is read, so a wrong --adapter is reported as such even when reading
    stdin would block.
    """
    from .parse import parse_findings, render_findings

    names, origin = families_for(root, adapter, command, families, variants)
    if text is None:
        text = read_log("-" if source is None else source)
    library = _library(root)
    try:
        chosen = [library.family(n) for n in names]
    except UserError as exc:  # an unknown family is a usage mistake here, with parse.py's did-you-mean
        raise UsageError(str(exc)) from None
    findings = parse_findings(text, chosen)
    head = f"parsed with {', '.join(names)} ({origin})"
    return head + "\n" + render_findings(findings), findings.to_json()
