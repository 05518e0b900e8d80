"""The whole run as named stages: load → graph → plan → execute → record. Each command goes as far as it needs."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from .cache import Cache, State
from .compiled import Compiled, load_compiled, save_unsaved
from .execute import Executor, RunOptions, Summary
from .freshness import StatCache, doubtful_steps, drop_proof, first_look, record_proof, snapshot_paths
from .graph import resolve_target, selected_order
from .plan import Decision, Planner, make_plan
from .record import RunRecord, prune
from .redact import Mask, mask_for_run
from .workspace import Layout, ProjectLock, find_root, recover_inflight


class Project:
    """A loaded project: where its state lives and its compiled spec."""

    def __init__(self, layout: Layout, compiled: Compiled):
        self.layout = layout
        self.compiled = compiled

    @property
    def spec(self):
        return self.compiled.spec


def load_project(directory: Path, use_cache: bool = True) -> Project:
    """Stage 1+2: the validated spec and its graph (from the warm cache when nothing changed)."""
    root = find_root(directory)
    return Project(layout=Layout(root), compiled=load_compiled(root, use_cache=use_cache))


def select(project: Project, target: str | None) -> tuple[str | None, list[str]]:
    target = resolve_target(project.spec, target)
    return target, selected_order(project.compiled.order, project.compiled.deps, target)


def planner_for(
    project: Project, force: bool = False, worker_kind: str | None = None, owner: bool = False, mask: Mask | None = None
) -> Planner:
    """owner: the caller holds the project lock, so a damaged cache database may be set aside (cache.Cache)."""
    layout = project.layout
    layout.ensure()
    return Planner(
        project.compiled,
        StatCache(layout.stat_file),
        State(layout.state_file),
        Cache(layout.cache_dir, mask=mask_for_run(project.spec) if mask is None else mask, owner=owner),
        force=force,
        worker_kind=worker_kind,
    )


def plan(project: Project, target: str | None, force: bool = False) -> tuple[str | None, list[Decision]]:
    """Stage 3: RUN or SKIP with reasons, changing nothing on disk but the stat cache."""
    target, order = select(project, target)
    planner = planner_for(project, force)
    try:
        return target, make_plan(planner, order)
    finally:
        planner.stat.save()
        planner.cache.close()


def _worker_files(planner: Planner) -> list[str]:
    """Files whose change means another worker version, which is part of every agent step's key: the no-op
    proof stats them with the spec files (a Codex upgrade is not a no-op)."""
    config = planner.worker_config
    if config.kind == "codex":
        from .workers.codex import resolve_binary

        binary, _why = resolve_binary(config)
        return [os.path.realpath(binary)] if binary else []
    if config.kind == "openai":
        import importlib.util

        found = importlib.util.find_spec("openai")
        return [found.origin] if found and found.origin else []
    return []  # replay: its format version is runner's own


def _chdir(folder: str) -> str | None:
    """Go to `folder`; the folder we left, or None if we could not say or could not go."""
    try:
        here = os.getcwd()
        os.chdir(folder)
        return here
    except OSError:
        return None


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt


class _Sink:
    """Where the executor's events go: the run log first, then the reporter (with the JSON line the log
    already made, when the reporter takes lines). `cached` reports proven steps in bulk; `flush` writes
    out both before the scheduler waits. Every event is masked here, once, for both: the JSON line is
    searched for the secrets, and only an event that held one is parsed back for a reporter of dicts."""

    def __init__(self, record: RunRecord, emit, mask: Mask):
        self.record = record
        self.emit = emit
        self.mask = mask
        self.write_line = getattr(emit, "write_line", None)

    def __call__(self, event: dict, line: str | None = None) -> None:
        if self.mask:
            line = line or json.dumps(event)
            masked = self.mask.text(line)
            if masked is not line:
                line, event = masked, json.loads(masked)
        line = self.record.emit(event, line)
        if self.write_line is not None:
            self.write_line(line)
        else:
            self.emit(event)

    def cached(self, names: list[str], lines: list[str]) -> None:
        if not lines:
            return
        text = "\n".join(lines)
        if self.mask:
            text = self.mask.text(text)
        self.record.write_lines(text)
        if self.write_line is not None:
            self.write_line(text)
        else:
            for name in names:
                self.emit({"event": "step_finished", "intent": name, "status": "cached", "reasons": ["up to date"]})

    def flush(self) -> None:
        self.record.flush()
        flush_reporter = getattr(self.emit, "flush", None)
        if flush_reporter is not None:
            flush_reporter()


def make(
    project: Project, target: str | None, options: RunOptions, emit, wait_for_lock: bool = True, on_wait=None
) -> Summary:
    """Stages 3-5 under the project lock: plan each step as it becomes ready, run it, record it."""
    layout = project.layout
    layout.ensure()
    save_unsaved(layout.root)
    lock = ProjectLock(layout, "runner make " + " ".join(sys.argv[2:]))
    lock.acquire(wait=wait_for_lock, on_wait=on_wait)
    mask = mask_for_run(project.spec)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    record = None
    try:
        recover_inflight(layout)
        recovered: list[str] = []
        if (layout.state_dir / "apply").is_dir():  # an agent step's apply that a crash cut short
            from .apply import recover as recover_applies

            recovered = recover_applies(layout.root, layout.state_dir)
        requested = target
        target = resolve_target(project.spec, target)
        planner = planner_for(project, options.force, options.worker, owner=True, mask=mask)
        record = RunRecord(layout.runs_dir)
        compiled = project.compiled
        root = str(layout.root)
        sources = compiled.sources + (_worker_files(planner) if compiled.agents else [])
        # what a no-op proof read before the lock stands only if no other runner held it meanwhile
        look = first_look(root, requested, compiled.token, sources, reuse=not lock.waited)
        order = look.order if look.order is not None else selected_order(compiled.order, compiled.deps, target)
        if look.paths is None:
            look.stat_paths(root, snapshot_paths(sources, order, compiled.declared, compiled.unprovable))
        agent_steps = not compiled.agents.isdisjoint(order)
        doubtful = (
            None
            if options.force or options.worker
            else doubtful_steps(compiled, order, look.changed, planner.state.intents())
        )

        sink = _Sink(record, emit, mask)
        for line in recovered:  # reported once the run has a record, which keeps them too
            sink({"event": "recovered", "message": line})

        started = time.monotonic()
        # steps run from the project root, as make -C runs from its folder (a plain command then needs no
        # shell to get there); the caller's folder is restored after the run
        caller_cwd = _chdir(str(layout.root))
        try:
            summary = Executor(planner, layout, record, sink, options, doubtful=doubtful, mask=mask).run(order)
        finally:
            if caller_cwd:
                _chdir(caller_cwd)
        status = (
            "interrupted"
            if summary.interrupted
            else "failed"
            if summary.failed
            else "blocked"
            if summary.blocked
            else "ok"
        )
        finished: dict[str, object] = {
            "event": "run_finished",
            "run_id": record.run_id,
            # as named on the command line, as the fast no-op (which never loads the spec) can say it too
            "target": requested,
            "status": status,
            **summary.counts,
            "duration": round(time.monotonic() - started, 3),
        }
        if status != "ok":
            finished["left"] = summary.left
        sink(finished)
        planner.state.save()
        planner.cache.close()
        if agent_steps and options.worker:
            drop_proof(root, requested)  # keys made by another worker prove nothing for a plain run
        elif status == "ok":
            record_proof(
                root,
                requested,
                compiled.token,
                len(sources),
                compiled.spec_stats,
                compiled.spec_kept,
                order,
                look,
                planner.stat,
                doubtful,
                compiled.declared_by,
                compiled.aggregates,
            )
        planner.stat.save()
        prune(layout.runs_dir)
        return summary
    finally:
        if record is not None:
            record.close()  # whatever happened: the process may end without the interpreter's teardown
        signal.signal(signal.SIGTERM, previous)
        lock.release()
