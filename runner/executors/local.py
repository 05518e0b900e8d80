"""The local executor, the default: the scheduler (execute.py) starts each shell step as its own child here."""

from __future__ import annotations


class LocalExecutor:
    """Today's behaviour: nothing is handed anywhere. `on_cluster` false tells execute.py to run steps itself
    (children watched through pidfds), which is faster here than any hand-off could be."""

    on_cluster = False
    lost = None
    name = "local"

    def slots(self) -> int | None:
        return None  # -j's default stays the CPU count

    def close(self) -> None:
        pass
