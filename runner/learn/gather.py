"""One learning pass's misses, gathered: every run recorded since a point (mine.py reads each), then the recordings
in replays/ made since (replays.py reads each)."""

from __future__ import annotations

from pathlib import Path

from .mine import Mined, Miss, Reader, miss_order, recorded_runs, run_misses, run_started_at, runs_since
from .replays import recording_misses, recordings_since


def mine(root: Path, since: str | None = None) -> Mined:
    """The misses of the runs recorded in root/.runner/runs (since the run whose id starts with `since`) and of
    the recordings in its replays/ (those recorded since that run started)."""
    reader = Reader(root)
    runs = recorded_runs(reader.root)
    start = runs_since(runs, since)
    chosen = runs[start:]
    misses: list[Miss] = []
    for run_id in chosen:
        misses += run_misses(reader.run(run_id))
    after = run_started_at(chosen[0]) if since is not None and chosen else None
    recordings = recordings_since(reader, after)
    for path, doc in recordings:
        misses += recording_misses(reader, path, doc)
    run_order = {r: i for i, r in enumerate(chosen)}
    misses.sort(key=lambda m: (run_order.get(m.run_id or "", len(run_order)), *miss_order(m)))
    return Mined(tuple(misses), tuple(chosen), tuple(reader.rel(p) for p, _ in recordings))
