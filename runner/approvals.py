"""Deciding the verified changes that wait for approval: what `runner approve` and `runner serve`'s Approve and
Reject buttons do, one code path."""

from __future__ import annotations

from collections.abc import Callable

from .errors import UsageError


def decide(
    directory,
    spec_file: str | None,
    intents: tuple[str, ...],
    reject: bool,
    stop_cluster: Callable[[str, str], str | None] | None = None,
    say: Callable[[str], object] | None = None,
) -> list[dict] | None:
    """Apply (or reject) the waiting changes of `intents` (none: every one), under the project lock: what `runner
    approve` and the Approve and Reject buttons of `runner serve` do, one code path. None: nothing waits. What a
    killed run left (a killed approve's apply too) is finished first, each line of it given to `say`;
    `stop_cluster`: what kills a killed run's tasks on a Dask cluster (executors.stop_abandoned, which the core
    does not import)."""
    from .apply import load_pending
    from .approve import approve as approve_pending
    from .approve import grant
    from .pipeline import load_project, planner_for, recover_killed_run
    from .record import new_run_id
    from .suggest import did_you_mean
    from .workspace import ProjectLock

    project = load_project(directory, spec_file=spec_file)
    intents = tuple(project.named(name) for name in intents) if intents else intents
    layout = project.layout
    if layout.state_dir.is_dir():  # a killed run's apply (a killed approve's too) finished before anything is read
        with ProjectLock(layout, "runner approve"):
            for message in recover_killed_run(layout, stop_cluster or (lambda _address, _token: None)):
                if say is not None:
                    say(message)
    pending = load_pending(layout.state_dir)
    agents = {n for n, i in project.spec.intents.items() if i.kind == "agent"}
    granted = []
    for name in intents:
        if name in pending:
            continue
        if name not in agents:
            raise UsageError(
                f"error: '{name}' is not an agent step{did_you_mean(name, agents)}; "
                f"changes waiting: {', '.join(sorted(pending)) or 'none'}"
            )
        grant(layout.state_dir, name)  # nothing computed yet: allow its next run to call the model
        granted.append({"intent": name, "action": "allowed", "files": []})
    intents = tuple(n for n in intents if n in pending)
    if granted and not intents:
        return granted
    if not pending:
        return None
    with ProjectLock(layout, "runner approve"):
        planner = planner_for(project, owner=True)
        done = granted + approve_pending(planner, layout.state_dir, list(intents) or None, reject, new_run_id())
        planner.stat.save()
        planner.cache.close()
    return done
