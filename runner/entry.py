"""The console script: a proven no-op answers before click and the pipeline are even imported."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    from .noop import try_noop

    code = try_noop(argv)
    if code is not None:
        sys.exit(code)
    from .cli import main as cli_main

    cli_main(argv)
