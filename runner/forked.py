"""A loop over many items split with a forked copy of this process: the second half runs on another core while
this one runs the first. Threads cannot do it for a Python loop (the GIL keeps it on one core: two stat threads
made the proof's 110,000 stats slower, not faster); a fork has its own interpreter, and git splits its index's
lstat calls across threads (core.preloadIndex) for the same reason. Used by the proof's stats (freshness.py).

Imported by the warm no-op: the standard library's cheapest only.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the no-op path; mypy reads it as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

AT_LEAST = 20_000  # items below which a fork (~3 ms, and the half's result sent back) costs what it saves


def halves(work: Callable[[list], list], items: list, at_least: int = AT_LEAST) -> list:
    """work(items), as work(first half) here and work(second half) in a forked child at the same time, whose
    result comes back marshalled through a pipe. `work` must only read (what the child changes stays in the
    child) and return a list of marshallable values, one per item. Done in this process alone when the items
    are few, this process may run on one core only, or it has threads (a fork copies the calling thread only:
    a lock another thread held would stay held in the child); the second half is done here too when the
    child fails in any way."""
    if len(items) < at_least or len(os.sched_getaffinity(0)) < 2 or len(os.listdir("/proc/self/task")) > 1:
        return work(items)
    half = len(items) // 2
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return work(items)
    if pid == 0:
        _child(work, items[half:], read_end, write_end)
    os.close(write_end)
    try:
        with open(read_end, "rb") as reader:
            first = work(items[:half])
            sent = reader.read()  # to the end: the child wrote its half whole and exited
    except BaseException:
        import signal

        os.kill(pid, signal.SIGKILL)  # this half failed (a Ctrl-C, say): the other is of no use
        raise
    finally:
        _, status = os.waitpid(pid, 0)  # reaped whichever way: no zombie
    second = None
    if os.waitstatus_to_exitcode(status) == 0:
        try:
            second = marshal.loads(sent)
        except (EOFError, ValueError, TypeError):
            second = None
    if not isinstance(second, list) or len(second) != len(items) - half:
        second = work(items[half:])
    return first + second


def _child(work: Callable[[list], list], items: list, read_end: int, write_end: int) -> NoReturn:
    """The forked child's whole life: its half, sent whole, and out by os._exit, so nothing of the parent's
    runs twice (atexit handlers, buffered output, finally blocks further up)."""
    code = 1
    try:
        import signal

        # the parent's handlers are the parent's: a Ctrl-C or a SIGTERM ends this child at once
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(read_end)
        with open(write_end, "wb") as writer:
            writer.write(marshal.dumps(work(items), 2))
        code = 0
    finally:
        os._exit(code)
