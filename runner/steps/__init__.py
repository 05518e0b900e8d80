"""The step kinds behind one small protocol, in an explicit registry."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from ..spec import Intent, Spec


@dataclass
class StepContext:
    spec: Spec
    intent: Intent
    log_path: Path
    timeout: float | None
    cancelled: threading.Event
    on_process: Callable[[int], None] = lambda pid: None  # told the process group of each child
    extra: dict = field(default_factory=dict)
    # the environment shell steps inherit, as the run found it (bytes: posix_spawn converts a plain dict
    # of bytes at C speed, while reading os.environ decodes every variable on every start); None: os.environ
    environ: dict[bytes, bytes] | None = None


@dataclass
class StepOutcome:
    """A step that failed is a value, not an exception: the scheduler decides what follows."""

    ok: bool
    exit_code: int | None = None
    error: str | None = None
    timed_out: bool = False
    interrupted: bool = False
    blocked: str | None = None  # why it waits for a human or a budget (exit 3)
    change: object = None  # agent steps: the verified Change, applied by the scheduler
    details: dict = field(default_factory=dict)  # agent steps: attempts, usage, workspace
    log: str | None = None  # shell steps: the log of what the command printed, if it printed anything


class Step(Protocol):
    def run(self, ctx: StepContext) -> StepOutcome: ...


def step_for(kind: str) -> Step:
    """The blocking step kinds, run in the scheduler's pool. Shell steps are not among them: the scheduler
    starts them with steps.shell.start and waits for many at once."""
    from . import agent

    registry = {"agent": agent.AgentStep()}
    try:
        return registry[kind]
    except KeyError:
        raise NotImplementedError(f"{kind} steps are not available in this version") from None
