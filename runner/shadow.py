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

from .excerpt import read_text, step_command, step_families
from .parse import Family, Match, Pattern
from .redact import Mask

GATE_FILE = "gate.jsonl"
SHOWN = 5  # lines of evidence kept per observation


def observe(spec, run_dir: Path, steps: list[tuple[str, str | None, str, bool]], mask: Mask) -> int:
    """Record what the candidates find on these steps' logs ((name, slice key, log path, passed), in the order
    they finished); returns how many observations were written."""
    lines = []
    for name, slice_key, log, passed in steps:
        intent = spec.intents[name]
        text = read_text(log)
        if not text:
            continue
        command, _names = step_command(spec, intent)
        # the log opens with the runner's own "$ command" line(s), not with what the tool printed
        skip = len(f"$ {command}".splitlines()) if text.startswith("$ ") else 0
        body = "\n".join(text.split("\n")[skip:])
        for family in step_families(spec, intent):
            for candidate in family.candidates():
                seen = compare(body, family, candidate, passed)
                seen.update(step=name, stage=candidate.stage, used=candidate.used_for(slice_key))
                lines.append(mask.text(json.dumps(seen)))
    if lines:
        with open(run_dir / GATE_FILE, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return len(lines)


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
