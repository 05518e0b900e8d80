"""Mining the run records and replays/ for misses: output the regex library did not read, failures it did not explain.

Every log is read again with today's library (the built-in families, the project's own regexes/, and for a
sub-project's step its folder's own first, as a run reads it), so a miss is
judged against the patterns as they are now, not as they were when the run happened. Which families read a log is
the adapter command's `parse` list: a shell step that runs an adapter command, each verify command of an agent
step, a command an agent ran in a recording when it is one of its step's adapter commands, and the `codex` family
for a Codex transcript; a plain shell line is read by the generic families and by its tool's own family (named
from the command: `identify.tool_name`), which is where patterns for its misses go.

What "looks like" a summary or a diagnostic is generic, so that it finds what no family knows (SUMMARY and
DIAGNOSTIC below, documented in the README's "Learning" section). A line inside any pattern's match is read, never
a miss; blank lines and the `$ command` lines the runner writes above a command's output are never misses.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import UsageError, UserError
from runner.record import list_runs, read_events
from runner.workspace import Layout

from ..libraries import folder_of, regex_dirs
from ..names import stored

if TYPE_CHECKING:
    from runner.findings import Findings
    from runner.parse import Library
    from runner.spec import AdapterCommand

FAILURE_UNEXPLAINED = "failure-unexplained"
SUMMARY_UNREAD = "summary-unread"
DIAGNOSTIC_UNEXTRACTED = "diagnostic-unextracted"
RETRY_NOT_CONVERGED = "retry-not-converged"
VERIFY_FAILED_FIRST = "verify-failed-first"
KINDS = (FAILURE_UNEXPLAINED, SUMMARY_UNREAD, DIAGNOSTIC_UNEXTRACTED, RETRY_NOT_CONVERGED, VERIFY_FAILED_FIRST)
# the kinds whose lines no pattern read: what induction may make patterns of
UNREAD_KINDS = (FAILURE_UNEXPLAINED, SUMMARY_UNREAD, DIAGNOSTIC_UNEXTRACTED)

TAIL = 20  # an unexplained failure with no line that looks like anything keeps its last lines
# what a match of these kinds covers is why a command failed (the other kinds count, mark or inform)
FAILURE_KINDS = frozenset({"failed_test", "diagnostic", "cause"})

# A tool's summary: counts beside the words test runners use ("3 passed", "Tests run: 5", "Ran 4 tests",
# "failed: 2"), or a package line of go test / cargo ("ok  example.com/x 0.01s", "FAIL example.com/x").
SUMMARY = re.compile(
    r"\b\d+ (?:passed|failed|failures?|errors?|skipped|tests?|specs?|examples?|succeeded|warnings?|xfailed|xpassed"
    r"|deselected|pending|todo|broken|ignored)\b"
    r"|\bTests? run:|\bRan \d+ tests?\b"
    r"|\b(?:tests?|passed|failed|failures|errors|skipped|ignored)\s*[:=]\s*\d+"
    r"|^(?:ok|FAIL|PASS)\s+[\w./@-]+(?:\s|$)",
    re.IGNORECASE,
)
# A diagnostic: a file with a line number (path/x.ext:12, x.ext(12,3), File "x.py", line 12, x.ext line 12), or an
# error word: error, failed, failure, fatal, panic, FAIL, a SomethingError or SomethingException, a traceback.
_LOCATION = re.compile(
    r"[\w.~/\\-]*\w\.[A-Za-z][\w]{0,9}(?::\d+|\(\d+(?:,\d+)?\)|\"?,? line \d+)"
    r"|(?:^|\s)(?:[\w.~-]+/)+[\w.~-]*\w:\d+"  # a file with a folder and no extension: docker/Dockerfile:3
)
_ERROR_WORD = re.compile(
    r"\b(?:error|errors|failed|failure|fatal|panic|panicked)\b|\bFAIL(?:ED|URE)?\b|[A-Z]\w*(?:Error|Exception)\b"
    r"|Traceback \(most recent call last\)"
    r"|^\s*(?:[✖✗✘×✕]|not ok \d+)\s",  # a failure marker at a line's start: `✖ name`, TAP's `not ok 2 - name`
    re.IGNORECASE,
)


def looks_like(line: str) -> str | None:
    """ "summary", "diagnostic" or None: what a line seems to be, by the generic shapes above (a summary first:
    "1 failed, 2 passed" holds an error word too)."""
    if not line.strip():
        return None
    if SUMMARY.search(line):
        return "summary"
    if _LOCATION.search(line) or _ERROR_WORD.search(line):
        return "diagnostic"
    return None


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the log file (in a recording: in the command's output or the transcript)
    text: str

    def to_json(self) -> dict:
        return {"number": self.number, "text": self.text}


@dataclass(frozen=True)
class Miss:
    """What the library missed in one log (or one command's part of it), with where it comes from."""

    kind: str  # one of KINDS
    run_id: str | None  # None for a recording in replays/
    step: str
    adapter: str | None  # the adapter whose command produced the log; None for a plain shell line
    command: str | None  # that command's name (test, lint, ...): a shell step's `run` or an agent step's verify
    run: str | None  # the command line as it ran
    families: tuple[str, ...]  # the regex families that read the log
    log: str | None  # the log's path, relative to the project root
    lines: tuple[Line, ...]
    part: str | None = None  # c1-a2: an agent step's candidate and attempt; a recording's item id
    error: str | None = None  # an attempt's error, for the kinds about attempts
    own: str | None = None  # the family named after the tool its command runs (identify.tool_name)

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "step": self.step,
            "adapter": self.adapter,
            "command": self.command,
            "run": self.run,
            "families": list(self.families),
            "log": self.log,
            "part": self.part,
            "error": self.error,
            "own": self.own,
            "lines": [line.to_json() for line in self.lines],
        }


