"""RUNNER_RACY_WINDOW_MS, the racy window as the tests shorten it (tests/racy.py): unset or empty, a runner's
window is git's second, as a user's; set, it is that many milliseconds, 10 or more; anything else stops the runner
before it reads the project."""

from __future__ import annotations

import marshal
import time

import pytest

from runner.entry import RACY_WINDOW

SPEC = """
[project]
name = "spec"
default = "say"

[intent.say]
run = "cat in.txt > said.txt"
inputs = ["in.txt"]
outputs = ["said.txt"]
"""


def _kept(project) -> set[str]:
    """The paths whose digests the target's proof keeps: their stats were too fresh to vouch for their bytes."""
    (entry,) = marshal.loads((project.root / ".runner/noop").read_bytes()).values()
    return set(entry[3])


@pytest.mark.parametrize(("window", "vouched"), [(None, False), ("", False), ("1000", False), ("50", True)], ids=repr)
def test_the_no_op_trusts_an_outputs_stats_once_the_window_set_has_passed(project, real_racy_window, window, vouched):
    """The build's output is younger than any window when the proof is made, so its digest is kept; 0.2 s later a
    no-op finds its stats vouching for it, and drops the digest, only under a 50 ms window: under a second (unset,
    empty, or set to 1000) the same stats are still too fresh."""
    env = {} if window is None else {RACY_WINDOW: window}
    project.spec(SPEC)
    project.write("in.txt", "one\n", age=5)
    assert project.make(env=env).code == 0
    time.sleep(0.2)
    noop = project.make(env=env)
    assert noop.events()[0].get("fast") is True and noop.statuses() == {"say": "cached"}
    assert ("said.txt" not in _kept(project)) is vouched


@pytest.mark.parametrize("value", ["abc", "9", "0", "-50", "50ms", "1e3", " 50", "\u0665\u0660"])
def test_a_window_that_is_not_ten_or_more_milliseconds_stops_the_runner_before_it_reads_the_project(project, value):
    project.spec(SPEC)
    project.write("in.txt", "one\n")
    before = sorted(p.name for p in project.root.iterdir())
    for args in (("make",), ("make", "--json"), ("status",)):
        result = project.run(*args, env={RACY_WINDOW: value})
        assert (result.code, result.out) == (2, "")
        assert result.err == (
            f"error: RUNNER_RACY_WINDOW_MS={value!r}: expected a whole number of milliseconds, 10 or more (a setting "
            "for runner's own tests: unset it for the racy window of 1000 ms)\n"
        )
    assert sorted(p.name for p in project.root.iterdir()) == before  # no .runner/
