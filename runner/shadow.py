"""What candidate patterns find beside the active ones: on the log of every shell step that ran, each shadow or
canary pattern of the families that read it is compared with the active patterns, as GitHub's Scientist
compares a candidate with the control; the observations go to the run's gate.jsonl for `runner learn`'s gate.

An observation is one candidate on one step's log: what it found that the active patterns did not (gained), what
the active patterns found that it would take away (lost), and a check. A check fails on evidence of being wrong,
not only of time: the candidate loses an extraction, claims a line an active pattern of the same kind already
reads, reports a failure on a run whose command exited 0, reads a summary that says nothing failed on a run that
failed, gives a failed count that the failing tests named in the same log contradict (with the family's other
candidates beside it: the one whose absence leaves the log consistent, else the count), or disagrees with the
step's JUnit report where it has one. A family with no active pattern yet is judged by these checks alone.

Which runs use a canary: for a family that many steps read, the steps in its weight's slice (by the hash of each
step's key); where fewer steps read it in a run than one in the slice would need, whole runs (run_uses).
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

from .errors import RunnerError
from .excerpt import read_text
from .names import home, stored
from .parse import Family, Match, Pattern
from .redact import Mask
from .step_log import step_command, step_families

FAILURE_KINDS = ("summary", "failed_test")  # what a count check judges a candidate on

GATE_FILE = "gate.jsonl"
SHOWN = 5  # lines of evidence kept per observation


def observe(spec, run_dir: Path, steps: list[tuple[str, str | None, str, bool]], mask: Mask) -> int:
    """Record what the candidates find on these steps' logs ((name, slice key, log path, passed), in the order
    they finished: a shell step's log, or an agent step's attempts folder, whose verify logs are read); returns
    how many observations were written."""
    lines = []
    read: list[tuple[str, str | None, Path, list[tuple[str, list[Family], bool]]]] = []
    readers: dict[str, int] = {}  # family -> the steps of this run that it read
    for name, slice_key, log, passed in steps:
        logs = list(_logs(spec, spec.intents[name], Path(log), passed))
        read.append((name, slice_key, Path(log), logs))
        for fam in {f.name for _body, families, _ok in logs for f in families}:
            readers[fam] = readers.get(fam, 0) + 1
    by_run: dict[str, bool] = {}  # canary ref -> whether this run uses it, where runs are its slice
    for name, slice_key, path, logs in read:
        report = _report(spec, spec.intents[name], run_dir.name) if not path.is_dir() else None
        for body, families, ok in logs:
            for family in families:
                for candidate in family.candidates():
                    seen = compare(body, family, candidate, ok, report)
                    if candidate.stage == "canary" and readers[family.name] * candidate.weight < 100:
                        if candidate.ref not in by_run:
                            by_run[candidate.ref] = run_uses(run_dir, candidate)
                        used = by_run[candidate.ref]
                    else:
                        used = candidate.used_for(slice_key)
                    seen.update(step=name, stage=candidate.stage, used=used)
                    lines.append(mask.text(json.dumps(seen)))
    if lines:
        with open(run_dir / GATE_FILE, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return len(lines)


def run_uses(run_dir: Path, candidate: Pattern) -> bool:
    """Whether this run uses a canary whose slice is runs: the k-th run that observes it at its weight (since its
    last move) does when ceil(k * weight / 100) steps up, so the first run after a move does, then its weight's
    share of runs, spread evenly; deterministic, and the same on every machine that has the same records."""
    from .record import runs_after

    runs_dir = run_dir.parent
    k = 1 + sum(
        1
        for run in runs_after(runs_dir, candidate.since)
        if run != run_dir.name and any(o.get("pattern") == candidate.ref for o in read_observations(runs_dir / run))
    )
    weight = max(0, min(100, candidate.weight))
    return (k * weight + 99) // 100 > ((k - 1) * weight + 99) // 100


def _report(spec, intent, run_id: str) -> dict | None:
    """What the step's JUnit reports say (their counts and failing tests), where it declares any and they were
    written in this run; None otherwise."""
    try:
        from .step_log import reports_into

        found = reports_into({}, spec, intent, run_id).get("findings")
    except (RunnerError, OSError):
        return None
    return found if found and "failed_tests" in found else None


def _logs(spec, intent, log: Path, passed: bool):
    """(text, the families that read it, whether its command passed) for each log a step left: a shell step's
    one log; for an agent step, each verify command's part of each attempt's verify log."""
    if log.is_dir():
        yield from _verify_logs(spec, intent, log)
        return
    text = read_text(log)
    if not text:
        return
    command, _names = step_command(spec, intent)
    # the log opens with the runner's own "$ command" line(s), not with what the tool printed
    skip = len(f"$ {command}".splitlines()) if text.startswith("$ ") else 0
    yield "\n".join(text.split("\n")[skip:]), step_families(spec, intent), passed


def _verify_logs(spec, intent, attempts: Path):
    """Each verify command's output in each attempt's verify.log (cut at the runner's `$ command` lines); the
    last part of a failed attempt is the command that failed, every other part passed."""
    from .libraries import library_of

    try:
        from .adapters import resolve

        commands = (
            resolve(intent.adapter, Path(home(spec.root, intent.name)), spec.adapters).commands
            if intent.adapter
            else {}
        )
        library = library_of(spec, intent.name)
    except RunnerError:
        return
    by_line = {}
    for name in intent.verify:
        cmd = commands.get(name)
        if cmd is not None:
            by_line[f"$ {cmd.run}"] = [library.families[f] for f in cmd.parse if f in library.families]
    for folder in sorted(p for p in attempts.iterdir() if p.is_dir()) if attempts.is_dir() else []:
        text = read_text(folder / "verify.log")
        if not text:
            continue
        try:
            ok = bool(json.loads((folder / "result.json").read_text()).get("ok"))
        except (OSError, ValueError):
            continue  # an attempt a crash cut short says nothing
        parts: list[tuple[list, list[str]]] = []
        for line in text.split("\n"):
            if line in by_line:
                parts.append((by_line[line], []))
            elif parts:
                parts[-1][1].append(line)
        for i, (families, body) in enumerate(parts):
            yield "\n".join(body), families, ok or i < len(parts) - 1


def _extractions(matches: list[Match], starts: list[int]) -> set[tuple]:
    """What was extracted, whichever pattern did it: (line, kind, fields)."""
    return {
        (bisect.bisect_right(starts, m.start), m.kind, tuple(sorted((k, v) for k, v in m.fields.items() if v)))
        for m in matches
    }


def compare(text: str, family: Family, candidate: Pattern, passed: bool, report: dict | None = None) -> dict:
    """One candidate beside the active patterns of its family on one log (see the module's docstring); `passed`:
    the command exited 0; `report`: what the step's JUnit reports say (counts, failing tests), where it has any."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    control = list(family.finditer_patterns(text, family.used()))
    trial = list(family.finditer_patterns(text, family.with_candidate(candidate)))
    before, after = _extractions(control, starts), _extractions(trial, starts)
    own = [m for m in trial if m.pattern == candidate.name]
    own_lines = {bisect.bisect_right(starts, m.start) for m in own}
    # a line an active pattern of the same kind reads too (the one it replaces aside): counted twice
    claimed = sorted(
        {
            bisect.bisect_right(starts, m.start)
            for m in control
            if m.kind == candidate.kind and m.pattern != candidate.replaces
        }
        & own_lines
    )
    lost = sorted(before - after)
    gained = sorted(after - before)
    why = None
    if lost:
        why = f"loses what the active patterns read on line {lost[0][0]}"
    elif claimed:
        why = f"reads line {claimed[0]}, which an active {candidate.kind} pattern reads already"
    elif passed and own and candidate.kind == "failed_test":
        why = f"reports a failing test on line {min(own_lines)} of a run that passed"
    elif passed and any(_count(m.fields.get(k)) for m in own for k in ("failed", "errors")):
        why = "reports failures in the summary of a run that passed"
    elif own and candidate.kind in FAILURE_KINDS:
        why = _judged(text, family, candidate, passed, report)

    def shown(found: list[tuple]) -> list[list]:
        return [[number, lines[number - 1]] for number, _kind, _fields in found[:SHOWN]]

    return {
        "pattern": candidate.ref,
        "hits": len(own),
        "gained": shown(gained),
        "lost": shown(lost),
        "check": "fail" if why else "pass",
        "why": why,
    }


def _count(value) -> int:
    text = str(value or "").strip()
    return int(text) if text.isdigit() else 0


def _judged(text: str, family: Family, candidate: Pattern, passed: bool, report: dict | None) -> str | None:
    """The checks of what a log's findings say with the candidate (a summary or failing-test pattern that read
    something in it): against the command's exit, the failing tests the log names, and the JUnit report."""
    from .findings import parse_findings

    every = _with_candidates(family)
    found = parse_findings(text, [family], choose=lambda _f: every)
    if not passed and candidate.kind == "summary" and not _failures(found):
        return "reads a summary that says nothing failed on a run that failed"
    wrong = _contradiction(found)
    if wrong:
        # blamed when the log without it is consistent; where without it nothing can be judged (no count, or
        # no failing test named), a count is blamed before a failing test: a test the tool named is a line it
        # printed, a count's meaning (which key, summed or not) is what an induced pattern gets wrong
        others = parse_findings(text, [family], choose=lambda _f: tuple(p for p in every if p is not candidate))
        judged = isinstance(others.summary.get("failed"), int) and bool(others.failed_tests)
        if (judged and not _contradiction(others)) or (not judged and candidate.kind == "summary"):
            return wrong
    if report is not None:
        mine = parse_findings(text, [family], choose=lambda f: f.with_candidate(candidate))
        return _disagreement(mine, report, candidate.kind)
    return None


def _with_candidates(family: Family) -> tuple[Pattern, ...]:
    """The active patterns and every candidate of the family (each in place of the one it replaces)."""
    chosen = [p for p in family.patterns if p.stage in ("active", "shadow", "canary")]
    replaced = {p.replaces for p in chosen if p.replaces and p.stage != "active"}
    return tuple(p for p in chosen if p.name not in replaced)


def _failures(found) -> bool:
    counts = found.summary
    return bool(found.failed_tests or found.diagnostics or _count(counts.get("failed")) or _count(counts.get("errors")))


def _contradiction(found) -> str | None:
    """Why a log's counts and its named failing tests cannot both be right: the failing tests named number
    between the failed count and the failed and errored count, where the log gives a count and names any."""
    failed, errors = found.summary.get("failed"), found.summary.get("errors")
    named = len(found.failed_tests)
    if not isinstance(failed, int) or not named:
        return None
    most = failed + (errors if isinstance(errors, int) else 0)
    if failed <= named <= most:
        return None
    counted = f"{failed} failed" + (f" and {errors} errors" if isinstance(errors, int) and errors else "")
    return f"gives {counted} where the log names {named} failing test{'s' if named != 1 else ''}"


def _disagreement(found, report: dict, kind: str) -> str | None:
    """Where the log's reading with the candidate differs from the step's JUnit report."""
    if kind == "failed_test":
        listed = set(report.get("failed_tests") or ())
        extra = [name for name in found.failed_tests if not any(name in t or t.endswith(name) for t in listed)]
        if extra:
            return f"names {extra[0]!r} as failing, which the step's JUnit report does not"
        return None
    summary = report.get("summary") or {}
    for key in ("failed", "errors", "passed"):
        mine, theirs = found.summary.get(key), summary.get(key)
        if isinstance(mine, int) and isinstance(theirs, int) and mine != theirs:
            return f"gives {mine} {key} where the step's JUnit report gives {theirs}"
    return None


def read_observations(run_dir: Path) -> list[dict]:
    """A run's observations, in the order they were written (none when it recorded none)."""
    try:
        with open(run_dir / GATE_FILE, encoding="utf-8") as f:
            found = []
            for line in f:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue  # a line a crash cut short
            return found
    except FileNotFoundError:
        return []


def observe_late(spec, runs_dir: Path, family: Family, candidate: Pattern, runs: list[str]) -> int:
    """Observations of a candidate on runs recorded before it reached this checkout (a build of the main branch
    while the pull request that proposed it waited, say): each shell step's log that its family reads, in each
    of `runs` that has none for it, compared after the fact (`late`; no such run used it). Appended to the
    run's gate.jsonl, as if observed then; returns how many."""
    from .record import read_events

    written = 0
    for run in runs:
        run_dir = runs_dir / run
        if any(o.get("pattern") == candidate.ref for o in read_observations(run_dir)):
            continue
        try:
            events = read_events(runs_dir, run)
        except OSError:
            continue
        lines = []
        for e in events:
            intent = spec.intents.get(e.get("intent"))
            if e.get("event") != "step_finished" or intent is None or intent.kind != "shell" or not e.get("log"):
                continue
            if family.name not in {f.name for f in step_families(spec, intent)}:
                continue
            for body, _families, ok in _logs(
                spec, intent, run_dir / "logs" / f"{stored(intent.name)}.log", e.get("status") == "ran"
            ):
                seen = compare(body, family, candidate, ok)
                seen.update(step=intent.name, stage=candidate.stage, used=False, late=True)
                lines.append(json.dumps(seen))
        if lines:
            with open(run_dir / GATE_FILE, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            written += len(lines)
    return written
