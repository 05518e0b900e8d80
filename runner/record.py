"""The append-only run log: .runner/runs/<id>/events.jsonl, per-step logs, and readers for `runner log`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .names import stored
from .nospace import is_no_space

KEEP_RUNS = 50


def new_run_id() -> str:
    """The time to the second, then the microseconds (5 hex digits) and 4 random bits: runs started within
    one second sort in the order they started, as `runner log` (the last run) and pruning read them."""
    now = time.time()
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now % 1 * 1e6):05x}{os.urandom(1)[0] & 15:x}"


def utc_stamp(seconds: float) -> str:
    """The wall-clock time `seconds` (time.time()) in UTC, ISO 8601 to the millisecond: run_started's `started`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


class RunRecord:
    """One run's folder. Events are flushed before the run waits for anything, so a killed run leaves a
    readable log that is behind by at most what one pass of the scheduler emitted.

    A full disk does not lose them: what a write could not take waits, whole lines and the rest of a line cut
    short alike, for the next flush (a failed step's outputs, deleted, may have made room meanwhile). What is
    still unwritten at close() is said by `unwritten` (the events file): the run then ends saying so."""

    def __init__(self, runs_dir: Path, run_id: str | None = None):
        self.run_id = run_id or new_run_id()
        self.dir = runs_dir / self.run_id
        logs = self.dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self._logs = str(logs) + os.sep
        self.path = str(self.dir / "events.jsonl")
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._lines: list[str] = []  # emitted since the last flush
        self._unwritten = b""  # what a full disk refused: written first at the next flush
        self.unwritten: str | None = None  # the events file, when close() could not write all of it

    def emit(self, event: dict, line: str | None = None) -> str:
        """Append the event (`line`: its JSON, if known); returns the JSON line for whoever prints it too.
        Written out by flush(), which the scheduler calls before it waits for anything."""
        line = line or json.dumps(event)
        self._lines.append(line)
        return line

    def flush(self) -> bool:
        """Write what was emitted; False when a full disk left some of it for a later flush."""
        if self._lines:
            self._lines.append("")  # the last line's newline
            self._unwritten += "\n".join(self._lines).encode()
            self._lines.clear()
        while self._unwritten and self._fd is not None:
            try:
                written = os.write(self._fd, self._unwritten)
            except OSError as exc:
                if not is_no_space(exc):
                    raise
                return False
            self._unwritten = self._unwritten[written:]
        return True

    def write_lines(self, text: str) -> None:
        """Append events already serialized, one a line (cached steps in bulk), written out by flush()."""
        self._lines.append(text)

    def log_path(self, intent: str) -> str:
        return f"{self._logs}{stored(intent)}.log"  # asked at every step's start: a string, not a Path (~20 us)

    def close(self) -> None:
        if self._fd is None:
            return
        try:
            if not self.flush():
                self.unwritten = self.path
        finally:
            os.close(self._fd)
            self._fd = None


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
        except OSError:  # not a run's folder, or one this user may not read: no run to list
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
    with open(runs_dir / run_id / "events.jsonl", encoding="utf-8", errors="replace") as f:  # damage: not JSON
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


def step_runs(runs_dir: Path, run_id: str, intent: str) -> list[dict]:
    """The events of `intent` in one run (its name, quoted, picks the lines to parse: a 10,000-step run's
    record is mostly other steps)."""
    needle = f'"intent": {json.dumps(intent)}'
    found = []
    with open(runs_dir / run_id / "events.jsonl", encoding="utf-8", errors="replace") as f:
        for line in f:
            if needle in line:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    break  # the torn last line of a killed run
    return [e for e in found if e.get("intent") == intent]


def last_run_of(runs_dir: Path, intent: str) -> tuple[str | None, bool]:
    """(the newest recorded run in which `intent` ran, or None; whether any recorded run names it at all).
    A step ran in a run that started it: a cached step's run holds no log of it, its last log is older."""
    named = False
    for run_id in reversed(list_runs(runs_dir)):
        events = step_runs(runs_dir, run_id, intent)
        named = named or bool(events)
        if any(e.get("event") == "step_started" for e in events):
            return run_id, True
    return None, named


def attempts_of(run_dir: Path, events: list[dict]) -> dict[str, list[dict]]:
    """intent -> its agent attempts in a run (attempt_finished events), each with the folder holding its
    prompt, transcript, diff and verify log."""
    found: dict[str, list[dict]] = {}
    for e in events:
        if e.get("event") == "attempt_finished":
            folder = run_dir / "attempts" / stored(e["intent"]) / f"c{e['candidate']}-a{e['attempt']}"
            found.setdefault(e["intent"], []).append({**e, "folder": str(folder)})
    return found
