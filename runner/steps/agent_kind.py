"""Agent steps as the scheduler sees them: held at the gate before a model call, run in the hand-off's pool
(runner/agent_handoff.py), compared by their attempts. Light: the agent machinery (steps/agent.py) is imported by
the first agent step that starts, never by a run of shell steps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import stored

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ..plan import Decision
    from ..spec import Intent
    from .base import Scheduler, Started, StepOutcome


class AgentStep:
    """Held while a verified change waits for approval or its policy asks before a model call; decided only at its
    turn (its attempts take minutes: deciding ahead buys nothing, and a person's edit to its outputs is seen as
    late as it can be); its attempts' folder is what its gate's candidate patterns read."""

    reported = True
    decided_ahead = False
    versioned = True

    def held(self, run: Scheduler, name: str, decision: Decision) -> str | None:
        return run.agents.held(name, decision)

    def ahead(self, run: Scheduler, name: str, intent: Intent) -> None:
        return None

    def start(self, run: Scheduler, name: str, decision: Decision, wake: Callable[..., object]) -> Started:
        return run.agents.submit(name, decision, wake)

    def observed(self, record_dir: Path, name: str, outcome: StepOutcome) -> str | None:
        # the candidates are compared on each verify command's output, in each attempt's folder
        return str(record_dir / "attempts" / stored(name))
