"""A run as named stages: load → lock → recover → plan (the proof, the cone) → execute → finish → record (`make`).
Each command goes as far as it needs (`plan` for status and make -n)."""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .cache import Cache, State
from .compiled import Compiled, edited_since, load_compiled, save_unsaved
from .cone import FirstLook, doubtful_steps, first_look
from .events import named, run_finished, step_cached
from .events import recovered as recovered_event
from .execute import Executor
from .graph import resolve_targets, selected_order
from .index_file import give_back_memory
from .names import typed
from .nospace import is_no_space, no_space_error, nothing_started, unwritten
from .plan import Planner, make_plan, unmatched_warnings
from .project_root import here
from .proof import Missed, drop_proof, proof_name, record_proof, snapshot_paths
from .record import RunRecord, prune
from .redact import Mask, mask_for_run
from .run_options import RunOptions
from .stat_cache import StatCache
from .summary import Summary
from .workspace import Layout, ProjectLock, locate, recover_inflight


class Project:
    """A loaded project: where its state lives, its intents file and its compiled spec."""

    def __init__(self, layout: Layout, compiled: Compiled, spec_file: str = "intents.toml", here: str = ""):
        self.layout = layout
        self.compiled = compiled
        self.spec_file = spec_file
        self.here = here  # the sub-project folder the command was typed in ("" for the root): names.typed

    def named(self, name: str) -> str:
        """One intent's name as typed where the command runs (history, show, approve...), as the spec names it:
        PATH:NAME, :NAME for the root's, a bare name here's own (or at the root, the root's, else the one
        sub-project intent of that name). What names nothing is left as typed, for the command's did-you-mean."""
        intents = self.spec.intents
        if not self.spec.subprojects or name in intents and not self.here:
            return name
        found = self.typed([name])[0]
        if found.startswith(":") and found[1:] in intents:
            return found[1:]
        if ":" not in found and found not in intents:
            claimed = [n for n in intents if n.endswith(f":{found}")]
            return claimed[0] if len(claimed) == 1 else found
        return found

    def typed(self, targets: Sequence[str] | str | None) -> list[str]:
        """The targets as typed where the command runs, as names that mean the same anywhere (names.typed)."""
        targets = [targets] if isinstance(targets, str) else list(targets or ())
        return typed(targets, self.here) if self.here and self.spec.subprojects else targets

    @property
    def spec(self):
        return self.compiled.spec


def load_project(directory: Path, use_cache: bool = True, spec_file: str | None = None) -> Project:
    """Stage 1+2: the validated spec and its graph (from the warm cache when nothing changed). `spec_file`:
    `-f FILE`, relative to `directory`; the project root is then the folder holding it."""
    root, name = locate(directory, spec_file)
    folder = here(str(root), str(directory)) if spec_file is None else ""
    return Project(Layout(root), load_compiled(root, use_cache=use_cache, spec_file=name), name, folder)


def select(project: Project, targets: Sequence[str] = ()) -> tuple[str | list[str] | None, list[str]]:
    """(the targets resolved to intents, as `named` shows them; the steps they select, in order)."""
    resolved = resolve_targets(project.spec, project.typed(targets))
    order = selected_order(project.compiled, resolved)
    return (None if resolved is None else named(resolved)), order


def planner_for(
    project: Project,
    force: bool = False,
    worker_kind: str | None = None,
    owner: bool = False,
    mask: Mask | None = None,
    remote=None,
) -> Planner:
    """owner: the caller holds the project lock, so a damaged cache database may be set aside (cache.Cache).
    remote: a shared cache behind the local one (cache.Remote, built by runner/stores)."""
    layout = project.layout
    layout.ensure()
    return Planner(
        project.compiled,
        StatCache(layout.stat_file),
        State(layout.state_file),
        Cache(layout.cache_dir, mask=mask_for_run(project.spec) if mask is None else mask, owner=owner, remote=remote),
        force=force,
        worker_kind=worker_kind,
    )


