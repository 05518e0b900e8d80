"""A failed verify command's feedback for the next attempt: what its JUnit reports and the regex library say of its
output (the failing tests, each with its location and message, and the error locations), and the excerpt of the
output that explains the failure where those do not say why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..failure import report_detail

if TYPE_CHECKING:
    from .agent import AttemptJob


def reports_read(ws: Path, patterns: tuple[str, ...], since: float) -> dict | None:
    """What the JUnit reports a verify command wrote in the workspace say (reports.py), or None."""
    if not patterns:
        return None
    from .. import reports

    return reports.read(ws, ".", patterns, since=since)


def findings_text(job: AttemptJob, families: tuple[str, ...], output: str, read: dict | None = None) -> str:
    """What the regex library understood of the failing output, not the whole log: the failing tests (from the
    command's JUnit reports first, with each one's location and message) and error locations; when no family
    knows the tool (or its families found neither), or a failing test has no message from a report, the excerpt of
    the output that explains the failure (excerpt.py)."""
    from ..excerpt import excerpt, render_excerpt

    lines: list[str] = []
    chosen: list = []
    found: dict = {}
    if families:
        try:
            from ..findings import parse_findings
            from ..libraries import folder_of, regex_dirs
            from ..parse import load_library

            # the built-in families, the root's regexes/, then its sub-project's own (job.regexes: where a hermetic
            # attempt's worker put the project's regexes/ folders)
            library = load_library(regex_dirs(job.regexes or job.root, folder_of(job.intent.name)))
            from ..identify import families as read_with

            chosen = read_with(library, families, output)  # and the test runners the output shows
            # the active patterns, and a canary's where this step is in its slice (its key holds that canary)
            found = parse_findings(output, chosen, choose=lambda family: family.used(job.slice_key)).to_json()
        except Exception as exc:  # a broken project regex must not hide the verify failure itself
            chosen, found = [], {}
            lines.append(f"(the output could not be parsed: {exc})")
    if read is not None:
        from ..reports import into

        found = into({"findings": found}, read)["findings"]
    if found.get("failed_tests"):
        lines.append("Failing tests:")
        lines += [f"- {t}{report_detail(found, t)}" for t in found["failed_tests"]]
    if families:
        if found.get("diagnostics"):
            lines.append("Errors:")
            for d in found["diagnostics"][:20]:
                where = ":".join(str(d.get(k)) for k in ("file", "line", "column") if d.get(k) is not None)
                lines.append(f"- {where}: {d.get('message', '')}".strip())
        if found.get("cause"):
            lines.append(f"Cause: {found['cause']}")
    failed = found.get("failed_tests") or ()
    # a failing test's name says what to fix only with its message, which a JUnit report gives and a text family
    # does not: then the output's own lines say why (an assertion's values, a traceback); a compiler's findings
    # carry their messages
    told_why = {f["test"] for f in (found.get("reports") or {}).get("failures") or () if f.get("message")}
    explained = all(t in told_why for t in failed) if failed else bool(found.get("diagnostics"))
    if not explained:
        ranges = excerpt(output, chosen)
        if ranges:
            lines.append("The lines of the output that explain the failure (numbered; ... marks lines left out):")
            lines += render_excerpt(output, ranges)
    return "\n".join(lines)
