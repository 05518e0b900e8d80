"""Fixtures of the shared-cache tests: a project and its clones through the real CLI; a file:// remote in a temp
folder. (moto's S3 server, one real process on 127.0.0.1 for the session, is in tests/conftest.py: the hermetic
executor's tests use it too.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the agent tests' fixtures (an agent-step project, the fake Responses server), shared as tests/plans shares them
for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "agent"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from agent.conftest import agent, server  # noqa: E402, F401 - the fixtures, shared
from store_helpers import Clone, wide  # noqa: E402 - after the path above


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A file:// remote: a folder outside every clone."""
    folder = tmp_path / "shared"
    folder.mkdir()
    return folder


@pytest.fixture
def team(tmp_path: Path, shared: Path):
    """A 50-step project whose [cache] remote is the shared folder; call it with more of [cache] or a step count."""

    def make(cache: str = "", steps: int = 50, name: str = "first") -> Clone:
        root = tmp_path / name
        root.mkdir()
        clone = Clone(root)
        clone.write("intents.toml", f'[cache]\nremote = "{shared.as_uri()}"\n{cache}\n' + wide(steps))
        for i in range(steps):
            clone.write(f"src/{i}.txt", f"input {i}\n")
        (root / "out").mkdir()
        return clone

    return make