def plan(
    project: Project, targets: Sequence[str] = (), force: bool = False, worker_kind: str | None = None, remote=None
):
    """Stage 3 as `status` and `make -n` show it, changing nothing on disk but the stat cache: (the targets as
    named, RUN or SKIP with reasons, a warning for each input glob that matches no file (but for one a step's
    declared outputs could fill), and for the agent steps that would run, the worker's set-up and their
    projected model calls: preflight.Preview, None when no agent step would run). `worker_kind`: `make -n
    --worker KIND` checks the worker that run would use. `remote`: a shared cache, only read (runner/stores)."""
    from .spec import STEP_AGENT

    targets = project.typed(targets)
    resolved = resolve_targets(project.spec, targets)
    target = None if resolved is None else named(resolved)
    planner = planner_for(project, force, worker_kind, remote=remote)
    try:
        # the last good run's proof says which steps the rule must decide, as it does for `runner make`: at
        # 100,000 steps with nothing to do, deciding every one was 6 s and 400 MB
        _sources, _look, order, doubtful = _proved(
            project, planner, proof_name(targets, project.spec_file), resolved, force or bool(worker_kind)
        )
        decisions = make_plan(planner, order, doubtful)
        warnings = unmatched_warnings(project.spec, planner.input_files.unmatched, project.compiled.produced)
        agents = [d for d in decisions if d.action == "run" and project.spec.intents[d.intent].kind == STEP_AGENT]
        if not agents:
            return target, decisions, warnings, None
        from .preflight import preview

        steps = [(d.intent, planner.replay_key(d.intent, d) if d.key is not None else None) for d in agents]
        if project.spec.workers:  # sub-projects with workers of their own: each worker's checks
            from .preflight import grouped

            return target, decisions, warnings, grouped(project.spec, steps, planner.worker_config_of)
        return target, decisions, warnings, preview(project.spec, planner.worker_config, steps)
    finally:
        keep_stat_cache(planner)
        planner.cache.close()


def keep_stat_cache(planner: Planner) -> None:
    """The stat cache saved by a command that only reads (status, make -n, explain): a cache of file digests, so
    a full disk, or a file system mounted read-only, costs only speed."""
    try:
        planner.stat.save()
    except Exception as exc:
        if not is_no_space(exc) and getattr(exc, "errno", None) != errno.EROFS:
            raise


def _proved(
    project: Project,
    planner: Planner,
    requested: str | None,
    resolved: list[str] | None,
    decide_all: bool,
    missed: Missed | None = None,
    recording: bool = False,
) -> tuple[list[str], FirstLook, list[str], set[str] | None]:
    """What the last good run's proof of the target `requested` (proof_name) says now: (the files the proof
    stats before the declared ones: the compiled spec's and the worker's; the first look at the target's files;
    its steps in order; the steps the rule must decide, None for every one: freshness.doubtful_steps).
    `decide_all`: -B, or another worker's keys. `missed`: what a failed no-op proof read and took in this
    process, which stands (no other runner held the lock since). `recording`: the run records the next proof,
    from the first look, whose stats are then taken even where no proof says which steps to decide."""
    compiled = project.compiled
    root = str(project.layout.root)
    sources = compiled.sources + (_worker_files(planner) if compiled.agents else [])
    if compiled.runtimes:  # where each runtime command's program resolves (toolchain.witness)
        from .toolchain import witness

        sources += witness(root, compiled.runtimes.values())
    replaced = compiled.previous  # the compilation an edit of the spec replaced in this run, if any
    look = first_look(
        root,
        requested,
        compiled.token,
        sources,
        missed=missed,
        previous=replaced and replaced[0],
        n_spec=len(compiled.sources),
    )
    order = look.order if look.order is not None else selected_order(compiled, resolved)
    edited: set[str] = set()
    if look.paths is None and (recording or look.edited is not None):
        look.stat_paths(root, snapshot_paths(sources, order, compiled))
        if look.edited is not None:  # a proof of the compilation an edit of the spec replaced
            new = look.after_edit(root, sources, len(compiled.sources), order)
            edited = set() if new is None else new.union(edited_since(compiled, order))
    if decide_all:
        return sources, look, order, None
    return sources, look, order, doubtful_steps(compiled, order, look.changed, planner.state.intents(), edited)


def _worker_files(planner: Planner) -> list[str]:
    """Files whose change means another worker version, which is part of every agent step's key: the no-op
    proof stats them with the spec files (a Codex upgrade is not a no-op). Each worker's: the root's and those
    sub-projects declare."""
    configs = [planner.worker_config]
    configs += [planner.worker_config_of(f"{folder}:") for folder, _worker in planner.spec.workers]
    found: list[str] = []
    for config in configs:
        found += [path for path in _files_of_worker(config) if path not in found]
    return found


def _files_of_worker(config) -> list[str]:
    if config.kind == "codex":
        from .workers.codex import resolve_binary

        binary, _why = resolve_binary(config)
        return [os.path.realpath(binary)] if binary else []
    if config.kind == "openai":
        import importlib.util

        found = importlib.util.find_spec("openai")
        return [found.origin] if found and found.origin else []
    return []  # replay: its format version is runner's own


