"""Make the repository importable when the package is not installed (the venv has no editable install), and share
the projects other folders' tests drive: `project` (tests/core: a project through the real CLI) and `agent`
(tests/agent: an agent step served by the fake codex). The learning tests' own helpers are in learn_helpers.py."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "tests", ROOT / "tests" / "agent", Path(__file__).parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from agent.conftest import agent  # noqa: E402, F401 - the fixture, shared (needs tests/agent on sys.path first)
from core.conftest import project  # noqa: E402, F401 - the fixture, shared