@dataclass(frozen=True)
class InductionGroup:
    """The missed lines of one command (an adapter's, or a plain run line's tool), deduplicated, for
    `induce(lines, family)`."""

    adapter: str | None
    command: str | None
    families: tuple[str, ...]  # the families that read its output, in the command's order
    lines: tuple[str, ...]
    own: str | None = None  # the family named after its tool: where patterns go when it names only generic ones
    steps: tuple[str, ...] = ()  # the steps whose logs showed them


@dataclass(frozen=True)
class Mined:
    misses: tuple[Miss, ...]
    runs: tuple[str, ...]  # the run ids read, oldest first
    recordings: tuple[str, ...]  # the recordings read (paths relative to the project root)

    def lines_for_induction(self) -> tuple[InductionGroup, ...]:
        """The lines no pattern read, per command (an adapter command, or the tool a plain run line runs), each
        once, in the order first seen; the families in the command's order (never sorted: the first is where a
        pattern goes). A command that names no family but the generic ones has its tool's own (`own`)."""
        groups: dict[tuple[str, str, str], tuple[list[str], list[str], set[str], list[str]]] = {}
        for miss in self.misses:
            if miss.kind not in UNREAD_KINDS or not (miss.families or miss.own):
                continue
            key = (miss.adapter or "", miss.command or "", miss.own or "")
            fams, lines, seen, steps = groups.setdefault(key, ([], [], set(), []))
            fams += [f for f in miss.families if f not in fams]
            if miss.step not in steps:
                steps.append(miss.step)
            for line in miss.lines:
                if line.text not in seen:
                    seen.add(line.text)
                    lines.append(line.text)
        return tuple(
            InductionGroup(a or None, c or None, tuple(f), tuple(lines), o or None, tuple(steps))
            for (a, c, o), (f, lines, _, steps) in sorted(groups.items())
        )

    def to_json(self) -> dict:
        return {
            "runs": list(self.runs),
            "recordings": list(self.recordings),
            "misses": [m.to_json() for m in self.misses],
        }


# ---------------------------------------------------------------------------------------------------------------
# The runs, in the order they happened


def recorded_runs(root: Path) -> list[str]:
    """The recorded run ids, oldest first (record.list_runs: to the second by id, then by when each was written)."""
    return list_runs(Layout(root).runs_dir)


