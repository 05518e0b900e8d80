"""`runner validate`: check the spec and report every problem at once."""

from __future__ import annotations

from ..errors import SetupNotReady, SpecError
from . import SPEC_FILE, Command, Invocation, echo, flag, print_json, warn


def run(inv: Invocation, spec_file: str | None, strict_agents: bool = False) -> None:
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
    ready = agents is None or agents.ok
    # the agent set-up is the machine's, not the spec's: a warning (shell steps run without it; `runner make`
    # checks it for the agent steps it selects), a failure with --agents
    ok = ready or not strict_agents
    set_up = None
    if agents and not ready:
        set_up = SetupNotReady(agents.worker, problems(spec.root, agents.checks, agents.files))
    if set_up is not None and not strict_agents:
        warnings = [*warnings, _setup_warning(set_up)]
    if inv.as_json:
        obj: dict = {"ok": ok, "intents": n, "problems": [], "warnings": warnings}
        if agents is not None:
            if strict_agents:
                obj["problems"] = [p.to_json() for p in problems(spec.root, agents.checks, agents.files)]
            obj["agent"] = agents.to_json()
        print_json(obj)
        if set_up is not None:
            set_up.answered_in_json = True  # the document above lists the problems: no second one after it
    else:
        spec_ok = "" if ok else " in the spec"
        echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems{spec_ok}" + _warnings(warnings))
        for line in render(agents) if agents is not None else []:
            echo(line)
    warn(warnings)
    if set_up is not None and strict_agents:
        raise set_up


def _setup_warning(set_up: SetupNotReady) -> str:
    """The set-up problems as one warning: what `runner make` of an agent step would stop on (exit 2)."""
    lines = ("warning: " + set_up.render().removeprefix("error: ")).splitlines()
    lines[0] += " (its agent steps would stop at their first call; `runner validate --agents` fails on this)"
    return "\n".join(lines)


def _agents(spec):
    """The agent steps' set-up (the worker they use, checked without calling a model) and their cost; None for a
    spec without agent steps. Keys are not known without a plan: the replay worker looks for any recording."""
    from ..preflight import preview
    from ..spec import STEP_AGENT
    from ..workers import config_for

    names = [name for name, intent in spec.intents.items() if intent.kind == STEP_AGENT]
    if not names:
        return None
    if spec.workers:  # sub-projects with workers of their own: each worker's checks
        from ..preflight import grouped

        return grouped(spec, [(name, None) for name in names], lambda name: config_for(spec, None, name))
    return preview(spec, config_for(spec), [(name, None) for name in names])


def _warnings(warnings: list[str]) -> str:
    n = len(warnings)
    return f", {n} warning{'s' if n != 1 else ''}" if n else ""


COMMAND = Command(
    "validate",
    "Check intents.toml and adapters; report every problem at once.",
    (
        SPEC_FILE,
        flag(
            "--agents",
            dest="strict_agents",
            help="Fail (exit 2) when the agent set-up cannot start the agent steps, not only warn.",
        ),
    ),
    run=run,
)