def _env_secrets(spec, compiled: Compiled, targets: list[str] | None) -> dict[str, str]:
    """What the selected steps' `env` gives a variable that holds a secret (a key-like name such as API_TOKEN,
    or one a policy lists in `secrets`) from runner's environment: masked as runner's own secrets are."""
    from .redact import looks_secret, secret_names
    from .spec import expand_env

    listed = set(secret_names(spec))
    found = {}
    for name in selected_order(compiled, targets):
        for key, value in spec.intents[name].env:
            if "$" in value and (key in listed or looks_secret(key)):
                try:
                    found[key] = expand_env(value, os.environ)
                except KeyError:
                    pass  # not set: the run stops before anything starts, and says so
    return found


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
    searched for the secrets, and only an event that held one is parsed back for a reporter of dicts. `observe`: what
    else reads each event as it is reported, masked (the run's spans, runner/telemetry.py), if anything does."""

    def __init__(self, record: RunRecord, emit, mask: Mask, observe=None):
        self.record = record
        self.emit = emit
        self.mask = mask
        self.observe = observe
        self.write_line = getattr(emit, "write_line", None)
        self.cached_steps = getattr(emit, "cached_steps", None)  # a reporter that takes proven steps by count

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
        if self.observe is not None:
            self.observe(event)

    def cached(self, names: list[str], text: str) -> None:
        """The `cached` lines of steps proven up to date (`text`: events.cached_text of their names)."""
        if not text:
            return
        if self.mask:
            text = self.mask.text(text)
        self.record.write_lines(text)
        if self.write_line is not None:
            self.write_line(text)
        elif self.cached_steps is not None:
            self.cached_steps(names)
        else:
            for name in names:
                self.emit(step_cached(name))

    def flush(self) -> None:
        self.record.flush()
        flush_reporter = getattr(self.emit, "flush", None)
        if flush_reporter is not None:
            flush_reporter()


def make(
    project: Project,
    targets: Sequence[str],
    options: RunOptions,
    emit,
    wait_for_lock: bool = True,
    on_wait=None,
    remote=None,
    *,
    stop_cluster,
    missed: Missed | None = None,
) -> Summary:
    """`runner make` under the project lock, in named stages: recover what a killed run left, plan (the proof of
    the target says which steps the rule must decide), execute (decide each step as it becomes ready, run it),
    say how it ended, and record the next proof. `remote`: a shared cache (runner/stores/mirror.py): read on a
    local miss, given the successes; its account (`finish()`) goes into run_finished. `stop_cluster`: what kills a
    killed run's tasks on a Dask cluster (executors.stop_abandoned, which the command brings:
    workspace.recover_inflight). `missed`: what the warm no-op read before it found the proof broken, in this
    process (noop.prove_target), which stands only if no other runner held the lock since."""
    targets = project.typed(targets)
    layout = project.layout
    lock = _locked(project, wait_for_lock, on_wait)
    mask = mask_for_run(project.spec)  # from here on, what any message says is masked
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    record = executor = None
    try:
        recovered = recover_killed_run(layout, stop_cluster)
        planner, resolved, mask = _planner(project, targets, options, remote, mask)
        requested = proof_name(targets, project.spec_file)  # the proof's name: as the fast no-op finds it
        sources, look, order, doubtful = _proved(
            project,
            planner,
            requested,
            resolved,
            bool(options.force or options.worker),
            missed=None if lock.waited else missed,
            recording=True,
        )
        if project.compiled.runtimes:  # a runtime command of an intent's own that fails is said before anything runs
            for name in order if doubtful is None else [n for n in order if n in doubtful]:
                planner.toolchain(name)
        record = RunRecord(layout.runs_dir)
        sink = _Sink(record, emit, mask, options.spans.watch(record.dir) if options.spans is not None else None)
        for line in recovered:  # reported once the run has a record, which keeps them too
            sink(recovered_event(line))
        executor = Executor(planner, layout, record, sink, options, doubtful=doubtful, mask=mask)
        summary, duration = _execute(executor, order, str(layout.root))
        _finish(project, planner, record, sink, summary, targets, duration, remote)
        if options.worker and not project.compiled.agents.isdisjoint(order):
            drop_proof(str(layout.root), requested)  # keys made by another worker prove nothing for a plain run
        elif _status(summary) == "ok":
            record_proof(
                str(layout.root), requested, project.compiled, len(sources), order, look, planner.stat.views, doubtful
            )
        _close(project, planner, record, summary)
        return summary
    except Exception as exc:
        # a full disk before the first step could start (the lock, the journal, the run's record) is exit 2
        error = no_space_error(exc, str(layout.root), started=executor is not None)
        if error is None:
            raise
        raise error from None
    finally:
        if record is not None:
            record.close()  # whatever happened: the process may end without the interpreter's teardown
        signal.signal(signal.SIGTERM, previous)
        lock.release()


def _locked(project: Project, wait: bool, on_wait) -> ProjectLock:
    """The project lock, the state folder made and a spec the last run left unsaved saved first; a full disk here
    is said as nothing started."""
    layout = project.layout
    lock = ProjectLock(layout, "runner make " + " ".join(sys.argv[2:]))
    with nothing_started(str(layout.root)):
        layout.ensure()
        read_back = save_unsaved(layout.root)
        if read_back is not None:  # the spec as the saved file holds it: the dicts it was made in go now
            project.compiled = read_back
            give_back_memory(len(read_back.order))
        lock.acquire(wait=wait, on_wait=on_wait)
    return lock


def recover_killed_run(layout: Layout, stop_cluster) -> list[str]:
    """What a killed run left: its processes stopped, an agent step's apply it cut short finished; the lines that
    say so. Under the project lock: every command that changes the project calls it first."""
    recovered = recover_inflight(layout, stop_cluster)
    if (layout.state_dir / "apply").is_dir():
        from .apply import recover as recover_applies

        recovered += recover_applies(layout.root, layout.state_dir)
    return recovered


def _planner(
    project: Project, targets: list[str], options: RunOptions, remote, mask: Mask
) -> tuple[Planner, list[str] | None, Mask]:
    """The planner of this run, the targets resolved to intents, and the run's mask: `mask` and the secrets the
    selected steps' `env` reads. A variable an `env` value reads that is not set is said before anything runs."""
    resolved = resolve_targets(project.spec, targets)
    compiled = project.compiled
    if compiled.env_names:
        mask = mask_for_run(project.spec, extra=_env_secrets(project.spec, compiled, resolved))
    planner = planner_for(project, options.force, options.worker, owner=True, mask=mask, remote=remote)
    planner.forced = frozenset(options.improve)
    if compiled.env_names:
        for name in selected_order(compiled, resolved):
            planner.env(name)
    return planner, resolved, mask


def _execute(executor: Executor, order: list[str], root: str):
    """The scheduler's run of `order` (and how long it took): steps run from the project root, as make -C runs
    from its folder (a plain command then needs no shell to get there); the caller's folder is restored after."""
    started = time.monotonic()
    caller_cwd = _chdir(root)
    try:
        summary = executor.run(order)
    finally:
        if caller_cwd:
            _chdir(caller_cwd)
    return summary, time.monotonic() - started


def _status(summary: Summary) -> str:
    if summary.interrupted:
        return "interrupted"
    if summary.failed or summary.no_space:
        return "failed"
    return "blocked" if summary.blocked else "ok"


def _finish(project: Project, planner: Planner, record: RunRecord, sink, summary: Summary, targets, duration, remote):
    """Say how the run ended: the last good results saved first (a full disk that refuses them fails the run),
    the candidate patterns observed, then run_finished."""
    layout = project.layout
    summary.no_space = summary.no_space or unwritten(planner.state.save, layout.state_file)
    status = _status(summary)
    if summary.observed:  # candidate patterns beside the active ones, for the learning loop's gate
        from .shadow import observe

        observe(project.spec, record.dir, summary.observed, sink.mask)
    # the targets as named on the command line, as the fast no-op (which never loads the spec) says them too
    more: dict = {}
    if status != "ok":
        more["left"] = summary.left
    if summary.drift:
        more["drift"] = summary.drift
    if planner.cache.refused:  # records naming what their steps may not write (runner/confine.py)
        more["refused"] = sorted({intent for intent, _why in planner.cache.refused.values()})
    if summary.uncached:  # their inputs changed while they ran: nothing of theirs was cached
        more["inputs_changed"] = summary.uncached
    if remote is not None:  # the uploads are waited for (bounded) so the account is whole
        summary.remote = more["remote"] = remote.finish()
    sink(
        run_finished(record.run_id, targets, status, summary.counts, duration, summary.attempts, summary.usage, **more)
    )
    planner.cache.close()


def _close(project: Project, planner: Planner, record: RunRecord, summary: Summary) -> None:
    """The stat cache saved, old runs pruned, the warnings of the spec as the run found it, the record closed."""
    layout = project.layout
    summary.no_space = summary.no_space or unwritten(planner.stat.save, layout.stat_file)
    prune(layout.runs_dir)
    summary.warnings = unmatched_warnings(project.spec, planner.input_files.unmatched)
    record.close()
    summary.no_space = summary.no_space or record.unwritten
