"""Candidate patterns from lines no pattern read, deterministically: groups from the inducer, each given the kind
its lines show (a summary of counts, a failing test, a diagnostic at a file and line, else an event) and the
captures that kind is read by (passed/failed/skipped/errors, name, file/line/column/message)."""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass, field

from .. import parse, redos
from .induce import VAR, InducedPattern, induce

# a count word after (or before) a number, as tools print their totals, and the count it is
COUNT_WORDS = {
    "passed": "passed",
    "pass": "passed",
    "passing": "passed",
    "ok": "passed",
    "succeeded": "passed",
    "success": "passed",
    "successful": "passed",
    "failed": "failed",
    "fail": "failed",
    "failing": "failed",
    "failures": "failed",
    "failure": "failed",
    "broken": "failed",
    "skipped": "skipped",
    "skip": "skipped",
    "ignored": "skipped",
    "pending": "skipped",
    "todo": "skipped",
    "errors": "errors",
    "error": "errors",
    "errored": "errors",
}
FAIL_WORD = re.compile(r"\b(?:FAIL(?:ED|URE)?|[Ff]ail(?:ed|ure|ing)?|ERROR|not ok)\b|✗|✘")
LOCATION = re.compile(r"(?P<file>[\w.@+-]*(?:/[\w.@+-]+)*\.[A-Za-z]\w{0,9}):(?P<line>\d+)(?::(?P<column>\d+))?")
TEST_ID = re.compile(r"[\w.:/\[\]<>-]*(?:[_.:/\[]|[a-z][A-Z]|[A-Za-z]\d)[\w.:/\[\]<>-]*")
SHOWN = 5


@dataclass
class Candidate:
    """A proposed pattern, as the regex library would read it, with the lines it was made for."""

    name: str
    regex: str
    kind: str
    fields: tuple[str, ...]
    template: str
    examples: list[dict] = field(default_factory=list)  # {"text", "expect"}
    lines: list[str] = field(default_factory=list)  # every line it was made for (its ground truth)
    source: str = "induced"

    def table(self, stage: str, gate: dict) -> dict:
        """What writeback.add_patterns writes."""
        return {
            "name": self.name,
            "regex": self.regex,
            "kind": self.kind,
            "fields": list(self.fields),
            "stage": stage,
            "gate": gate,
            "examples": self.examples,
        }


def _escape(text: str) -> str:
    """A literal for RE2 (and Python's re): every character that is not a word character or a space escaped."""
    return "".join(ch if ch.isalnum() or ch in " _" else "\\" + ch for ch in text)


def _prefix_regex(template_prefix: str) -> str:
    """The part of a template before a chosen token, after any indent: constants literal (a space any run of
    spaces, as the template collapsed them), each <*> any run of non-spaces."""
    parts = template_prefix.split(VAR)
    return r"\s*" + r"\S+".join(_escape(p).replace(" ", r"\s+") for p in parts)


def _diagnostic(pattern: InducedPattern, name: str) -> Candidate | None:
    """file:line[:column], then the message, after the template's constant lead-in."""
    first = pattern.examples[0]
    where = LOCATION.search(first)
    if where is None:
        return None
    lead = template_prefix(pattern.template, first, where.start())
    if lead is None:
        return None
    regex = "^" + _prefix_regex(lead) + r"(?P<file>[^\s:]+):(?P<line>\d+)(?::(?P<column>\d+))?:?\s*(?P<message>.*)$"
    return Candidate(name, regex, "diagnostic", ("file", "line", "column", "message"), pattern.template)


def _failed_test(pattern: InducedPattern, name: str) -> Candidate | None:
    """The test's name (the first token that looks like an id), the failure word after it."""
    first = pattern.examples[0]
    fail = FAIL_WORD.search(first)
    if fail is None:
        return None
    for token in re.finditer(r"\S+", first):
        if token.start() >= fail.start() and token.end() > fail.end():
            break
        word = token.group().strip("()[]{}:,;\"'")
        if FAIL_WORD.fullmatch(word) or not TEST_ID.fullmatch(word):
            continue
        start = first.index(word, token.start())
        lead = template_prefix(pattern.template, first, start)
        if lead is None:
            return None
        tail = first[start + len(word) : fail.start()]
        between = r"\S*" if not tail.strip() else r".*?"
        regex = "^" + _prefix_regex(lead) + r"(?P<name>[^\s()\[\]{}:,;]+)" + between + _escape(fail.group()) + ".*$"
        return Candidate(name, regex, "failed_test", ("name",), pattern.template)
    return None


