"""One thread that does queued jobs in the order they came, for work no step waits on but the run's end does
(an attempt workspace's removal, an applied change's retirement)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class Background:
    """`job(*args)` for each put(), on a thread of its own started by the first; an error among `survivable` is
    the job's own affair (what it leaves behind is said where the class that uses it is). close() waits for
    every job put before it."""

    def __init__(self, job: Callable[..., object], name: str, survivable: tuple[type[BaseException], ...]):
        self._job = job
        self._name = name
        self._survivable = survivable
        self._queue: queue.Queue[tuple | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # put() comes from several threads (the agent steps' pool)

    def put(self, *args) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put(args)

    def _loop(self) -> None:
        while (args := self._queue.get()) is not None:
            try:
                self._job(*args)
            except self._survivable:
                pass

    def close(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
