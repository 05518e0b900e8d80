"""Fixtures of the agent tests: agent-step projects driven through the real CLI, served by the fake codex or
the fake Responses server. The helpers they use live in agent_helpers.py (a unique name: conftests collide)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from agent_helpers import FAKE_SERVER, AgentProject, Server
from ci import need_codex


@pytest.fixture
def agent(tmp_path) -> AgentProject:
    home = tmp_path / "home"
    home.mkdir()
    return AgentProject(tmp_path / "proj", home)


@pytest.fixture
def server(tmp_path):
    started = []

    def start(script) -> Server:
        path = tmp_path / f"script{len(started)}.json"
        path.write_text(json.dumps(script))
        log = tmp_path / f"requests{len(started)}.jsonl"
        proc = subprocess.Popen(
            [sys.executable, str(FAKE_SERVER), "--port", "0", "--script", str(path), "--log", str(log)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        line = proc.stdout.readline()
        assert line.startswith("listening "), line
        srv = Server(proc, int(line.split()[1]), log)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.proc.terminate()
        srv.proc.wait(10)


@pytest.fixture
def codex_binary() -> str:
    """The real codex binary; skips when absent, but FAILS in CI (CI must install it)."""
    return need_codex()
