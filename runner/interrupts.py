"""Ctrl-C and SIGTERM during a run: a KeyboardInterrupt, held back while the scheduler is mid-way through
something an exception would leave half done."""

from __future__ import annotations

import signal
import threading

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Installed for one run (from the main thread; elsewhere it does nothing). Inside `held()`, a signal
    is only noted; `take()` raises it once the section is over. Between a child's start and its
    registration an exception would leave a child that nobody kills; inside a cache transaction, sqlite
    would be left in a transaction nobody ends."""

    def __init__(self):
        self._depth = 0
        self._noted = False
        self._previous: dict = {}
        self._held = _Held(self)

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._on_signal) for s in _SIGNALS}

    def ignore(self) -> None:
        """While cleaning up after an interrupt: a second Ctrl-C must not cut the clean-up short."""
        if self._previous:
            for s in _SIGNALS:
                signal.signal(s, signal.SIG_IGN)

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}

    def held(self) -> _Held:
        """`with interrupts.held():` a section a signal does not cut: entered at each step's start, at each
        wait and at each store, so one object made once (a generator's context manager costs ~3x as much)."""
        return self._held

    @property
    def noted(self) -> bool:
        """Did a signal arrive inside a held() section, not raised yet? (Nothing new should start meanwhile.)"""
        return self._noted

    def take(self) -> None:
        """Raise the interrupt that arrived inside a held() section, now that it is safe."""
        if self._noted and not self._depth:
            raise KeyboardInterrupt

    def _on_signal(self, signum, frame) -> None:
        if self._depth:
            self._noted = True
            return
        raise KeyboardInterrupt


class _Held:
    __slots__ = ("_interrupts",)

    def __init__(self, interrupts: Interrupts):
        self._interrupts = interrupts

    def __enter__(self) -> None:
        self._interrupts._depth += 1

    def __exit__(self, *_exc) -> None:
        self._interrupts._depth -= 1
