"""What a failed shell step's log says: the families it is read with (its adapter command's, its sub-project's
library), its findings and excerpt against the step's last passing log, and what its JUnit reports add; the
excerpt itself (excerpt.py) knows nothing of steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .excerpt import GENERIC_FAMILIES, explain, read_text
from .libraries import library_of
from .names import home, split

if TYPE_CHECKING:
    from .parse import Family


def last_passing_log(runs_dir: Path, intent: str, before: str | None = None, most_runs: int = 20) -> Path | None:
    """The log of the latest run other than `before` (the current one) in which this step ran and passed."""
    from .record import list_runs

    def written(run_id: str) -> int:
        try:
            return (runs_dir / run_id / "events.jsonl").stat().st_mtime_ns
        except OSError:
            return 0

    # newest first by when each run last wrote: two runs started in the same second have ids in no order
    runs = sorted((r for r in list_runs(runs_dir) if r != before), key=written, reverse=True)
    needle = json.dumps(intent)
    for run_id in runs[:most_runs]:
        try:
            with open(runs_dir / run_id / "events.jsonl", encoding="utf-8") as f:
                for line in f:
                    if needle not in line or '"ran"' not in line:
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if (
                        event.get("event") == "step_finished"
                        and event.get("intent") == intent
                        and event.get("status") == "ran"
                        and event.get("log")
                        and Path(event["log"]).is_file()
                    ):
                        return Path(event["log"])
        except OSError:
            continue
    return None


def step_command(spec, intent) -> tuple[str, tuple[str, ...]]:
    """The line a shell step runs and the families its log is read with: those of the adapter command it
    runs (steps/shell.py's command_line), else the generic ones; and the project's family of its tool."""
    line: str = intent.run or ""
    names: tuple[str, ...] = GENERIC_FAMILIES
    cmd = _adapter_command(spec, intent)
    if cmd is not None:
        line = cmd.run
        names = tuple(cmd.parse) or names
    from .identify import with_own_family

    return line, with_own_family(spec.root, line, names, split(intent.name)[0])


def step_families(spec, intent) -> list[Family]:
    """The families a shell step's log is read with; none when the library cannot be loaded (a broken project
    regex must not hide the failure itself)."""
    from .errors import RunnerError

    _line, names = step_command(spec, intent)
    try:
        library = library_of(spec, intent.name)
        return [library.family(name) for name in names if name in library.families]
    except RunnerError:
        return []


def explain_step(spec, intent, log: str | Path | None, runs_dir: Path, run_id: str) -> dict:
    """The event fields of a failed shell step: findings and excerpt of its log, against the step's last
    passing log when a recorded run has one; what its reports say even when it printed nothing."""
    text = read_text(log) if log else ""
    if not text:
        return reports_into({}, spec, intent, run_id)
    passing = last_passing_log(runs_dir, intent.name, before=run_id)
    # the log opens with the runner's own "$ command" (steps/shell.py), not with what the command printed
    line, names = step_command(spec, intent)
    skip = len(f"$ {line}".splitlines()) if text.startswith("$ ") else 0
    passed = read_text(passing) if passing else None
    out = explain(text, log_families(spec, names, text, intent.name), passed, skip=skip)
    return reports_into(out, spec, intent, run_id)


def reports_into(out: dict, spec, intent, run_id: str) -> dict:
    """A failed step's event fields with what its JUnit reports say (reports.py), when it has any."""
    patterns = intent.reports or _command_reports(spec, intent)
    if not patterns:
        return out
    from . import reports

    return reports.into(out, reports.read(spec.root, intent.cwd, patterns, since=reports.run_started(run_id)))


def _command_reports(spec, intent) -> tuple[str, ...]:
    """The reports the adapter command a step runs writes by default (its `reports`), or none."""
    cmd = _adapter_command(spec, intent)
    return cmd.reports if cmd is not None else ()


def _adapter_command(spec, intent):
    """The adapter command a shell step runs (resolved from its sub-project's folder), or None."""
    from .errors import RunnerError

    if not (intent.adapter and intent.run):
        return None
    from .adapters import resolve

    try:
        return resolve(intent.adapter, Path(home(spec.root, intent.name)), spec.adapters).commands.get(intent.run)
    except RunnerError:  # adapter = "auto" that detects nothing: the step failed on that, its log is empty
        return None


def log_families(spec, names: tuple[str, ...], text: str, name: str = "") -> list[Family]:
    """The families a failed step's log is read with: its command's, and the test runners whose identifying lines
    the log holds (`npm test`, `make test`, a plain run line name none); none when the library cannot be loaded."""
    from .errors import RunnerError
    from .identify import families

    try:
        return families(library_of(spec, name), names, text)
    except RunnerError:
        return []
