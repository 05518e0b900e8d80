"""The protocol every step kind speaks: what it is given (StepContext) and what it returns (StepOutcome)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..redact import Mask
from ..spec import Intent, Spec

if TYPE_CHECKING:
    from ..process import Journal


class StepContext:
    """What a step kind needs to run one intent."""

    def __init__(
        self,
        spec: Spec,
        intent: Intent,
        log_path: str,
        timeout: float | None,
        cancelled: threading.Event,
        on_process: Callable[[int], None] = lambda pid: None,
        journal: Journal | None = None,
        extra: dict | None = None,
        environ: dict[bytes, bytes] | None = None,
        created_ahead=None,
        mask: Mask | None = None,
        on_output: Callable[[str, list[str]], None] | None = None,
    ):
        self.spec = spec
        self.intent = intent
        self.log_path = log_path
        self.timeout = timeout
        self.cancelled = cancelled
        self.on_process = on_process  # told the process group of a shell step's child
        # where an agent step's processes (verify commands, the Codex worker) are recorded while they run
        self.journal = journal
        self.extra = {} if extra is None else extra
        # the environment shell steps inherit, as the run found it (bytes: posix_spawn converts a plain dict
        # of bytes at C speed, while reading os.environ decodes every variable on every start); None: os.environ
        self.environ = environ
        self.created_ahead = created_ahead  # steps.spawn.CreatedAhead: redirect files made before the start
        self.mask = Mask() if mask is None else mask  # the run's secrets, hidden in what the step's logs hold
        # (intent, lines): told each whole line a shell step prints, as its log gets it (`runner make -v`)
        self.on_output = on_output


class StepOutcome:
    """A step that failed is a value, not an exception: the scheduler decides what follows."""

    def __init__(
        self,
        ok: bool,
        exit_code: int | None = None,
        error: str | None = None,
        timed_out: bool = False,
        interrupted: bool = False,
        blocked: str | None = None,
        change: object = None,
        details: dict | None = None,
        log: str | None = None,
        setup: bool = False,
        worker: str | None = None,
    ):
        self.ok = ok
        self.exit_code = exit_code
        self.error = error
        self.timed_out = timed_out
        self.interrupted = interrupted
        self.blocked = blocked  # why it waits for a human or a budget (exit 3)
        self.change = change  # agent steps: the verified Change, applied by the scheduler
        self.details = {} if details is None else details  # agent steps: attempts, usage, workspace
        self.log = log  # shell steps: the log of what the command printed, if it printed anything
        self.setup = setup  # agent steps: the worker cannot start or reach its model; the run stops (exit 2)
        self.worker = worker  # the Dask worker that ran the step (runner/executors/); None: this machine
        # a hermetic step (runner/executors/hermetic.py): the outputs it produced, path -> digest, in the remote
        # cache; the scheduler restores them into the project rather than hashing files it never wrote here
        self.produced: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"StepOutcome(ok={self.ok}, exit_code={self.exit_code}, error={self.error!r})"


class Step(Protocol):
    def run(self, ctx: StepContext) -> StepOutcome: ...