def runs_since(runs: list[str], since: str | None) -> int:
    """Where the window starts in `runs`: the first run whose id starts with `since` (a full id, or a prefix such
    as a day, 20261125); 0 for None."""
    if since is None:
        return 0
    for i, run_id in enumerate(runs):
        if run_id.startswith(since):
            return i
    known = f"the runs recorded go from {runs[0]} to {runs[-1]}" if runs else "no run is recorded yet"
    raise UsageError(f"error: no recorded run starts with '{since}' ({known}; see `runner log --list`)")


def run_started_at(run_id: str) -> float:
    """The run's start (its id is the local time) as a timestamp."""
    return datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").timestamp()


# ---------------------------------------------------------------------------------------------------------------
# Sections: one command's output, read by its families


@dataclass
class Section:
    """One command's output: a shell step's log, one verify command's part of an attempt's verify log, or a
    command an agent ran (in a recording). `first` is the file line number of its first line."""

    run_id: str | None
    step: str
    adapter: str | None
    command: str | None
    run: str | None
    families: tuple[str, ...]
    log: str | None
    first: int
    lines: list[str]
    failed: bool
    part: str | None = None
    own: str | None = None  # the family named after the tool its command runs
    findings: Findings | None = None
    kinds: list[set[str]] = field(default_factory=list)  # per line: the kinds of the matches covering it

    def numbered(self, indexes: Iterable[int]) -> tuple[Line, ...]:
        return tuple(Line(self.first + i, self.lines[i]) for i in indexes)

    @property
    def explained(self) -> bool:
        """The library says why it failed: a count, a failing test, a location or a cause."""
        f = self.findings
        if f is None:
            return False
        return bool(any(v is not None for v in f.summary.values()) or f.failed_tests or f.diagnostics or f.cause)

    def unread(self, what: str) -> list[int]:
        """The lines no pattern matched that look like `what` (summary or diagnostic)."""
        return [i for i, line in enumerate(self.lines) if not self.kinds[i] and looks_like(line) == what]

    def failure_lines(self, tail: int) -> list[int]:
        """The lines that say why it failed: what the failure patterns matched and what looks like a diagnostic;
        with none, its last `tail` lines that are not blank."""
        found = [
            i
            for i, line in enumerate(self.lines)
            if (self.kinds[i] & FAILURE_KINDS) or (not self.kinds[i] and looks_like(line) == "diagnostic")
        ]
        if found:
            return found
        return [i for i, line in enumerate(self.lines) if line.strip()][-tail:]


def command_failed(event: dict) -> bool:
    """A step failed because its command said so (a non-zero exit): not a timeout or an interrupt, which the
    runner itself explains, nor an output the runner found missing after a clean exit."""
    code = event.get("exit_code")
    return (
        event.get("status") == "failed"
        and isinstance(code, int)
        and code != 0
        and not event.get("timed_out")
        and not event.get("interrupted")
    )


