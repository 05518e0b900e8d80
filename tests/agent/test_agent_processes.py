"""The processes an agent step starts (its verify commands, the Codex worker) through the real CLI: Ctrl-C stops
them at once, and a runner killed outright leaves nothing that its next start does not kill."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from agent_helpers import PASSING_TEST

VERIFY_SECONDS = 12


def _proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), None once the pid is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _alive(pid: int) -> bool:
    fields = _proc_stat(pid)
    return fields is not None and fields[0] != "Z"


def _group_alive(pgid: int) -> list[int]:
    """Live (non-zombie) processes in group `pgid`."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _proc_stat(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                out.append(int(entry))
    return out


def _with_marker(marker: bytes) -> list[int]:
    """Live processes whose command line holds `marker`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker in cmdline and _alive(int(entry)):
            out.append(int(entry))
    return out


def _slow_verify(agent) -> bytes:
    """The adapter's test command sleeps VERIFY_SECONDS; its argument is unique to this test (the marker by
    which /proc finds the verify process whatever the runner does or does not record about it)."""
    seconds = f"{VERIFY_SECONDS}.{random.randrange(10**8):08d}"
    (agent.root / "adapters/local.toml").write_text(
        textwrap.dedent(f"""\
        name = "local"
        [commands.test]
        run = "sleep {seconds}"
        """)
    )
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    return seconds.encode()


def _start_make(agent) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=agent.root,
        env=agent.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(found, what: str, runner: subprocess.Popen, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if runner.poll() is not None:
            out, err = runner.communicate()
            pytest.fail(f"the runner ended ({runner.returncode}) before {what}:\n{out}\n{err}")
        time.sleep(0.05)
    runner.kill()
    runner.communicate()
    pytest.fail(f"no {what} after {timeout}s")


def _kill_groups(pgids) -> None:
    """Clean up after a failing test: nothing it started may outlive it."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_during_a_long_verify_exits_130_at_once_and_kills_the_verify(agent):
    marker = _slow_verify(agent)
    runner = _start_make(agent)
    verify = _wait_for(lambda: _with_marker(marker), "verify process", runner)
    pgids = {int(_proc_stat(pid)[2]) for pid in verify}
    try:
        sent = time.monotonic()
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
        took = time.monotonic() - sent
        assert runner.returncode == 130, err
        assert "Traceback" not in err
        # the verify has VERIFY_SECONDS to go: the run must not wait for it
        assert took < 3.0, f"exit 130 came {took:.1f}s after SIGINT"
        assert _with_marker(marker) == [], "a verify process outlived the runner"
        assert [p for g in pgids for p in _group_alive(g)] == []
        step = [json.loads(line) for line in out.splitlines() if '"step_finished"' in line][-1]
        assert step["intent"] == "tests" and step["status"] == "failed" and step["interrupted"] is True
        # every process was waited for and its entry ended: nothing for the next start to recover
        assert (agent.root / ".runner/inflight").read_text() == ""
    finally:
        _kill_groups(pgids)


# killed at once, whether the verify's line is written yet or not (the process runs a moment before its pid is
# known); or with the journal cut to its head line, as a kill in that moment leaves it: the next start finds the
# verify by the run's token in its environment
@pytest.mark.parametrize("journal", ["as left", "cut to its head"])
def test_a_verify_left_by_a_killed_runner_is_killed_at_the_next_start(agent, journal):
    marker = _slow_verify(agent)
    runner = _start_make(agent)
    verify = _wait_for(lambda: _with_marker(marker), "verify process", runner)
    pgids = {int(_proc_stat(pid)[2]) for pid in verify}
    try:
        runner.kill()
        runner.communicate(timeout=30)
        assert [p for g in pgids for p in _group_alive(g)], "the verify died with the runner: nothing to recover"
        if journal == "cut to its head":
            path = agent.root / ".runner/inflight"
            path.write_text(path.read_text().splitlines(keepends=True)[0])
        (agent.root / "adapters/local.toml").write_text('name = "local"\n[commands.test]\nrun = "true"\n')
        again = agent.make()
        assert again.code == 0, again.err
        assert _with_marker(marker) == [], "the next start left the dead runner's verify running"
        assert [p for g in pgids for p in _group_alive(g)] == []
    finally:
        _kill_groups(pgids)


def test_a_codex_worker_left_by_a_killed_runner_is_killed_at_the_next_start(agent):
    # the fake codex hangs mid-turn with a grandchild in its group, as a command the agent started would be
    agent.spec(agent.fake_codex_worker({"spawn_child": True, "hang": True}))
    runner = _start_make(agent)

    def hanging_codex():
        return [c for c in agent.calls() if "--version" not in c["argv"] and c["child_pid"]]

    (call,) = _wait_for(hanging_codex, "codex call", runner)
    try:
        runner.kill()  # at once: journaled yet or not, the next start finds it
        runner.communicate(timeout=30)
        assert _alive(call["pid"]) and _alive(call["child_pid"]), "codex died with the runner: nothing to recover"
        (agent.home / "scenario.json").write_text(json.dumps({"files": {"tests/test_calc.py": PASSING_TEST}}))
        again = agent.make()
        assert again.code == 0, again.err
        assert not _alive(call["pid"]) and not _alive(call["child_pid"])
        assert _group_alive(call["pgid"]) == []
    finally:
        _kill_groups([call["pgid"]])
