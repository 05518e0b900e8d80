"""The append-only run log: .runner/runs/<id>/events.jsonl, per-step logs, and readers for `runner log`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

KEEP_RUNS = 50


def new_run_id() -> str:
    """YYYYmmdd-HHMMSS-xxxxxx, in the order runs start, within one second too: the six hex digits are the
    microsecond and a random digit (they were all random, so two runs in one second sorted either way, and a
    reader of "the runs since RUN" or "the newest run" by id, as the learning gate is, could miss one)."""
    now = time.time()
    micro = int(now % 1 * 1_000_000)
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{(micro << 4) | (os.urandom(1)[0] & 15):06x}"


class RunRecord:
    """One run's folder. Events are flushed before the run waits for anything, so a killed run leaves a
    readable log that is behind by at most what one pass of the scheduler emitted."""

    def __init__(self, runs_dir: Path, run_id: str | None = None):
        self.run_id = run_id or new_run_id()
        self.dir = runs_dir / self.run_id
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        self._events = open(self.dir / "events.jsonl", "a", encoding="utf-8")  # noqa: SIM115 - open for the run; close() ends it

    def emit(self, event: dict, line: str | None = None) -> str:
        """Append the event (`line`: its JSON, if known); returns the JSON line for whoever prints it too.
        Written out by flush(), which the scheduler calls before it waits for anything."""
        line = line or json.dumps(event)
        self._events.write(line + "\n")
        return line

    def flush(self) -> None:
        self._events.flush()

    def write_lines(self, text: str) -> None:
        """Append events already serialized, one a line (cached steps in bulk), written out by flush()."""
        self._events.write(text + "\n")

    def log_path(self, intent: str) -> Path:
        return self.dir / "logs" / f"{intent}.log"

    def close(self) -> None:
        self._events.close()


def list_runs(runs_dir: Path) -> list[str]:
    """The recorded run ids, oldest first. An id holds its start to the second (and a random suffix), and a no-op
    takes milliseconds: runs of one second are ordered by when their log was last written (runs never overlap:
    each holds the project lock)."""
    if not runs_dir.is_dir():
        return []
    found = []
    for p in runs_dir.iterdir():
        try:
            found.append((p.name[:15], os.stat(p / "events.jsonl").st_mtime_ns, p.name))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return [name for _second, _written, name in sorted(found)]


def runs_after(runs_dir: Path, since: str | None) -> list[str]:
    """The recorded runs after run `since`, oldest first (every run for None; for a run no longer recorded, those
    of a later second)."""
    runs = list_runs(runs_dir)
    if since is None:
        return runs
    if since in runs:
        return runs[runs.index(since) + 1 :]
    return [run for run in runs if run[:15] > since[:15]]


def read_events(runs_dir: Path, run_id: str) -> list[dict]:
    events = []
    with open(runs_dir / run_id / "events.jsonl", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except ValueError:
                break  # a run killed mid-write leaves at most one torn last line
    return events


def prune(runs_dir: Path, keep: int = KEEP_RUNS) -> None:
    runs = list_runs(runs_dir)
    if len(runs) > keep:
        import shutil  # here: importing it loads zlib, bz2 and lzma, which a no-op never needs

        for run_id in runs[:-keep]:
            shutil.rmtree(runs_dir / run_id, ignore_errors=True)


def tail(path: str | Path, lines: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
