"""Session-wide: a dummy API key in the environment of every test, and a check at the end that nothing the tests
wrote (run records, recordings, logs, Codex homes, temp projects) contains it."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# tests/ci.py (the one "in CI?" rule) is imported by name from every folder's tests and helpers; this puts
# tests/ on sys.path whatever pytest's import mode
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

# The differential test (tests/core/test_differential.py) and other explorations: a fixed seed and a bounded
# count in CI; `--hypothesis-profile=long` explores further. No examples database in the repository.
_SLOW_EXAMPLES = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=300, derandomize=True, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.register_profile("long", max_examples=5000, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES)
settings.register_profile(  # a first look, e.g. while checking that a mutation of runner is caught
    "quick", max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.load_profile("ci")

SESSION_KEY = "sk-test-session-" + uuid.uuid4().hex


def pytest_configure(config: pytest.Config) -> None:
    # set before any test: every runner, worker and fake started by a test inherits it
    os.environ["OPENAI_API_KEY"] = SESSION_KEY
    os.environ["CODEX_API_KEY"] = SESSION_KEY


def _files_with(root: Path, needle: bytes) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                hits.append(str(path))
        except OSError:
            pass
    return hits


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    roots = [Path(__file__).resolve().parents[1] / "examples"]
    if factory is not None and getattr(factory, "_basetemp", None) is not None:
        roots.append(factory.getbasetemp())
    leaks = [hit for root in roots if root.exists() for hit in _files_with(root, SESSION_KEY.encode())]
    if leaks:
        session.config.get_terminal_writer().line(
            f"SECRET LEAK: the session's API key was written to {len(leaks)} file(s): {leaks[:10]}", red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
