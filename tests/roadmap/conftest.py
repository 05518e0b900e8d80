"""A project in a temp folder with a roadmap in it, driven through the real CLI (`python -m runner`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import runner_cli

# the fake Responses server's fixture (`runner new`'s tests), shared with tests/agent as tests/learn shares it
for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "agent"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from agent.conftest import server  # noqa: E402, F401 - the fixture, shared

ROADMAPS = Path(__file__).parent / "roadmaps"


class Result(NamedTuple):
    code: int
    out: str
    err: str


class Project:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, rel: str, data: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def roadmap(self, name: str, rel: str = "ROADMAP.md") -> Path:
        """One of tests/roadmap/roadmaps/ copied into the project, byte for byte."""
        return self.write(rel, (ROADMAPS / name).read_bytes())

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def bytes(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def run(self, *args: str, unset: tuple[str, ...] = ()) -> Result:
        """`python -m runner ARGS` in the project; `unset`: variables taken out of its environment."""
        proc = runner_cli.run(args, self.root, {k: v for k, v in os.environ.items() if k not in unset}, 120)
        return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "proj")
