"""`runner status`: what would run and why, in topological order (also `runner make -n`)."""

from __future__ import annotations

from collections.abc import Sequence

from . import AFFECTED, SPEC_FILE, Command, Invocation, echo, flag, print_json, targets_argument, warn


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
    waits = [d for d in decisions if d.action == "run" and d.reasons[:1] and d.reasons[0].startswith(WAITING)]
    runs = [d for d in decisions if d.action == "run" and d not in waits]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        echo(f"{'wait' if d in waits else d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    which = f" (target {target})" if isinstance(target, str) else f" (targets {', '.join(target)})" if target else ""
    waiting = f"{len(waits)} waiting for approval, " if waits else ""
    echo(f"{len(runs)} to run, {waiting}{len(decisions) - len(runs) - len(waits)} up to date{which}")
    if agents is not None:
        from ..preflight import render

        for line in render(agents):
            echo(line)


WAITING = "waiting for approval"


def mark_waiting(state_dir, decisions: list, agents):
    """A step whose verified change waits for approval under the key it would run with says so (`runner make`
    waits for `runner approve`, it calls no model): its reason, and it leaves the agent preview."""
    from ..waiting import reason, waiting

    names = waiting(state_dir, decisions)
    if not names:
        return agents
    for d in decisions:
        if d.intent in names:
            d.reasons = [reason(d.intent)]
    if agents is None:
        return None
    steps = [s for s in agents.steps if s["intent"] not in names]
    if not steps:
        return None
    attempts = agents.run_budget.get("attempts") if agents.run_budget else None
    calls = sum(s["calls"] for s in steps)
    return agents._replace(steps=steps, calls=calls if attempts is None else min(calls, attempts))


def setup_failed(root, agents) -> None:
    """After the plan is shown: an agent step that would run cannot start, so exit 2 now rather than at its
    first model call."""
    if agents is not None and not agents.ok:
        from ..errors import SetupNotReady
        from ..preflight import problems

        raise SetupNotReady(agents.worker, problems(root, agents.checks, agents.files))


def affected_since(project, targets: Sequence[str], base: str):
    """`--affected BASE`: which of the steps `targets` select a change since BASE affects (runner/affected.py)."""
    from ..affected import affected
    from ..graph import resolve_targets, selected_order

    order = selected_order(project.compiled, resolve_targets(project.spec, project.typed(targets)))
    return affected(project.spec, order, base)


def run(
    inv: Invocation, targets: tuple[str, ...], spec_file: str | None, force: bool, affected: str | None = None
) -> None:
    from ..pipeline import load_project, plan
    from ..stores import mirror_named

    project = load_project(inv.directory, spec_file=spec_file)
    if affected is not None:  # what a pull request's CI would build, and why each intent is in or out
        found = affected_since(project, targets, affected)
        if inv.as_json:
            print_json(found.to_json())
        else:
            for line in found.lines():
                echo(line)
        return
    remote = mirror_named(project.spec, mode="read")  # what make would find there too
    target, decisions, warnings, agents = plan(project, targets, force, remote=remote)
    agents = mark_waiting(project.layout.state_dir, decisions, agents)
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
        AFFECTED,
    ),
    run,
)
