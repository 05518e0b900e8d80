"""`runner make` under a real pseudo-terminal, as a person at one sees it: the progress line's timer ticks while a
step runs, no progress line shows before a step starts (while the lock or the spec is waited for) or when
nothing runs, no line is ever cut at the terminal's width (a log's path stays whole to copy), and -v streams
each step's lines above the progress line. pexpect runs the CLI in a pty; pyte renders what the screen shows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pyte

# what a terminal acts on rather than shows: CSI sequences (colour, cursor moves, erase) and carriage returns
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
PROGRESS = re.compile(r"\[(\d+)/(\d+)\]\s+(\d+\.\d)s  running: ")


class Terminal:
    """`python -m runner ARGS` in a pty of `cols` x `rows`, every byte it wrote kept in `raw`."""

    def __init__(self, root: Path, *args: str, cols: int = 80, rows: int = 24):
        self.cols, self.rows = cols, rows
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
        env["TERM"] = "xterm-256color"  # a terminal rich draws a live display on
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "runner", *args],
            cwd=str(root),
            env=env,
            dimensions=(rows, cols),
            encoding="utf-8",
            codec_errors="replace",
            timeout=60,
        )
        self.raw = ""

    def expect(self, pattern: str) -> re.Match:
        self.child.expect(pattern)
        self.raw += self.child.before + self.child.after
        return self.child.match

    def finish(self) -> int:
        self.child.expect(pexpect.EOF, timeout=120)
        self.raw += self.child.before
        self.child.close()
        return self.child.exitstatus

    def text(self) -> str:
        """What was printed, without the control sequences: a line rich broke in two has a newline in it."""
        return CONTROL.sub("", self.raw)

    def screen(self) -> list[str]:
        """The screen as it is now, row by row."""
        screen = pyte.Screen(self.cols, self.rows)
        pyte.Stream(screen).feed(self.raw)
        return [row.rstrip() for row in screen.display]


WAITS = """
[intent.wait]
run = "while [ ! -f go ]; do sleep 0.02; done"
inputs = ["x"]
timeout = 60
"""


def test_the_progress_timer_ticks_while_a_step_runs(project):
    project.spec(WAITS)
    project.write("x", "1")
    term = Terminal(project.root, "make")
    seen: list[float] = []
    while len(set(seen)) < 4:  # redrawn 8 times a second: a few tenths of a second of waiting
        match = term.expect(PROGRESS.pattern + "wait")
        assert match.group(1, 2) == ("0", "1")
        seen.append(float(match.group(3)))
    project.write("go", "")
    assert term.finish() == 0, term.text()
    assert seen == sorted(seen) and seen[-1] > seen[0]
    assert "[0/0]" not in term.raw and "running: -" not in term.raw


HELD = """
[intent.hold]
run = "while [ ! -f go ]; do sleep 0.02; done"
inputs = ["x"]
timeout = 60
"""


def test_no_progress_line_while_waiting_for_the_lock_nor_when_nothing_runs(project):
    """A second runner waits for the lock the first holds, then finds nothing to do: it never shows a progress
    line (it used to draw `[0/0] running: -` from its start, the wait included)."""
    project.spec(HELD)
    project.write("x", "1")
    first = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"], cwd=project.root, stdout=subprocess.PIPE, text=True
    )
    line = ""
    while '"step_started"' not in line:  # the first runner holds the lock and runs `hold`
        line = first.stdout.readline()
        assert line, "the first runner ended before its step started"
    second = Terminal(project.root, "make")
    second.expect("waiting for the lock held by pid")
    time.sleep(0.6)  # several redraws' worth, had a live display started
    project.write("go", "")
    assert first.wait(timeout=60) == 0
    assert second.finish() == 0, second.text()
    assert "runner: nothing to do: 1 cached" in second.text()
    assert "running" not in second.raw and "[0/" not in second.raw


def test_a_path_and_a_streamed_line_are_never_cut_at_the_terminals_width(project):
    """On a terminal 50 columns wide: the failed step's log path (well over 50 characters) and a 200-character
    line a step prints under -v are each written whole, for the terminal to soft-wrap (copied, they come
    out as one line); rich used to break them with newlines at the width. The progress line is cut instead."""
    name = "a-step-whose-name-alone-is-longer-than-the-terminal-is-wide"
    project.spec(f"""
        [intent.{name}]
        run = "sleep 0.5; printf '%0200d\\\\n' 7; echo why it broke; exit 3"
        inputs = ["x"]
    """)
    project.write("x", "1")
    term = Terminal(project.root, "make", "-v", cols=50)
    assert term.finish() == 1
    (log,) = project.root.glob(f".runner/runs/*/logs/{name}.log")
    text = term.text()
    assert str(log) in text, text
    assert f"{name} | {'0' * 199}7\n" in text, text
    frames = [m.group(0) for m in re.finditer(r"\x1b\[1m(.*?)\x1b\[0m", term.raw)]
    progress = [f for f in frames if PROGRESS.search(f)]
    assert progress and all(len(CONTROL.sub("", f)) - len("\x1b[1m\x1b[0m") <= 50 for f in progress), progress
    assert all(f.endswith("…\x1b[0m") for f in progress)  # cut, with an ellipsis


QUIET_AND_CHATTY = """
[intent.first]
run = "echo hello; echo world"
inputs = ["x"]

[intent.silent]
run = "true"
inputs = ["x"]
deps = ["first"]

[intent.ready]
run = "echo built > ready.txt"
inputs = ["x"]
outputs = ["ready.txt"]

[intent.all]
deps = ["silent", "ready"]
"""


def test_what_a_verbose_run_shows_on_a_terminal(project, snapshot):
    """The screen after `runner make -v -j 1`: the progress line is gone (transient), the streamed lines and
    the numbered steps stay, the aggregate `all` is not among them."""
    project.spec(QUIET_AND_CHATTY)
    project.write("x", "1")
    assert project.run("make", "ready").code == 0
    term = Terminal(project.root, "make", "-v", "-j", "1", cols=200, rows=30)
    assert term.finish() == 0, term.text()
    shown = [row for row in term.screen() if row]
    normal = [re.sub(r"\d+\.\d\ds", "<t>s", re.sub(r"run \d{8}-\d{6}-[0-9a-f]{6}", "run <id>", r)) for r in shown]
    assert normal == snapshot


ASKS = """
[worker]
kind = "replay"

[policy.default]
approval = "manual"

[intent.first]
run = "sleep 0.5"
inputs = ["x"]

[intent.notes]
goal = "Write notes.md"
inputs = ["x"]
outputs = ["notes.md"]
deps = ["first"]
"""


def test_a_question_asked_while_steps_run_shows_and_takes_the_answer(project):
    """The agent step's question comes while the progress line is up (its dependency ran under it): the
    question is a line without its end, which the live display held back unseen, and the run hung."""
    project.spec(ASKS)
    project.write("x", "1")
    term = Terminal(project.root, "make")
    term.expect(r"running: first")
    term.expect(r"Run agent step notes\? \[y/N\]: ")
    term.child.sendline("n")
    assert term.finish() == 1, term.text()
    assert "FAILED notes: you declined to run it" in term.text()
