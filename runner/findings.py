"""Reading a tool's log: its bytes as text, cleaned as a terminal shows it, and what the regex library's families
find in it (counts, failing tests, diagnostics, cause)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .parse import DEFAULT_STAGES

if TYPE_CHECKING:
    from .parse import Family, Match, Pattern

# CSI (colour, cursor), a charset choice, the string sequences (OSC `ESC ]`, APC `ESC _`, PM `ESC ^`, DCS `ESC P`,
# SOS `ESC X`: up to BEL or ST; Buildkite's agent stamps each line with the APC `ESC _bk;t=<epoch ms> BEL`), then
# any other two-byte escape
_ANSI = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()*+][0-9A-Za-z]|\x1b[\]_^PX][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)


def strip_ansi(text: str) -> str:
    """The text without terminal escape sequences (colour, cursor moves)."""
    return _ANSI.sub("", text)


_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def decode_log(data: bytes) -> str:
    """A log's bytes as text: UTF-8, or UTF-16 as Windows PowerShell's `>` writes it (a BOM, CRLF), or UTF-16
    without a BOM when every other byte of its start is NUL; undecodable bytes become U+FFFD, never an error."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    head = data[:4096]
    if len(head) >= 8 and head.count(0) * 3 > len(head):  # ASCII text in UTF-16: half its bytes are NUL
        odd, even = head[1::2].count(0), head[0::2].count(0)
        if odd > 2 * even:
            return data.decode("utf-16-le", errors="replace")
        if even > 2 * odd:
            return data.decode("utf-16-be", errors="replace")
    return data.decode("utf-8", errors="replace")


