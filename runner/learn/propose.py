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
FAIL_WORD = re.compile(r"\b(?:FAIL(?:ED|URE)?|[Ff]ail(?:ed|ure|ing)?|ERROR|not ok)\b|✗|✘|✖")
# a place in a file: path:line[:column] (a path with an extension, or with a folder: docker/Dockerfile:3)
_FILE = r"(?:[\w.@+-]*/)*[\w.@+-]*\w\.[A-Za-z]\w{0,9}|(?:[\w.@+-]+/)+[\w.@+-]*\w"
LOCATION = re.compile(rf"(?P<file>{_FILE}):(?P<line>\d+)(?::(?P<column>\d+))?")
# a place written out: `In scripts/deploy.sh line 5:` (shellcheck), `File "x.py", line 3` (Python)
_WRITTEN = re.compile(rf"(?P<file>{_FILE})\"?,? line (?P<line>\d+)")
# a finding under a heading that names its file: `  3:1  error  message  (rule)` (eslint stylish, yamllint)
_UNDER = re.compile(r"^\s*(?P<line>\d+):(?P<column>\d+)\s+\S")
_SEVERITY = r"(?:(?P<severity>error|warning|warn|info|note|style|hint)\s+)?"
# a heading: the line is one path, alone
HEADING = re.compile(rf"^\s*(?P<file>{_FILE})\s*$")
# a failure marker at a line's start, then the test's name: `✖ name (1.2ms)`, `not ok 3 - name`, `FAIL: name (...)`
_MARKER = re.compile(r"^(?P<indent>\s*)(?P<marker>[✖✗✘×✕]|not ok \d+(?: -)?|(?:FAIL|FAILED|ERROR|FAILURE):?)\s+(?=\S)")
# a failure word that gives a command's exit status, not a test's verdict: `py311: FAIL code 1`
_EXIT = re.compile(r"\b(?:FAIL(?:ED)?|[Ff]ailed|ERROR)\b:?\s+(?:with\s+)?(?:exit\s+)?(?:code|status)\s+\d+")
TEST_ID = re.compile(r"[\w.:/\[\]<>-]*(?:[_.:/\[]|[a-z][A-Z]|[A-Za-z]\d)[\w.:/\[\]<>-]*")
# what makes a token an id rather than a word of a sentence: a separator between two word characters, a camelCase
# hump or a digit after a letter (`test_x`, `pkg.mod`, `a/b`, `testFoo`, `t1`); never `...` or `item.`
_ID_SHAPE = re.compile(r"\w[_.:/\[]\w|[a-z][A-Z]|[A-Za-z]\d")
# more plain words than this before a failing test's name is a sentence (a test's docstring, which `unittest -v`
# prints before `... ERROR`), not a tool's line structure (`FAIL:`, `not ok 3 -`, `CHECK`, `--- FAIL:`)
_PROSE_WORDS = 3
SHOWN = 5
KIND_NAMES = {"summary": "summary", "failed_test": "failed-test", "diagnostic": "finding", "heading": "file-heading"}


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
    """A literal for RE2 (and Python's re): every ASCII character that is not a word character or a space escaped
    (RE2 refuses an escaped letter of another script: `✖` stays as it is)."""
    return "".join(ch if ch.isalnum() or ch in " _" or ord(ch) > 127 else "\\" + ch for ch in text)


def _words_regex(words: list[str]) -> str:
    """Template words as a regex: constants literal, each <*> a run of non-spaces, any run of spaces between."""
    out = []
    for word in words:
        leader = re.fullmatch(r"([.\-=_~*#])\1+", word)
        if leader:  # a run of one punctuation mark pads a column (`name ..... ok`): its length varies
            out.append(_escape(leader.group(1)) + "+")
            continue
        parts = word.split(VAR)
        out.append(r"\S*?".join(_escape(p) for p in parts) if len(parts) > 1 else _escape(word))
    return r"\s+".join(out)


def _lead(pattern: InducedPattern, first: str, offset: int) -> str | None:
    """The regex of a line's part before `offset` (a token boundary): its indent, then the template's words."""
    lead = template_prefix(pattern.template, first, offset)
    if lead is None:
        return None
    words = lead.split()
    return r"^\s*" + (_words_regex(words) + r"\s+" if words else "")


