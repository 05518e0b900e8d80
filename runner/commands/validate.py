"""`runner validate`: check the spec and report every problem at once."""

from __future__ import annotations

from ..errors import SpecError
from . import SPEC_FILE, Command, Invocation, echo, print_json, warn


def run(inv: Invocation, spec_file: str | None) -> None:
    from ..pipeline import load_project

    try:
        project = load_project(inv.directory, use_cache=False, spec_file=spec_file)
    except SpecError as exc:
        if inv.as_json:
            print_json({"ok": False, "problems": [p.to_json() for p in exc.problems]})
        raise
    from ..plan import InputFiles, unmatched_warnings

    spec, compiled = project.spec, project.compiled
    files = InputFiles(spec.root, compiled.produced)  # a glob that matches no file is a warning, not a problem
    for name in compiled.order:
        files(name, spec.intents[name])
    warnings = unmatched_warnings(spec, files.unmatched, compiled.produced)
    n = len(spec.intents)
    if inv.as_json:
        print_json({"ok": True, "intents": n, "problems": [], "warnings": warnings})
    else:
        echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems" + _warnings(warnings))
    warn(warnings)


def _warnings(warnings: list[str]) -> str:
    n = len(warnings)
    return f", {n} warning{'s' if n != 1 else ''}" if n else ""


COMMAND = Command("validate", "Check intents.toml and adapters; report every problem at once.", (SPEC_FILE,), run=run)
