"""Fixtures for the worker tests: a unique dummy key that must never reach disk, the fake Responses server,
the fake codex executable, and the real codex binary (a skip when absent, a failure in CI: tests/ci.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid

import pytest
from ci import need_codex
from worker_helpers import FAKE_CODEX, FAKE_SERVER, FakeCodex, FakeServer, files_containing


@pytest.fixture(autouse=True)
def dummy_key(monkeypatch) -> str:
    """A unique fake key in OPENAI_API_KEY and CODEX_API_KEY, for every worker test."""
    key = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("CODEX_API_KEY", key)
    return key


@pytest.fixture(autouse=True)
def assert_no_leak(tmp_path, dummy_key):
    """After the test: no file under tmp_path holds the dummy key (transcripts, recordings, logs, CODEX_HOME)."""
    yield dummy_key
    leaks = files_containing(tmp_path, dummy_key)
    assert not leaks, f"the dummy key leaked into: {leaks}"


@pytest.fixture
def fake_server(tmp_path):
    """start(script=None) -> FakeServer on 127.0.0.1 (script: see the server's docstring)."""
    servers: list[FakeServer] = []

    def start(script=None) -> FakeServer:
        n = len(servers)
        log = tmp_path / f"server{n}.jsonl"
        argv = [sys.executable, str(FAKE_SERVER), "--port", "0", "--log", str(log)]
        if script is not None:
            path = tmp_path / f"script{n}.json"
            path.write_text(json.dumps(script))
            argv += ["--script", str(path)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        line = proc.stdout.readline()
        assert line.startswith("listening "), line
        srv = FakeServer(proc, int(line.split()[1]), log)
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def fake_codex(tmp_path) -> FakeCodex:
    os.chmod(FAKE_CODEX, 0o755)
    fc = FakeCodex(str(FAKE_CODEX), tmp_path / "scenario.json", tmp_path / "codex-calls.jsonl")
    fc.scenario()  # {} = the default successful turn
    return fc


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(scope="session")
def codex_binary() -> str:
    """The real codex binary; skips when absent, but FAILS in CI (CI must install it)."""
    return need_codex()
