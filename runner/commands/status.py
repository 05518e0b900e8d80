"""`runner status`: what would run and why, in topological order (also `runner make -n`)."""

from __future__ import annotations

from collections.abc import Sequence

from . import SPEC_FILE, Command, Invocation, echo, flag, print_json, targets_argument, warn


def show_plan(target: str | list[str] | None, decisions: list, as_json: bool, warnings: Sequence[str] = ()) -> None:
    if as_json:
        print_json({"target": target, "steps": [d.to_json() for d in decisions], "warnings": list(warnings)})
        return
    runs = [d for d in decisions if d.action == "run"]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        echo(f"{d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    which = f" (target {target})" if isinstance(target, str) else f" (targets {', '.join(target)})" if target else ""
    echo(f"{len(runs)} to run, {len(decisions) - len(runs)} up to date{which}")


def run(inv: Invocation, targets: tuple[str, ...], spec_file: str | None, force: bool) -> None:
    from ..pipeline import load_project, plan

    target, decisions, warnings = plan(load_project(inv.directory, spec_file=spec_file), targets, force)
    show_plan(target, decisions, inv.as_json, warnings)
    warn(warnings)


COMMAND = Command(
    "status",
    "What would run and why, in topological order.",
    (
        targets_argument(),
        SPEC_FILE,
        flag("-B", "--always-make", dest="force", help="Plan as if every step must run."),
    ),
    run,
)
