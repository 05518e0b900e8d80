"""No process outlives a runner killed outright (SIGKILL): its next start kills what the killed run started, those
its journal names and those it does not (a child runs a moment before its line is written; a child may move to a
session of its own), found by the run's token in their environment."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest


def _marker() -> str:
    """A `sleep` argument no other process on the machine has: /proc finds the process by it."""
    return f"30.{random.randrange(10**9):09d}"


def _with(marker: str) -> list[int]:
    """Live processes whose command line is `sleep MARKER`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", marker.encode()] and state != b"Z":
            found.append(int(entry))
    return found


def _kill(markers: list[str]) -> None:
    """What a failing test leaves must not outlive it."""
    for marker in markers:
        for pid in _with(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _start(project, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", *args],
        cwd=project.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait(found, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not found():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def _journal(project) -> list[dict]:
    return [json.loads(line) for line in project.read(".runner/inflight").splitlines()]


def test_children_no_journal_line_names_are_found_by_the_run_token_and_killed(project):
    # `plain` starts through posix_spawn, `shelled` through /bin/sh; what `shelled` starts with setsid leaves the
    # step's process group for a session of its own, where no journaled group reaches it
    plain, shelled, escaped = _marker(), _marker(), _marker()
    project.spec(f"""
        [intent.plain]
        run = "sleep {plain}"
        outputs = ["plain.txt"]

        [intent.shelled]
        run = "setsid sleep {escaped} & sleep {shelled}"
        outputs = ["shelled.txt"]
    """)
    proc = _start(project, "-j", "2")
    markers = [plain, shelled, escaped]
    try:
        _wait(lambda: all(_with(m) for m in markers), "the three sleeps")
        _wait(lambda: sum("start" in e for e in _journal(project)) == 2, "both steps journaled")
        proc.kill()
        proc.wait(10)
        # as a kill a moment earlier leaves it: the head line written, the steps' start lines not yet
        head = _journal(project)[0]
        assert list(head) == ["run"] and len(head["run"]) == 32
        (project.root / ".runner/inflight").write_text(json.dumps(head) + "\n")
        assert all(_with(m) for m in markers), "the children died with the runner: nothing to recover"

        project.spec('[intent.plain]\nrun = "true"\n\n[intent.shelled]\nrun = "true"\n')
        result = project.make()
        assert result.code == 0, result.err
        assert [m for m in markers if _with(m)] == [], "a child of the killed run is still running"
        assert project.read(".runner/inflight") == ""  # recovered, and this run settled everything
    finally:
        proc.kill()
        _kill(markers)


def test_the_token_is_in_every_childs_environment_and_in_no_key(project):
    project.spec("""
        [intent.env]
        run = "printenv RUNNER_RUN > token.txt"
        inputs = ["intents.toml"]
        outputs = ["token.txt"]
    """)
    first = project.make()
    assert first.code == 0, first.err
    token = project.read("token.txt").strip()
    assert len(token) == 32
    again = project.make()
    assert again.statuses() == {"env": "cached"}  # a run's token changes nothing a key holds
    assert project.read(".runner/inflight") == ""
    assert token not in "".join(p.read_text() for p in (project.root / ".runner/runs").rglob("*.json*"))


def test_a_runner_killed_by_its_own_child_mid_start_leaves_nothing_running(project):
    """The window itself, raced for real: the first step's child kills the runner while it starts the others (a
    -j 8 start of eight children takes a few milliseconds, the child's kill about one), so a child is often
    started and not yet journaled. Whatever the moment, the next start leaves none of them running."""
    rounds, unjournaled = 4, 0
    for _ in range(rounds):
        sleeps = [_marker() for _ in range(7)]
        spec = '[intent.a0]\nrun = "kill -9 $PPID"\n'
        spec += "".join(f'\n[intent.a{i + 1}]\nrun = "sleep {m}"\n' for i, m in enumerate(sleeps))
        project.spec(spec)
        proc = _start(project, "-j", "8")
        try:
            proc.wait(20)
            assert proc.returncode == -signal.SIGKILL
            time.sleep(0.05)  # a child the kill caught between its start and its exec is past its exec now
            journaled = {e["start"] for e in _journal(project) if "start" in e}
            unjournaled += sum(1 for i, m in enumerate(sleeps) if _with(m) and f"a{i + 1}" not in journaled)
            project.spec("".join(f'[intent.a{i}]\nrun = "true"\n' for i in range(8)))
            result = project.make()
            assert result.code == 0, result.err
            assert [m for m in sleeps if _with(m)] == [], "a child of the killed run is still running"
        finally:
            proc.kill()
            _kill(sleeps)
    print(f"{unjournaled} children started and not yet journaled when the runner died, in {rounds} rounds")


@pytest.mark.parametrize("damage", ["torn", "empty-head"])
def test_a_damaged_head_line_costs_only_the_scan(project, damage):
    project.spec('[intent.a]\nrun = "echo a > a.txt"\noutputs = ["a.txt"]\n')
    (project.root / ".runner").mkdir(parents=True)
    journal = '{"run": "ab\n' if damage == "torn" else '{"run": ""}\n'
    (project.root / ".runner/inflight").write_text(journal + '{"start": "a", "pgid": 0, "outputs": ["a.txt"]}\n')
    project.write("a.txt", "half")
    result = project.make()
    assert result.code == 0, result.err
    assert project.read("a.txt") == "a\n"


def test_recovery_without_a_cluster_entry_never_imports_dask(project):
    # a journal left by a real kill, with a step in it: recovery runs, and has no reason to load distributed
    marker = _marker()
    project.spec(f'[intent.a]\nrun = "sleep {marker}"\n')
    proc = _start(project)
    try:
        _wait(lambda: _with(marker) and "start" in project.read(".runner/inflight"), "the step journaled")
        proc.kill()
        proc.wait(10)
        project.spec('[intent.a]\nrun = "true"\n')
        code = (
            "import atexit, sys\n"
            "atexit.register(lambda: print(sorted(m for m in ('dask', 'distributed') if m in sys.modules)))\n"
            "sys.argv = ['runner', 'make']\n"
            "from runner.entry import main\n"
            "main()\n"
        )
        done = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "[]"
        assert _with(marker) == []
    finally:
        proc.kill()
        _kill([marker])


def test_a_no_op_of_another_target_after_a_killed_run_recovers_it_first(project):
    """The fast no-op answers from the target's proof without the pipeline, whose start is where a killed run is
    recovered: with a killed run's journal left, it steps aside, so the orphan is stopped by this very run."""
    marker = _marker()
    project.spec(f"""
        [intent.quick]
        run = "cat in.txt > quick.txt"
        inputs = ["in.txt"]
        outputs = ["quick.txt"]

        [intent.slow]
        run = "echo partial > slow.txt; sleep {marker}"
        inputs = ["in.txt"]
        outputs = ["slow.txt"]
    """)
    project.write("in.txt", "in\n")
    project.age_all()
    assert project.make("quick").code == 0
    project.age_all()
    assert project.make("quick").code == 0
    assert project.make("quick").events()[0].get("fast") is True
    proc = _start(project, "slow")
    try:
        _wait(lambda: _with(marker), "the sleep")
        _wait(lambda: any("start" in e for e in _journal(project)), "the step journaled")
        live = project.make("quick", "--no-wait")  # a live run's journal is in use: the fast path answers as before
        assert live.code == 0 and live.events()[0].get("fast") is True, live.err
        proc.kill()
        proc.wait(10)
        assert _with(marker), "the child died with the runner: nothing to recover"
        result = project.make("quick")
        assert result.code == 0, result.err
        assert result.events()[0].get("fast") is None  # the pipeline ran: it recovers first
        assert result.statuses() == {"quick": "cached"}
        assert _with(marker) == [], "the killed run's child is still running"
        assert not project.exists("slow.txt"), "the killed run's step left its output half-written"
        assert project.make("quick").events()[0].get("fast") is True  # settled: fast again
    finally:
        proc.kill()
        _kill([marker])
