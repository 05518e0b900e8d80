"""The click commands and the one error boundary that turns every error into a message and an exit code."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STEP_FAILED,
    RunnerError,
    SpecError,
    UsageError,
)
from .spec import MAX_TIMEOUT

_directory = [Path(".")]  # the -C of the running command: where an internal error's traceback goes


def _remember_directory(ctx, param, value: Path) -> Path:
    _directory[0] = value
    return value


def _common(fn):
    fn = click.option(
        "-C",
        "--directory",
        "directory",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("."),
        show_default=False,
        callback=_remember_directory,
        help="Run as if started in DIR (like make -C).",
    )(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout.")(fn)
    return fn


def _print_json(value) -> None:
    click.echo(json.dumps(value, indent=2))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="runner")
def cli() -> None:
    """Make for coding agents: intents in TOML become a cached, content-hashed DAG of steps."""


# ---- validate / graph ------------------------------------------------------------------------


@cli.command()
@_common
def validate(directory: Path, as_json: bool) -> None:
    """Check intents.toml and adapters; report every problem at once."""
    from .pipeline import load_project

    try:
        project = load_project(directory, use_cache=False)
    except SpecError as exc:
        if as_json:
            _print_json({"ok": False, "problems": [p.to_json() for p in exc.problems]})
        raise
    n = len(project.spec.intents)
    if as_json:
        _print_json({"ok": True, "intents": n, "problems": []})
    else:
        click.echo(f"ok: {n} intent{'s' if n != 1 else ''}, no problems")


@cli.command()
@click.argument("target", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "dot", "mermaid", "json"]), default="text")
@_common
def graph(target: str | None, fmt: str, directory: Path, as_json: bool) -> None:
    """Print the DAG (edges run from a dependency to its dependant)."""
    from .graph import render
    from .pipeline import load_project, select

    project = load_project(directory)
    target, names = select(project, target)
    click.echo(render(project.spec, names, "json" if as_json else fmt, target))


# ---- status / explain / make -n -------------------------------------------------------------


def _status_output(target, decisions, as_json: bool) -> None:
    if as_json:
        _print_json({"target": target, "steps": [d.to_json() for d in decisions]})
        return
    runs = [d for d in decisions if d.action == "run"]
    width = max((len(d.intent) for d in decisions), default=0)
    for d in decisions:
        click.echo(f"{d.action:<4}  {d.intent:<{width}}  {'; '.join(d.reasons)}")
    click.echo(
        f"{len(runs)} to run, {len(decisions) - len(runs)} up to date" + (f" (target {target})" if target else "")
    )


@cli.command()
@click.argument("target", required=False)
@click.option("-B", "--always-make", "force", is_flag=True, help="Plan as if every step must run.")
@_common
def status(target: str | None, force: bool, directory: Path, as_json: bool) -> None:
    """What would run and why, in topological order."""
    from .pipeline import load_project, plan

    project = load_project(directory)
    target, decisions = plan(project, target, force)
    _status_output(target, decisions, as_json)


@cli.command()
@click.argument("intent")
@_common
def explain(intent: str, directory: Path, as_json: bool) -> None:
    """Everything that decides one step: its key's ingredients, its last run, what it would do."""
    from .explain import explain_intent, render_explanation
    from .pipeline import load_project

    project = load_project(directory)
    report = explain_intent(project, intent)
    if as_json:
        _print_json(report)
    else:
        click.echo(render_explanation(report))


@cli.command()
@click.argument("target", required=False)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Parallel steps (default: CPU count).")
@click.option("-k", "--keep-going", is_flag=True, help="Go on with independent steps after a failure.")
@click.option("-B", "--always-make", "force", is_flag=True, help="Run every selected step, cached or not.")
@click.option("-n", "--dry-run", is_flag=True, help="Print what would run and why; run nothing.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=MAX_TIMEOUT),
    default=None,
    help="Seconds per step for steps without their own timeout.",
)
@click.option("--no-wait", is_flag=True, help="Fail (exit 3) instead of waiting when another runner holds the lock.")
@click.option("-v", "--verbose", is_flag=True, help="Also list cached steps and why each step runs.")
@click.option("--record", is_flag=True, help="Write every worker exchange to replays/ (redacted).")
@click.option(
    "--worker",
    type=click.Choice(["codex", "openai", "replay"]),
    default=None,
    help="Use this worker for agent steps in this run instead of [worker] kind.",
)
@click.option(
    "--halt-on",
    "halt_on",
    default="",
    metavar="BOUNDARIES",
    help="Comma list of write_files,run_shell: ask before crossing them this run.",
)
@_common
def make(
    target, jobs, keep_going, force, dry_run, timeout, no_wait, verbose, record, worker, halt_on, directory, as_json
) -> None:
    """Bring TARGET (default: [project] default, else everything) up to date."""
    from .make_command import run
    from .pipeline import load_project, plan
    from .workspace import at_terminal

    if dry_run:
        requested = target
        target, decisions = plan(load_project(directory), target, force)
        if as_json:  # one line, as every `runner make --json` writes: a `plan` event (events.json)
            steps = [d.to_json() for d in decisions]
            click.echo(json.dumps({"event": "plan", "target": requested, "steps": steps}))
            return
        _status_output(target, decisions, as_json)
        return
    boundaries = frozenset(b.strip() for b in halt_on.split(",") if b.strip())
    unknown = boundaries - {"write_files", "run_shell", "network"}
    if unknown:
        raise UsageError(
            f"error: --halt-on: unknown boundary '{sorted(unknown)[0]}'; use write_files, run_shell or network"
        )
    code = run(
        directory,
        target,
        jobs=jobs,
        keep_going=keep_going,
        force=force,
        timeout=timeout,
        no_wait=no_wait,
        verbose=verbose,
        record=record,
        worker=worker,
        halt_on=boundaries,
        as_json=as_json,
        ask=_ask if at_terminal() and not as_json else None,
    )
    if code != EXIT_OK:
        sys.exit(code)


