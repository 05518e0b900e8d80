"""The console script: a proven no-op answers before click and the pipeline are even imported, and a plain
`runner make` runs without click."""

from __future__ import annotations

import gc
import os
import signal
import sys

RACY_WINDOW = "RUNNER_RACY_WINDOW_MS"  # a test setting (CONTRIBUTING.md, "The tests"): unset, git's second


def main() -> None:
    """The whole command; ends with SystemExit like any click program (tests call it in-process)."""
    if sys.platform != "linux":  # a string compare: the no-op pays nothing for saying so up front
        unsupported_platform()
    # collect cycles less often, as mypy does: a 100,000-step run makes millions of small objects that live
    # to its end (proof stats, records, decisions), and the default thresholds had the collector walk them
    # again and again (~0.12 s of a 100,000-step edit's 1.8 s; bench/NOTES.md, session 13)
    gc.set_threshold(200_000, 30, 30)
    argv = sys.argv[1:]
    from .noop import parse_plain_make, try_noop

    racy = os.environ.get(RACY_WINDOW)
    if racy:  # set and not empty: a test's runner
        set_racy_window(racy)
    parsed = parse_plain_make(argv)
    code, missed = (None, None) if parsed is None else try_noop(parsed)
    if code is not None:
        sys.exit(code)
    from .commands.make import make, plain

    args = plain(parsed)
    if args is not None:  # a plain `runner make`: no click to import (~20 ms), the same run and messages
        try:
            code = make(**args, missed=missed)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the boundary, as in cli.main
            from .cli import exit_for

            code = exit_for(exc, args["directory"], as_json=args.get("as_json", False))
        sys.exit(code)
    from .cli import main as cli_main

    cli_main(argv, missed)


def set_racy_window(value: str) -> None:
    """RUNNER_RACY_WINDOW_MS: the racy window (stat_cache.RACY_NS, git's "racily clean" rule) in milliseconds, so
    that the tests wait a tenth of a second past a file's change where a user's runner waits its second. Never
    shorter than a filesystem clock's tick (a jiffy, at most 10 ms): two writes within one tick may leave every
    stat alike, and the window is there to refuse to vouch for that tick. Any other value stops the runner
    (exit 2) rather than run with a window nobody asked for."""
    from . import stat_cache

    if value.isascii() and value.isdigit() and int(value) >= 10:
        stat_cache.RACY_NS = int(value) * 1_000_000
        return
    from .errors import EXIT_USER_ERROR

    print(
        f"error: {RACY_WINDOW}={value!r}: expected a whole number of milliseconds, 10 or more (a setting for "
        f"runner's own tests: unset it for the racy window of 1000 ms)",
        file=sys.stderr,
    )
    sys.exit(EXIT_USER_ERROR)


def unsupported_platform() -> None:
    """One line instead of a traceback from deep in a run: steps are watched through pidfds, recovered through
    /proc and identified by CLOCK_BOOTTIME start times. Exit 2, the user's mistake: running it here is a choice
    the user can change, not a bug in runner (4) nor something an approval or budget would release (3)."""
    from .errors import EXIT_USER_ERROR

    print(
        f"error: runner runs on Linux only (it needs pidfd, /proc and CLOCK_BOOTTIME); this is {sys.platform}",
        file=sys.stderr,
    )
    sys.exit(EXIT_USER_ERROR)


def console() -> None:
    """`runner` and `python -m runner`: main(), then exit without the interpreter's teardown, since freeing
    a 10,000-step graph object by object takes longer than an incremental build. Everything the run
    writes is closed by then; only the standard streams are flushed here. Ctrl-C at any moment of it ends
    with exit 130 and one line, never a traceback: before a command's own boundary (the no-op, the imports),
    between its answer and the exit, and while the one line is said."""
    code: str | int | None = EXIT_INTERRUPTED
    try:
        sys.unraisablehook = _unraisable
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
            _say_interrupted()
        except Exception as exc:
            from .errors import from_a_ctrl_c

            if not from_a_ctrl_c(exc):
                raise
            code = EXIT_INTERRUPTED
            _say_interrupted()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command is done: a Ctrl-C now changes nothing
    except KeyboardInterrupt:  # one that came in the moment between the command's end and the line above
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass
    os._exit(code or 0)


EXIT_INTERRUPTED = 130  # errors.EXIT_INTERRUPTED, without importing errors.py (and typing) on the no-op path


def _unraisable(unraisable, default=sys.unraisablehook) -> None:
    """A Ctrl-C that came while Python ran a callback it cannot raise from (a module lock's weakref callback in
    an import, a __del__) would be printed as "Exception ignored in" with its traceback, and lost: it is sent
    again instead, a moment later, so that it lands once this callback is over (a signal raised here would be
    handled here, inside the same callback) and is raised in ordinary code as any other Ctrl-C. Should it land
    in a callback again, it comes here again."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        import threading

        again = threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT))
        again.daemon = True
        again.start()
        return
    default(unraisable)


def _say_interrupted() -> None:
    """The boundary's line for a Ctrl-C (cli.exit_for), from before a command reached it."""
    try:
        from .errors import interrupted_line  # loaded by now unless the Ctrl-C came before the command did

        line = interrupted_line()
    except KeyboardInterrupt:  # another, while it loads: the line as a log has it
        line = "runner: interrupted\n"
    try:
        os.write(2, line.encode())
    except OSError:
        pass
