"""What candidate patterns find beside the active ones: on the log of every shell step that ran, each shadow or
canary pattern of the families that read it is compared with the active patterns, as GitHub's Scientist
compares a candidate with the control; the observations go to the run's gate.jsonl for `runner learn`'s gate.

An observation is one candidate on one step's log: what it found that the active patterns did not (gained), what
the active patterns found that it would take away (lost), and a check. A check fails when the candidate loses
an extraction, claims a line an active pattern of the same kind already reads, or reports failures on a run that
passed; every other observation passes, and one where the candidate matched nothing is recorded as such (the
gate counts a window without data against it, as Flagger does).
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

from .errors import RunnerError
from .excerpt import read_text, step_command, step_families
from .parse import Family, Match, Pattern
from .redact import Mask

GATE_FILE = "gate.jsonl"
SHOWN = 5  # lines of evidence kept per observation


def observe(spec, run_dir: Path, steps: list[tuple[str, str | None, str, bool]], mask: Mask) -> int:
    """Record what the candidates find on these steps' logs ((name, slice key, log path, passed), in the order
    they finished: a shell step's log, or an agent step's attempts folder, whose verify logs are read); returns
    how many observations were written."""
    lines = []
    for name, slice_key, log, passed in steps:
        intent = spec.intents[name]
        for body, families, ok in _logs(spec, intent, Path(log), passed):
            for family in families:
                for candidate in family.candidates():
                    seen = compare(body, family, candidate, ok)
                    seen.update(step=name, stage=candidate.stage, used=candidate.used_for(slice_key))
                    lines.append(mask.text(json.dumps(seen)))
    if lines:
        with open(run_dir / GATE_FILE, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return len(lines)


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
    from .excerpt import library_of

    try:
        from .adapters import resolve

        commands = resolve(intent.adapter, Path(spec.root), spec.adapters).commands if intent.adapter else {}
        library = library_of(spec)
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


def compare(text: str, family: Family, candidate: Pattern, passed: bool) -> dict:
    """One candidate beside the active patterns of its family on one log (see the module's docstring)."""
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
    elif passed and any(str(m.fields.get("failed") or "0").strip() not in ("", "0") for m in own):
        why = "reports failures in the summary of a run that passed"

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