def _diagnostic(pattern: InducedPattern, name: str) -> Candidate | None:
    """file:line[:column] (or `FILE line N`), then the message, after the template's constant lead-in."""
    first = pattern.examples[0]
    where = LOCATION.search(first)
    written = _WRITTEN.search(first)
    if where is None or (written is not None and written.start() < where.start()):
        where = written
        place = r"\"?(?P<file>[^\s:\"]+)\"?,? line (?P<line>\d+)"
        fields: tuple[str, ...] = ("file", "line", "message")
    else:
        place = r"(?P<file>[^\s:]+):(?P<line>\d+)(?::(?P<column>\d+))?"
        fields = ("file", "line", "column", "message")
    if where is None:
        return None
    start = where.start()
    while start > 0 and not first[start - 1].isspace():
        start -= 1  # the token holding the place: `-->` apart, a quote or a bracket before it is the template's
    lead = _lead(pattern, first, start)
    if lead is None:
        return None
    before = first[start : where.start()]
    after, more = _after_place(first[where.end() :])
    regex = lead + _escape(before) + place + after + r"(?P<message>.*)$"
    fields = fields[:-1] + more + ("message",)
    return Candidate(name, regex, "diagnostic", fields, pattern.template)


_AFTER = re.compile(
    r"(?P<sep>[:,]?)(?P<space>\s+)(?:(?P<code>[A-Z][A-Za-z]*\d+)(?P<gap>\s+))?"
    r"(?:(?P<severity>error|warning|warn|info|note|style|hint)(?P<colon>:?)\s+)?"
)


def _after_place(rest: str) -> tuple[str, tuple[str, ...]]:
    """The structure between a place and its message, as the line shows it: the separator (`:`, or the `,` of
    Python's `File "x.py", line 3, in f`), then a rule's code
    (`DL3006`, `E501`, `SC2164`) and a severity word where they stand: (regex, the fields it captures)."""
    m = _AFTER.match(rest)
    if m is None:
        return r":?\s*", ()
    regex, fields = _escape(m.group("sep")) + r"\s+", tuple[str, ...]()
    if m.group("code"):
        regex += r"(?P<code>[A-Z][A-Za-z]*\d+)\s+"
        fields += ("code",)
    if m.group("severity"):
        regex += r"(?P<severity>[a-z]+)" + _escape(m.group("colon")) + r"\s+"
        fields += ("severity",)
    return regex, fields


def _under_heading(pattern: InducedPattern, name: str) -> Candidate:
    """A finding that names no file, under a heading line that does: line:column, a severity, the message."""
    regex = r"^\s*(?P<line>\d+):(?P<column>\d+)\s+" + _SEVERITY + r"(?P<message>\S.*?)\s*$"
    return Candidate(name, regex, "diagnostic", ("line", "column", "severity", "message"), pattern.template)


def _heading(pattern: InducedPattern, name: str, lines: Sequence[str]) -> Candidate:
    """A line that is one path: the file the findings under it belong to (the extensions its lines showed)."""
    exts = sorted({m.group("file").rsplit(".", 1)[-1] for t in lines if (m := HEADING.match(t)) and "." in t})
    tail = r"\.(?:" + "|".join(_escape(e) for e in exts) + ")" if exts else ""
    regex = r"^\s*(?P<file>[\w./@+-]*[\w@+-]" + tail + r")\s*$"
    return Candidate(name, regex, "heading", ("file",), pattern.template)


def _marked_test(first: str, pattern: InducedPattern, name: str) -> Candidate | None:
    """A failure marker at the line's start and the test's name after it (to a trailing `(...)` or `# ...`)."""
    m = _MARKER.match(first)
    if m is None or first.rstrip().endswith(":"):
        return None  # `✖ failing tests:` opens a section: a heading, no test
    marker = re.sub(r"\d+", "<N>", m.group("marker"))
    marker_rx = _escape(marker).replace(_escape("<N>"), r"\d+").replace(r"\ ", r"\s+")
    # the name never ends at a colon: `✖ failing tests:` opens the section that lists them again
    regex = r"^\s*" + marker_rx + r"\s+(?P<name>[^\s:](?:.*?[^:\s])?)(?:\s+\([^()]*\)|\s+#\s.*)?\s*$"
    if any(line.rstrip().endswith(":") for line in pattern.examples):
        return None
    return Candidate(name, regex, "failed_test", ("name",), pattern.template)


