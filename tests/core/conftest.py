"""A project in a temp folder, driven through the real CLI (subprocess) or click's CliRunner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import racy
import runner_cli
from ci import need
from click.testing import CliRunner

from runner.cli import cli


@dataclass
class Result:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def finished(self) -> dict:
        return self.events()[-1]

    def statuses(self) -> dict[str, str]:
        return {e["intent"]: e["status"] for e in self.events() if e["event"] == "step_finished"}


class Project:
    def __init__(self, root: Path):
        self.root = root

    def write(self, rel: str, text: str, age: float | None = None) -> Path:
        """Write a file; `age` seconds in the past sets its mtime (to step outside the racy window)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if "\n" in text else text)
        if age is not None:
            t = time.time() - age
            os.utime(path, (t, t))
        return path

    def spec(self, text: str) -> Path:
        return self.write("intents.toml", text)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def exists(self, rel: str) -> bool:
        return (self.root / rel).exists()

    def age_all(self, seconds: float = 5.0) -> None:
        """Push every project file's mtime into the past, as if edited long ago. Setting an mtime moves the
        file's ctime to now, and the racy rule (runner.stat_cache.vouches) trusts no stat of a file changed
        within the racy window: wait it out (the tests' shortened window, tests/racy.py), so the stats vouch for
        the bytes."""
        t = time.time() - seconds
        for path in self.root.rglob("*"):
            if ".runner" not in path.parts and path.is_file():
                os.utime(path, (t, t))
        racy.wait_out()

    def run(self, *args: str, timeout: float = 120, env: dict | None = None) -> Result:
        """`python -m runner ARGS` in the project folder (tests/runner_cli.py: a forked copy of this process)."""
        proc = runner_cli.run(args, self.root, dict(os.environ, **(env or {})), timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def cli(self, *args: str) -> Result:
        """In-process through click's CliRunner (fast; same commands, no fast no-op path)."""
        result = CliRunner().invoke(
            cli,
            [*args, "-C", str(self.root)] if args and args[0] != "cache" else [*args, "-C", str(self.root)],
            catch_exceptions=False,
        )
        return Result(result.exit_code, result.stdout, result.stderr)

    def make(self, *args: str, **kw) -> Result:
        return self.run("make", "--json", *args, **kw)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "proj")


CHAIN = """
[project]
name = "chain"
default = "all"

[intent.a]
run = "cat src/x.txt src/y.txt > out/a.txt"
inputs = ["src/x.txt", "src/y.txt"]
outputs = ["out/a.txt"]

[intent.b]
run = "tr a-z A-Z < out/a.txt > out/b.txt"
inputs = ["out/a.txt"]
outputs = ["out/b.txt"]
deps = ["a"]

[intent.c]
run = "wc -c < src/y.txt > out/c.txt"
inputs = ["src/y.txt"]
outputs = ["out/c.txt"]

[intent.all]
deps = ["b", "c"]
"""


@pytest.fixture
def chain(project: Project) -> Project:
    """a -> b, c independent, all = b + c; outputs under out/."""
    project.spec(CHAIN)
    project.write("src/x.txt", "hello\n")
    project.write("src/y.txt", "world\n")
    (project.root / "out").mkdir()
    return project


@pytest.fixture
def small_disk(project):
    """mount(size, inodes): the project's folder made a tmpfs of that size, and the project in it (a full disk's
    tests fill it, a read-only disk's remount it read-only); unmounted after the test. Root mounts it (this machine
    and CI run the tests as root); elsewhere the test skips, and fails in CI."""
    mounted: list[Path] = []

    def mount(size: int, inodes: int | None = None):
        project.root.mkdir(parents=True)
        options = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(project.root)], capture_output=True)
        need("a tmpfs mounted for the test", done.returncode == 0, f"run as root (mount said {done.stderr!r})")
        mounted.append(project.root)
        return project

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=True)


@pytest.fixture
def quickstart(tmp_path):
    """A copy of examples/quickstart without anything a run makes, and `runner(*args)`: `python -m runner` in it
    with no key in its environment (its agent steps are served by the replay worker: nothing can call a model)."""
    example = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    root = tmp_path / "quickstart"
    generated = {".runner", "build", "tests", "docs"}
    shutil.copytree(example, root, ignore=lambda d, names: generated & set(names) if Path(d) == example else set())
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}

    def runner(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "runner", *args]
        return subprocess.run(command, cwd=root, capture_output=True, text=True, env=env, timeout=300)

    return root, runner
