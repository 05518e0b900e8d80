"""`runner make` itself, options in and exit code out: shared by the click command and by the console
script's plain path, which starts a plain `runner make --json` (or one not at a terminal) without click."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .errors import EXIT_BLOCKED, EXIT_INTERRUPTED, EXIT_OK, EXIT_STEP_FAILED

_FLAGS = {"-k": "keep_going", "--keep-going": "keep_going", "--no-wait": "no_wait", "--json": "as_json"}


def run(directory: Path, target: str | None = None, jobs: int | None = None, keep_going: bool = False,
        force: bool = False, timeout: float | None = None, no_wait: bool = False, verbose: bool = False,
        record: bool = False, worker: str | None = None, halt_on: frozenset = frozenset(), as_json: bool = False,
        ask=None, on_wait=None) -> int:
    """Bring `target` up to date; the exit code says how it went. `ask(question, detail)` asks a human."""
    from .execute import RunOptions
    from .pipeline import load_project
    from .pipeline import make as run_pipeline
    from .report import make_reporter
    from .workspace import is_terminal

    project = load_project(directory)
    options = RunOptions(jobs=jobs or os.cpu_count() or 1, keep_going=keep_going, force=force, timeout=timeout,
                         record=record, halt_on=halt_on, ask=ask, worker=worker)
    reporter = make_reporter(as_json, verbose, terminal=is_terminal(sys.stdout) and is_terminal(sys.stderr))
    try:
        summary = run_pipeline(project, target, options, reporter, wait_for_lock=not no_wait,
                               on_wait=on_wait or _say_waiting)
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
    """run()'s arguments for `make [TARGET] [-C DIR] [-jN] [-k] [--no-wait] [--json]`, when nobody at a
    terminal could be asked anything (--json, or not at one); None for anything else, which goes to click
    (and so does every mistake: click words it)."""
    if not argv or argv[0] != "make":
        return None
    from .workspace import is_terminal

    args: dict = {"directory": Path(".")}
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _FLAGS:
            args[_FLAGS[arg]] = True
        elif arg in ("-C", "--directory", "-j", "--jobs") and i + 1 < len(argv):
            value = argv[i + 1]
            if arg in ("-C", "--directory"):
                args["directory"] = Path(value)
            elif value.isdigit() and int(value) >= 1:
                args["jobs"] = int(value)
            else:
                return None
            i += 1
        elif arg.startswith("-j") and arg[2:].isdigit() and int(arg[2:]) >= 1:
            args["jobs"] = int(arg[2:])
        elif arg.startswith("-") or "target" in args:
            return None
        else:
            args["target"] = arg
        i += 1
    at_terminal = is_terminal(sys.stdout) and is_terminal(sys.stderr) and is_terminal(sys.stdin)
    if at_terminal and not args.get("as_json"):
        return None  # a human may be asked before an agent step: click's prompt does that
    return args
