"""Deciding the verified changes that wait for approval: what `runner approve` and `runner serve`'s Approve and
Reject buttons do, one code path."""

from __future__ import annotations

from .errors import UsageError


def decide(directory, spec_file: str | None, intents: tuple[str, ...], reject: bool) -> list[dict] | None:
    """Apply (or reject) the waiting changes of `intents` (none: every one), under the project lock: what `runner
    approve` and the Approve and Reject buttons of `runner serve` do, one code path. None: nothing waits."""
    from .apply import load_pending
    from .approve import approve as approve_pending
    from .approve import grant
    from .pipeline import load_project, planner_for
    from .record import new_run_id
    from .suggest import did_you_mean
    from .workspace import ProjectLock

    project = load_project(directory, spec_file=spec_file)
    layout = project.layout
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
