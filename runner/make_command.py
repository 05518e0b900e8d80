"""`runner make` itself, options in and exit code out: shared by the click command and by the console
script's plain path, which starts a plain `runner make --json` (or one not at a terminal) without click."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import EXIT_BLOCKED, EXIT_INTERRUPTED, EXIT_OK, EXIT_STEP_FAILED


def run(
    directory: Path,
    target: str | None = None,
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
) -> int:
    """Bring `target` up to date; the exit code says how it went. `ask(question, detail)` asks a human."""
    from .execute import RunOptions
    from .pipeline import load_project
    from .pipeline import make as run_pipeline
    from .report import make_reporter
    from .workspace import is_terminal

    project = load_project(directory)
    options = RunOptions(
        jobs=jobs or os.cpu_count() or 1,
        keep_going=keep_going,
        force=force,
        timeout=timeout,
        record=record,
        halt_on=halt_on,
        ask=ask,
        worker=worker,
    )
    reporter = make_reporter(as_json, verbose, terminal=is_terminal(sys.stdout) and is_terminal(sys.stderr))
    try:
        summary = run_pipeline(
            project, target, options, reporter, wait_for_lock=not no_wait, on_wait=on_wait or _say_waiting
        )
    finally:
        reporter.close()
    if summary.interrupted:
        return EXIT_INTERRUPTED
    if summary.failed:
        return EXIT_STEP_FAILED
    if summary.blocked:
        return EXIT_BLOCKED
    return EXIT_OK


def _say_waiting(holder: str) -> None:
    print(f"runner: waiting for the lock held by {holder}", file=sys.stderr, flush=True)


def plain(argv: list[str]) -> dict | None:
    """run()'s arguments for a plain `runner make` (noop.parse_plain_make), when nobody at a terminal could be
    asked anything (--json, or not at one); None for anything else, which goes to click (and so does every
    mistake: click words it)."""
    from .noop import parse_plain_make
    from .spec import MAX_TIMEOUT
    from .workspace import at_terminal

    args = parse_plain_make(argv)
    if args is None or (at_terminal() and not args.get("as_json")):
        return None  # a human may be asked before an agent step: click's prompt does that
    if args.get("timeout", 0) > MAX_TIMEOUT:
        return None  # --timeout inf: click says what is wrong with it
    args["directory"] = Path(args["directory"])
    return args
