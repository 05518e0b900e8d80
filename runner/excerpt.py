"""The failure excerpt: the few lines of a failed log that explain it (a step's own families and baseline: step_log.py).

The excerpt is a list of 1-based, inclusive line ranges into the log's lines as `str.splitlines()` cuts them, at
most MAX_LINES lines in all. It is built from three kinds of evidence, each line scored:

- the regex library: lines that the families' patterns matched (diagnostics, failing tests, causes, summaries);
- generic evidence, for tools no family knows: error words, exit and crash lines, a stack trace grouped as one
  block (Python, JVM, JavaScript, Go, Rust), and the lines that go with a diagnostic (its source snippet);
- with the same step's last passing log as a baseline, the lines that are new in the failure (in the spirit of
  CIDiff): a warning the passing run printed too is noise, a new line is a lead even without an error word.

The best-scored lines become blocks (a line and its context, a failing test and its message, a finding and the
heading it sits under, or a whole stack trace trimmed to its telling frames) taken best first until the budget is
spent; the budget they leave goes to the log's last lines, so that the excerpt never shows less of the failure
than the plain tail would (the tool's own last words, a count line, a message no pattern knows). What is taken is
shown in log order. When the evidence is weak (nothing located, no failing test, cause or error line), the excerpt
is the window at the log's end alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING

from .identify import GENERIC

if TYPE_CHECKING:
    from .parse import Family, LineSet

MAX_LINES = 60
GENERIC_FAMILIES = GENERIC  # what a step that runs no adapter command is read with (and any log)
MAX_SCAN = 200_000  # lines of a log read at most: the last ones
_LINE_CAP = 2000  # characters of a line that the generic patterns read (a minified bundle must not cost seconds)
_ANCHOR_MIN = 3.0  # weaker lines are context, never a reason to show a block
_RELATIVE = 0.4  # a block is shown only when its anchor scores at least this share of the best one
_CONTEXT_AFTER = 8  # lines that may follow a diagnostic as its snippet
_TRACE_CAP = 14  # lines of one stack trace shown at most
_WARNING_WEIGHT = 3.0  # a warning: a lead only when nothing stronger is there, or when it is new since a pass
_STRONG = 8.0  # a located error, a failing test, a cause or an error line: below it the evidence is weak

# what each kind of regex-library match weighs (kinds not named weigh nothing)
_KIND_WEIGHT = {
    "diagnostic": 10.0,
    "cause": 9.0,
    "failed_test": 8.0,
    "incomplete": 6.0,
    "location": 5.0,
    "summary": 4.0,
    "package": 4.0,  # go's closing line (or -json event) of a package that failed
    "complete": 1.0,
}

# generic evidence, tried on every line: (weight, regex, case-insensitive); a line takes its highest weight
_GENERIC = [
    (
        9.0,
        r"\b(?:error|ERROR|Error)(?:\[[\w-]+\])?:|\bfatal(?: error)?:|\bFATAL\b|^panic: |\bpanicked at\b|"
        r"Segmentation fault|core dumped|\bAborted\b|\bKilled$|undefined reference to|"
        r"^(?:Exception in thread|Caused by:)|^Traceback \(most recent call last\):|"
        r"^[\w.$]*(?:Error|Exception)(?::\s|$)|^E\s{2,}\S",
        False,
    ),
    (8.0, r"^\s*--> \S+:\d+:\d+$", False),  # rustc's and ruff's location line, under its message
    (
        7.0,
        r"\bFAIL(?:ED|URE)?\b|npm (?:ERR!|error)|BUILD FAIL|\*\*\* \[.*\] Error \d+|"
        r"^\S+\.\w+:\d+(?::\d+)?:\s|^\s*(?:Expected|Received|Actual)(?: value)?:\s",
        False,
    ),
    (6.0, r"^(?:/|\.{1,2}/)?[\w.-]+(?:/[\w.-]+)*\.\w+:\d+$|^\s*>\s*\d+\s*[|│]|^\s*- Expected\b", False),
    (
        7.0,
        r"exit(?:ed)? (?:with )?(?:status|code):? [1-9]|returned (?:a )?non-zero exit status|"
        r"No such file or directory|cannot stat|command not found|Permission denied|not found|"
        r"\bcannot\b|\bcan't\b|\bcould not\b|\bunable to\b|\bundefined\b|\bunresolved\b|\bmismatch",
        True,
    ),
    (
        5.0,
        r"\berrors?\b|\bfailed\b|\bfailure\b|\bexception\b|\bassert|\bexpected\b.*\b(?:but|got|found|received)\b|"
        r"\binvalid\b|\bunexpected\b|\bmissing\b|\bdenied\b|\brefused\b|\btimed out\b|\btimeout(?:$|[^-\w])",
        True,
    ),
    (2.0, r"\bwarning\b|\bWARN(?:ING)?\b|\bdeprecated\b", True),
]
_GENERIC_WEIGHTS = [w for w, _rx, _nocase in _GENERIC]
_generic_set = None


def _generic() -> LineSet:
    """The generic patterns as one RE2 set (compiled on first use: most runs fail no step)."""
    global _generic_set
    if _generic_set is None:
        from .parse import LineSet

        _generic_set = LineSet(("(?i)" if nocase else "") + rx for _w, rx, nocase in _GENERIC)
    return _generic_set


# counts of nothing ("0 errors", "Failures: 0"): an error word that says all is well
_ZERO = re.compile(r"\b0 (?:errors?|failed|failures?)\b|\b(?:errors?|failures?|failed): 0\b|\bno errors\b", re.I)
_LEVEL_TAG = re.compile(r"^\[(ERROR|WARNING|WARN|INFO|DEBUG)\]\s?")
_TAG_WEIGHT = 3.5
# a build tool's advice, the same on every failure ("re-run with -e", "see the complete log")
_ADVICE = re.compile(
    r"\s*(?:To see the full stack trace|Re-run (?:Maven|with)|For more information about the errors|"
    r"\[Help \d+\]|Run with --(?:stacktrace|info|debug|scan)|A complete log of this run can be found)"
)
_WARNING = re.compile(r"\bwarning\b|^WARNING:", re.I)
_NOT_WARNING = re.compile(r"\berror\b|\bfatal\b|\bFAIL", re.I)
_NONZERO = re.compile(r"\b[1-9]\d* (?:errors?|failed|failures?)\b|\b(?:errors?|failures?|failed): [1-9]", re.I)

# what follows a diagnostic and belongs to it: a source snippet, a caret, a note
_DIFF_HEADER = re.compile(r"^\s*- Expected\b")
_SNIPPET = re.compile(r"^\s*(?:\d+\s*[|│]|[|│]|-->|\^|~|= |note:|help:|symbol:|location:|>\s*\d+\s*\|)|^\s+\S")

# stack traces: a frame line of each runtime, and the frames of libraries (the least telling)
_PY_TRACE = re.compile(r"^\s*Traceback \(most recent call last\):")
_JVM_FRAME = re.compile(r"^\s+at [\w$.<>/]+\(.*\)$|^\s+\.\.\. \d+ (?:more|common frames omitted)$")
_JS_FRAME = re.compile(r"^\s+at (?:.+ \()?(?:\S+):\d+:\d+\)?(?: \{)?$|^\s+at .+ \(<anonymous>\)$")
_GO_GOROUTINE = re.compile(r"^goroutine \d+ \[[^\]]+\]:$")
_GO_FRAME = re.compile(r"^\t\S+:\d+(?: \+0x[0-9a-f]+)?$|^[\w./*()\[\]{}-]+\(.*\)$|^created by ")
_RUST_BT = re.compile(r"^\s*stack backtrace:$")
_ERROR_LINE = re.compile(r"(?:Error|Exception|Throwable)\b|^Caused by:|^Exception in thread")
_RUST_FRAME = re.compile(r"^\s+\d+: \S|^\s+at \S+:\d+:\d+$")
_LIBRARY = re.compile(
    r"\bat (?:java\.|javax\.|jdk\.|sun\.|kotlin\.|org\.junit\.|org\.apache\.maven\.|org\.gradle\.)|"
    r"node:internal|/node_modules/|\(<anonymous>\)|site-packages/|/lib/python\d|/usr/lib/go|/rustc/|"
    r"^\s+\d+: (?:core::|std::|alloc::|__rustc::|<)|^(?:runtime|testing)\.|\t/usr/"
)

# a CI service's timestamp before each line (GitHub Actions' raw logs): read past, as findings.clean_log does
_CI_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
# go's header above a package's build errors: "# example.com/pkg [example.com/pkg.test]"
_GO_PACKAGE = re.compile(r"^# [\w./-]+(?: \[[\w./-]+\])?$")
# a failing test's message ends where its stack begins (jest, vitest, mocha), or with the line its source frame
# points at ("> 85 |     throw new Error(...)")
_MESSAGE_END = re.compile(r"^\s*(?:at \S|❯ |stack: )")
_FRAME_POINTED = re.compile(r"^\s*>\s*\d+\s*[|│]")
_MESSAGE_LINES = 12  # lines of text a failing test's message shows at most

# normalizing a line for the baseline diff: what differs between two runs of the same step that passed
_NOISE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:[.:]\d+)*|[0-9a-f]{12,}")


def strip_colour(line: str) -> str:
    """A line without terminal escapes (most lines have none: they skip the regex)."""
    if "\x1b" not in line:
        return line
    from .findings import strip_ansi

    return strip_ansi(line)


def _shown(line: str) -> str:
    """A line as the evidence reads it: no colour, no CI timestamp, and a `go test -json` output event as the
    text it carries (the test's own line, `--- FAIL: TestX`, a panic), one line for one line."""
    line = _CI_STAMP.sub("", strip_colour(line))
    if line.startswith('{"') and '"Output":"' in line:
        try:
            event = json.loads(line)
        except ValueError:
            return line
        if isinstance(event, dict) and isinstance(event.get("Output"), str):
            return event["Output"].rstrip("\n").replace("\n", " ")
    return line


def _norm(line: str) -> str:
    return " ".join(_NOISE.sub("0", line).split())


class _Log:
    """A log cut as str.splitlines() cuts it, colour removed, with an offset index for regex matches."""

    def __init__(self, raw: list[str]):
        self.raw = raw
        self.lines = [_shown(line) for line in self.raw]
        self.joined = "\n".join(self.lines)
        self.starts = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line) + 1

    def line_at(self, offset: int) -> int:
        """The 0-based index of the line holding `offset` of `joined`."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


def excerpt(
    text: str,
    families: Sequence[Family] = (),
    baseline: str | None = None,
    limit: int = MAX_LINES,
    skip: int = 0,
) -> list[list[int]]:
    """The lines of a failed run's log that explain the failure: [[first, last], ...], 1-based, inclusive.

    The first `skip` lines are never shown (a step's log opens with the runner's own `$ command` line). Of a
    huge log only the last MAX_SCAN lines are read, so that a failure costs a second or two, not minutes."""
    raw = text.splitlines()
    offset = max(0, len(raw) - MAX_SCAN)
    if offset:
        return [[a + offset, b + offset] for a, b in excerpt("\n".join(raw[offset:]), families, baseline, limit)]
    log = _Log(raw)
    n = len(log.lines)
    if n <= skip or limit <= 0:
        return []
    score = [0.0] * n
    _generic_evidence(log, score)
    tests, above, quiet, named = _pattern_evidence(log, families, score)
    traces = _stack_traces(log)
    for first, last, telling in traces:
        for i in range(first, last + 1):
            if i not in telling:
                score[i] = min(score[i], 1.0)  # a frame is shown with its trace, never as a lead of its own
    for first, _last, _telling in traces:
        if _GO_GOROUTINE.match(log.lines[first]):
            score[first] = max(score[first], 6.0)  # the goroutine that panicked
    against = _baseline_evidence(log, baseline, score)
    for i in quiet:
        score[i] = 0.0  # what a test printed or logged on its way to passing, new since a pass or not
    _damp_repeats(log, score, named)
    for i in range(skip):
        score[i] = 0.0
    if max(score, default=0.0) < (_ANCHOR_MIN if against is not None else _STRONG):
        # no located error, failing test, cause or error line: the tool's own last words say most, as the plain
        # end of the log does, so the window ends at the log's end
        return _window(log, skip, limit)
    chosen = {i for i in _select(log, score, traces, limit, tests, above) if i >= skip}
    return _ranges(_with_end(log, chosen, skip, limit, against, quiet), n, limit)


def _with_end(log: _Log, chosen: set[int], skip: int, limit: int, new: list[bool] | None, quiet: set) -> set[int]:
    """The chosen blocks and, in the budget they leave, the log's last lines up to its last one with text: what
    a plain tail shows of the failure is never lost (a failing test's message below its header, a count line, a
    tool's last words that no pattern knows). Against a passing log, only the end's lines new since it: the rest
    the passing run printed too; never what a test logged on its way to passing."""
    written = [i for i in range(len(log.lines) - 1, skip - 1, -1) if log.lines[i].strip()]
    out = set(chosen)
    k = written[0] if written else skip - 1
    start = max(skip, k - limit + 1)  # the window a plain tail shows
    while len(out) < limit and k >= start:
        if (new is None or new[k]) and k not in quiet:
            out.add(k)
        k -= 1
    return out


def _window(log: _Log, skip: int, limit: int) -> list[list[int]]:
    """The last `limit` lines of the log (after `skip`), up to its last line with text on it."""
    written = [i for i in range(skip, len(log.lines)) if log.lines[i].strip()]
    if not written:
        return []
    end = written[-1]
    return _ranges(range(max(skip, end - limit + 1), end + 1), len(log.lines), limit)


def _pattern_evidence(log: _Log, families: Sequence[Family], score: list[float]) -> tuple[set, dict, set, dict]:
    """Score the lines the families' patterns matched (a line saying a test passed or was skipped scores 0 whatever
    words it holds: unittest -v's "... ok"); return the failing tests' lines, for each line under a heading (eslint's
    file-name line, pytest's test section rule) that heading's line, what a test logged before it passed
    (passed_output.py), and the test named on a line whose rest may repeat (a setup error's heading, its result)."""
    from .passed_output import passed_output

    tests, quiet, above, named = dict[int, str](), set[int](), dict[int, int](), dict[int, str]()
    for fam in families:
        counters = {p.name: p.count for p in fam.patterns if p.count}  # a line counted as a result explains nothing
        went_well = {p.name for p in fam.patterns if p.kind == "passed_test" or p.count in ("passed", "skipped")}
        hits = [(log.line_at(m.start), m) for m in fam.finditer(log.joined)]
        quiet |= passed_output(hits, went_well, {k for k, count in counters.items() if count in ("failed", "errors")})
        heading = None
        for line, m in hits:
            # a setup error (a fixture all a module's tests share): its heading and result line repeat but for the name
            errs = counters.get(m.pattern) == "errors"
            name = tests.get(line) if errs else m.fields.get("name") if m.kind == "heading" else None
            if name and _NOT_WARNING.search(log.lines[line].replace(name, "")):
                named[line] = name
            if m.kind == "heading":
                heading = line
                continue
            if m.pattern in went_well:
                score[log.line_at(m.start)] = 0.0
                continue
            weight = _KIND_WEIGHT.get(m.kind, 0.0)
            if heading is not None and m.kind in ("diagnostic", "failed_test", "location"):
                above.setdefault(log.line_at(m.start), heading)
            if m.kind == "failed_test":
                tests[line] = (m.fields.get("name") or "").strip()
            if not weight or (m.kind == "summary" and m.pattern in counters):
                continue
            if (m.fields.get("severity") or "").lower() in ("warning", "note", "w"):
                weight = _WARNING_WEIGHT  # a compiler's warnings are printed on runs that pass as well
            first, last = log.line_at(m.start), log.line_at(max(m.start, m.end - 1))
            score[first] = max(score[first], weight)
            for i in range(first + 1, last + 1):
                score[i] = max(score[i], weight * 0.6)
    return set(tests), above, quiet, named


def _generic_evidence(log: _Log, score: list[float]) -> None:
    generic = _generic()
    for i, line in enumerate(log.lines):
        probe = line[:_LINE_CAP]
        tag = _LEVEL_TAG.match(probe)
        if tag:  # Maven's "[ERROR] " starts its boilerplate too: the words after it decide
            probe = probe[tag.end() :]
            score[i] = max(score[i], _TAG_WEIGHT if tag.group(1) == "ERROR" else 0.0)
        hits = generic.match(probe)
        if not hits or _ADVICE.match(probe):
            continue
        weight = max(_GENERIC_WEIGHTS[k] for k in hits)
        if tag and tag.group(1).startswith("WARN"):
            weight = min(weight, _WARNING_WEIGHT)
        if weight and _ZERO.search(probe) and not _NONZERO.search(probe):
            weight = 1.0  # "0 errors", "Failures: 0": the words of a run that went well
        elif weight > _WARNING_WEIGHT and _WARNING.search(probe) and not _NOT_WARNING.search(probe):
            weight = _WARNING_WEIGHT  # "file.c:4:9: warning: ...": printed on runs that pass as well
        score[i] = max(score[i], weight)


def _stack_traces(log: _Log) -> list[tuple[int, int, set[int]]]:
    """Each stack trace as (first, last, its telling lines): the header and message, the frames of the
    project's own code, and the frames nearest the error."""
    lines, n = log.lines, len(log.lines)
    traces: list[tuple[int, int, set[int]]] = []
    i = 0
    while i < n:
        line = lines[i]
        if _PY_TRACE.match(line):
            j = i + 1
            while (
                j < n and (lines[j].startswith((" ", "\t")) or not lines[j].strip()) and not _PY_TRACE.match(lines[j])
            ):
                j += 1
            last = min(j, n - 1)  # the exception line closes the trace
            frames = [k for k in range(i + 1, last) if lines[k].lstrip().startswith("File ")]
            telling = {i, last}
            own = [k for k in frames if not _LIBRARY.search(lines[k])]
            for k in own[-3:] + frames[-1:]:
                telling.update(range(k, min(k + 3, last)))  # the frame, its source line and caret
            traces.append((i, last, telling))
            i = last + 1
            continue
        frame = _JVM_FRAME if _JVM_FRAME.match(line) else (_JS_FRAME if _JS_FRAME.match(line) else None)
        if frame is not None:
            # a run of JVM or JavaScript frames: its header is the error line just above (the message may
            # run over a few lines between them)
            header = i
            for k in range(i - 1, max(i - 5, -1), -1):
                if not lines[k].strip() or frame.match(lines[k]):
                    break
                if _ERROR_LINE.search(lines[k]):
                    header = k
                    break
            j = i
            telling = set(range(header, i))
            while j < n and (frame.match(lines[j]) or lines[j].startswith("Caused by:")):
                if lines[j].startswith("Caused by:"):
                    telling.add(j)
                j += 1
            frames = [k for k in range(i, j) if k not in telling]
            own = [k for k in frames if not _LIBRARY.search(lines[k])]
            telling.update(own[:4])
            telling.update(frames[:1])
            traces.append((header, j - 1, telling))
            i = j
            continue
        if _GO_GOROUTINE.match(line) or _RUST_BT.match(line):
            frame = _GO_FRAME if line.startswith("goroutine") else _RUST_FRAME
            j = i + 1
            while j < n and frame.match(lines[j]):
                j += 1
            frames = list(range(i + 1, j))
            own = [k for k in frames if not _LIBRARY.search(lines[k])]
            telling = {i}
            for k in own[:4]:
                telling.add(k)
                # a Go or Rust frame is two lines: the function, then its file:line
                telling.add(k + 1 if k + 1 < j and lines[k + 1].startswith(("\t", "             at")) else k)
            traces.append((i, j - 1, telling))
            i = j
            continue
        i += 1
    return traces


def _baseline_evidence(log: _Log, baseline: str | None, score: list[float]) -> list[bool] | None:
    """Lines the passing run printed too weigh less; lines new in the failure weigh more. Which lines are new,
    or None when the baseline tells nothing (none given, or of another kind of run)."""
    if not baseline:
        return None
    seen = {_norm(strip_colour(line)) for line in baseline.splitlines()}
    new = [bool(line.strip()) and _norm(line) not in seen for line in log.lines]
    written = sum(1 for line in log.lines if line.strip())
    if not written or sum(new) > 0.8 * written:
        return None  # almost nothing in common: the baseline is of another kind of run and tells nothing
    for i, is_new in enumerate(new):
        if is_new:
            score[i] = max(score[i] * 1.3, 4.0)
        elif log.lines[i].strip():
            score[i] *= 0.3
    return new


def _damp_repeats(log: _Log, score: list[float], named: dict[int, str]) -> None:
    """The same message a third time (the warning every file prints; a setup error every test of a module hits:
    its result line and bare file:line, the same but for the test's name and numbers) is no new lead."""
    count: dict[str, int] = {}
    for i, line in enumerate(log.lines):
        if score[i] < _ANCHOR_MIN:
            continue
        words = [w for w in line.replace(named[i], "").split() if w.strip("_")] if named.get(i) else line.split()
        key = _norm(" ".join(words)) if named.get(i) or len(words) == 1 else " ".join(words)
        count[key] = count.get(key, 0) + 1
        if count[key] > 2:
            score[i] = min(score[i], 1.0)


def _block(log: _Log, i: int, traces: list[tuple[int, int, set[int]]]) -> list[int]:
    """The lines shown with anchor line i: its stack trace's telling lines, or the line and its context (the
    header it sits under, the source snippet or message that follows it, a stack trace right below it)."""
    for first, last, telling in traces:
        if first <= i <= last:
            return sorted(telling)[:_TRACE_CAP]
    lines, n = log.lines, len(log.lines)
    out = [i]
    before = lines[i - 1].strip() if i > 0 else ""
    if before and (
        (before.endswith(":") and not lines[i].startswith((" ", "\t")))
        or lines[i].lstrip().startswith("--> ")
        or _GO_PACKAGE.match(before)
    ):
        out.insert(0, i - 1)  # "main.c: In function 'main':", or the message above rustc's --> location
    j = i + 1
    # "panicked at src/main.rs:5:62:" -> its message follows; "- Expected / + Received" -> the diff follows
    opened = 2 if lines[i].rstrip().endswith(":") else (_CONTEXT_AFTER if _DIFF_HEADER.match(lines[i]) else 0)
    indent = len(lines[i]) - len(lines[i].lstrip())
    while j < n and j <= i + _CONTEXT_AFTER and (lines[j].strip() or (opened > 2 and j <= i + 2)):
        deeper = len(lines[j]) - len(lines[j].lstrip()) > indent
        if not ((_SNIPPET.match(lines[j]) and (deeper or not lines[j][:1].isspace())) or j <= i + opened):
            break
        out.append(j)
        j += 1
    for first, _last, telling in traces:
        if j <= first <= j + 2:  # a stack trace right below: the error's own
            out += sorted(telling)[:_TRACE_CAP]
            break
    return out


def _message(log: _Log, i: int) -> list[int]:
    """The lines under a failing test's header that say why (jest's expect/received, a TAP assertion's
    diagnostics), over blank lines, through the source line its frame points at, up to its stack, the next header
    or _MESSAGE_LINES lines of text."""
    lines, n = log.lines, len(log.lines)
    indent = len(lines[i]) - len(lines[i].lstrip())
    out, written = [], 0
    j = i + 1
    while j < n and written < _MESSAGE_LINES:
        line = lines[j]
        if line.strip():
            if len(line) - len(line.lstrip()) <= indent or _MESSAGE_END.match(line):
                break
            written += 1
        out.append(j)
        j += 1
        if _FRAME_POINTED.match(line):
            break
    while out and not lines[out[-1]].strip():
        out.pop()
    return out


def _select(
    log: _Log, score: list[float], traces: list, limit: int, tests: Set[int] = frozenset(), above: dict | None = None
) -> set[int]:
    anchors = [i for i, s in enumerate(score) if s >= _ANCHOR_MIN]
    if not anchors:
        return set()
    best = max(score[i] for i in anchors)
    anchors = [i for i in anchors if score[i] >= _RELATIVE * best]
    anchors.sort(key=lambda i: (-score[i], i))  # the strongest first; among equals the earliest (the root)
    chosen: set[int] = set()
    for i in anchors:
        if i in chosen:
            continue
        block = _block(log, i, traces) + (_message(log, i) if i in tests else [])
        if above and i in above:
            block.insert(0, above[i])  # the file or test the line sits under
        block = [k for k in dict.fromkeys(block) if k not in chosen]
        room = limit - len(chosen)
        if room <= 0:
            break
        if len(block) > room:
            block = sorted(block, key=lambda k: (k != i, abs(k - i)))[:room]
        chosen.update(block)
    return chosen


def _ranges(chosen: Iterable[int], n: int, limit: int) -> list[list[int]]:
    """Sorted 1-based ranges; a gap of one or two lines between two ranges is filled while the budget allows."""
    picked = sorted(set(chosen))
    room = limit - len(picked)
    out: list[list[int]] = []
    for i in picked:
        if out and i - out[-1][1] <= 1:
            out[-1][1] = i
            continue
        gap = i - out[-1][1] - 1 if out else None
        if gap is not None and gap <= 2 and gap <= room:
            room -= gap
            out[-1][1] = i
            continue
        out.append([i, i])
    return [[a + 1, b + 1] for a, b in out]


def lines_of(text: str, ranges: Sequence[Sequence[int]]) -> list[tuple[int, str]]:
    """(1-based number, line without colour) for each line of the ranges."""
    raw = text.splitlines()
    return [(k, strip_colour(raw[k - 1])) for a, b in ranges for k in range(a, min(b, len(raw)) + 1)]


def render_excerpt(text: str, ranges: Sequence[Sequence[int]], indent: str = "") -> list[str]:
    """The excerpt's lines, numbered, with '...' where lines are left out."""
    out: list[str] = []
    last = 0
    numbered = lines_of(text, ranges)
    width = len(str(numbered[-1][0])) if numbered else 1
    for k, line in numbered:
        if last and k != last + 1:
            out.append(f"{indent}{'.' * 3:>{width}}")
        out.append(f"{indent}{k:>{width}}  {line}")
        last = k
    return out


# ---------------------------------------------------------------------------------------------------------------
# A failed step: what the runner understood, the excerpt, the log's path


def explain(text: str, families: Sequence[Family], baseline: str | None = None, skip: int = 0) -> dict:
    """Findings (when families apply) and the excerpt of a failed step's log, as event fields."""
    from .findings import parse_findings

    found = parse_findings(text, list(families)).to_json() if families else None
    out: dict = {"excerpt": excerpt(text, families, baseline, skip=skip)}
    if found is not None:
        out["findings"] = found
    return out


def read_text(path: str | Path) -> str:
    """A log file's text as the excerpt's line numbers count it ('' when it cannot be read)."""
    from .findings import decode_log

    try:
        return decode_log(Path(path).read_bytes())
    except OSError:
        return ""
