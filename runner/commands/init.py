"""`runner init`: detect the project's toolchains and write a starting intents.toml, never over an existing one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..adapters import Detection, detect
from ..errors import InternalError, SpecError, UsageError
from ..load import load_project_adapters
from ..spec import Adapter
from . import Command, Invocation, echo, flag, print_json

SPEC_FILE = "intents.toml"
EXAMPLE_PROMPT = "write-tests"
EXAMPLE_INTENT = "write-tests"
# where each toolchain keeps its tests: the example agent step's outputs (an agent step needs outputs)
TEST_FILES = {
    "python": "tests/**/*.py",
    "node": "tests/**",
    "go": "**/*_test.go",
    "rust": "tests/**/*.rs",
    "maven": "src/test/**",
    "gradle": "src/test/**",
}


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _list(values) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _inputs(root: Path, adapter: Adapter) -> list[str]:
    """The adapter's input globs that match something here (all of them when none does yet)."""
    matching = [g for g in adapter.inputs if next(iter(root.glob(g)), None) is not None] if adapter.inputs else []
    return matching or list(adapter.inputs)


def _step(name: str, adapter: Adapter, command: str, d: Detection, inputs: list[str]) -> list[str]:
    cmd = adapter.command(command, d.variants)
    line = cmd.run if cmd is not None else command
    return [
        f"[intent.{name}]",
        f"description = {_q(f'{command} with the {adapter.name} adapter: {line}')}",
        f"adapter = {_q(adapter.name)}",
        f"run = {_q(command)}",
        f"inputs = {_list(inputs)}",
        "",
    ]


def render(
    root: Path, found: list[Detection], adapters: dict[str, Adapter], agent: bool = True, agent_note: str = ""
) -> tuple[str, list[str]]:
    """The intents.toml text and the names of the (uncommented) intents in it."""
    root = Path(root)
    head = [
        "# Written by `runner init`. Edit freely: `runner validate` checks it, `runner make` runs the default.",
        "# Detected: "
        + (
            "; ".join(
                f"{d.adapter} (confidence {d.confidence:.2f}" + (f", variant {d.variant}" if d.variant else "") + ")"
                for d in found
            )
            or "no toolchain"
        ),
        "",
        "[project]",
        f"name = {_q(root.resolve().name or 'project')}",
        'default = "check"',
        "",
    ]
    body: list[str] = []
    names: list[str] = []
    checks: dict[str, list[str]] = {"lint": [], "test": []}
    usable = [d for d in found if adapters[d.adapter].command("test", d.variants)]
    single = len(usable) == 1
    for d in usable:
        adapter = adapters[d.adapter]
        inputs = _inputs(root, adapter)
        for command in ("lint", "test"):
            if adapter.command(command, d.variants) is None:
                continue
            name = command if single else f"{command}-{adapter.name}"
            body += _step(name, adapter, command, d, inputs)
            names.append(name)
            if not single:
                checks[command].append(name)
    for command, parts in checks.items():
        if parts:
            body += [f"[intent.{command}]", f"deps = {_list(parts)}", ""]
            names.append(command)
    if not usable:
        body += [
            "# No toolchain was detected (see `runner adapters`): replace this with the project's checks.",
            "[intent.check]",
            "run = \"echo 'runner init found no toolchain: edit intents.toml'\"",
            "",
        ]
        names.append("check")
    else:
        parts = [n for n in ("lint", "test") if n in names]
        body += ["[intent.check]", 'description = "Everything CI checks"', f"deps = {_list(parts)}", ""]
        names.append("check")
        first = usable[0]
        example = _agent_example(root, adapters[first.adapter], first)
        if agent:
            body += example
            names.append(EXAMPLE_INTENT)
        else:
            body += [f"# {agent_note}" if agent_note else "#"]
            body += ["# " + line if line else "" for line in example]
    return "\n".join(head + body).rstrip("\n") + "\n", names


