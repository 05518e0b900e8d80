"""Helpers the worker tests import: fake server/codex handles, request building, /proc process checks."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from runner.workers.base import WorkerConfig, WorkerRequest

FAKES = Path(__file__).resolve().parent.parent / "fakes"
FAKE_SERVER = FAKES / "fake_responses_server.py"
FAKE_CODEX = FAKES / "fake_codex.py"


def files_containing(root: Path, needle: str) -> list[Path]:
    hits = []
    for p in root.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes():
                hits.append(p)
        except OSError:
            pass
    return hits


@dataclass
class FakeServer:
    proc: subprocess.Popen
    port: int
    log: Path
    base_url: str = field(init=False)

    def __post_init__(self) -> None:
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, method: str, path: str, body: bytes | None = None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def requests(self) -> list[dict]:
        return self._call("GET", "/__requests")

    def reset(self) -> None:
        self._call("POST", "/__reset", b"{}")

    def script(self, data) -> None:
        self._call("POST", "/__script", json.dumps(data).encode())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class FakeCodex:
    binary: str
    scenario_path: Path
    record_path: Path

    def scenario(self, **data) -> None:
        self.scenario_path.write_text(json.dumps(data))

    def env(self, **more) -> dict[str, str]:
        return dict(
            os.environ, FAKE_CODEX_SCENARIO=str(self.scenario_path), FAKE_CODEX_RECORD=str(self.record_path), **more
        )

    def records(self) -> list[dict]:
        if not self.record_path.exists():
            return []
        return [json.loads(line) for line in self.record_path.read_text().splitlines()]


def make_request(
    workspace: Path,
    config: WorkerConfig,
    prompt: str = "create hello.txt containing hi",
    *,
    env=None,
    intent: str = "demo",
    step_key: str = "0123456789abcdef0123",
    attempt: int = 1,
    cancel=None,
):
    return WorkerRequest(
        prompt=prompt,
        workspace=workspace,
        intent=intent,
        step_key=step_key,
        config=config,
        attempt=attempt,
        env=env,
        cancel=cancel,
    )


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is pgid, from /proc."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


def children_of(pid: int) -> list[int]:
    """Live pids whose parent is pid (to find the real codex's group id while it runs)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d))
    return out


def wait_gone(pids, timeout: float = 3.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not [p for p in pids if alive(p)]:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]
