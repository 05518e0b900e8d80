"""`runner status`: what would run and why, in topological order (also `runner make -n`)."""

from __future__ import annotations

from . import Command, Invocation, argument, echo, flag, print_json


def show_plan(target: str | None, decisions: list, as_json: bool, agents=None) -> None:
    """The plan; with `agents` (preflight.Preview), the agent steps' set-up and projected model calls too."""
    if as_json:
        obj = {"target": target, "steps": [d.to_json() for d in decisions]}
        if agents is not None:
            obj["agent"] = agents.to_json()
        print_json(obj)
        return
    runs = [d for d in decisions if d.action == "run"]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        echo(f"{d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    echo(f"{len(runs)} to run, {len(decisions) - len(runs)} up to date" + (f" (target {target})" if target else ""))
    if agents is not None:
        from ..preflight import render

        for line in render(agents):
            echo(line)


def setup_failed(root, agents) -> None:
    """After the plan is shown: an agent step that would run cannot start, so exit 2 now rather than at its
    first model call."""
    if agents is not None and not agents.ok:
        from ..errors import SetupNotReady
        from ..preflight import problems

        raise SetupNotReady(agents.worker, problems(root, agents.checks))


def run(inv: Invocation, target: str | None, force: bool) -> None:
    from ..pipeline import load_project, plan_agents

    project = load_project(inv.directory)
    target, decisions, agents = plan_agents(project, target, force)
    show_plan(target, decisions, inv.as_json, agents)
    setup_failed(project.spec.root, agents)


COMMAND = Command(
    "status",
    "What would run and why, in topological order.",
    (
        argument("target", required=False),
        flag("-B", "--always-make", dest="force", help="Plan as if every step must run."),
    ),
    run,
)
