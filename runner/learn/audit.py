"""The audit's figures over the recorded runs, as data: parse success, cache hits, model calls and tokens (spent and
saved), verify at the first attempt, approvals and the most frequent failure signatures, each beside the previous
window of as many runs.

Every figure is counted per run from the run's own record (events.jsonl, its logs, its attempts' verify logs and
approvals.jsonl) and summed over a window; a failed step's log is read again with today's library (as mining does),
and, beside it, with the library as it was when the window started (library_at): what learning gained.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from runner.learn.induce import template_of
from runner.learn.mine import FAILURE_KINDS, Reader, RunView, Section, command_failed, recorded_runs, runs_since

TOP = 10  # failure signatures shown
SIGNATURE_LINES = 1  # a failure no line of which looks like anything is known by its last line

# the figures in the order they are shown: (name, label); a rate's "of" is its denominator
FIGURES = (
    ("parse_success_rate", "parse success rate"),
    ("parse_success_rate_at_start", "  with the library at the window's start"),
    ("cache_hit_rate", "cache hit rate"),
    ("model_calls", "model calls"),
    ("tokens", "tokens spent"),
    ("saved_model_calls", "model calls the cache saved"),
    ("saved_tokens", "tokens the cache saved"),
    ("remote_saved_model_calls", "model calls the remote cache saved"),
    ("remote_saved_seconds", "step-seconds the remote cache saved"),
    ("verify_first_pass_rate", "verify passed at the first attempt"),
    ("edits_kept", "people's edits kept as versions"),
    ("approvals_asked", "approvals asked"),
    ("approvals_approved", "approved"),
    ("approvals_rejected", "rejected"),
    ("approvals_pending", "pending"),
)
RATES = {"parse_success_rate", "parse_success_rate_at_start", "cache_hit_rate", "verify_first_pass_rate"}
DECIDED = ("ran", "cached", "restored", "failed", "blocked")  # skipped: never decided (a dependency failed)


@dataclass
class Counts:
    """One run's (or a window's) counts; the figures are made from them."""

    explained: int = 0  # failed steps whose log the library explained
    failed_with_log: int = 0
    statuses: Counter = field(default_factory=Counter)  # decided steps (no aggregates) by status
    calls: int = 0  # attempts: one worker call each
    tokens: int = 0
    saved_steps: int = 0  # agent steps served from the cache
    saved_calls: int = 0
    saved_tokens: int = 0
    unattributed: int = 0  # of those, served by a run no longer recorded: what it cost is unknown
    remote_hits: int = 0  # steps the shared remote cache served (run_finished's `remote`)
    remote_calls: int = 0  # the model calls its records say they cost
    remote_seconds: float = 0.0  # the step-seconds its records say they took
    first_attempts: int = 0  # first attempts whose change reached the verify commands
    first_passed: int = 0
    approvals: Counter = field(default_factory=Counter)  # asked, approved, rejected, pending, dropped
    kept: int = 0  # agent steps whose output a person edited, kept as the intent's next version (runner/edits.py)
    signatures: dict[str, Signature] = field(default_factory=dict)

    def add(self, other: Counts) -> None:
        for name in ("explained", "failed_with_log", "calls", "tokens", "saved_steps", "saved_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("saved_tokens", "unattributed", "first_attempts", "first_passed", "remote_hits", "remote_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.remote_seconds += other.remote_seconds
        self.kept += other.kept
        self.statuses.update(other.statuses)
        self.approvals.update(other.approvals)
        for template, sig in other.signatures.items():
            mine = self.signatures.setdefault(template, Signature(template, example=sig.example))
            mine.count += sig.count
            mine.steps |= sig.steps

    def figures(self) -> dict[str, dict]:
        hits = self.statuses["cached"] + self.statuses["restored"]
        decided = sum(self.statuses[s] for s in DECIDED)
        return {
            "parse_success_rate": _rate(self.explained, self.failed_with_log, explained=self.explained),
            "cache_hit_rate": _rate(
                hits,
                decided,
                hits=hits,
                **{s: self.statuses[s] for s in DECIDED},
            ),
            "model_calls": {"value": self.calls},
            "tokens": {"value": self.tokens},
            "saved_model_calls": {
                "value": self.saved_calls,
                "steps": self.saved_steps,
                "unattributed": self.unattributed,
            },
            "saved_tokens": {"value": self.saved_tokens},
            "remote_saved_model_calls": {"value": self.remote_calls, "steps": self.remote_hits},
            "remote_saved_seconds": {"value": round(self.remote_seconds, 3)},
            "verify_first_pass_rate": _rate(self.first_passed, self.first_attempts, passed=self.first_passed),
            "edits_kept": {"value": self.kept},
            "approvals_asked": {"value": self.approvals["asked"]},
            "approvals_approved": {"value": self.approvals["approved"]},
            "approvals_rejected": {"value": self.approvals["rejected"]},
            "approvals_pending": {"value": self.approvals["pending"], "dropped": self.approvals["dropped"]},
        }


@dataclass
class Signature:
    """Failure lines with one template: how many failures showed it, in which steps, and one of its lines."""

    template: str
    count: int = 0
    steps: set[str] = field(default_factory=set)
    example: str = ""


def _rate(part: int, whole: int, **parts: int) -> dict:
    return {"value": round(part / whole, 4) if whole else None, **parts, "of": whole}


# ---------------------------------------------------------------------------------------------------------------
# One run


class _Produced:
    """What each agent step's last verified result cost, walking the runs in order: a cache hit later is a
    model call saved, at that cost. A run's events do not name the key a hit was served for, so a step whose
    inputs went back to an earlier state is credited with its latest result's cost."""

    def __init__(self) -> None:
        self.cost: dict[str, tuple[int, int]] = {}  # step -> (calls, tokens)

    def note(self, e: dict) -> None:
        agent = e.get("agent")
        if not agent or e.get("status") not in ("ran", "blocked"):
            return
        if any(c.get("verified") for c in agent.get("candidates", ())):
            self.cost[e["intent"]] = (int(agent.get("attempts", 0)), int(agent.get("tokens", 0)))


