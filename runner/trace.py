"""A run's timeline as Chrome trace-event JSON (what Perfetto and chrome://tracing open, as Bazel's --profile)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .timeline import Timeline

_PID = 1
_CANDIDATE_TRACKS = 1000  # candidate N>1 of the step on slot S: track (S+1)*1000+N, beside the slot's own


def _us(seconds: float) -> int:
    return int(round(seconds * 1_000_000))


def trace_events(timeline: Timeline) -> dict:
    """One complete event ("ph": "X") per step on its job slot's track, named by its intent; its agent attempts
    nested inside (candidate 1 on the slot's track, each other candidate, which ran side by side with it, on a
    track of its own below), each attempt's verify commands inside the attempt."""
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": _PID, "tid": 0, "args": {"name": f"runner make {timeline.run_id}"}}
    ]
    for slot in range(timeline.jobs):
        events += _track(slot, f"slot {slot}", slot * _CANDIDATE_TRACKS)
    tracks = {slot for slot in range(timeline.jobs)}
    end_of_run = timeline.duration
    for step in timeline.steps.values():
        end = step.end if step.end is not None else max(end_of_run, step.start)
        args = {"status": step.status, **_step_args(step.finished)}
        events.append(_slice(step.intent, "step", step.start, end, step.slot, args))
        for attempt in step.attempts:
            tid = step.slot
            if attempt.candidate > 1:
                tid = (step.slot + 1) * _CANDIDATE_TRACKS + attempt.candidate
                if tid not in tracks:
                    tracks.add(tid)
                    name = f"slot {step.slot} candidate {attempt.candidate}"
                    events += _track(tid, name, step.slot * _CANDIDATE_TRACKS + attempt.candidate)
            verdict = "verified" if attempt.ok else f"rejected ({attempt.kind})"
            label = f"{step.intent} candidate {attempt.candidate} attempt {attempt.number}"
            a_args = {"verdict": verdict, "tokens": attempt.tokens, "folder": str(attempt.folder)}
            if attempt.error:
                a_args["error"] = attempt.error
            # an attempt's `at` and a step's are separate clock reads: held inside the step so the slices nest
            a_start, a_end = max(attempt.start, step.start), min(attempt.end, end)
            events.append(_slice(label, "attempt", a_start, a_end, tid, a_args))
            for v in attempt.verify:
                v_args = {"command": v.command, "exit_code": v.exit_code}
                events.append(
                    _slice(f"verify {v.name}", "verify", max(v.start, a_start), min(v.end, a_end), tid, v_args)
                )
    other = {"run_id": timeline.run_id, "started": timeline.started, "jobs": timeline.jobs}
    if timeline.finished is not None:
        other["status"] = timeline.finished.get("status")
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def _track(tid: int, name: str, order: int) -> list[dict]:
    """A track's name and its place among the others (candidates' tracks right below their slot's)."""
    return [
        {"name": "thread_name", "ph": "M", "pid": _PID, "tid": tid, "args": {"name": name}},
        {"name": "thread_sort_index", "ph": "M", "pid": _PID, "tid": tid, "args": {"sort_index": order}},
    ]


def _slice(name: str, category: str, start: float, end: float, tid: int, args: dict) -> dict:
    return {
        "name": name,
        "cat": category,
        "ph": "X",
        "ts": _us(start),
        "dur": max(0, _us(end) - _us(start)),
        "pid": _PID,
        "tid": tid,
        "args": args,
    }


def _step_args(finished: dict) -> dict:
    """What a step slice's details show: why it ran and how it ended, as its step_finished said."""
    keep = ("reasons", "error", "exit_code", "log", "worker", "attempts", "usage")
    return {k: finished[k] for k in keep if finished.get(k) is not None}


def write(timeline: Timeline, path: Path) -> int:
    """Write the trace to `path` whole or not at all; the number of step slices."""
    trace = trace_events(timeline)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(trace), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return sum(1 for e in trace["traceEvents"] if e.get("cat") == "step")