class Reader:
    """Reads a project's run records and recordings with today's spec and library (a sub-project's step's logs with
    its folder's regexes/ first, as a run reads them: runner/libraries.py). `as_of`: the library as it was at
    some run instead of today's (audit.library_at)."""

    def __init__(self, root: Path, as_of: Callable[[Library], Library] | None = None):
        from runner.load import load_spec
        from runner.parse import load_library

        self.root = Path(root).resolve()
        self.spec = load_spec(self.root)
        self.as_of = as_of
        self.library = load_library(regex_dirs(self.root))
        if as_of is not None:
            self.library = as_of(self.library)
        self._libraries: dict[str, Library] = {}  # a sub-project's folder -> its steps' library
        self.runs_dir = Layout(self.root).runs_dir
        self._commands: dict[str, tuple[str | None, dict]] = {}

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    # ---- what a step runs ----------------------------------------------------------------------------------
    def adapter_commands(self, step: str) -> tuple[str | None, dict]:
        """(adapter name, {command name: AdapterCommand}) of a step as the project is today; (None, {}) for a
        step that is gone, has no adapter, or whose adapter = "auto" detects nothing."""
        if step not in self._commands:
            from runner.adapters import resolve

            intent = self.spec.intents.get(step)
            found: tuple[str | None, dict] = (None, {})
            if intent is not None and intent.adapter:
                try:
                    res = resolve(intent.adapter, self.root, self.spec.adapters)
                    found = (res.adapter.name, res.commands)
                except UserError:
                    pass
            self._commands[step] = found
        return self._commands[step]

    def kind_of(self, step: str) -> str | None:
        intent = self.spec.intents.get(step)
        return intent.kind if intent is not None else None

    def library_for(self, step: str | None) -> Library:
        """The library a step's logs are read with: the root's, or its sub-project's when it has regexes/ of
        its own."""
        folder = folder_of(step) if step else ""
        if not folder:
            return self.library
        if folder not in self._libraries:
            library = self.library
            if (self.root / folder / "regexes").is_dir():
                from runner.parse import load_library

                library = load_library(regex_dirs(self.root, folder))
                if self.as_of is not None:
                    library = self.as_of(library)
            self._libraries[folder] = library
        return self._libraries[folder]

    def families(self, names: Iterable[str], step: str | None = None) -> tuple[str, ...]:
        library = self.library_for(step)
        return tuple(n for n in names if n in library.families)

    # ---- reading ---------------------------------------------------------------------------------------------
    def section(self, lines: list[str], first: int, families: tuple[str, ...], **where) -> Section:
        """A command's output read by its families: the findings and, per line, the kinds that matched it."""
        from runner.findings import parse_findings
        from runner.identify import read_with

        text = "\n".join(lines)
        library = self.library_for(where.get("step"))
        families = tuple(read_with(library, families, text))  # and the test runners the log shows
        found = parse_findings(text, [library.family(f) for f in families])
        starts, pos = [], 0
        for line in lines:
            starts.append(pos)
            pos += len(line) + 1
        kinds: list[set[str]] = [set() for _ in lines]
        for m in found.matches:
            if not lines:
                break
            a = bisect.bisect_right(starts, m.start) - 1
            b = bisect.bisect_right(starts, max(m.start, m.end - 1)) - 1
            for i in range(max(a, 0), min(b, len(lines) - 1) + 1):
                kinds[i].add(m.kind)
        return Section(families=families, first=first, lines=lines, findings=found, kinds=kinds, **where)

    def shell_log(self, run_id: str, event: dict) -> Section | None:
        """A shell step's log in a run, read by its command's families (an adapter command's, or the generic
        ones and its tool's own for a plain shell line), and by the test runners the log shows."""
        from runner.findings import clean_log
        from runner.identify import tool_name
        from runner.step_log import step_command

        step = event["intent"]
        path = self.runs_dir / run_id / "logs" / f"{stored(step)}.log"
        lines = _read_lines(path, clean_log)
        if lines is None:
            return None
        run_line = lines[0][2:] if lines and lines[0].startswith("$ ") else None
        body = lines[1:] if run_line is not None else lines
        adapter, commands = self.adapter_commands(step)
        intent = self.spec.intents.get(step)
        cmd = commands.get(intent.run) if intent is not None and intent.run else None
        line, names = step_command(self.spec, intent) if intent is not None else (run_line or "", ())
        return self.section(
            body,
            2 if run_line is not None else 1,
            self.families(names, step),
            run_id=run_id,
            step=step,
            adapter=adapter if cmd else None,
            command=cmd.name if cmd else None,
            run=run_line,
            log=self.rel(path),
            failed=command_failed(event),
            own=tool_name(line) if line else None,
        )

    def verify_log(self, run_id: str, step: str, candidate: int, attempt: int, failed: bool) -> list[Section]:
        """One attempt's verify log cut at its `$ command` lines, each part read by its verify command's
        families; `failed`: the last part is the command that failed."""
        from runner.findings import clean_log
        from runner.identify import tool_name

        path = self.runs_dir / run_id / "attempts" / stored(step) / f"c{candidate}-a{attempt}" / "verify.log"
        lines = _read_lines(path, clean_log)
        if lines is None:
            return []
        adapter, commands = self.adapter_commands(step)
        intent = self.spec.intents.get(step)
        by_line: dict[str, tuple[str | None, AdapterCommand | None]] = {}
        for verify in intent.verify if intent is not None else ():
            found = commands.get(verify)
            by_line[found.run if found else verify] = (verify, found)
        heads = [i for i, line in enumerate(lines) if line.startswith("$ ") and line[2:] in by_line]
        if not heads or heads[0] != 0:
            heads.insert(0, 0)  # the verify commands changed since: the part before the first known one
        sections = []
        for n, start in enumerate(heads):
            stop = heads[n + 1] if n + 1 < len(heads) else len(lines)
            head = lines[start]
            has_head = head.startswith("$ ")
            known: tuple[str | None, AdapterCommand | None] = (None, None)
            if has_head:
                known = by_line.get(head[2:], known)
            name, cmd = known
            sections.append(
                self.section(
                    lines[start + 1 if has_head else start : stop],
                    start + (2 if has_head else 1),
                    self.families(cmd.parse, step) if cmd else (),
                    run_id=run_id,
                    step=step,
                    adapter=adapter if cmd else None,
                    command=name,
                    run=head[2:] if has_head else None,
                    log=self.rel(path),
                    failed=failed and n == len(heads) - 1,
                    part=f"c{candidate}-a{attempt}",
                    own=tool_name(head[2:]) if has_head else None,
                )
            )
        return sections

    def run(self, run_id: str) -> RunView:
        return RunView(self, run_id, read_events(self.runs_dir, run_id))


