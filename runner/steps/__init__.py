"""The step kinds behind one small protocol (steps/base.py), in an explicit registry."""

from __future__ import annotations

from .base import Step, StepContext, StepOutcome

__all__ = ["Step", "StepContext", "StepOutcome", "step_for"]


def step_for(kind: str) -> Step:
    """The blocking step kinds, run in the scheduler's pool. Shell steps are not among them: the scheduler
    starts them with steps.shell.start and waits for many at once."""
    from . import agent

    registry = {"agent": agent.AgentStep()}
    try:
        return registry[kind]
    except KeyError:
        raise NotImplementedError(f"{kind} steps are not available in this version") from None
