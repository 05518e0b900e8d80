"""`runner status`: what would run and why, in topological order (also `runner make -n`)."""

from __future__ import annotations

from collections.abc import Sequence

from . import SPEC_FILE, Command, Invocation, echo, flag, print_json, targets_argument, warn


def show_plan(
    target: str | list[str] | None, decisions: list, as_json: bool, warnings: Sequence[str] = (), agents=None
) -> None:
    """The plan; with `agents` (preflight.Preview), the agent steps' set-up and projected model calls too."""
    if as_json:
        obj = {"target": target, "steps": [d.to_json() for d in decisions], "warnings": list(warnings)}
        if agents is not None:
            obj["agent"] = agents.to_json()
        print_json(obj)
        return
    runs = [d for d in decisions if d.action == "run"]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        echo(f"{d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    which = f" (target {target})" if isinstance(target, str) else f" (targets {', '.join(target)})" if target else ""
    echo(f"{len(runs)} to run, {len(decisions) - len(runs)} up to date{which}")
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


def run(inv: Invocation, targets: tuple[str, ...], spec_file: str | None, force: bool) -> None:
    from ..pipeline import load_project, plan
    from ..stores import mirror_named

    project = load_project(inv.directory, spec_file=spec_file)
    remote = mirror_named(project.spec, mode="read")  # what make would find there too
    target, decisions, warnings, agents = plan(project, targets, force, remote=remote)
    show_plan(target, decisions, inv.as_json, warnings, agents)
    warn(warnings)
    setup_failed(project.spec.root, agents)


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
