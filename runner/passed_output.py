"""What a test printed or logged on its way to passing: the lines a failure excerpt never takes as a lead.

A family marks where a test's own output opens (kind `test_output`: pytest's `---- live log call ----` rule, a -v
line's test id still waiting for its result) and how the test ended: a `passed_test` line (or a line counted as
passed or skipped) closes it as passed; a failing test, a heading, the closing line or a bare result word that is
not a pass (kind `test_result`) closes it as not passed. The lines from the opening to a pass are that test's:
a traceback it logged and caught, an ERROR record, a warning, whatever words they hold, explain no failure. Output
that a test which then failed or errored printed stays a lead, and so does a section nothing closes (a run cut off
while the test ran).
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parse import Match

OPENS = "test_output"
# kinds that end a test's output without a pass: a failing test, the next test's heading, the run's closing line
CLOSES = frozenset({"failed_test", "heading", "complete", "test_result"})

# what a line says of a test's output, in the order the marks of one line are read: a line that names a test
# and its result at once (`t.py::test_a PASSED`) opens and closes on itself
OPEN, PASSED, CLOSED = 0, 1, 2


def passed_output(hits: Iterable[tuple[int, Match]], went_well: Set[str], failing: Set[str]) -> set[int]:
    """The 0-based lines of every test's output that a pass closed, from one family's hits (line, match); the
    opening line and the pass included. `went_well`: the patterns of a passed_test line or of one counted as
    passed or skipped; `failing`: those of a line counted as failed or in error. A second opening before the
    result (pytest's `live log setup`, then `live log call`) is the same test's."""
    marks = set()
    for line, m in hits:
        if m.kind == OPENS:
            marks.add((line, OPEN))
        elif m.pattern in went_well:
            marks.add((line, PASSED))
        elif m.kind in CLOSES or m.pattern in failing:
            marks.add((line, CLOSED))
    quiet: set[int] = set()
    opened: int | None = None
    for line, said in sorted(marks):
        if said == OPEN:
            if opened is None:
                opened = line
        elif opened is not None:
            if said == PASSED:
                quiet.update(range(opened, line + 1))
            opened = None
    return quiet