class RunView:
    """One recorded run: its events, and its logs read as sections."""

    def __init__(self, reader: Reader, run_id: str, events: list[dict]):
        self.reader = reader
        self.run_id = run_id
        self.events = events
        self.steps = [e for e in events if e.get("event") == "step_finished"]
        # (step, candidate) -> its attempt_finished events by attempt number
        self.attempts: dict[tuple[str, int], list[dict]] = {}
        for e in events:
            if e.get("event") == "attempt_finished":
                self.attempts.setdefault((e["intent"], e["candidate"]), []).append(e)
        for tries in self.attempts.values():
            tries.sort(key=lambda e: e["attempt"])
        self._verify: dict[tuple[str, int, int], list[Section]] = {}

    def attempt_dir(self, step: str, candidate: int, attempt: int) -> Path:
        return self.reader.runs_dir / self.run_id / "attempts" / stored(step) / f"c{candidate}-a{attempt}"

    def verify_ran(self, a: dict) -> bool:
        """The attempt's change reached the verify commands (their log exists)."""
        return (self.attempt_dir(a["intent"], a["candidate"], a["attempt"]) / "verify.log").is_file()

    def failed_at_verify(self, a: dict) -> bool:
        """A verify command failed: what else fails an attempt (the worker, the policy, no change) comes first,
        before any verify log is written; an interrupt cuts a verify short without judging the change."""
        return not a["ok"] and a.get("kind") == "logic" and self.verify_ran(a)

    def verify_sections(self, a: dict) -> list[Section]:
        """The attempt's verify log, cut per command (the last one failed if the attempt failed there)."""
        key = (a["intent"], a["candidate"], a["attempt"])
        if key not in self._verify:
            self._verify[key] = self.reader.verify_log(self.run_id, *key, self.failed_at_verify(a))
        return self._verify[key]

    def shell_sections(self) -> Iterator[tuple[dict, Section]]:
        for e in self.steps:
            if self.reader.kind_of(e["intent"]) == "agent" or "agent" in e:
                continue
            section = self.reader.shell_log(self.run_id, e)
            if section is not None:
                yield e, section

    def attempt_sections(self) -> Iterator[tuple[dict, list[Section]]]:
        for _key, tries in sorted(self.attempts.items()):
            for a in tries:
                yield a, self.verify_sections(a)

    def failure_log(self, e: dict) -> Section | None:
        """The log that shows why a failed step failed: a shell step's own log; for an agent step, the failing
        verify command of its chosen candidate's last attempt. None when there is none."""
        step = e["intent"]
        if "agent" in e or self.reader.kind_of(step) == "agent":
            chosen = (e.get("agent") or {}).get("chosen", 1)
            tries = self.attempts.get((step, chosen))
            if not tries or not self.failed_at_verify(tries[-1]):
                return None
            sections = self.verify_sections(tries[-1])
            return sections[-1] if sections else None
        return self.reader.shell_log(self.run_id, e)