# a CI service's own stamp before each line (GitHub Actions' raw job logs): not the tool's output
_CI_STAMP = re.compile(r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")


def strip_stamps(text: str) -> str:
    """The text without the timestamp a CI service puts before each line (2022-05-09T15:19:16.0346915Z)."""
    return _CI_STAMP.sub("", text) if "Z " in text[:4096] else text


def clean_log(text: str) -> str:
    """What a terminal would show: no colour codes, CRLF as LF, a \\r-rewritten line as its final text, and no CI
    timestamps before the lines."""
    text = strip_stamps(_ANSI.sub("", text).replace("\r\n", "\n"))
    if "\r" not in text:
        return text
    out = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        out.append(line)
    return "\n".join(out)


BASE_COUNTS = ("passed", "failed", "skipped", "errors")


@dataclass
class Findings:
    summary: dict[str, int | str | None] = field(default_factory=lambda: dict.fromkeys(BASE_COUNTS))
    failed_tests: list[str] = field(default_factory=list)
    diagnostics: list[dict] = field(default_factory=list)
    cause: str | None = None
    complete: bool = False
    matches: list[Match] = field(default_factory=list, repr=False)

    def to_json(self) -> dict:
        return {
            "summary": dict(self.summary),
            "failed_tests": list(self.failed_tests),
            "diagnostics": [dict(d) for d in self.diagnostics],
            "cause": self.cause,
            "complete": self.complete,
        }


def _number(value: str) -> int | str:
    return int(value) if value.isdigit() else value


def parse_findings(
    text: str,
    families: list[Family],
    stages: Iterable[str] = DEFAULT_STAGES,
    naive: bool = False,
    choose: Callable[[Family], tuple[Pattern, ...]] | None = None,
) -> Findings:
    """Findings from a tool's log: colour and \\r progress removed first, families applied in order. `choose`
    picks each family's patterns instead of `stages` (Family.used for a step's slice, Family.with_candidate)."""
    text = clean_log(text)
    stages = tuple(stages)
    found = Findings()
    tally = _Tally()
    cause_rank: tuple[int, int] | None = None
    diag_at: set[tuple[int, int]] = set()
    diag_pos: set[int] = set()  # where any family read a diagnostic
    incomplete = False  # a kill or interrupt line: the closing summary of an earlier part proves nothing
    zero: set[str] = set()  # counts a matched line shows the tool omits when they are zero
    partial = False  # a test binary died (a panic, its own timeout) while tests ran: not every result printed
    started = False  # a line announced a test running (go's `=== RUN`, a -json `run` event)
    reported = False  # a test's result was printed (a line counted): a crash before any says nothing of the counts
    for fi, fam in enumerate(families):
        order = {p.name: k for k, p in enumerate(fam.patterns)}
        patterns = {p.name: p for p in fam.patterns}
        if choose is not None:
            hits = fam.finditer_patterns(text, choose(fam))
        else:
            hits = fam.finditer_naive(text, stages) if naive else fam.finditer(text, stages)
        heading: dict[str, str] = {}  # the file or test that the lines below a heading line belong to
        ended = False  # the test binary printed its verdict: a crash after it cut off no test
        running: dict[str, None] = {}  # tests announced as running whose result has not been printed yet
        cut_off: dict[str, None] = {}  # the test announced last before the binary died
        opened = ""  # the test whose own output a line opened last (pytest -v's id line above its live logs)
        for m in hits:
            found.matches.append(m)
            p = patterns[m.pattern]
            zero.update(p.zero)
            if m.kind == "summary":
                tally.add(p, m.fields)
                reported = True
            elif m.kind == "heading":
                heading = {k: v.strip() for k, v in m.fields.items() if v}
            elif m.kind == "failed_test":
                if heading.get("outcome", "failed") != "failed":
                    continue  # listed under another outcome's count (Playwright's `N flaky`: passed on a retry)
                name = (m.fields.get("name") or heading.get("name") or "").strip()
                if name and name not in found.failed_tests:
                    found.failed_tests.append(name)
            elif m.kind == "diagnostic":
                d = _diagnostic(m.fields, heading)
                # at one position the first pattern wins (ruff's line is also gcc-shaped); repeats are dropped
                # a later family's file-less reading of a line an earlier family read (with the file its heading
                # names) adds nothing: a generic finding under a tool's own heading pattern
                elsewhere = d["file"] is None and m.start in diag_pos
                if (fi, m.start) not in diag_at and d not in found.diagnostics and not elsewhere:
                    found.diagnostics.append(d)
                diag_at.add((fi, m.start))
                diag_pos.add(m.start)
            elif m.kind == "cause":
                rank = (fi, order[m.pattern])  # earlier family, then earlier pattern, wins
                if p.cause is not None and (cause_rank is None or rank < cause_rank):
                    cause_rank = rank
                    found.cause = p.cause.format_map({k: (v or "").strip() for k, v in m.fields.items()})
            elif m.kind == "complete":
                found.complete = True
            elif m.kind == "incomplete":
                incomplete = True
            elif m.kind == "verdict":
                ended = True
            elif m.kind == "started":
                ended = False
                started = True
            elif m.kind == "partial":
                partial = partial or not ended
                if not ended and running:
                    cut_off[next(reversed(running))] = None  # the test the tool had announced last
            elif m.kind == "running":
                name = (m.fields.get("name") or "").strip()
                running.pop(name, None)  # resumed (=== CONT): announced again, last
                running[name] = None
            elif m.kind == "test_output" and m.fields.get("name"):
                opened = (m.fields["name"] or "").strip()
            elif m.kind == "test_result" and opened and opened not in found.failed_tests:
                found.failed_tests.append(opened)  # a bare FAILED below the live logs of the test opened last
            elif m.kind == "stopped":
                stopped = m.fields.get("name") or m.fields.get("paused") or ""
                running.pop(stopped.strip(), None)
        # the test a crash interrupted, if the tool never printed its result (a panic in a goroutine the test
        # started kills the binary before testing can report it), is a failing test: the one it announced last
        interrupted = [name for name in cut_off if name and name in running]
        for name in interrupted:
            if name not in found.failed_tests:
                found.failed_tests.append(name)
        if reported:
            tally.count("failed", len(interrupted))
        tally.close_family()
    found.summary.update(tally.result())
    found.complete = found.complete and not incomplete
    summary = found.summary
    if found.complete and (not partial or (started and reported)):
        # a finished run's summary leaves out what is zero (pytest prints only non-zero counts; a finished
        # `go test -v` has printed a line for every result): 0, not "unknown". A binary that died while its
        # tests ran, its package's closing line printed, printed a line for every result it had (the test the
        # panic stopped fails): what it printed is its count. A log cut off before its end keeps null, and so
        # does a binary that died before any test ran (a panic in init) or before any test's result was printed
        # (the first test's goroutine panicked): it names the test it cut off, and no count.
        for key in zero:
            if summary.get(key) is None:
                summary[key] = 0
        if summary.get("failed") == 0 and summary.get("errors") in (0, None):
            found.failed_tests = []  # the tool's own summary says nothing failed: no line read otherwise counts
    total, parts = summary.get("total"), [summary.get(k) for k in ("failed", "skipped")]
    errors = summary.get("errors")
    parts.append(errors if errors is not None else 0)  # RSpec has no errors apart from failures
    if summary.get("passed") is None and isinstance(total, int) and all(isinstance(v, int) for v in parts):
        # Surefire, unittest, minitest, RSpec print the total and every other count, never the passed
        summary["passed"] = total - sum(v for v in parts if isinstance(v, int))
    return found


def _diagnostic(fields: dict[str, str | None], heading: dict[str, str]) -> dict[str, str | int | None]:
    """A diagnostic's fields; its file from the heading it sits under (eslint's stylish output names the file once,
    above its findings) when its own line names none."""
    message = fields.get("message")
    d: dict[str, str | int | None] = {
        "file": fields.get("file") or heading.get("file"),
        "line": None,
        "column": None,
        "message": message.strip() if message is not None else None,
    }
    for key in ("line", "column"):
        v = fields.get(key)
        d[key] = int(v) if v and v.isdigit() else v
    for key, v in fields.items():
        if key not in d and v is not None:
            d[key] = v
    return d


class _Tally:
    """The counts: what the tool printed (its summary lines, summed), and what counting its result lines gives. A
    count the tool printed beats counting; result lines printed after the last summary that gives their count (a
    test binary that crashed before its summary, a module cut off before Surefire's totals) are added to it."""

    def __init__(self):
        self.printed: dict[str, int | str] = {}
        self.counted: dict[str, int] = {}  # every result line, for a count no summary gives
        self.pending: dict[str, int] = {}  # this family's result lines since the last summary that gave the count
        self.after: dict[str, int] = {}  # result lines no summary covered, over every family

    def add(self, p: Pattern, fields: dict[str, str | None]) -> None:
        if p.count:
            self._count(p.count, 1)
        for key, raw in fields.items():
            if raw is None:
                continue
            value = _number(raw.strip())
            if p.aggregate == "partial":  # per-class lines: counted as result lines are
                if isinstance(value, int):
                    self._count(key, value)
                continue
            before = self.printed.get(key)
            if p.aggregate == "sum" and isinstance(value, int) and isinstance(before, int):
                self.printed[key] = before + value
            else:
                self.printed[key] = value
            self.pending[key] = 0  # this summary covers the result lines above it

    def count(self, key: str, n: int) -> None:
        """n more results of this kind, read from result lines (none when n is 0)."""
        if n:
            self._count(key, n)

    def _count(self, key: str, n: int) -> None:
        self.counted[key] = self.counted.get(key, 0) + n
        self.pending[key] = self.pending.get(key, 0) + n

    def close_family(self) -> None:
        for key, n in self.pending.items():
            self.after[key] = self.after.get(key, 0) + n
        self.pending = {}

    def result(self) -> dict[str, int | str]:
        out = dict(self.printed)
        for key, n in self.counted.items():
            value = out.get(key)
            if value is None:
                out[key] = n
            elif isinstance(value, int) and self.after.get(key):
                out[key] = value + self.after[key]
        return out


def render_findings(findings: Findings) -> str:
    """A few lines for humans: counts, failing tests, diagnostics, cause."""
    counts = ", ".join(f"{v} {k}" for k, v in findings.summary.items() if v is not None)
    lines = [f"summary: {counts or 'no counts reported'}" + ("" if findings.complete else " (run did not finish)")]
    if findings.failed_tests:
        lines.append(f"failed tests ({len(findings.failed_tests)}):")
        lines += [f"  {name}" for name in findings.failed_tests]
    if findings.diagnostics:
        lines.append(f"diagnostics ({len(findings.diagnostics)}):")
        for d in findings.diagnostics:
            where = ":".join(str(x) for x in (d["file"], d["line"], d["column"]) if x is not None)
            lines.append(f"  {where}: {d['message']}")
    if findings.cause:
        lines.append(f"cause: {findings.cause}")
    return "\n".join(lines)
