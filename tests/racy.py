"""The racy window the tests run with: RUNNER_RACY_WINDOW_MS (read by runner.entry at start-up) at 50 ms for every
runner a test starts and for this process's own in-process runs, so that stepping past a file's change costs a
tenth of a second instead of a second (`wait_out`); `real_racy_window` (tests/conftest.py) gives a test about the
rule itself the window a user's runner has."""

from __future__ import annotations

import os
import time

from runner import stat_cache
from runner.entry import RACY_WINDOW, set_racy_window

DEFAULT_NS = stat_cache.RACY_NS  # git's second: the window of a runner started without the setting
TEST_MS = "50"  # five jiffies at the coarsest kernel clock (10 ms): never within one tick of a change


def shorten() -> None:
    """The tests' window, for this process and every runner it starts (a value set outside is kept: run the suite
    with RUNNER_RACY_WINDOW_MS=1000 to see it pass with a user's window)."""
    if not os.environ.get(RACY_WINDOW):
        os.environ[RACY_WINDOW] = TEST_MS
    set_racy_window(os.environ[RACY_WINDOW])


def wait_out() -> None:
    """Sleep past the racy window of a change made just now (a write; a utime, which moves the ctime to now)."""
    time.sleep(stat_cache.RACY_NS / 1e9 + 0.05)
