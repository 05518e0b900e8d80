"""`runner make`: bring targets up to date. `make` is shared by the command line and by the console script's
plain path, which starts a plain `runner make --json` (or one not at a terminal) without click."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..errors import EXIT_BLOCKED, EXIT_INTERRUPTED, EXIT_OK, EXIT_STEP_FAILED, SetupError, UsageError
from ..spec import MAX_TIMEOUT
from . import AFFECTED, SPEC_FILE, Command, Invocation, echo, flag, option, targets_argument, warn


def make(
    directory: Path,
    targets: list[str] | tuple[str, ...] = (),
    spec_file: str | None = None,
    jobs: int | None = None,
    keep_going: bool = False,
    force: bool = False,
    timeout: float | None = None,
    no_wait: bool = False,
    verbose: bool = False,
    record: bool = False,
    worker: str | None = None,
    halt_on: frozenset = frozenset(),
    as_json: bool = False,
    ask=None,
    on_wait=None,
    improve: dict[str, dict] | None = None,
    sync_roadmap: bool = False,
    remote: str | None = None,
    remote_mode: str | None = None,
    executor: str | None = None,
    hermetic: bool = False,
    missed=None,
) -> int:
    """Bring `targets` (intents or declared output paths; none: the default) up to date; the exit code says how
    it went. `ask(question, detail)` asks a human. `remote`, `remote_mode`: the shared cache (runner/stores),
    over RUNNER_REMOTE_CACHE and `[cache]`. `executor`: --executor (local, dask://HOST:PORT). `hermetic`:
    --hermetic, steps on the cluster see only their declared inputs (runner/executors/hermetic.py). `missed`:
    what the warm no-op read before it found the proof broken (proof.Missed), for the pipeline to stand on."""
    from ..execute import RunOptions
    from ..executors import build, stop_abandoned
    from ..pipeline import load_project
    from ..pipeline import make as run_pipeline
    from ..report import make_reporter
    from ..telemetry import live
    from ..workspace import is_terminal

    project = load_project(directory, spec_file=spec_file)
    from ..stores import mirror_named

    mirror = mirror_named(project.spec, remote, remote_mode)
    # connected before anything starts: an unreachable cluster is said first
    runs_on = build(project.spec, executor, hermetic, mirror, lambda: _selected(project, targets), worker)
    options = RunOptions(
        jobs=jobs or runs_on.slots() or os.cpu_count() or 1,  # on a cluster: steps in flight there
        keep_going=keep_going,
        force=force,
        timeout=timeout,
        record=record,
        halt_on=halt_on,
        ask=ask,
        worker=worker,
        improve=improve,
        executor=runs_on,
        # the spans leave as each step ends, to the collector the environment or [telemetry] names, if any
        spans=live(project.spec.project.name or project.layout.root.name, project.spec.telemetry.endpoint),
    )
    reporter = make_reporter(as_json, verbose, terminal=is_terminal(sys.stdout) and is_terminal(sys.stderr))
    if verbose and not as_json:  # JSON lines hold events only: a step's output stays in its log
        options.on_output = reporter.output
    if ask is not None and hasattr(reporter, "asking"):
        options.ask = reporter.asking(ask)
    try:
        summary = run_pipeline(
            project,
            targets,
            options,
            reporter,
            wait_for_lock=not no_wait,
            on_wait=on_wait or _say_waiting,
            remote=mirror,
            stop_cluster=stop_abandoned,
            missed=missed,
        )
    finally:
        reporter.close()
        runs_on.close()
        if options.spans is not None:  # what finished is sent even when the run stopped short
            options.spans.close()
    warn(summary.warnings)
    if sync_roadmap and not summary.interrupted:  # what completed before a set-up failure completed too
        _sync_roadmap(project, targets, summary, as_json)
    if summary.interrupted:
        return EXIT_INTERRUPTED
    if summary.setup_error:
        error = SetupError(summary.setup_error)
        error.answered_in_json = True  # the run started: its run_finished is the last line, as for any run
        raise error
    if summary.no_space:  # a file of the runner's own, outside any step: said once, with what to do
        from ..errors import NoSpaceError
        from ..nospace import shown

        raise NoSpaceError(shown(summary.no_space, str(project.layout.root)))
    if summary.failed:
        return EXIT_STEP_FAILED
    if summary.blocked:
        return EXIT_BLOCKED
    return EXIT_OK


def _selected(project, targets) -> list[str]:
    """The steps `targets` select, their dependencies included (what a hermetic run hands to the workers)."""
    from ..graph import resolve_targets, selected_order

    compiled = project.compiled
    return selected_order(compiled, resolve_targets(project.spec, project.typed(targets)))


def _sync_roadmap(project, targets, summary, as_json: bool) -> None:
    """Tick the roadmap item of each intent the run completed (runner/roadmap/sync.py)."""
    from ..graph import resolve_targets, selected_order
    from ..roadmap.sync import completed, sync

    compiled, spec = project.compiled, project.spec
    order = selected_order(compiled, resolve_targets(spec, project.typed(targets)))
    unfinished = set(summary.failed) | set(summary.blocked) | set(summary.left)
    done = completed(order, compiled.deps, compiled.aggregates, unfinished)
    result = sync(Path(spec.root), Path(spec.root) / spec.file, done)
    if as_json:
        echo(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        for line in result.lines():
            echo(line)


def _say_waiting(holder: str) -> None:
    print(f"runner: waiting for the lock held by {holder}", file=sys.stderr, flush=True)


def plain(parsed: dict | None) -> dict | None:
    """make()'s arguments for a plain `runner make` (`parsed` as the fast path parsed its options), when nobody at
    a terminal could be asked anything (--json, or not at one); None for anything else, which goes to click (and
    so does every mistake: click words it)."""
    from ..workspace import at_terminal

    args = None if parsed is None else dict(parsed)
    if args is None or (at_terminal() and not args.get("as_json")):
        return None  # a human may be asked before an agent step: click's prompt does that
    if args.get("timeout", 0) > MAX_TIMEOUT:
        return None  # --timeout inf: click says what is wrong with it
    args["directory"] = Path(args["directory"])
    return args


def run(
    inv: Invocation,
    targets: tuple[str, ...],
    spec_file: str | None,
    jobs: int | None,
    keep_going: bool,
    force: bool,
    dry_run: bool,
    timeout: float | None,
    no_wait: bool,
    verbose: bool,
    record: bool,
    worker: str | None,
    halt_on: str,
    sync_roadmap: bool = False,
    remote: str | None = None,
    remote_mode: str | None = None,
    executor: str | None = None,
    hermetic: bool = False,
    affected: str | None = None,
) -> int:
    from ..pipeline import load_project, plan
    from .status import mark_waiting, setup_failed, show_plan

    if affected is not None:
        targets = _affected_targets(inv, targets, spec_file, affected)
        if not targets:
            return EXIT_OK
    if dry_run:
        from ..events import plan as plan_event
        from ..stores import mirror_named

        project = load_project(inv.directory, spec_file=spec_file)
        mirror = mirror_named(project.spec, remote, "read")  # asked, never written
        target, decisions, warnings, agents = plan(project, targets, force, worker, remote=mirror)
        agents = mark_waiting(project.layout.state_dir, decisions, agents)  # as `runner status` says it
        if inv.as_json:  # one line, as every `runner make --json` writes: a `plan` event (events.json)
            steps = [d.to_json() for d in decisions]
            echo(json.dumps(plan_event(targets, steps, agents.to_json() if agents is not None else None)))
        else:
            show_plan(target, decisions, inv.as_json, agents=agents)
        warn(warnings)
        setup_failed(project.spec.root, agents)
        return EXIT_OK
    boundaries = frozenset(b.strip() for b in halt_on.split(",") if b.strip())
    unknown = boundaries - {"write_files", "run_shell", "network"}
    if unknown:
        raise UsageError(
            f"error: --halt-on: unknown boundary '{sorted(unknown)[0]}'; use write_files, run_shell or network"
        )
    return make(
        inv.directory,
        targets,
        spec_file,
        jobs=jobs,
        keep_going=keep_going,
        force=force,
        timeout=timeout,
        no_wait=no_wait,
        verbose=verbose,
        record=record,
        worker=worker,
        halt_on=boundaries,
        as_json=inv.as_json,
        ask=None if inv.as_json else inv.ask,
        sync_roadmap=sync_roadmap,
        remote=remote,
        remote_mode=remote_mode,
        executor=executor,
        hermetic=hermetic,
        missed=inv.missed,
    )


def _affected_targets(inv: Invocation, targets: tuple[str, ...], spec_file: str | None, base: str) -> tuple:
    """The intents of `targets` (or of the default) that a change since `base` affects, said first: one line on
    stderr, or an `affected` event ahead of the run's."""
    from ..names import shown
    from ..pipeline import load_project
    from .status import affected_since

    project = load_project(inv.directory, spec_file=spec_file)
    found = affected_since(project, targets, base)
    names = found.names()
    if inv.as_json:
        from ..events import affected

        echo(json.dumps(affected(found.to_json())))
    else:
        listed = f": {', '.join(names)}" if 0 < len(names) <= 10 else ""
        warn([f"runner: {len(names)} of {len(found.reasons)} affected since {base} ({found.commit[:12]}){listed}"])
    steps = found.steps(project.spec)
    return tuple(shown(name) for name in steps) if project.here else tuple(steps)  # meant anywhere (names.typed)


COMMAND = Command(
    "make",
    "Bring TARGETS up to date.\n\nA target is an intent, or an output path an intent declares; with none named, "
    "[project] default, else everything.",
    (
        targets_argument(),
        SPEC_FILE,
        option("-j", "--jobs", dest="jobs", help="Parallel steps (default: CPU count).", type=int, minimum=1),
        flag("-k", "--keep-going", dest="keep_going", help="Go on with independent steps after a failure."),
        flag("-B", "--always-make", dest="force", help="Run every selected step, cached or not."),
        flag("-n", "--dry-run", dest="dry_run", help="Print what would run and why; run nothing."),
        option(
            "--timeout",
            dest="timeout",
            help="Seconds per step for steps without their own timeout.",
            type=float,
            minimum=0,
            maximum=MAX_TIMEOUT,
        ),
        flag("--no-wait", dest="no_wait", help="Fail (exit 3) instead of waiting when another runner holds the lock."),
        flag(
            "-v",
            "--verbose",
            dest="verbose",
            help="Stream what each step prints, line by line after its name; list cached steps and why steps run.",
        ),
        flag("--record", dest="record", help="Write every worker exchange to replays/ (redacted)."),
        flag(
            "--sync-roadmap",
            dest="sync_roadmap",
            help="Then mark done the roadmap item of each intent that completed (see `runner import`).",
        ),
        option(
            "--worker",
            dest="worker",
            help="Use this worker for agent steps in this run instead of [worker] kind.",
            type=("codex", "openai", "replay"),
        ),
        option(
            "--remote",
            dest="remote",
            help="Share the cache through this URL (s3://bucket/prefix, gs://…, file:///path); "
            "over RUNNER_REMOTE_CACHE and [cache] remote.",
            metavar="URL",
        ),
        option(
            "--remote-mode",
            dest="remote_mode",
            help="read: never upload; write: never read; readwrite (default).",
            type=("read", "write", "readwrite"),
        ),
        option(
            "--executor",
            dest="executor",
            help="Where shell steps run: local (the default) or dask://HOST:PORT (a Dask scheduler); over [executor].",
            metavar="WHERE",
        ),
        flag(
            "--hermetic",
            dest="hermetic",
            help="On a Dask cluster, each step sees only its declared inputs, carried by the remote cache "
            "(needs --remote or [cache] remote); over [executor] hermetic.",
        ),
        option(
            "--halt-on",
            dest="halt_on",
            help="Comma list of write_files,run_shell: ask before crossing them this run.",
            default="",
            metavar="BOUNDARIES",
        ),
        AFFECTED,
    ),
    run,
)
