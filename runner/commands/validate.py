"""`runner validate`: check the spec and report every problem at once."""

from __future__ import annotations

from ..errors import SetupNotReady, SpecError
from . import Command, Invocation, echo, print_json


def run(inv: Invocation) -> None:
    from ..pipeline import load_project
    from ..preflight import problems, render

    try:
        project = load_project(inv.directory, use_cache=False)
    except SpecError as exc:
        if inv.as_json:
            print_json({"ok": False, "problems": [p.to_json() for p in exc.problems]})
        raise
    spec = project.spec
    n = len(spec.intents)
    agents = _agents(spec)
    ok = agents is None or agents.ok
    if inv.as_json:
        obj: dict = {"ok": ok, "intents": n, "problems": []}
        if agents is not None:
            obj["problems"] = [p.to_json() for p in problems(spec.root, agents.checks)]
            obj["agent"] = agents.to_json()
        print_json(obj)
    else:
        echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems" + ("" if ok else " in the spec"))
        for line in render(agents) if agents is not None else []:
            echo(line)
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


COMMAND = Command("validate", "Check intents.toml and adapters; report every problem at once.", run=run)
