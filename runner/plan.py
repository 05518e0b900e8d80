"""RUN or SKIP for every step, each with the reasons a user can check."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING, Any

from .cache import Cache, State, StepRecord
from .compiled import Compiled
from .keys import StatCache, digest_value, input_digests, outputs_digest, step_key
from .spec import STEP_AGENT, STEP_AGGREGATE, runs_always

if TYPE_CHECKING:
    from .workers.base import WorkerConfig

RUN, SKIP = "run", "skip"
ALWAYS = "no inputs or dependencies declared: runs every time (declare inputs to cache it)"


class Decision:
    """RUN or SKIP for one step, with the reasons and what its key was made of."""

    def __init__(
        self,
        intent: str,
        action: str,
        reasons: list[str],
        key: str | None = None,
        outputs: dict | None = None,
        restore: dict | None = None,
        inputs: dict | None = None,
        dep_digests: dict | None = None,
        inplace: dict | None = None,
    ):
        self.intent = intent
        self.action = action  # RUN | SKIP
        self.reasons = reasons
        self.key = key  # None when it depends on a step that has not run yet
        self.outputs: dict[str, str | None] = {} if outputs is None else outputs  # known outputs (SKIP)
        self.restore: dict[str, str] = {} if restore is None else restore  # output path -> blob to restore
        self.inputs: dict[str, str | None] = {} if inputs is None else inputs
        self.dep_digests: dict[str, str | None] = {} if dep_digests is None else dep_digests
        self.inplace: dict[str, str | None] = {} if inplace is None else inplace  # pre-run digests of in-place inputs

    def __repr__(self) -> str:
        return f"Decision({self.intent!r}, {self.action!r}, {self.reasons!r})"

    def to_json(self) -> dict:
        return {"intent": self.intent, "action": self.action, "reasons": self.reasons}


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
            from .workers.base import WorkerConfig

            w = self.spec.worker
            extra = dict(w.extra)
            extra.setdefault("project_root", self.spec.root)
            self._worker_config = WorkerConfig(
                kind=self.worker_kind or w.kind,
                model=w.model,
                fallback_models=w.fallback_models,
                base_url=w.base_url,
                env_key=w.env_key,
                binary=w.binary,
                timeout=w.timeout,
                idle_timeout=w.idle_timeout,
                replays_dir=w.replays_dir,
                extra=extra,
            )
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
        """`dep_outputs[dep]` is the digest of the dep's outputs, or None if the dep has yet to run."""
        intent = self.spec.intents[name]
        waiting = [d for d in intent.deps if dep_outputs.get(d) is None]
        if intent.kind == STEP_AGGREGATE:
            reasons = [f"aggregate of {len(intent.deps)} step{'s' if len(intent.deps) != 1 else ''}"]
            if waiting:
                return Decision(name, SKIP, reasons)
            # an aggregate "produces" its dependencies' outputs, so a step depending on it sees them
            return Decision(name, SKIP, reasons, key="aggregate", outputs={d: dep_outputs[d] for d in intent.deps})
        last = self.state.get(name)
        inputs = input_digests(self.stat, self.root, intent.inputs)
        inplace = {}
        if last and last[2]:
            # an agent step that edits its own input: while the file holds what the step produced,
            # the key sees the digest it had before the step ran, so the step never chases its tail
            for path, before in last[2].items():
                if path in inputs and inputs[path] == last[1].get(path):
                    inputs[path] = before
                    inplace[path] = before
        if waiting:
            reasons = [f"dependency {d} will run" for d in waiting if d in pending] or [
                f"dependency {d} has not run" for d in waiting
            ]
            return Decision(name, RUN, reasons, inputs=inputs, inplace=inplace)
        deps = {d: dep_outputs[d] for d in intent.deps}
        key = step_key(self.static_digest(name), inputs, deps)
        base: dict[str, Any] = dict(key=key, inputs=inputs, dep_digests=deps, inplace=inplace)
        if self.force:
            return Decision(name, RUN, ["forced"], **base)
        if runs_always(intent):
            # nothing declared can tell whether it is up to date: like a phony make rule, it runs
            return Decision(name, RUN, [ALWAYS], **base)
        outputs: Mapping[str, str | None]
        if last and last[0] == key:
            outputs = last[1]
        else:
            record = self.cache.get_record(key)
            if record is None:
                return Decision(name, RUN, self._why(name, last, inputs, deps), **base)
            outputs = record.outputs
        return self._check_outputs(name, outputs, base, from_state=bool(last and last[0] == key))

    def _check_outputs(self, name: str, outputs: Mapping[str, str | None], base: dict, from_state: bool) -> Decision:
        restore, reasons = {}, []
        for path, want in outputs.items():
            have = self.stat.digest(self.root, path)
            if have == want:
                continue
            if want is None:
                continue
            state = "missing" if have is None else "changed"
            if not self.cache.has_blob(want):
                return Decision(name, RUN, [f"output {path} {state} and its cached copy is gone"], **base)
            restore[path] = want
            reasons.append(f"output {path} {state}: restore from cache")
        if not reasons:
            reasons = ["up to date"] if from_state else ["inputs match an earlier cached run"]
        elif not from_state:
            reasons.insert(0, "inputs match an earlier cached run")
        return Decision(name, SKIP, reasons, outputs=dict(outputs), restore=restore, **base)

    def _why(self, name: str, last, inputs: dict, deps: dict) -> list[str]:
        """Compare with the last recorded run of this intent, ingredient by ingredient."""
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
