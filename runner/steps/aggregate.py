"""Aggregate steps: a name for a set of steps, which runs nothing and is neither reported nor counted."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ..plan import Decision
    from ..spec import Intent
    from .base import Scheduler, Started, StepOutcome


class AggregateStep:
    """Up to date when its dependencies are (freshness.decide: always SKIP, its "outputs" their digests), so the
    scheduler never starts one; it is no step of the run's own, so none of its ends is reported or counted."""

    reported = False
    decided_ahead = True
    versioned = False

    def held(self, run: Scheduler, name: str, decision: Decision) -> str | None:
        return None

    def ahead(self, run: Scheduler, name: str, intent: Intent) -> None:
        return None

    def start(self, run: Scheduler, name: str, decision: Decision, wake: Callable[..., object]) -> Started:
        raise AssertionError(f"aggregate {name} started: freshness.decide never runs an aggregate")

    def observed(self, record_dir: Path, name: str, outcome: StepOutcome) -> str | None:
        return None
