"""Helpers of the executor tests: the CLI (tests/runner_cli.py, or a subprocess a test may signal), a project in
a folder, `dask scheduler` and `dask worker` as real processes that a test may kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import runner_cli

DASK = str(Path(sys.executable).parent / "dask")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def finished(self, status: str | None = None) -> list[dict]:
        return [e for e in self.events() if e["event"] == "step_finished" and (status is None or e["status"] == status)]


def runner(root: Path, *args: str, timeout: float = 120) -> Result:
    """`python -m runner ARGS -C ROOT` (tests/runner_cli.py: a process forked from a copy of the test process)."""
    proc = runner_cli.run([*args, "-C", str(root)], os.getcwd(), timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def start_runner(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args, "-C", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def project(root: Path, spec: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "intents.toml").write_text(textwrap.dedent(spec))
    return root


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


class Processes:
    """`dask scheduler` and `dask worker` as real processes, each of which a test may kill."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.file = folder / "scheduler.json"
        self.procs: list[subprocess.Popen] = []

    def _start(self, *argv: str, log: str) -> subprocess.Popen:
        with open(self.folder / log, "wb") as out:
            proc = subprocess.Popen(
                [DASK, *argv], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.folder
            )
        self.procs.append(proc)
        return proc

    def scheduler(self) -> tuple[subprocess.Popen, str]:
        proc = self._start(
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(self.file), log="scheduler.log",
        )  # fmt: skip
        wait_for(self.file)
        for _ in range(100):
            try:
                return proc, json.loads(self.file.read_text())["address"]
            except ValueError:  # written, not yet whole
                time.sleep(0.05)
        raise AssertionError("the scheduler file never held an address")

    def worker(self, address: str, name: str) -> subprocess.Popen:
        """A worker without a nanny: the process started here is the one that runs the tasks."""
        return self._start(
            "worker", address, "--name", name, "--nthreads", "2", "--no-nanny", "--no-dashboard",
            "--local-directory", str(self.folder / name), log=f"{name}.log",
        )  # fmt: skip

    def wait_for_workers(self, address: str, count: int) -> None:
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(count, timeout=60)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait()
