"""The helpers' `python -m runner` (tests/runner_cli.py) gives what a fresh process gives: the same stdout, stderr
and exit code, whatever the test process did to runner's modules before; a separate process, killed on a
timeout, with its exit by a signal reported as subprocess reports it; the standard input it is given."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import runner_cli
from click.testing import CliRunner

import runner.report
from runner import stat_cache
from runner.cli import cli

SPEC = """\
[project]
name = "same"
default = "all"

[intent.a]
run = "cat in.txt > out.txt; echo said a"
inputs = ["in.txt"]
outputs = ["out.txt"]

[intent.bad]
run = "echo why it broke >&2; exit 3"
inputs = ["in.txt"]

[intent.all]
deps = ["a", "bad"]
"""

BROKEN = """\
[project]
name = "broken"

[intent.a]
run = "true"
deps = ["nowhere"]
"""


def _fresh(args, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw
    )


def _project(tmp_path: Path, name: str, spec: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "intents.toml").write_text(spec)
    (root / "in.txt").write_text("one\n")
    return root


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["make", "--help"],
        ["validate"],
        ["validate", "--json"],
        ["list"],
        ["graph"],
        ["make", "--no-such-option"],
        ["make", "-j", "0"],
        ["explain", "nowhere"],
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("spec", [SPEC, BROKEN], ids=["good", "broken"])
def test_a_command_answers_as_in_a_fresh_process(tmp_path, args, spec):
    forked, fresh = _project(tmp_path, "forked", spec), _project(tmp_path, "fresh", spec)
    got = runner_cli.run(args, forked)
    want = _fresh(args, fresh)
    assert (got.returncode, got.stdout, got.stderr.replace(str(forked), "<root>")) == (
        want.returncode,
        want.stdout,
        want.stderr.replace(str(fresh), "<root>"),
    )


def test_a_run_prints_what_a_fresh_process_prints_and_a_step_writes_into_the_same_pipes(tmp_path):
    """A failed step's log on stderr, the step's own lines (written by the step, at the file-descriptor level) on
    stdout with -v; the numbered lines and the summary, less their times and run ids."""
    results = []
    for name, call in (("forked", runner_cli.run), ("fresh", _fresh)):
        root = _project(tmp_path, name, SPEC)
        results.append(call(["make", "-v", "-j", "1"], root))
    (got, want) = results
    assert got.returncode == want.returncode == 1
    assert [_timeless(line) for line in got.stdout.splitlines()] == [
        _timeless(line) for line in want.stdout.splitlines()
    ]
    assert "said a" in got.stdout and "why it broke" in got.stderr
    assert [_timeless(line) for line in got.stderr.splitlines()] == [
        _timeless(line) for line in want.stderr.splitlines()
    ]


def _timeless(line: str) -> str:
    line = re.sub(r"\d+\.\d\ds", "<time>", line)
    line = re.sub(r"run [0-9a-f-]{8,}", "run <id>", line)
    line = re.sub(r"runs/[0-9a-f-]+/", "runs/<id>/", line)
    return re.sub(r"/[^ ]*/(forked|fresh)/", "<root>/", line)


def test_what_the_test_process_did_to_runners_modules_never_reaches_a_runner(tmp_path, monkeypatch):
    """The runner starts from its modules as imported: neither a replaced function, a changed constant, nor the
    state an in-process run left (the proof it read, its compiled spec, its mask) is seen by it."""
    root = _project(tmp_path, "proj", SPEC.replace("exit 3", "exit 0"))
    assert CliRunner().invoke(cli, ["make", "-C", str(root)], catch_exceptions=False).exit_code == 0
    monkeypatch.setattr(runner.report, "summary_line", lambda *a, **k: "polluted")
    monkeypatch.setattr(stat_cache, "RACY_NS", 10**15)  # nothing would ever vouch
    (root / "in.txt").write_text("two\n")
    got = runner_cli.run(["make"], root)
    assert got.returncode == 0, got.stderr
    assert "polluted" not in got.stdout and got.stdout.splitlines()[-1].startswith("runner: 2 ran in ")


def test_a_timeout_kills_the_runner_and_raises_as_subprocess_does(tmp_path):
    """A runner queued behind the project's lock (held here) is killed at the timeout, with what it printed, and
    does not go on once the lock is free."""
    root = _project(tmp_path, "proj", SPEC)
    (root / ".runner").mkdir()
    with open(root / ".runner" / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired) as timed_out:
            runner_cli.run(["make"], root, timeout=3)
        assert time.monotonic() - started < 30
    assert timed_out.value.timeout == 3 and timed_out.value.cmd[-1:] == ["make"]
    assert timed_out.value.stderr.startswith(b"runner: waiting for the lock held by ")  # what it said before
    time.sleep(1)  # the lock is free: a runner still alive would have taken it and run by now
    assert not (root / "out.txt").exists() and not (root / ".runner" / "runs").exists()


def test_a_runner_ended_by_a_signal_reports_it_as_subprocess_does(tmp_path):
    spec = '[intent.die]\nrun = "kill -KILL $PPID; sleep 5"\ninputs = ["in.txt"]\n'
    forked, fresh = _project(tmp_path, "forked", spec), _project(tmp_path, "fresh", spec)
    assert runner_cli.run(["make"], forked).returncode == _fresh(["make"], fresh).returncode == -9


def test_the_runner_is_a_process_of_its_own_in_the_folder_and_environment_given(tmp_path):
    spec = textwrap.dedent("""\
        [intent.where]
        run = "echo $PPID $(pwd) $WHO > said.txt"
        inputs = ["in.txt"]
        outputs = ["said.txt"]
        env = { WHO = "$WHO" }
    """)
    root = _project(tmp_path, "proj", spec)
    got = runner_cli.run(["make"], root, env=dict(os.environ, WHO="someone"))
    assert got.returncode == 0, got.stderr
    pid, folder, who = (root / "said.txt").read_text().split()
    assert int(pid) != os.getpid() and (folder, who) == (str(root), "someone")
    assert os.getcwd() != str(root) and "WHO" not in os.environ


def test_the_runner_reads_the_input_given_and_otherwise_an_empty_stdin(tmp_path):
    root = _project(tmp_path, "proj", SPEC)
    log = "tests/test_a.py::test_one FAILED\n"
    args = ["parse", "--adapter", "python", "--command", "test", "--json", "-"]
    got = runner_cli.run(args, root, input=log)
    want = subprocess.run([sys.executable, "-m", "runner", *args], cwd=root, capture_output=True, text=True, input=log)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    empty = runner_cli.run(args, root)
    assert (empty.returncode, empty.stdout, empty.stderr) == tuple(
        getattr(_fresh(args, root), k) for k in ("returncode", "stdout", "stderr")
    )


def test_the_runner_has_the_signals_and_open_files_of_a_fresh_process(tmp_path):
    """Seen from its step while it runs: the signals the runner ignores and catches, and its open files (by number
    and kind), as a fresh `python -m runner` has them: nothing of pytest's (faulthandler's), xdist's or
    pytest-timeout's. (Not the mask: CPython blocks every signal while it starts a child, whenever that is.)"""
    # once the runner holds its pidfd of this step, it is done starting it: before, its spawn's own pipes and
    # /dev/null may still be open (seen under load, in either runner)
    look = (
        "until ls -l /proc/$PPID/fd | grep -q pidfd; do sleep 0.01; done; "
        "grep -E '^Sig(Ign|Cgt)' /proc/$PPID/status > seen.txt; "
        "ls -l /proc/$PPID/fd | sed 1d | sed -E 's/.* ([0-9]+) -> ([a-z]+:)?.*/\\1 \\2/' >> seen.txt"
    )
    spec = f"[intent.look]\nrun = '''{look}'''\ninputs = [\"in.txt\"]\n"  # a literal string: no escapes
    seen = []
    for name, call in (("forked", runner_cli.run), ("fresh", _fresh)):
        root = _project(tmp_path, name, spec)
        result = call(["make"], root)
        assert result.returncode == 0, result.stderr
        seen.append(_without_glibcs_own((root / "seen.txt").read_text()))
    assert seen[0] == seen[1]
    assert "SigCgt" in seen[0] and "\n0 " in seen[0]


def _without_glibcs_own(seen: str) -> str:
    """Signals 32 and 33 are glibc's own (thread cancellation, set*id across threads): it handles them once the
    process has had a thread, as the xdist worker this runner was forked from had; Python never sees them."""
    glibc = (1 << 31) | (1 << 32)
    return re.sub(r"^(Sig\w+):\t([0-9a-f]+)$", lambda m: f"{m[1]}: {int(m[2], 16) & ~glibc:016x}", seen, flags=re.M)
