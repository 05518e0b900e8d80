"""`runner serve` started as a real process on 127.0.0.1 in a project folder; Playwright driving Debian's chromium
(skipped without it here, failed in CI: tests/ci.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ci import need
from web_helpers import URL, Project, Served

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "proj")


@pytest.fixture
def serve():
    started: list[subprocess.Popen] = []

    def start(root: Path, *args: str, env: dict | None = None) -> Served:
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "serve", "--port", "0", *args],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
        started.append(proc)
        line = proc.stdout.readline().rstrip("\n")
        match = URL.match(line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        return Served(proc, line, int(match.group(1)), match.group(2))

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def browser():
    """Chromium driven by Playwright: Debian's binary, no sandbox (root in a container)."""
    need("chromium", os.path.exists(CHROMIUM), "apt-get install -y chromium (.ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need("playwright", False, "pip install -e '.[test]'")
        raise
    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--host-resolver-rules=MAP elsewhere.test 127.0.0.1"]
        )
        yield launched
        launched.close()
