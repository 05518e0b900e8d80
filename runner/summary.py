"""What a run did, step by step counted: the statuses a step ends with, and the account the scheduler keeps of them
(execute.py fills it, pipeline.py reports it in run_finished: runner/events.py)."""

from __future__ import annotations

RAN, CACHED, RESTORED, FAILED, SKIPPED, BLOCKED = "ran", "cached", "restored", "failed", "skipped", "blocked"
KEPT = "kept"  # an agent step whose output a person edited: the edit kept as its next version (runner/edits.py)
# Imported by the warm no-op (runner/noop.py), which counts its cached steps with no_counts(): no imports here.


def no_counts() -> dict[str, int]:
    """Each status a step ends with, counted zero times."""
    return {RAN: 0, CACHED: 0, RESTORED: 0, KEPT: 0, FAILED: 0, SKIPPED: 0, BLOCKED: 0}


class Summary:
    """What a run did, step by step counted."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.counts = no_counts()
        self.failed: list[str] = []
        self.blocked: list[str] = []
        self.left: list[str] = []  # selected steps that did not finish
        self.interrupted = False
        self.duration = 0.0
        self.warnings: list[str] = []  # about the spec as the run found it (an input glob that matched nothing)
        # shell steps whose log candidate patterns read (name, slice key, log, passed): shadow.observe's input
        self.observed: list[tuple[str, str | None, str, bool]] = []
        # what agent steps spent: worker calls, and tokens by kind (run_finished reports them, a CI job too)
        self.attempts = 0
        self.usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
        self.setup_error: str | None = None  # an agent step could not reach its model: the run stopped (exit 2)
        self.drift: list[str] = []  # agent steps whose change drifted beyond their intent (runner/drift.py)
        self.uncached: list[str] = []  # steps whose inputs changed while they ran (runner/inputs_held.py)
        self.remote: dict | None = None  # what the shared cache did in this run (runner/stores/mirror.py)
        self.no_space: str | None = None  # a file the run could not write for a full disk: the run failed there

    def spent(self, details: dict) -> None:
        """Count what one agent step spent (its outcome's details)."""
        self.attempts += details.get("attempts", 0)
        for k, v in (details.get("usage") or {}).items():
            self.usage[k] = self.usage.get(k, 0) + v
