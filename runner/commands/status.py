"""`runner status`: what would run and why, in topological order (also `runner make -n`)."""

from __future__ import annotations

from . import Command, Invocation, argument, echo, flag, print_json


def show_plan(target: str | None, decisions: list, as_json: bool) -> None:
    if as_json:
        print_json({"target": target, "steps": [d.to_json() for d in decisions]})
        return
    runs = [d for d in decisions if d.action == "run"]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        echo(f"{d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    echo(f"{len(runs)} to run, {len(decisions) - len(runs)} up to date" + (f" (target {target})" if target else ""))


def run(inv: Invocation, target: str | None, force: bool) -> None:
    from ..pipeline import load_project, plan

    target, decisions = plan(load_project(inv.directory), target, force)
    show_plan(target, decisions, inv.as_json)


COMMAND = Command(
    "status",
    "What would run and why, in topological order.",
    (
        argument("target", required=False),
        flag("-B", "--always-make", dest="force", help="Plan as if every step must run."),
    ),
    run,
)
