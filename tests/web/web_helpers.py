"""The web tests' helpers (a unique name: conftests collide): `runner serve` as a real process and requests to it,
the quickstart copied with a change waiting for approval."""

from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{20,})$")


@dataclass
class Served:
    proc: subprocess.Popen
    url: str
    port: int
    token: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, *, token: bool = True, cookie: bool = False, host: str | None = None):
        """(status, headers, body) of a GET; `token`: the token in the query; `cookie`: in its cookie instead."""
        if token and not cookie:
            path += ("&" if "?" in path else "?") + f"token={self.token}"
        headers = {"Host": host or f"127.0.0.1:{self.port}"}
        if cookie:
            headers["Cookie"] = f"runner_token_{self.port}={self.token}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()

    def post(self, path: str, form: dict[str, str], *, cookie: bool = True):
        from urllib.parse import urlencode

        body = urlencode(form)
        headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/x-www-form-urlencoded"}
        if cookie:
            headers["Cookie"] = f"runner_token_{self.port}={self.token}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("POST", path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()


def quickstart(tmp_path: Path, manual: bool = False) -> Path:
    """A copy of the quickstart (agent steps served by the replay worker); `manual`: approval = "manual"."""
    example = ROOT / "examples" / "quickstart"
    root = tmp_path / "quickstart"
    generated = {".runner", "build", "tests", "docs"}
    shutil.copytree(example, root, ignore=lambda d, names: generated & set(names) if Path(d) == example else set())
    if manual:
        spec = root / "intents.toml"
        text = spec.read_text().replace(
            "budget = { attempts = 3 }\n", 'budget = { attempts = 3 }\napproval = "manual"\n'
        )
        spec.write_text(text)
    return root


def runner(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root), **(env or {})}
    command = [sys.executable, "-m", "runner", *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, env=environ, timeout=300)


def waiting_change(tmp_path: Path) -> Path:
    """The quickstart with `docs`'s verified change waiting for approval (manual approval: allowed, then run)."""
    root = quickstart(tmp_path, manual=True)
    assert runner(root, "make", "docs").returncode == 3  # blocked before the call: no terminal to ask
    assert runner(root, "approve", "docs").returncode == 0  # its next run may call (the replay worker)
    assert runner(root, "make", "docs").returncode == 3  # verified; waits for approval
    assert not (root / "docs" / "calc.md").exists()
    return root


class Project:
    """A project folder driven through the real CLI (a process of its own, as a user's shell starts it)."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def spec(self, text: str) -> None:
        (self.root / "intents.toml").write_text(text)

    def write(self, rel: str, text: str) -> None:
        (self.root / rel).write_text(text)

    def make(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        import os

        command = [sys.executable, "-m", "runner", "make", "--json", *args]
        environ = {**os.environ, **(env or {})}
        return subprocess.run(command, cwd=self.root, capture_output=True, text=True, env=environ, timeout=300)


def events(out: str) -> list[dict]:
    import json

    return [json.loads(line) for line in out.splitlines() if line.strip()]
