"""How `runner make` was asked to run: the options the scheduler reads (runner/execute.py)."""

from __future__ import annotations


class RunOptions:
    """How `runner make` was asked to run."""

    def __init__(
        self,
        jobs: int = 1,
        keep_going: bool = False,
        force: bool = False,
        timeout: float | None = None,
        record: bool = False,
        halt_on: frozenset = frozenset(),
        ask=None,
        worker: str | None = None,
        on_output=None,
        improve: dict[str, dict] | None = None,
        executor=None,
        spans=None,
    ):
        self.jobs = jobs
        self.keep_going = keep_going
        self.force = force
        self.timeout = timeout  # default per-step timeout
        self.record = record  # write every worker exchange to replays/
        self.halt_on = halt_on  # boundaries that need a human this run (write_files, run_shell)
        self.ask = ask  # callable(question, detail) -> bool when a human is at a terminal
        self.worker = worker  # override [worker] kind for this run (e.g. replay)
        # callable(intent, lines): what shell steps print, line by line as they print it (-v); None: only logged
        self.on_output = on_output
        # `runner improve`: intent -> {"version", "feedback", "prompt"}: run again with the reviewer's feedback and
        # the previous version in its prompt (runner/versions.py), its result recorded as the next version
        self.improve = improve or {}
        # where shell steps run (runner/executors/, built by commands/make.py): one whose `on_cluster` is true takes
        # each shell step as a future (submit, cancel_all, lost); None or local: this scheduler's own children
        self.executor = executor
        # the run's spans, sent to an OpenTelemetry collector as each step ends (telemetry.LiveSpans), or None
        self.spans = spans