def _read_lines(path: Path, clean) -> list[str] | None:
    """A log as a terminal shows it, cut into lines (a final newline ends the last line, it does not start
    another); None when there is no such file."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    text = clean(text)
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


# ---------------------------------------------------------------------------------------------------------------
# Misses


def section_misses(s: Section, error: str | None = None) -> list[Miss]:
    def miss(kind: str, indexes: list[int], **extra) -> Miss:
        return Miss(
            kind=kind,
            run_id=s.run_id,
            step=s.step,
            adapter=s.adapter,
            command=s.command,
            run=s.run,
            families=s.families,
            log=s.log,
            lines=s.numbered(indexes),
            part=s.part,
            own=s.own,
            **extra,
        )

    out = []
    headed = _unheaded(s)
    if headed:  # findings read without the file a line above them names: that line and theirs
        out.append(miss(DIAGNOSTIC_UNEXTRACTED, headed))
    if s.failed and not s.explained:
        flagged = [i for i, line in enumerate(s.lines) if not s.kinds[i] and looks_like(line)]
        if not flagged:
            flagged = [i for i, line in enumerate(s.lines) if not s.kinds[i] and line.strip()][-TAIL:]
        out.append(miss(FAILURE_UNEXPLAINED, flagged, error=error))
    for kind, what in ((SUMMARY_UNREAD, "summary"), (DIAGNOSTIC_UNEXTRACTED, "diagnostic")):
        indexes = s.unread(what)
        if indexes:
            out.append(miss(kind, indexes))
    return out


def _unheaded(s: Section) -> list[int]:
    """Findings a family read with no file, under a line that is a path alone (eslint's stylish and yamllint's
    standard output name a file once, above its findings) that no pattern reads: that line, and the findings
    under it. What a heading pattern (kind = "heading") and a finding pattern of the tool's family would read."""
    from runner.learn.propose import HEADING

    f = s.findings
    if f is None or not any(d.get("file") is None for d in f.diagnostics):
        return []
    found: list[int] = []
    heading: int | None = None
    for i, line in enumerate(s.lines):
        if not s.kinds[i] and HEADING.match(line):
            heading = i
        elif "diagnostic" in s.kinds[i] and heading is not None and "heading" not in s.kinds[heading]:
            found += [heading, i] if heading not in found else [i]
        elif line.strip() and "diagnostic" not in s.kinds[i]:
            heading = None
    return sorted(set(found))


def _attempt_miss(kind: str, view: RunView, a: dict, sections: list[Section]) -> Miss:
    """An attempt's miss: its failing verify command and the lines that say why; with no failing verify (the
    worker or the policy stopped it first), the step's adapter and no lines (its error says why)."""
    failing = sections[-1] if sections and sections[-1].failed else None
    if failing is not None:
        adapter, command, run, families = failing.adapter, failing.command, failing.run, failing.families
        lines, log = failing.numbered(failing.failure_lines(TAIL)), failing.log
    else:
        adapter, command, run, families = view.reader.adapter_commands(a["intent"])[0], None, None, ()
        lines, log = (), None
    return Miss(
        kind=kind,
        run_id=view.run_id,
        step=a["intent"],
        adapter=adapter,
        command=command,
        run=run,
        families=families,
        log=log,
        lines=lines,
        part=f"c{a['candidate']}-a{a['attempt']}",
        error=a.get("error"),
    )


def run_misses(view: RunView) -> list[Miss]:
    out: list[Miss] = []
    for e, section in view.shell_sections():
        out += section_misses(section, e.get("error"))
    for a, sections in view.attempt_sections():
        for section in sections:
            out += section_misses(section, a.get("error") if section.failed else None)
        if a["attempt"] == 1 and view.failed_at_verify(a):
            out.append(_attempt_miss(VERIFY_FAILED_FIRST, view, a, sections))
    for (_step, _candidate), tries in sorted(view.attempts.items()):
        last = tries[-1]
        if len(tries) > 1 and not last["ok"] and last.get("kind") != "interrupted":
            out.append(_attempt_miss(RETRY_NOT_CONVERGED, view, last, view.verify_sections(last)))
    return out


# ---------------------------------------------------------------------------------------------------------------


def miss_order(m: Miss) -> tuple:
    return (
        m.run_id is None,  # runs first, then recordings
        m.log or "",
        m.part or "",
        m.lines[0].number if m.lines else 0,
        KINDS.index(m.kind),
        m.step,
    )