@cli.command()
@click.argument("run_id")
@_common
def replay(run_id: str, directory: Path, as_json: bool) -> None:
    """Re-execute RUN's agent steps from their recordings in a scratch copy; flag any that differ."""
    from .rerun import replay_run
    from .workspace import find_root

    report = replay_run(find_root(directory), run_id)
    if as_json:
        _print_json(report)
    else:
        for step in report["steps"]:
            click.echo(f"{step['status']:<9} {step['intent']}: {step['detail']}")
        if not report["steps"]:
            click.echo(f"run {report['run_id']} ran no agent step: nothing to replay")
    if not report["ok"]:
        sys.exit(EXIT_STEP_FAILED)


def _ask(question: str, detail: str) -> bool:
    click.echo(detail, err=True)
    return click.confirm(question, default=False, err=True)


@cli.command()
@click.argument("intents", nargs=-1)
@click.option("--reject", is_flag=True, help="Drop the pending change instead of applying it.")
@_common
def approve(intents, reject: bool, directory: Path, as_json: bool) -> None:
    """Apply (or --reject) verified changes that wait for approval; no model is called."""
    from .apply import load_pending
    from .approve import approve as approve_pending
    from .approve import grant
    from .load import did_you_mean
    from .pipeline import load_project, planner_for
    from .record import new_run_id
    from .workspace import ProjectLock

    project = load_project(directory)
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
        if as_json:
            _print_json({"done": granted})
        else:
            for g in granted:
                click.echo(f"allowed {g['intent']}: its next `runner make` may call the model once")
        return
    if not pending:
        if as_json:
            _print_json({"done": []})
        else:
            click.echo("nothing waits for approval")
        return
    with ProjectLock(layout, "runner approve"):
        planner = planner_for(project, owner=True)
        done = granted + approve_pending(planner, layout.state_dir, list(intents) or None, reject, new_run_id())
        planner.stat.save()
        planner.cache.close()
    if as_json:
        _print_json({"done": done})
    else:
        for d in done:
            detail = d.get("error") or ", ".join(d.get("files", []))
            click.echo(f"{d['action']} {d['intent']}: {detail}")
    if any(d["action"] == "failed" for d in done):
        sys.exit(EXIT_STEP_FAILED)


# ---- cache / log -----------------------------------------------------------------------------


@cli.group()
def cache() -> None:
    """Inspect or trim the step cache."""


@cache.command("stats")
@_common
def cache_stats(directory: Path, as_json: bool) -> None:
    """Records, blobs and bytes on disk."""
    from .cache import Cache
    from .workspace import Layout, find_root

    layout = Layout(find_root(directory))
    stats = Cache(layout.cache_dir).stats()
    stats["directory"] = os.path.relpath(stats["directory"], layout.root)
    if as_json:
        _print_json(stats)
    else:
        click.echo(
            f"{stats['records']} step records, {stats['blobs']} output blobs, "
            f"{stats['bytes_on_disk']} bytes in {stats['directory']}"
        )


@cache.command("gc")
@_common
def cache_gc(directory: Path, as_json: bool) -> None:
    """Drop every record and blob the current state of each intent no longer needs."""
    from .cache import Cache, State
    from .workspace import Layout, ProjectLock, find_root

    layout = Layout(find_root(directory))
    with ProjectLock(layout, "runner cache gc"):
        live = State(layout.state_file).keys()
        result = Cache(layout.cache_dir, owner=True).gc(live)
    if as_json:
        _print_json(result)
    else:
        click.echo(f"removed {result['records_removed']} records and {result['blobs_removed']} blobs")


@cache.command("clear")
@_common
def cache_clear(directory: Path, as_json: bool) -> None:
    """Empty the cache: every step runs again next time."""
    from .cache import Cache
    from .freshness import forget
    from .workspace import Layout, ProjectLock, find_root

    layout = Layout(find_root(directory))
    with ProjectLock(layout, "runner cache clear"):
        removed = Cache(layout.cache_dir, owner=True).clear()
        for path in (layout.state_file, layout.stat_file):
            Path(path).unlink(missing_ok=True)
        forget(str(layout.root))
    if as_json:
        _print_json({"removed": removed})
    else:
        click.echo(f"cleared {removed} cache entries")


