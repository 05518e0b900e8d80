"""`runner validate`: check the spec and report every problem at once."""

from __future__ import annotations

from ..errors import SpecError
from . import Command, Invocation, echo, print_json


def run(inv: Invocation) -> None:
    from ..pipeline import load_project

    try:
        project = load_project(inv.directory, use_cache=False)
    except SpecError as exc:
        if inv.as_json:
            print_json({"ok": False, "problems": [p.to_json() for p in exc.problems]})
            exc.answered_in_json = True
        raise
    n = len(project.spec.intents)
    if inv.as_json:
        print_json({"ok": True, "intents": n, "problems": []})
    else:
        echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems")


COMMAND = Command("validate", "Check intents.toml and adapters; report every problem at once.", run=run)
