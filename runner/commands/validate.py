"""`runner validate`: check the spec and report every problem at once."""

from __future__ import annotations

from ..errors import SetupNotReady, SpecError
from . import SPEC_FILE, Command, Invocation, echo, print_json, warn


def run(inv: Invocation, spec_file: str | None) -> None:
    from ..pipeline import load_project
    from ..preflight import problems, render

    try:
        project = load_project(inv.directory, use_cache=False, spec_file=spec_file)
    except SpecError as exc:
        if inv.as_json:
            print_json({"ok": False, "problems": [p.to_json() for p in exc.problems]})
            exc.answered_in_json = True
        raise
    from ..plan import InputFiles, unmatched_warnings

    spec, compiled = project.spec, project.compiled
    files = InputFiles(spec.root, compiled.produced)  # a glob that matches no file is a warning, not a problem
    for name in compiled.order:
        files(name, spec.intents[name])
    warnings = unmatched_warnings(spec, files.unmatched, compiled.produced)
    n = len(spec.intents)
    agents = _agents(spec)
    ok = agents is None or agents.ok
    if inv.as_json:
        obj: dict = {"ok": ok, "intents": n, "problems": [], "warnings": warnings}
        if agents is not None:
            obj["problems"] = [p.to_json() for p in problems(spec.root, agents.checks)]
            obj["agent"] = agents.to_json()
        print_json(obj)
    else:
        spec_ok = "" if ok else " in the spec"
        echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems{spec_ok}" + _warnings(warnings))
        for line in render(agents) if agents is not None else []:
            echo(line)
    warn(warnings)
    if not ok:
        assert agents is not None
        raise SetupNotReady(agents.worker, problems(spec.root, agents.checks))


def _agents(spec):
    """The agent steps' set-up (the worker they use, checked without calling a model) and their cost; None for a
    spec without agent steps. Keys are not known without a plan: the replay worker looks for any recording."""
    from ..preflight import preview
    from ..spec import STEP_AGENT
    from ..workers import config_for

    names = [name for name, intent in spec.intents.items() if intent.kind == STEP_AGENT]
    if not names:
        return None
    return preview(spec, config_for(spec), [(name, None) for name in names])


def _warnings(warnings: list[str]) -> str:
    n = len(warnings)
    return f", {n} warning{'s' if n != 1 else ''}" if n else ""


COMMAND = Command("validate", "Check intents.toml and adapters; report every problem at once.", (SPEC_FILE,), run=run)
