"""The step kinds behind one protocol (steps/base.py's StepKind), in an explicit registry."""

from __future__ import annotations

from ..spec import STEP_AGENT, STEP_AGGREGATE, STEP_SHELL, Intent
from .agent_kind import AgentStep
from .aggregate import AggregateStep
from .base import Scheduler, StepContext, StepKind, StepOutcome
from .shell import ShellStep

__all__ = ["KINDS", "Scheduler", "StepContext", "StepKind", "StepOutcome", "kind_of"]

KINDS: dict[str, StepKind] = {STEP_SHELL: ShellStep(), STEP_AGENT: AgentStep(), STEP_AGGREGATE: AggregateStep()}


def kind_of(intent: Intent) -> StepKind:
    """The kind of step `intent` is (its kind is one of these: the schema and spec.Intent say so)."""
    return KINDS[intent.kind]
