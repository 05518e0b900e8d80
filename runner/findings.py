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

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()*+][0-9A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


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


def clean_log(text: str) -> str:
    """What a terminal would show: no colour codes, CRLF as LF, a \\r-rewritten line as its final text."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
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
    explicit: dict[str, int | str] = {}
    counted: dict[str, int] = {}
    cause_rank: tuple[int, int] | None = None
    diag_at: set[tuple[int, int]] = set()
    incomplete = False  # a kill or interrupt line: the closing summary of an earlier part proves nothing
    zero: set[str] = set()  # counts a matched line shows the tool omits when they are zero
    partial = False  # a test binary died (a panic, its own timeout): the results it printed are not all
    for fi, fam in enumerate(families):
        order = {p.name: k for k, p in enumerate(fam.patterns)}
        patterns = {p.name: p for p in fam.patterns}
        if choose is not None:
            hits = fam.finditer_patterns(text, choose(fam))
        else:
            hits = fam.finditer_naive(text, stages) if naive else fam.finditer(text, stages)
        for m in hits:
            found.matches.append(m)
            p = patterns[m.pattern]
            zero.update(p.zero)
            if m.kind == "summary":
                if p.count:
                    counted[p.count] = counted.get(p.count, 0) + 1
                for key, raw in m.fields.items():
                    if raw is None:
                        continue
                    value = _number(raw.strip())
                    if p.aggregate == "partial":  # per-class lines: what a run cut off before its totals tells
                        if isinstance(value, int):
                            counted[key] = counted.get(key, 0) + value
                        continue
                    before = explicit.get(key)
                    if p.aggregate == "sum" and isinstance(value, int) and isinstance(before, int):
                        explicit[key] = before + value
                    else:
                        explicit[key] = value
            elif m.kind == "failed_test":
                name = (m.fields.get("name") or "").strip()
                if name and name not in found.failed_tests:
                    found.failed_tests.append(name)
            elif m.kind == "diagnostic":
                message = m.fields.get("message")
                d: dict[str, str | int | None] = {
                    "file": m.fields.get("file"),
                    "line": None,
                    "column": None,
                    "message": message.strip() if message is not None else None,
                }
                for key in ("line", "column"):
                    v = m.fields.get(key)
                    d[key] = int(v) if v and v.isdigit() else v
                for key, v in m.fields.items():
                    if key not in d and v is not None:
                        d[key] = v
                # at one position the first pattern wins (ruff's line is also gcc-shaped); repeats are dropped
                if (fi, m.start) not in diag_at and d not in found.diagnostics:
                    found.diagnostics.append(d)
                diag_at.add((fi, m.start))
            elif m.kind == "cause":
                rank = (fi, order[m.pattern])  # earlier family, then earlier pattern, wins
                if p.cause is not None and (cause_rank is None or rank < cause_rank):
                    cause_rank = rank
                    found.cause = p.cause.format_map({k: (v or "").strip() for k, v in m.fields.items()})
            elif m.kind == "complete":
                found.complete = True
            elif m.kind == "incomplete":
                incomplete = True
            elif m.kind == "partial":
                partial = True
    for key, value in counted.items():
        explicit.setdefault(key, value)  # a count the tool printed beats counting its lines
    found.summary.update(explicit)
    found.complete = found.complete and not incomplete
    if found.complete and not partial:
        # a finished run's summary leaves out what is zero (pytest prints only non-zero counts; a finished
        # `go test -v` has printed a line for every result): 0, not "unknown". A cut-off log keeps null.
        for key in zero:
            if found.summary.get(key) is None:
                found.summary[key] = 0
    return found


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
