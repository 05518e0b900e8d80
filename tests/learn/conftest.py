"""Share with the learning tests the projects other folders' tests drive: `project` (tests/core: a project through
the real CLI), `agent` (tests/agent: an agent step served by the fake codex), `server` (the fake Responses server),
and `tally` (a tool no built-in family knows, from gate_helpers.py). The folders they come from are put on sys.path
so their helpers import by name, whatever pytest's import mode. Mining's helpers are in learn_helpers.py."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "tests", ROOT / "tests" / "agent", Path(__file__).parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import pytest  # noqa: E402 - after the paths above
from agent.conftest import agent, server  # noqa: E402, F401 - the fixtures, shared (tests/agent on sys.path first)
from core.conftest import project  # noqa: E402, F401 - the fixture, shared
from gate_helpers import Tally  # noqa: E402 - the learning tests' project


@pytest.fixture
def tally(tmp_path) -> Tally:
    return Tally(tmp_path / "proj")
