"""The console script: a proven no-op answers before click and the pipeline are even imported."""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    from .noop import try_noop

    code = try_noop(argv)
    if code is not None:
        sys.exit(code)
    from .cli import main as cli_main

    try:
        cli_main(argv)
    except SystemExit as exc:
        _exit_now(exc.code)
    _exit_now(0)


def _exit_now(code) -> None:
    """Exit without the interpreter's teardown: freeing a 10,000-step graph object by object takes longer
    than an incremental build. Everything the run writes is closed by then; only the std streams wait."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass
    os._exit(code or 0)
