"""Fixtures of the adapter tests; the helpers live in adapter_helpers.py (a unique name: conftests collide)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, Path(__file__).parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The fixture projects hold deliberately failing tests for the real tools; never collect them here.
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(scope="session")
def adapters():
    from adapter_helpers import builtin_adapters

    return builtin_adapters()


@pytest.fixture(scope="session")
def library():
    from runner.parse import builtin_dir, load_library

    return load_library([builtin_dir()])
