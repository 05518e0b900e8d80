"""Work done by a forked copy of this process while this one does its own part: another core for a Python loop.
Threads cannot give it (the GIL keeps a Python loop on one core: two stat threads made the proof's 110,000 stats
slower, not faster); a fork has its own interpreter, as git splits its index's lstat calls across threads
(core.preloadIndex) for the same reason. Used by the proof's stats (freshness.py).

Imported by the warm no-op: the standard library's cheapest only.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Any, NoReturn

AT_LEAST = 20_000  # items below which a fork (~3 ms, and the result sent back) costs what it saves


def worth_it(items: int) -> bool:
    """Whether `items` are enough to split with a child, and this process may fork: it may run on two cores, and
    has no other thread (a fork copies the calling thread only: a lock another one held stays held in the child)."""
    if items < AT_LEAST:
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2 and len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc (a sandbox): no way to know there is no other thread
        return False


class Child:
    """`work()` run in a forked child from the moment this is made; `result()` is what it returned (marshalled
    back through a pipe), or None if the child failed in any way or could not be forked: the caller then does
    the work itself. `work` must only read (what the child changes stays in the child) and return a marshallable
    value. Used as a context manager: a caller that fails before asking for the result kills the child (its work
    is of no use) and reaps it, so none is left behind."""

    def __init__(self, work: Callable[[], Any]):
        self._pid: int | None = None
        self._reader = None
        try:
            read_end, write_end = os.pipe2(os.O_CLOEXEC)
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:
            _child(work, read_end, write_end)
        os.close(write_end)
        self._pid, self._reader = pid, open(read_end, "rb")  # noqa: SIM115 - closed by result() or __exit__

    def __enter__(self) -> Child:
        return self

    def result(self) -> object | None:
        if self._pid is None or self._reader is None:
            return None
        with self._reader:
            sent = self._reader.read()  # to the end: the child wrote its result whole and exited
        self._reader = None
        self._reap()
        try:  # nothing sent (the child failed), or cut short (killed while writing: marshal counts come first)
            return marshal.loads(sent)
        except (EOFError, ValueError, TypeError):
            return None

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._pid is None:
            return
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        import signal

        os.kill(self._pid, signal.SIGKILL)  # not asked for (this side failed: a Ctrl-C, say): of no use
        self._reap()

    def _reap(self) -> None:
        pid, self._pid = self._pid, None
        assert pid is not None
        os.waitpid(pid, 0)


def _child(work: Callable[[], Any], read_end: int, write_end: int) -> NoReturn:
    """The forked child's whole life: the work, its result sent whole, and out by os._exit, so nothing of the
    parent's runs twice (atexit handlers, buffered output, finally blocks further up)."""
    code = 1
    try:
        import signal

        # the parent's handlers are the parent's: a Ctrl-C or a SIGTERM ends this child at once
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(read_end)
        with open(write_end, "wb") as writer:
            writer.write(marshal.dumps(work(), 2))
        code = 0
    finally:
        os._exit(code)