def _approvals(view: RunView, pending: dict[str, dict]) -> Counter:
    """The questions this run asked before applying a verified change, by how they ended: answered on the
    terminal or by `runner approve` (the last line for a step wins), still pending, or dropped (the change
    waiting was replaced by a newer one, or removed, before anyone answered)."""
    path = view.reader.runs_dir / view.run_id / "approvals.jsonl"
    answers: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return Counter()
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if isinstance(entry, dict) and entry.get("intent") and entry.get("answer"):
            answers[str(entry["intent"])] = str(entry["answer"])
    out: Counter = Counter(asked=len(answers))
    for step, answer in answers.items():
        if answer == "pending" and (pending.get(step) or {}).get("run_id") != view.run_id:
            answer = "dropped"
        out[answer] += 1
    return out


def _failure_lines(section: Section) -> list[str]:
    """A failure's signature lines: each line the library read as a failing test, a diagnostic or a cause; when
    it read none, the first line that looks like a diagnostic (a traceback's frames would each count as one
    more signature), else the last line."""
    matched = [line for line, kinds in zip(section.lines, section.kinds, strict=True) if kinds & FAILURE_KINDS]
    if matched:
        return matched
    return [section.lines[i] for i in section.failure_lines(SIGNATURE_LINES)][:1]


def _note_failure(counts: Counts, step: str, lines: list[str]) -> None:
    """One failure: each template among its lines counts once."""
    seen = set()
    for line in lines:
        if not line.strip():
            continue
        template = template_of(line.strip())
        if template in seen:
            continue
        seen.add(template)
        sig = counts.signatures.setdefault(template, Signature(template, example=line.strip()))
        sig.count += 1
        sig.steps.add(step)


def _first_line(text: str | None) -> list[str]:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[:1]


def _count_run(view: RunView, produced: _Produced, pending: dict[str, dict]) -> Counts:
    c = Counts()
    reader = view.reader
    failed_attempts: set[str] = set()  # agent steps with a failed attempt in this run: their failures are those
    for (step, _candidate), tries in sorted(view.attempts.items()):
        for a in tries:
            c.calls += 1
            c.tokens += int(a.get("tokens") or 0)
            if a["attempt"] == 1 and view.verify_ran(a):
                c.first_attempts += 1
                c.first_passed += bool(a["ok"])
            if a["ok"] or a.get("kind") == "interrupted":
                continue
            failed_attempts.add(step)
            if view.failed_at_verify(a):
                sections = view.verify_sections(a)
                _note_failure(c, step, _failure_lines(sections[-1]) if sections else _first_line(a.get("error")))
            else:
                _note_failure(c, step, _first_line(a.get("error")))
    for e in view.steps:
        step, status = e["intent"], e.get("status")
        kind = reader.kind_of(step)
        is_agent = kind == "agent" or "agent" in e
        if kind == "aggregate" or any(r.startswith("aggregate of ") for r in e.get("reasons", ())):
            continue  # an aggregate runs nothing: it is neither a hit nor a miss
        if status in DECIDED:
            c.statuses[status] += 1
        elif status == "kept":  # neither a hit nor a miss: no cache served it, nothing ran
            c.kept += 1
        if is_agent:
            if status in ("cached", "restored"):
                c.saved_steps += 1
                cost = produced.cost.get(step)
                if cost is None:
                    c.unattributed += 1
                else:
                    c.saved_calls += cost[0]
                    c.saved_tokens += cost[1]
            produced.note(e)
        if status != "failed" or e.get("interrupted"):
            continue
        section = view.failure_log(e)
        if section is not None and (is_agent or command_failed(e)):
            c.failed_with_log += 1
            c.explained += section.explained
            if not is_agent:
                _note_failure(c, step, _failure_lines(section))
        elif not (is_agent and step in failed_attempts):
            _note_failure(c, step, _first_line(e.get("error")))
    for e in view.events:
        remote = e.get("remote") if e.get("event") == "run_finished" else None
        if isinstance(remote, dict):
            c.remote_hits += int(remote.get("hits") or 0)
            c.remote_calls += int(remote.get("saved_attempts") or 0)
            c.remote_seconds += float(remote.get("saved_seconds") or 0.0)
    c.approvals = _approvals(view, pending)
    return c


