"""RUN or SKIP for every step, each with the reasons a user can check."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING

from .cache import Cache, State, StepRecord
from .compiled import Compiled
from .freshness import ALWAYS, RUN, SKIP, Decision, StatCache, decide
from .keys import digest_value, outputs_digest, step_key
from .spec import STEP_AGENT

if TYPE_CHECKING:
    from .workers.base import WorkerConfig

__all__ = ["ALWAYS", "RUN", "SKIP", "Decision", "Planner", "make_plan"]  # the rule's words, as commands use them


class Planner:
    """Decides one step at a time, given what its dependencies produced (so execution can re-decide
    a step after its dependencies ran: early cutoff)."""

    def __init__(
        self,
        compiled: Compiled,
        stat: StatCache,
        state: State,
        cache: Cache,
        force: bool = False,
        worker_kind: str | None = None,
    ):
        self.compiled = compiled
        self.spec = compiled.spec
        self.root = compiled.spec.root
        self.stat = stat
        self.state = state
        self.cache = cache
        self.force = force
        self._worker_config: WorkerConfig | None = None
        self.worker_kind = worker_kind  # `--worker replay`: the same steps, served from recordings
        self._agent_static: dict[str, str] = {}

    @property
    def worker_config(self):
        if self._worker_config is None:
            from .workers import config_for

            self._worker_config = config_for(self.spec, self.worker_kind)
        return self._worker_config

    def static_digest(self, name: str) -> str:
        """An agent step's key also holds the worker's version (a Codex upgrade re-runs it); asked once."""
        if self.spec.intents[name].kind != STEP_AGENT:
            return self.compiled.static[name]
        if name not in self._agent_static:
            from .workers import get_worker

            version = get_worker(self.worker_config).version(self.worker_config)
            self._agent_static[name] = digest_value([self.compiled.static[name], version])
        return self._agent_static[name]

    def replay_key(self, name: str, decision: Decision) -> str:
        """The key without the worker: recordings made by one worker are served to the replay worker."""
        return step_key(self.compiled.static_replay[name], decision.inputs, decision.dep_digests)

    def decide(self, name: str, dep_outputs: Mapping[str, str | None], pending: Set[str] = frozenset()) -> Decision:
        """RUN or SKIP by the one rule (runner.freshness.decide)."""
        return decide(self, name, dep_outputs, pending)

    def why_missed(self, name: str, last, inputs: dict, deps: dict) -> list[str]:
        """Why a step with no recorded success for its key must run: its last recorded run compared
        ingredient by ingredient."""
        record: StepRecord | None = self.cache.get_record(last[0]) if last else None
        if record is None:
            return ["no cache entry"]
        before = record.ingredients
        reasons = []
        for part, value in self.compiled.parts[name].items():
            if before.get("parts", {}).get(part) != value:
                label = {"definition": "definition changed"}.get(part)
                if part == "prompt":
                    label = f"prompt {self.spec.intents[name].prompt} changed"
                reasons.append(label or f"{part} changed")
        old_inputs = before.get("inputs", {})
        for path in sorted(set(inputs) | set(old_inputs)):
            if path not in old_inputs:
                reasons.append(f"input {path} added")
            elif path not in inputs:
                reasons.append(f"input {path} removed")
            elif inputs[path] != old_inputs[path]:
                reasons.append(f"input {path} {'deleted' if inputs[path] is None else 'changed'}")
        old_deps = before.get("deps", {})
        for dep, value in deps.items():
            if dep not in old_deps:
                reasons.append(f"new dependency {dep}")
            elif old_deps[dep] != value:
                reasons.append(f"dependency {dep} produced new outputs")
        for dep in old_deps:
            if dep not in deps:
                reasons.append(f"dependency {dep} removed")
        return reasons or ["no cache entry for this combination of inputs"]

    def ingredients(self, name: str, decision: Decision) -> dict:
        return {"parts": self.compiled.parts[name], "inputs": decision.inputs, "deps": decision.dep_digests}


def make_plan(planner: Planner, order: list[str]) -> list[Decision]:
    """Decide every selected step in order, assuming a step that must run changes its outputs."""
    produced: dict[str, str | None] = {}
    pending: set[str] = set()
    decisions = []
    for name in order:
        d = planner.decide(name, produced, pending)
        decisions.append(d)
        if d.action == RUN or d.key is None:
            produced[name] = None
            pending.add(name)
        else:
            produced[name] = outputs_digest(d.outputs)
    return decisions