def _summary(pattern: InducedPattern) -> Candidate | None:
    """The inducer's own pattern, each number named by its count word, every other capture made plain."""
    tokens = pattern.template.split(" ")
    counts: list[str | None] = []
    for i, token in enumerate(tokens):
        for _ in range(token.count(VAR)):
            after = tokens[i + 1].strip(",;:.()").lower() if i + 1 < len(tokens) else ""
            before = tokens[i - 1].strip(",;:.()").lower() if i > 0 else ""
            counts.append(COUNT_WORDS.get(after) or COUNT_WORDS.get(before))
    if len(counts) != len(pattern.fields) or not any(counts):
        return None
    # a count is a whole number in every line (a time such as "(3ms)" beside "ok" is not one)
    for text in pattern.examples:
        got = parse.re2_fullmatch(pattern.regex, text) or {}
        if any(c and not (got.get(f) or "").isdigit() for f, c in zip(pattern.fields, counts, strict=True)):
            return None
    regex, kept = pattern.regex, []
    for field_name, count in zip(pattern.fields, counts, strict=True):
        if count is None or count in kept:
            regex = regex.replace(f"(?P<{field_name}>", "(?:", 1)
        else:
            regex = regex.replace(f"(?P<{field_name}>", f"(?P<{count}>", 1)
            kept.append(count)
    return Candidate(pattern.name, regex, "summary", tuple(kept), pattern.template)


def template_prefix(template: str, line: str, offset: int) -> str | None:
    """The template's text that stands for `line[:offset]`: its constants and <*> up to the token at `offset`
    (None when the token at `offset` is not at a token boundary of the template)."""
    words, tokens = template.split(" "), line[:offset].split()
    if line[:offset] and not line[:offset].endswith(" "):
        return None
    if len(tokens) > len(words):
        return None
    return " ".join(words[: len(tokens)]) + (" " if tokens else "")


def _kind_of(pattern: InducedPattern, name: str) -> Candidate:
    first = pattern.examples[0]
    made: Candidate | None = None
    if LOCATION.search(first):
        made = _diagnostic(pattern, name)
    if made is None and any(w in COUNT_WORDS for w in re.findall(r"[a-z]+", first.lower())) and pattern.fields:
        made = _summary(pattern)
        if made is not None:
            made.name = name
    if made is None and FAIL_WORD.search(first):
        made = _failed_test(pattern, name)
    if made is None:
        made = Candidate(name, pattern.regex, "event", pattern.fields, pattern.template)
    return made


def candidates_from_lines(lines: Sequence[str], family: str, taken: Set[str] = frozenset()) -> list[Candidate]:
    """One candidate per group of similar lines, with its kind's captures; every one compiles under RE2 and reads
    each line it was made for, or it is left out."""
    induction = induce(list(lines), family)
    members: dict[str, list[str]] = {}
    for line, name in zip(lines, induction.assignments, strict=True):
        if name is not None:
            members.setdefault(name, []).append(line)
    found: list[Candidate] = []
    by_regex: dict[str, Candidate] = {}
    names = set(taken)
    for pattern in induction.patterns:
        name = pattern.name
        n = 2
        while name in names:
            name, n = f"{pattern.name}-{n}", n + 1
        names.add(name)
        made = _kind_of(pattern, name)
        made.name = name
        made.lines = members.get(pattern.name, [])
        same = by_regex.get(made.regex)
        if same is not None:  # two groups read by one pattern (two failing tests' lines): one candidate
            same.lines += made.lines
            names.discard(name)
            continue
        if parse.re2_error(made.regex) is not None or redos.check_redos(made.regex) is not None:
            continue
        examples: list[dict] = []
        for text in dict.fromkeys(made.lines):
            got = parse.re2_fullmatch(made.regex, text)
            if got is None:
                break
            if len(examples) < SHOWN:
                examples.append({"text": text, "expect": {k: v for k, v in got.items() if v is not None}})
        else:
            made.examples = examples
            by_regex[made.regex] = made
            found.append(made)
    for made in found:  # the examples of merged groups: up to SHOWN, of every group
        made.examples = [
            {
                "text": t,
                "expect": {k: v for k, v in (parse.re2_fullmatch(made.regex, t) or {}).items() if v is not None},
            }
            for t in list(dict.fromkeys(made.lines))[:SHOWN]
        ]
    return found