def _agent_example(root: Path, adapter: Adapter, d: Detection) -> list[str]:
    return [
        "# An agent step: Codex writes tests in an isolated copy of the project; the adapter's test command",
        "# verifies them before anything is applied. Not part of `check`: run it with `runner make write-tests`.",
        f"[intent.{EXAMPLE_INTENT}]",
        'goal = "Write tests for the least-tested module of this project, covering edge cases and malformed input"',
        'acceptance = ["all tests pass", "no existing test is changed"]',
        f"prompt = {_q(EXAMPLE_PROMPT)}",
        f"adapter = {_q(adapter.name)}",
        f"inputs = {_list(_inputs(root, adapter))}",
        f"outputs = {_list([TEST_FILES.get(adapter.name, 'tests/**')])}  # what it may write; cached, restored",
        'verify = ["test"]',
        'deps = ["test"]' if adapter.command("test", d.variants) else "",
        "",
    ]


def _validate_text(root: Path, text: str) -> SpecError | None:
    """Load `text` as this project's intents.toml in a scratch folder (beside the project's adapters and prompts)."""
    from ..load import load_spec

    with tempfile.TemporaryDirectory(prefix="runner-init-") as tmp:
        scratch = Path(tmp) / (root.resolve().name or "project")
        scratch.mkdir()
        for folder in ("adapters", "prompts", "regexes"):
            if (root / folder).is_dir():
                os.symlink((root / folder).resolve(), scratch / folder)
        (scratch / SPEC_FILE).write_text(text, encoding="utf-8")
        try:
            load_spec(scratch)
        except SpecError as exc:
            return exc
    return None


def init_project(root: Path, dry_run: bool = False) -> tuple[str, dict]:
    """Write root/intents.toml from what is detected; refuse (exit 2) when one exists. Returns (text, JSON)."""
    root = Path(root)
    target = root / SPEC_FILE
    if target.exists():
        raise UsageError(
            f"{target} already exists; runner init never overwrites it. Edit it, or move it away "
            "and run `runner init` again (`runner init --dry-run` prints what it would write)."
        )
    adapters = load_project_adapters(root)
    found = detect(root, adapters)
    text, names = render(root, found, adapters)
    note = ""
    if EXAMPLE_INTENT in names:
        error = _validate_text(root, text)
        if error is not None:
            why = "; ".join(p.message for p in error.problems)
            note = f"commented out: it does not validate here yet ({why})"
            text, names = render(root, found, adapters, agent=False, agent_note=note)
    error = _validate_text(root, text)
    if error is not None:  # a bug in init, not the user's mistake: say so rather than write a broken file
        raise InternalError("runner init produced an intents.toml that does not validate:\n" + error.render())
    if not dry_run:
        try:
            with open(target, "x", encoding="utf-8") as fh:  # "x": a file that appeared meanwhile is not clobbered
                fh.write(text)
        except FileExistsError:
            raise UsageError(f"{target} already exists; runner init never overwrites it") from None
    what = ", ".join(f"{d.adapter}" + (f" ({d.variant})" if d.variant else "") for d in found) or "no toolchain"
    verb = "would write" if dry_run else "wrote"
    lines = [f"{verb} {target} ({what} detected): intents {', '.join(names)}"]
    if note:
        lines.append(f"the example agent intent '{EXAMPLE_INTENT}' is {note}")
    if dry_run:
        lines += ["", text.rstrip("\n")]
    obj = {
        "path": str(target),
        "written": not dry_run,
        "detected": [d.to_json() for d in found],
        "intents": names,
        "agent_example": EXAMPLE_INTENT in names,
        "note": note or None,
        "content": text,
    }
    return "\n".join(lines), obj


def run(inv: Invocation, dry_run: bool) -> None:
    text, obj = init_project(inv.directory.resolve(), dry_run=dry_run)
    if inv.as_json:
        print_json(obj)
    else:
        echo(text)


COMMAND = Command(
    "init",
    "Detect the toolchains here and write a starting intents.toml (never overwrites one).",
    (flag("--dry-run", dest="dry_run", help="Print the intents.toml it would write; write nothing."),),
    run,
)
