"""The protocol every step kind speaks to the scheduler (StepKind), what a step is given (StepContext) and what it
returns (StepOutcome).

The scheduler (runner/execute.py) never asks a step's kind: what differs by kind is an attribute or a method of the
kind's class (runner/steps/shell.py, agent_kind.py, aggregate.py; steps.kind_of finds it), as pre-commit's
languages each implement one `Language` and its runner never asks which one it holds."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from ..redact import Mask
from ..spec import Intent, Spec

if TYPE_CHECKING:
    from concurrent.futures import Future
    from pathlib import Path

    from ..agent_handoff import AgentHandoff
    from ..confine import Folders
    from ..plan import Decision
    from ..process import Journal
    from ..workspace import InflightJournal
    from .shell import RunningShell
    from .spawn import CreatedAhead


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


class Scheduler(Protocol):
    """What a step kind may use of the scheduler that starts it (execute.Executor)."""

    spec: Spec
    agents: AgentHandoff  # the run's agent steps: their gate, their pool, their applies
    folders: Folders  # where the project's folders lead, links followed
    escapes: dict[str, str | None]  # a step decided ahead: the check its start makes, made then
    created_ahead: CreatedAhead | None  # redirect files made while a child runs; None: a start makes its own
    environ: dict[bytes, bytes]  # what shell steps inherit
    cluster: Any  # the Dask executor (runner/executors/) shell steps are sent to; None: this machine's children
    journals: dict[str, str]  # step -> its entry in the in-flight journal
    inflight: InflightJournal

    def context(self, name: str) -> StepContext: ...


if TYPE_CHECKING:
    # How a started step is waited for: a child of the scheduler's, watched through its pidfd and its output pipe (a
    # shell step here), or a future that wakes the scheduler when done (an agent step's attempts, a step on a
    # cluster); or its outcome at once, when it could not start.
    Started: TypeAlias = RunningShell | Future[StepOutcome] | StepOutcome


class StepKind(Protocol):
    """What differs by a step's kind, for the scheduler."""

    # a step of its own, counted and reported (an aggregate only names a set of steps: runner/steps/aggregate.py)
    reported: bool
    # decided while every slot is busy, before its turn (an agent step waits minutes for its model anyway)
    decided_ahead: bool
    # its outputs are the team's files with a history (runner/versions.py): what the cache restores over them is a
    # version when none holds those bytes (edits.keep_restored); a shell step's are products, made again at will
    versioned: bool

    def held(self, run: Scheduler, name: str, decision: Decision) -> str | None:
        """Why a step that must run does not start now (it waits for a person), or None."""
        ...

    def ahead(self, run: Scheduler, name: str, intent: Intent) -> None:
        """Decided ahead to run, while the slots are busy: what its start can have made now (runner/steps/spawn.py,
        CreatedAhead)."""
        ...

    def start(self, run: Scheduler, name: str, decision: Decision, wake: Callable[..., object]) -> Started:
        """Start the step; `wake()` once a future it returns is done."""
        ...

    def observed(self, record_dir: Path, name: str, outcome: StepOutcome) -> str | None:
        """What a gated step's candidate patterns are compared on (shadow.observe): a file or folder, or None."""
        ...