def _failed_test(pattern: InducedPattern, name: str) -> Candidate | None:
    """A test's id (the first token that looks like one) and the failure word after it, anchored to the line's
    structure: the template's words before, between and after, never a free `.*FAIL.*`."""
    first = pattern.examples[0]
    fail = FAIL_WORD.search(first)
    if fail is None or _EXIT.search(first):
        return None
    words = pattern.template.split()
    tokens = list(re.finditer(r"\S+", first))
    if len(tokens) != len(words):
        return None  # a value spanning spaces: no token-by-token structure to anchor to
    for k, token in enumerate(tokens):
        if token.start() >= fail.start() and token.end() > fail.end():
            break
        word = token.group().strip("()[]{}:,;\"'")
        if FAIL_WORD.fullmatch(word) or not TEST_ID.fullmatch(word) or not _ID_SHAPE.search(word):
            continue
        if sum(1 for w in words[:k] if w.isalpha()) > _PROSE_WORDS:
            return None  # the name would be a word of one test's description: a pattern of that case alone
        inner = token.group().index(word)
        head, tail = token.group()[:inner], token.group()[inner + len(word) :]
        named = _escape(head) + r"(?P<name>[^\s()\[\]{}:,;]+)" + _escape(tail)
        # the other ids on the line (the test's class, its module) vary with the test as its name does
        parts = [_id_free(w) if j != k else named for j, w in enumerate(words)]
        regex = r"^\s*" + r"\s+".join(parts) + r"\s*$"
        return Candidate(name, regex, "failed_test", ("name",), pattern.template)
    return None


def _id_free(word: str) -> str:
    """A template word as a regex, any test id in it (a dotted or underscored name) a run of non-spaces."""
    core = word.strip("()[]{}:,;\"'")
    looks_like_id = TEST_ID.fullmatch(core) and re.search(r"\w[._:/]\w", core) and not FAIL_WORD.search(core)
    if core and VAR not in core and looks_like_id:
        at = word.index(core)
        return _escape(word[:at]) + r"[^\s()\[\]{}]+" + _escape(word[at + len(core) :])
    return _words_regex([word])


def _count_of(tokens: list[str], i: int, var_at: int) -> str | None:
    """The count a number stands for: the key it is the value of (`failures=<*>`), else the count word after it
    (`<*> passed`), else a count word before it that introduces it (`failed: <*>`, `# pass <*>` at the end), never
    a word before it that a name follows (`ok <*> - formats cents` is a test's number)."""
    token = tokens[i]
    key = re.search(r"([A-Za-z]+)\s*[=:]\s*$", token[:var_at])
    if key is not None:
        return COUNT_WORDS.get(key.group(1).lower())
    if token[:var_at].strip("(["):
        return None
    after = tokens[i + 1].strip(",;:.()").lower() if i + 1 < len(tokens) else ""
    if after in COUNT_WORDS:
        return COUNT_WORDS[after]
    if i == 0:
        return None
    before = tokens[i - 1]
    word = before.strip(",;:.()=").lower()
    rest = token[var_at + len(VAR) :]
    ends = i + 1 == len(tokens) or rest[:1] in (",", ";", ")")
    if word in COUNT_WORDS and (before.rstrip().endswith((":", "=")) or ends):
        return COUNT_WORDS[word]
    return None


def _summary(pattern: InducedPattern) -> Candidate | None:
    """The inducer's own pattern, each number named by its count (each `key=N` piece under its own name), every
    other capture made plain."""
    tokens = pattern.template.split(" ")
    counts: list[str | None] = []
    for i, token in enumerate(tokens):
        at = token.find(VAR)
        while at >= 0:
            counts.append(_count_of(tokens, i, at))
            at = token.find(VAR, at + len(VAR))
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


def _kind_of(pattern: InducedPattern, name: str, lines: Sequence[str]) -> Candidate:
    """What a group's lines say, by their structure: a heading (a path alone), a failing test after a marker,
    a place in a file, a finding under a heading, counts, a failing test's id before a failure word; else an
    event."""
    first = pattern.examples[0]
    made: Candidate | None = None
    counted = pattern.fields and any(w in COUNT_WORDS for w in re.findall(r"[a-z]+", first.lower()))
    if counted:
        made = _summary(pattern)  # `FAILED (failures=2, errors=1)` counts; a marker opens it
        if made is not None:
            made.name = name
            return made
    if HEADING.match(first):
        made = _heading(pattern, name, lines)
    elif _MARKER.match(first) and not _EXIT.search(first) and not LOCATION.search(first):
        made = _marked_test(first, pattern, name)
    elif LOCATION.search(first) or _WRITTEN.search(first):
        made = _diagnostic(pattern, name)
    elif _UNDER.match(first):
        made = _under_heading(pattern, name)
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
    fam = re.sub(r"[^a-z0-9_.-]+", "-", family.lower()).strip("-.") or "log"
    for pattern in induction.patterns:
        made = _kind_of(pattern, pattern.name, members.get(pattern.name, []))
        # named after what it reads (its kind), never after the line that produced it (a failing test's name)
        base = pattern.name if made.kind == "event" else f"{fam}-{KIND_NAMES.get(made.kind, made.kind)}"
        name, n = base, 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.add(name)
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
