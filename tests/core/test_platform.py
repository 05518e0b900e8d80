"""On a platform other than Linux, runner says in one line what it needs instead of failing mid-run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.errors import EXIT_USER_ERROR


@pytest.mark.parametrize("platform", ["darwin", "win32"])
@pytest.mark.parametrize("args", [[], ["make", "-C", "."]])
def test_another_platform_gets_one_line_and_exit_2(tmp_path, platform, args):
    entry = (
        f"import sys; sys.platform = {platform!r}; sys.argv[1:] = {args!r}; from runner.entry import console; console()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", entry], cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == EXIT_USER_ERROR
    assert proc.stdout == ""
    assert proc.stderr == (
        f"error: runner runs on Linux only (it needs pidfd, /proc and CLOCK_BOOTTIME); this is {platform}\n"
    )
    assert not (tmp_path / ".runner").exists()  # it stopped before touching anything
