"""The failure block a user reads for a failed step: what the runner understood (its failing tests with what its
JUnit reports say of each, the file:line locations, the cause), then the excerpt of its log, then the log's path."""

from __future__ import annotations

from .excerpt import read_text, render_excerpt


def findings_lines(found: dict | None, indent: str = "  ", most: int = 10) -> list[str]:
    """The failing tests, file:line locations and cause, as a few lines (nothing when nothing was understood)."""
    if not found:
        return []
    out = []
    tests = found.get("failed_tests") or []
    if tests:
        out.append(f"{indent}failing tests ({len(tests)}):")
        out += [f"{indent}  {t}{report_detail(found, t)}" for t in tests[:most]]
        if len(tests) > most:
            out.append(f"{indent}  ... and {len(tests) - most} more")
    # the errors, when the tool says which are errors: a compiler's warnings often come before the error that
    # failed the build, and outnumber it
    diags = found.get("diagnostics") or []
    errors = [d for d in diags if (d.get("severity") or "").lower() in ("error", "fatal error", "e")]
    warned = [d for d in diags if (d.get("severity") or "").lower() in ("warning", "w", "note")]
    # a linter's warnings before a failing test run (npm's pretest) say nothing of why the tests failed
    shown = errors or ([] if tests and len(warned) == len(diags) else diags)
    if shown:
        out.append(f"{indent}{'errors' if errors else 'locations'} ({len(shown)}):")
        for d in shown[:most]:
            where = ":".join(str(d[k]) for k in ("file", "line", "column") if d.get(k) is not None)
            out.append(f"{indent}  {where}: {d.get('message') or ''}".rstrip())
        if len(shown) > most:
            out.append(f"{indent}  ... and {len(shown) - most} more")
        if errors and len(diags) > len(errors):
            out.append(f"{indent}  (and {len(diags) - len(errors)} warnings and notes)")
    elif diags:
        out.append(f"{indent}({len(diags)} warning{'s' if len(diags) > 1 else ''} besides)")
    if found.get("cause"):
        out.append(f"{indent}cause: {found['cause']}")
    return out + _report_lines(found.get("reports"), indent)


def _report_lines(read: dict | None, indent: str) -> list[str]:
    """Where the counts came from (the JUnit reports read), and each report that could not be read."""
    if not read:
        return []
    out = []
    files = read.get("files") or []
    if files:
        more = f" and {len(files) - 1} more" if len(files) > 1 else ""
        out.append(f"{indent}counts and failing tests from {len(files)} JUnit report(s): {files[0]}{more}")
    out += [f"{indent}report {why}" for why in read.get("problems") or []]
    return out


def report_detail(found: dict, test: str) -> str:
    """A failing test's location and message, as its JUnit report gives them ('' without a report)."""
    for f in (found.get("reports") or {}).get("failures") or ():
        if f["test"] == test:
            where = ":".join(str(f[k]) for k in ("file", "line") if f.get(k) is not None)
            return (f" ({where})" if where else "") + (f": {f['message']}" if f.get("message") else "")
    return ""


def render_failure(event: dict, text: str | None = None) -> str:
    """The failure block of a failed step: the first line, what the runner understood, the excerpt, the log.

    The log's path is the last line, alone and whole (never wrapped), so that it can be copied or clicked."""
    lines = [f"FAILED {event['intent']}: {event.get('error') or 'failed'}"]
    lines += findings_lines(event.get("findings"))
    log = event.get("log")
    ranges = event.get("excerpt")
    if text is None and log and ranges:
        text = read_text(log)
    if text and ranges:
        total = len(text.splitlines())
        shown = sum(b - a + 1 for a, b in ranges)
        lines.append(f"  the log's lines that explain it ({shown} of {total}):")
        lines += render_excerpt(text, ranges, indent="    ")
    elif event.get("log_tail"):  # a record written before excerpts, or a log that could not be read
        lines.append("  last lines of the log:")
        lines += ["    " + line for line in event["log_tail"].splitlines()]
    if log:
        lines.append(f"  log: {log}")
    return "\n".join(lines)