# ---------------------------------------------------------------------------------------------------------------
# The library as it was


def library_at(library, runs: list[str], first: str):
    """The library as it was when run `first` started: a pattern the gate promoted after an earlier run is active
    only from the run after it (`active_after`), and one it retired from active (`retired_after`) was active
    until then; candidates were used by no run. Run ids order as the recorded runs do (a run no longer recorded:
    by its time)."""
    from dataclasses import replace

    from runner.parse import Family, Library

    order = {run: i for i, run in enumerate(runs)}
    gates: dict[str, dict[str, dict]] = {}  # file -> pattern -> its [pattern.gate]

    def before(run: str | None) -> bool:  # the run is earlier than `first`: what it changed was in place then
        if not run:
            return True
        if run in order and first in order:
            return order[run] < order[first]
        return run[:15] < first[:15]

    families = {}
    for name, fam in library.families.items():
        patterns = []
        for p in fam.patterns:
            gate = _gate_of(p, gates)
            was_active = (p.stage == "active" and before(gate.get("active_after"))) or (
                p.stage == "retired"
                and gate.get("retired_after") is not None
                and not before(gate.get("retired_after"))
                and before(gate.get("active_after"))
            )
            patterns.append(replace(p, stage="active" if was_active else "retired"))
        then = Family(name, patterns, fam.description, fam.file)
        then.identify = fam.identify
        families[name] = then
    return Library(families)


def _gate_of(pattern, gates: dict[str, dict[str, dict]]) -> dict:
    """A project pattern's [pattern.gate] table, read from its file (the library keeps no gate but weight)."""
    from runner import toml_read

    if not pattern.file or not pattern.file.endswith(".toml"):
        return {}
    cache = gates.setdefault(pattern.file, {})
    if not cache:
        try:
            doc = toml_read.loads(Path(pattern.file).read_text(encoding="utf-8"))
        except (OSError, toml_read.TOMLDecodeError):
            doc = {}
        cache.update({t["name"]: dict(t.get("gate", {})) for t in doc.get("pattern", ()) if "name" in t} or {"": {}})
    return cache.get(pattern.name, {})


# ---------------------------------------------------------------------------------------------------------------
# The report


def _span(runs: list[str]) -> dict | None:
    return {"count": len(runs), "first": runs[0], "last": runs[-1]} if runs else None


def _trend(value, previous):
    if value is None or previous is None:
        return None
    return round(value - previous, 4) if isinstance(value, float) or isinstance(previous, float) else value - previous


