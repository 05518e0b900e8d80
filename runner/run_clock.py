"""A run's clock: each event's `at` (seconds since run_started, monotonic), its wall-clock start, its job slots."""

from __future__ import annotations

import heapq
import time

from .record import utc_stamp

ATTEMPT_EVENTS = frozenset(("attempt_started", "attempt_finished"))  # stamped with `at` as they are emitted


class RunClock:
    """What a timeline reads from the events: when each step started and ended, and on which of the -j slots.

    A step takes the lowest free slot as it starts and gives it back as it leaves the running set, so the slots of
    the steps running at once are distinct and below `jobs` (the tracks of `runner log --trace`)."""

    __slots__ = ("began", "started", "_free", "_ended")

    def __init__(self, jobs: int):
        self.began = time.monotonic()
        self.started = utc_stamp(time.time())  # run_started's `started`
        self._free = list(range(jobs))  # a heap
        self._ended: dict[str, float] = {}  # a step that ended, until its (maybe deferred) report reads it

    def at(self, moment: float | None = None) -> float:
        """`moment` (time.monotonic(); now if None) in seconds since the run began, to the millisecond."""
        return round((time.monotonic() if moment is None else moment) - self.began, 3)

    def take_slot(self) -> int:
        return heapq.heappop(self._free)

    def give_back(self, slot: int, name: str | None = None) -> None:
        """The slot is free again; `name`: the step that held it ended now."""
        heapq.heappush(self._free, slot)
        if name is not None:
            self._ended[name] = time.monotonic()

    def end(self, name: str) -> float:
        """When the step ended (time.monotonic()): as it gave its slot back, else now (it never held one)."""
        moment = self._ended.get(name)
        if moment is None:
            moment = self._ended[name] = time.monotonic()
        return moment

    def ended_at(self, name: str) -> float:
        """The step's end as `at` (its report may come later than its end: execute._store_deferred)."""
        moment = self._ended.pop(name, None)
        return self.at(moment)