@cli.command()
@click.argument("run_id", required=False)
@click.option("--list", "list_runs_flag", is_flag=True, help="List the recorded runs.")
@_common
def log(run_id: str | None, list_runs_flag: bool, directory: Path, as_json: bool) -> None:
    """Show what a run did (default: the last one)."""
    from .explain import render_run, run_summary
    from .record import list_runs, read_events
    from .workspace import Layout, find_root

    layout = Layout(find_root(directory))
    runs = list_runs(layout.runs_dir)
    if list_runs_flag:
        summaries = [run_summary(r, read_events(layout.runs_dir, r)) for r in runs]
        if as_json:
            _print_json({"runs": summaries})
        else:
            for s in summaries:
                click.echo(
                    f"{s['run_id']}  {s['status']:<11}  ran {s['ran']}, cached {s['cached']}, failed {s['failed']}"
                )
        return
    if not runs:
        raise UsageError("error: no runs recorded yet in .runner/runs: run `runner make` first")
    if run_id is None:
        run_id = runs[-1]
    elif run_id not in runs:
        matches = [r for r in runs if r.startswith(run_id)]
        if len(matches) != 1:
            raise UsageError(f"error: no run '{run_id}' (see `runner log --list`)")
        run_id = matches[0]
    events = read_events(layout.runs_dir, run_id)
    if as_json:
        _print_json({"run_id": run_id, "events": events})
    else:
        click.echo(render_run(run_id, events))


# ---- toolchains: adapters, init, parse -----------------------------------------------------


@cli.command()
@_common
def adapters(directory: Path, as_json: bool) -> None:
    """The toolchains detected here, with confidence, evidence and the commands as they would run."""
    from .adapters_cmd import adapters_report
    from .workspace import find_root

    text, obj = adapters_report(find_root(directory))
    if as_json:
        _print_json(obj)
    else:
        click.echo(text)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the intents.toml it would write; write nothing.")
@_common
def init(dry_run: bool, directory: Path, as_json: bool) -> None:
    """Detect the toolchains here and write a starting intents.toml (never overwrites one)."""
    from .init import init_project

    text, obj = init_project(directory.resolve(), dry_run=dry_run)
    if as_json:
        _print_json(obj)
    else:
        click.echo(text)


@cli.command()
@click.argument("log_file", required=False, default="-")
@click.option("--adapter", "adapter_name", help="Adapter whose command produced the log (or auto).")
@click.option("--command", "command_name", help="The adapter command that produced the log (test, lint, ...).")
@click.option("--family", "families", multiple=True, help="Parse with this regex family (repeatable).")
@click.option("--variant", "variants", multiple=True, help="Adapter variant (default: detected).")
@_common
def parse(log_file: str, adapter_name, command_name, families, variants, directory: Path, as_json: bool) -> None:
    """What the runner understands of a saved log (FILE, or - for stdin): counts, failing tests, diagnostics."""
    from .adapters_cmd import parse_report
    from .workspace import find_root

    text, obj = parse_report(
        find_root(directory),
        adapter=adapter_name,
        command=command_name,
        families=tuple(families),
        variants=tuple(variants) or None,
        source=log_file,
    )
    if as_json:
        _print_json(obj)
    else:
        click.echo(text)


# ---- the error boundary ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="runner", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)  # 2 for usage errors, as the user's mistake
    except click.exceptions.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the boundary: a message and an exit code
        sys.exit(exit_for(exc))
    sys.exit(EXIT_OK)


def exit_for(exc: BaseException, directory: Path | None = None) -> int:
    """Say what went wrong on stderr and return the exit code (called inside the except block: an internal
    error's traceback is saved from there). `directory` is the command's -C, when click did not read it."""
    from .redact import current_mask

    mask = current_mask()  # a message may quote a value from the environment, a log or a worker's answer
    if isinstance(exc, RunnerError):
        message = mask.text(exc.render())
        click.echo(message if message.startswith("error") else f"error: {message}", err=True)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        click.echo("runner: interrupted", err=True)
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return EXIT_OK
    if directory is not None:
        _directory[0] = directory
    path = _save_traceback()  # a bug of ours: keep the traceback for the report, show one line
    click.echo(mask.text(f"runner: internal error: {exc!r}; the traceback is in {path}. Please report it."), err=True)
    return EXIT_INTERNAL


def _save_traceback() -> str:
    import traceback

    from .redact import current_mask
    from .workspace import find_root

    folder = find_root(_directory[0]) / ".runner"
    try:
        folder.mkdir(exist_ok=True)
        path = folder / "last-error.log"
        path.write_text(current_mask().text(traceback.format_exc()))
        return str(path)
    except OSError:
        return "(could not write .runner/last-error.log)"