def audit(root: Path, since: str | None = None, top: int = TOP, each=None) -> dict:
    """The audit of the runs since the run whose id starts with `since` (default: every recorded run) beside the
    previous window of as many runs: one JSON object (runner/schemas/audit.json). `each(run_id, figures)`, if
    given, is told each run's own figures as the walk counts it (the learning page's charts, runner/web)."""
    from runner.apply import load_pending

    reader = Reader(root)
    runs = recorded_runs(reader.root)
    start = runs_since(runs, since)
    window, previous = runs[start:], runs[max(0, start - (len(runs) - start)) : start]
    # the library as it was at the window's start: the root's, and each sub-project's that has regexes/ of its own
    then = Reader(root, as_of=(lambda library: library_at(library, runs, window[0])) if window else None)
    pending = load_pending(reader.root / ".runner")
    produced = _Produced()
    now, before = Counts(), Counts()
    for i, run_id in enumerate(runs[: start + len(window)]):
        counted = _count_run(reader.run(run_id), produced, pending)  # earlier runs too: what a hit saved
        if each is not None:
            each(run_id, counted.figures())
        if i >= start:
            now.add(counted)
        elif run_id in previous:
            before.add(counted)
    at_start = Counts()
    for run_id in window:  # the window's failed steps read again with the library as it was at its start
        at_start.add(_count_run(then.run(run_id), _Produced(), pending))
    figures = now.figures()
    figures = {
        "parse_success_rate": figures.pop("parse_success_rate"),
        "parse_success_rate_at_start": at_start.figures()["parse_success_rate"],
        **figures,
    }
    earlier = before.figures() if previous else None
    for name, figure in figures.items():
        figure["previous"] = earlier[name]["value"] if earlier and name in earlier else None
        figure["trend"] = _trend(figure["value"], figure["previous"])
    ranked = sorted(now.signatures.values(), key=lambda s: (-s.count, s.template))[:top]
    signatures = []
    for sig in ranked:
        was = before.signatures.get(sig.template)
        prev = (was.count if was else 0) if previous else None
        signatures.append(
            {
                "template": sig.template,
                "count": sig.count,
                "steps": sorted(sig.steps),
                "example": sig.example,
                "previous": prev,
                "trend": _trend(sig.count, prev),
            }
        )
    return {
        "runs": _span(window) or {"count": 0, "first": None, "last": None},
        "previous": _span(previous),
        "figures": figures,
        "signatures": signatures,
    }


# ---------------------------------------------------------------------------------------------------------------
# For humans


def _value(name: str, figure: dict, value) -> str:
    if value is None:
        return "n/a"
    if name in RATES:
        return f"{value * 100:.0f}%"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _detail(name: str, figure: dict) -> str:
    if name in ("parse_success_rate", "parse_success_rate_at_start"):
        return f"{figure['explained']} of {figure['of']} failed steps with a log"
    if name == "cache_hit_rate":
        return f"{figure['hits']} of {figure['of']} steps"
    if name == "verify_first_pass_rate":
        return f"{figure['passed']} of {figure['of']} first attempts"
    if name == "saved_model_calls":
        extra = f", {figure['unattributed']} from runs no longer recorded" if figure["unattributed"] else ""
        return f"{figure['steps']} agent steps from the cache{extra}"
    if name == "remote_saved_model_calls":
        return f"{figure['steps']} steps from the remote cache"
    if name == "approvals_pending" and figure["dropped"]:
        return f"{figure['dropped']} dropped unanswered"
    return ""


def _trend_text(name: str, trend) -> str:
    if trend is None:
        return ""
    if trend == 0:
        return "0 pts" if name in RATES else "0"
    if name in RATES:
        return f"{trend * 100:+.0f} pts"
    return f"{trend:+,}"


def render(report: dict) -> str:
    """A compact table: the figures, then the top failure signatures."""
    runs, previous = report["runs"], report["previous"]
    if not runs["count"]:
        return "no runs recorded yet in .runner/runs: run `runner make` first"
    lines = [f"{runs['count']} runs: {runs['first']} .. {runs['last']}"]
    if previous:
        lines.append(f"previous window: {previous['count']} runs: {previous['first']} .. {previous['last']}")
    else:
        lines.append("previous window: none (no earlier window)")
    rows: list[tuple[str, ...]] = [("", "this window", "previous", "trend", "")]
    for name, label in FIGURES:
        f = report["figures"][name]
        if name.startswith("remote_") and not f["value"] and not f["previous"]:
            continue  # a project without a shared cache is not shown its rows
        label = label if not name.startswith("approvals_") or name == "approvals_asked" else f"  {label}"
        rows.append(
            (
                label,
                _value(name, f, f["value"]),
                _value(name, f, f["previous"]) if previous else "",
                _trend_text(name, f["trend"]),
                _detail(name, f),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        text = f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}  {r[4]}"
        lines.append(text.rstrip())
    lines.append("")
    if not report["signatures"]:
        lines.append("failure signatures: none")
        return "\n".join(lines)
    lines.append("top failure signatures:")
    sig_rows: list[tuple[str, ...]] = [("count", "trend", "steps", "signature")]
    for s in report["signatures"]:
        sig_rows.append((str(s["count"]), _trend_text("", s["trend"]), ", ".join(s["steps"]), s["template"]))
    w = [max(len(r[i]) for r in sig_rows) for i in range(3)]
    for r in sig_rows:
        lines.append(f"  {r[0]:>{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]}".rstrip())
    return "\n".join(lines)
