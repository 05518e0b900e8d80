"""What a page shows of a recorded run, gathered from its record (events, step logs, attempts) and the spec's
graph: the summary, the steps by layer, the timeline and critical path, the failures, the agent attempts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..excerpt import lines_of, read_text
from ..names import stored
from ..record import list_runs, read_events
from ..redact import Mask
from ..timeline import Attempt, Timeline, build, critical_path, ran_deps

LOG_LIMIT = 256 * 1024  # of a step's log a page holds: its end, where a failure says why


@dataclass
class Failure:
    intent: str
    error: str
    exit_code: int | None
    cause: str | None
    failed_tests: list[str]
    excerpt: list[tuple[int, str]]  # (line number, line) of the lines that explain it
    log: str | None


@dataclass
class AgentStep:
    intent: str
    status: str
    attempts: list[Attempt]
    drift: list[dict] = field(default_factory=list)


@dataclass
class RunData:
    run_id: str
    run_dir: Path
    events: list[dict]
    summary: dict  # status, counts, attempts, tokens, duration, started
    outcomes: dict[str, str]  # intent -> status, every step the run reported
    layers: list[list[str]]  # the reported steps by depth in the graph (one layer when the spec did not load)
    deps: dict[str, list[str]]  # of the reported steps, among them (aggregates seen through)
    timeline: Timeline
    critical: list[str]
    failures: list[Failure]
    agents: list[AgentStep]
    live: bool  # no run_finished yet: the run goes on (or was killed)


def summary_of(run_id: str, events: list[dict]) -> dict:
    """The runs page's row: the run's status, counts, attempts and tokens (a run still going counts what it
    reported so far)."""
    finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
    started = events[0] if events and events[0].get("event") == "run_started" else {}
    statuses = ("ran", "cached", "restored", "kept", "failed", "skipped", "blocked")
    if finished is not None:
        counts = {k: int(finished.get(k, 0)) for k in statuses}
    else:
        counts = dict.fromkeys(statuses, 0)
        for e in events:
            if e.get("event") == "step_finished" and e.get("status") in counts:
                counts[e["status"]] += 1
    tokens = sum(int(e.get("tokens", 0)) for e in events if e.get("event") == "attempt_finished")
    attempts = sum(1 for e in events if e.get("event") == "attempt_finished")
    return {
        "run_id": run_id,
        "status": finished["status"] if finished else "running",
        "started": started.get("started"),
        "steps": started.get("steps"),
        "jobs": started.get("jobs"),
        "duration": finished.get("duration") if finished else None,
        "target": finished.get("target") if finished else None,
        "attempts": attempts,
        "tokens": tokens,
        **counts,
    }


def runs(runs_dir: Path) -> list[dict]:
    """Every recorded run's summary, newest first."""
    found = []
    for run_id in reversed(list_runs(runs_dir)):
        try:
            found.append(summary_of(run_id, read_events(runs_dir, run_id)))
        except OSError:
            continue  # pruned while we read
    return found


def load(runs_dir: Path, run_id: str, graph: dict[str, tuple[str, ...]] | None, mask: Mask) -> RunData:
    """The run `run_id` as a page shows it; `graph`: the spec's dependencies (None: the spec did not load)."""
    run_dir = runs_dir / run_id
    events = read_events(runs_dir, run_id)
    timeline = build(run_dir, events)
    outcomes = dict(timeline.outcomes)
    for name in timeline.steps:  # started, not yet finished
        outcomes.setdefault(name, "running")
    deps = _among(outcomes, graph) if graph is not None else {}
    failures = [_failure(e, mask) for e in events if e.get("event") == "step_finished" and e["status"] == "failed"]
    agents = [
        AgentStep(s.intent, s.status, s.attempts, list(s.finished.get("drift") or ()))
        for s in timeline.steps.values()
        if s.attempts
    ]
    return RunData(
        run_id=run_id,
        run_dir=run_dir,
        events=events,
        summary=summary_of(run_id, events),
        outcomes=outcomes,
        layers=_layers(outcomes, deps) if graph is not None else [list(outcomes)],
        deps=deps,
        timeline=timeline,
        critical=critical_path(timeline, deps if graph is not None else None),
        failures=failures,
        agents=agents,
        live=timeline.finished is None,
    )


def _among(outcomes: dict[str, str], graph: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    """Each reported step's dependencies among the reported steps: an aggregate or a step the run did not report
    stands for its own dependencies."""
    return {name: sorted(ran_deps(name, graph, outcomes)) for name in outcomes}


def _layers(outcomes: dict[str, str], deps: dict[str, list[str]]) -> list[list[str]]:
    """The steps by depth: a step's layer is one more than its deepest dependency's."""
    depth: dict[str, int] = {}
    for name in outcomes:
        stack = [name]
        while stack:
            n = stack[-1]
            if n in depth:
                stack.pop()
                continue
            waiting = [d for d in deps.get(n, ()) if d not in depth]
            if waiting:
                stack.extend(waiting)
                continue
            depth[n] = 1 + max((depth[d] for d in deps.get(n, ())), default=-1)
            stack.pop()
    layers: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for name in outcomes:
        layers[depth[name]].append(name)
    return layers


def _failure(e: dict, mask: Mask) -> Failure:
    findings = e.get("findings") or {}
    excerpt: list[tuple[int, str]] = []
    log = e.get("log")
    if log and e.get("excerpt"):
        excerpt = [(k, mask.text(line)) for k, line in lines_of(read_text(log), e["excerpt"])]
    return Failure(
        intent=e["intent"],
        error=mask.text(str(e.get("error") or "")),
        exit_code=e.get("exit_code"),
        cause=mask.text(findings["cause"]) if findings.get("cause") else None,
        failed_tests=[mask.text(t) for t in findings.get("failed_tests", ())],
        excerpt=excerpt or [(0, mask.text(line)) for line in str(e.get("log_tail") or "").splitlines()],
        log=log,
    )


def step_log(run_dir: Path, intent: str, mask: Mask) -> tuple[str | None, bool]:
    """(the step's log as a page shows it, masked; whether its start was left out), or (None, False): no log."""
    path = run_dir / "logs" / f"{stored(intent)}.log"
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - LOG_LIMIT))
            data = f.read()
    except OSError:
        return None, False
    return mask.text(data.decode("utf-8", "replace")), size > LOG_LIMIT


def attempt_files(attempt: Attempt, mask: Mask) -> dict[str, str]:
    """An attempt's prompt, transcript (as a conversation), diff and verify log, each masked again as read."""
    from ..transcript import conversation

    found = {}
    for name in ("prompt.md", "transcript.jsonl", "diff.patch", "verify.log"):
        text = read_text(attempt.folder / name) if (attempt.folder / name).is_file() else ""
        if name == "transcript.jsonl" and text:
            text = "\n".join(conversation(text))
        found[name] = mask.text(text)
    return found


def project_view(directory: Path):
    """(the spec's dependencies, the mask of the project's secrets): the graph a page draws and what it hides. A
    spec that does not load leaves the graph out (None) and masks what the environment's names say is secret."""
    from ..errors import RunnerError
    from ..pipeline import load_project
    from ..redact import mask_for_run, secret_values

    try:
        project = load_project(directory)
    except RunnerError:
        return None, Mask(secret_values())
    return dict(project.compiled.deps), mask_for_run(project.spec)
