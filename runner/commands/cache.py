"""`runner cache stats|gc|clear`: inspect or trim the step cache."""

from __future__ import annotations

import os
from pathlib import Path

from . import Command, Invocation, echo, print_json


def stats(inv: Invocation) -> None:
    from ..cache import Cache
    from ..workspace import Layout, find_root

    layout = Layout(find_root(inv.directory))
    found = Cache(layout.cache_dir).stats()
    found["directory"] = os.path.relpath(found["directory"], layout.root)
    found["hits"] = _hits(layout.runs_dir)
    if inv.as_json:
        print_json(found)
    else:
        echo(
            f"{found['records']} step records, {found['blobs']} output blobs, "
            f"{found['bytes_on_disk']} bytes in {found['directory']}"
        )
        hits = found["hits"]
        echo(f"hits in the recorded runs: {hits['local']} local, {hits['remote']} from the remote cache")


def _hits(runs_dir) -> dict[str, int]:
    """Cache hits over the recorded runs, from each run's run_finished: those the shared remote cache served
    (its `remote.hits`) and the rest of the cached and restored steps, which the local cache served."""
    import json

    local = remote = 0
    for events in sorted(Path(runs_dir).glob("*/events.jsonl")):
        try:
            lines = events.read_text(encoding="utf-8", errors="replace").splitlines()  # damaged: no run_finished
        except OSError:
            continue
        for line in reversed(lines):
            if '"run_finished"' not in line:
                continue
            try:
                finished = json.loads(line)
            except ValueError:
                break
            served = int((finished.get("remote") or {}).get("hits") or 0)
            remote += served
            local += max(0, int(finished.get("cached") or 0) + int(finished.get("restored") or 0) - served)
            break
    return {"local": local, "remote": remote}


def gc(inv: Invocation) -> None:
    from ..cache import Cache, State
    from ..workspace import Layout, ProjectLock, find_root

    layout = Layout(find_root(inv.directory))
    with ProjectLock(layout, "runner cache gc"):
        live = State(layout.state_file).keys()
        result = Cache(layout.cache_dir, owner=True).gc(live)
    if inv.as_json:
        print_json(result)
    else:
        echo(f"removed {result['records_removed']} records and {result['blobs_removed']} blobs")


def clear(inv: Invocation) -> None:
    from ..cache import Cache
    from ..proof import forget
    from ..workspace import Layout, ProjectLock, find_root

    layout = Layout(find_root(inv.directory))
    with ProjectLock(layout, "runner cache clear"):
        removed = Cache(layout.cache_dir, owner=True).clear()
        for path in (layout.state_file, layout.stat_file):
            Path(path).unlink(missing_ok=True)
            Path(path + ".log").unlink(missing_ok=True)  # index_file.IndexFile's log of later changes
        forget(str(layout.root))
    if inv.as_json:
        print_json({"removed": removed})
    else:
        echo(f"cleared {removed} cache entries")


COMMAND = Command(
    "cache",
    "Inspect or trim the step cache.",
    subcommands=(
        Command("stats", "Records, blobs and bytes on disk.", run=stats),
        Command("gc", "Drop every record and blob the current state of each intent no longer needs.", run=gc),
        Command("clear", "Empty the cache: every step runs again next time.", run=clear),
    ),
)
