"""A recorded run as a timeline: each step that ran on its job slot, from when to when, its agent attempts and their
verify commands inside it, and the critical path; read from the run's events alone (the trace, report and serve
draw it)."""

from __future__ import annotations

import json
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_EPSILON = 0.002  # events are stamped to the millisecond: two moments this close are the same one


@dataclass
class Verify:
    """One verify command of an attempt, as the attempt's verify.jsonl recorded it."""

    name: str
    command: str
    start: float  # seconds since the run began
    end: float
    exit_code: int | None


@dataclass
class Attempt:
    candidate: int
    number: int
    start: float
    end: float
    ok: bool
    kind: str | None
    error: str | None
    tokens: int
    folder: Path
    verify: list[Verify] = field(default_factory=list)


@dataclass
class Step:
    """A step that started in the run (it has a step_started): `end` None while it runs (a live run) or when the
    run was killed before it ended."""

    intent: str
    slot: int
    start: float
    end: float | None = None
    status: str = "running"
    finished: dict = field(default_factory=dict)  # its step_finished event
    attempts: list[Attempt] = field(default_factory=list)


@dataclass
class Timeline:
    run_id: str
    started: str | None  # run_started's wall-clock start (UTC, ISO 8601)
    jobs: int
    steps: dict[str, Step]  # in the order they started
    outcomes: dict[str, str]  # every step the run reported: intent -> status (cached, skipped, ... included)
    finished: dict | None  # run_finished; None while the run goes on, or when it was killed
    untimed: bool  # recorded before runner stamped its events with `at`: nothing to place on a timeline

    @property
    def duration(self) -> float:
        if self.finished is not None:
            return float(self.finished.get("duration", 0.0))
        return max((s.end if s.end is not None else s.start for s in self.steps.values()), default=0.0)


def build(run_dir: Path, events: list[dict]) -> Timeline:
    """The timeline of the run recorded in `run_dir` whose events are `events` (record.read_events)."""
    reading = Reading(run_dir)
    for e in events:
        reading.add(e)
    return reading.timeline()


class Reading:
    """A run's timeline read event by event: a recorded run's all at once (build), a run's as it goes (its spans
    sent as each step ends, runner/telemetry.py)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.head: dict = {}
        self.steps: dict[str, Step] = {}
        self.outcomes: dict[str, str] = {}
        self.finished: dict | None = None
        self._attempts_started: dict[tuple[str, int, int], float] = {}
        self._untimed = False
        self._epoch: float | None = None

    def add(self, e: dict) -> Step | None:
        """Read one event; the step it ended, when it ended one that started in the run."""
        kind = e.get("event")
        if kind == "step_started":
            if "at" not in e:
                self._untimed = True
                return None
            self.steps[e["intent"]] = Step(e["intent"], int(e.get("slot", 0)), float(e["at"]))
        elif kind == "step_finished":
            self.outcomes[e["intent"]] = e["status"]
            step = self.steps.get(e["intent"])
            if step is not None:
                step.status, step.finished = e["status"], e
                step.end = float(e["at"]) if "at" in e else step.start + float(e.get("duration", 0.0))
                return step
        elif kind == "attempt_started" and "at" in e:
            self._attempts_started[(e["intent"], e["candidate"], e["attempt"])] = float(e["at"])
        elif kind == "attempt_finished" and "at" in e:
            end = float(e["at"])
            start = self._attempts_started.get((e["intent"], e["candidate"], e["attempt"]), end - float(e["seconds"]))
            folder = self.run_dir / "attempts" / e["intent"] / f"c{e['candidate']}-a{e['attempt']}"
            attempt = Attempt(
                e["candidate"], e["attempt"], start, end, e["ok"], e["kind"], e["error"], e["tokens"], folder
            )
            attempt.verify = _verify_commands(folder, self._epoch)
            if e["intent"] in self.steps:
                self.steps[e["intent"]].attempts.append(attempt)
        elif kind == "run_finished":
            self.finished = e
        elif kind == "run_started" and not self.head:
            self.head = e
            self._epoch = epoch_of(e.get("started"))
        return None

    def timeline(self) -> Timeline:
        head = self.head
        return Timeline(
            run_id=self.run_dir.name,
            started=head.get("started"),
            jobs=int(head.get("jobs", 1)),
            steps=self.steps,
            outcomes=self.outcomes,
            finished=self.finished,
            untimed=self._untimed and not self.steps,
        )


def epoch_of(started: str | None) -> float | None:
    """run_started's `started` as seconds since the epoch (None: not recorded)."""
    if not started:
        return None
    try:
        return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _verify_commands(folder: Path, run_epoch: float | None) -> list[Verify]:
    """The verify commands an attempt ran, from its verify.jsonl (wall-clock times: the commands may have run on
    another machine's process); none when the run's start or the file is unknown."""
    if run_epoch is None:
        return []
    try:
        text = (folder / "verify.jsonl").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            v = json.loads(line)
            start = max(0.0, float(v["began"]) - run_epoch)
            found.append(Verify(v["name"], v["command"], start, start + float(v["seconds"]), v.get("exit_code")))
        except (ValueError, KeyError, TypeError):
            break  # an attempt killed mid-write: the lines before it stand
    return found


def critical_path(timeline: Timeline, deps: dict[str, list[str]] | None = None) -> list[str]:
    """The chain of steps that decided the run's length, first to last: from the step that ended last, back
    through the dependency that ended last before it started (as Bazel's critical path). `deps`: the spec's
    dependencies (aggregates seen through); without them, the step that ended last before it started on any
    slot stands for its dependency."""
    ended = [s for s in timeline.steps.values() if s.end is not None]
    if not ended:
        return []
    step = max(ended, key=lambda s: s.end or 0.0)
    path = [step.intent]
    seen = {step.intent}
    while True:
        before = [timeline.steps[d] for d in ran_deps(step.intent, deps, timeline.steps)] if deps is not None else ended
        candidates = [
            s for s in before if s.intent not in seen and s.end is not None and s.end <= step.start + _EPSILON
        ]
        if not candidates:
            break
        step = max(candidates, key=lambda s: s.end or 0.0)
        path.append(step.intent)
        seen.add(step.intent)
    path.reverse()
    return path


def ran_deps(name: str, deps: Mapping[str, Sequence[str]], ran: Container[str]) -> set[str]:
    """The steps of `ran` that `name` waited for: a dependency that is not among them (an aggregate, a cached
    step) stands for its own dependencies."""
    found: set[str] = set()
    stack = list(deps.get(name, ()))
    seen: set[str] = set()
    while stack:
        d = stack.pop()
        if d in seen:
            continue
        seen.add(d)
        if d in ran:
            found.add(d)
        else:
            stack.extend(deps.get(d, ()))
    return found
