"""Scoring a candidate pattern offline, on the recorded logs, before it may enter the gate: precision and recall
on the lines it was made for, and nothing lost that the active patterns of its family extract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import parse, redos
from ..shadow import compare
from .propose import Candidate


@dataclass(frozen=True)
class Thresholds:
    precision: float = 0.95
    recall: float = 0.9


@dataclass
class Score:
    precision: float
    recall: float
    lines: int  # distinct recorded lines it was judged on
    problems: list[str] = field(default_factory=list)  # why it may not enter the gate; empty when it may

    @property
    def passed(self) -> bool:
        return not self.problems


def as_pattern(candidate: Candidate, family: str, stage: str = "shadow") -> parse.Pattern:
    return parse.Pattern(
        family=family,
        name=candidate.name,
        regex=candidate.regex,
        kind=candidate.kind,
        fields=candidate.fields,
        stage=stage,
    )


def score(
    candidate: Candidate,
    family: parse.Family | None,
    family_name: str,
    logs: Sequence[str],
    thresholds: Thresholds,
) -> Score:
    """Judge a candidate on the recorded logs of the command it reads (and the lines it was made from):
    it compiles under RE2 and cannot backtrack catastrophically; of the distinct lines it matches, at least
    `precision` are lines it was made for, and it matches at least `recall` of those; and beside the active
    patterns of its family it loses nothing they extract and claims no line one of them reads as its kind."""
    problems = []
    why = parse.re2_error(candidate.regex)
    if why:
        return Score(0.0, 0.0, 0, [f"RE2 refuses it: {why}"])
    why = redos.check_redos(candidate.regex)
    if why:
        return Score(0.0, 0.0, 0, [f"it could backtrack catastrophically: {why}"])
    truth = set(candidate.lines)
    seen = {line for text in logs for line in text.split("\n")} | truth
    seen.discard("")
    matched = {line for line in seen if parse.re2_fullmatch(candidate.regex, line) is not None}
    hits = matched & truth
    precision = len(hits) / len(matched) if matched else 0.0
    recall = len(hits) / len(truth) if truth else 0.0
    if precision < thresholds.precision:
        wrong = sorted(matched - truth)[:1]
        problems.append(f"precision {precision:.2f} < {thresholds.precision:.2f} (it also reads {wrong[0]!r})")
    if candidate.source == "model" and not hits:
        problems.append("it reads none of the lines it was asked for")
    elif candidate.source != "model" and recall < thresholds.recall:  # a model's pattern reads one kind of them
        missed = sorted(truth - matched)[:1]
        problems.append(f"recall {recall:.2f} < {thresholds.recall:.2f} (it misses {missed[0]!r})")
    pattern = as_pattern(candidate, family_name)
    beside = parse.Family(family_name, [*(family.patterns if family else ()), pattern])
    for text in logs:
        seen_by = compare(text, beside, pattern, passed=False)
        if seen_by["why"]:
            problems.append(f"on a recorded log it {seen_by['why']}")
            break
    return Score(round(precision, 4), round(recall, 4), len(seen), problems)
