"""`runner serve [--port N] [--host H] [--read-only]`: the project's runs in a browser, live (runner/web/app.py)."""

from __future__ import annotations

import sys

from ..errors import UsageError
from . import Command, Invocation, flag, option

DEFAULT_PORT = 8040
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def run(inv: Invocation, port: int, host: str, read_only: bool) -> None:
    from ..workspace import find_root

    try:
        from ..web.app import serve
    except ImportError as exc:
        raise UsageError(
            f"error: runner serve needs the web extra ({exc.name} is not installed): pip install 'intent-runner[web]'"
        ) from None
    root = find_root(inv.directory)
    if not (root / "intents.toml").is_file() and not (root / ".runner").is_dir():
        raise UsageError(f"error: no intents.toml in {root} or above it: run `runner serve` in a project")
    if host not in LOOPBACK:
        print(
            f"runner: warning: serving on {host}, not only this machine: whoever can reach it and holds the URL's "
            "token sees the project's runs and logs" + ("" if read_only else " and may approve changes"),
            file=sys.stderr,
            flush=True,
        )

    def announce(url: str) -> None:
        print(url, flush=True)
        print("runner: serving the project's runs; Ctrl-C stops it", file=sys.stderr, flush=True)

    try:
        serve(root, "127.0.0.1" if host == "localhost" else host, port, read_only, announce)
    except OSError as exc:
        raise UsageError(f"error: cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass


COMMAND = Command(
    "serve",
    "Show the project's runs in a browser, live: runs, a run's graph and timeline, approvals, learning.",
    (
        option(
            "--port",
            dest="port",
            help=f"The port (default {DEFAULT_PORT}; 0: any free one).",
            type=int,
            minimum=0,
            default=DEFAULT_PORT,
        ),
        option(
            "--host",
            dest="host",
            help="The address to serve on (default 127.0.0.1; another one is reachable by others: a warning says so).",
            default="127.0.0.1",
        ),
        flag("--read-only", dest="read_only", help="No Approve or Reject: pages only."),
    ),
    run,
)
