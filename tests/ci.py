"""The one place the tests decide whether they run in CI, and what a missing tool means there.

Locally a test that needs a tool the machine lacks (go, gradle, node, cargo, mvn, the codex binary) skips; in CI
the same test fails, since CI exists to run every test and a skip there hides a broken install.

`CI` set to anything but "", "0", "false" or "no" (any case) means CI. Providers set it to different values
(GitHub Actions, GitLab and CircleCI "true", others "1" or "yes"), so reading one spelling silently skipped
tests on the others; the four false-looking values are what a developer writes to say "not CI" when a shell
profile exports CI. Every test module asks here: nothing else reads the variable.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

import pytest

_NOT_CI = ("", "0", "false", "no")


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in _NOT_CI


def need(what: str, ok: bool, how: str) -> None:
    """Go on when `ok`; otherwise skip here, and fail in CI (an absent toolchain there is a broken CI)."""
    if ok:
        return
    if in_ci():
        pytest.fail(f"CI={os.environ.get('CI')!r} but {what} is missing: {how}")
    pytest.skip(f"{what} is not available here ({how})")


def need_tools(*tools: str, how: str = "") -> None:
    """Every one of `tools` on PATH (need's rule when one is not)."""
    missing = [t for t in tools if shutil.which(t) is None]
    need(" and ".join(missing), not missing, how or f"install {' '.join(missing)}")


def need_codex() -> str:
    """The real Codex CLI binary, found as the codex worker finds it (need's rule when it is absent)."""
    from runner.workers.base import WorkerConfig
    from runner.workers.codex import resolve_binary

    path, why = resolve_binary(WorkerConfig())
    need("the real codex binary", path is not None, why or "pip install 'intent-runner[codex]'")
    assert path is not None
    return path
