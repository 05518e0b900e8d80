"""RUN or SKIP for every step, each with the reasons a user can check."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Set
from functools import partial
from typing import TYPE_CHECKING

from .cache import Cache, LastResult, State, StepRecord
from .compiled import Compiled
from .freshness import ALWAYS, RUN, SKIP, UP_TO_DATE, Asked, Decision, decide, waiting_on
from .globs import GLOB_CHARS, expand, matches_any, may_overlap
from .keys import digest_value, outputs_digest, step_key
from .spec import STEP_AGENT, STEP_AGGREGATE, Intent, expand_env
from .stat_cache import StatCache

if TYPE_CHECKING:
    from .ignore import IgnoreRules
    from .toolchain import Versions
    from .workers.base import WorkerConfig

# the rule's words, as commands use them
__all__ = ["ALWAYS", "RUN", "SKIP", "Decision", "InputFiles", "Planner", "make_plan", "unmatched_warnings"]


class InputFiles:
    """The files a step's inputs name (runner/globs.py): its literal paths, and what its globs expand to, less
    its `exclude` and what git ignores (but for declared outputs: `produced`). The ignore rules are read when
    the first glob expands, once for the command."""

    def __init__(self, root: str, produced: tuple[str, ...]):
        self.root = root
        self.produced = produced
        self._ignore: IgnoreRules | None = None
        # intent -> its input globs that matched no file when it was last decided, each with whether git
        # ignores a file it could have matched (the warning `validate`, `status` and `make` give)
        self.unmatched: dict[str, list[tuple[str, bool]]] = {}

    def __call__(self, name: str, intent: Intent) -> list[str]:
        if all(GLOB_CHARS.isdisjoint(pattern) for pattern in intent.inputs):
            return sorted(set(intent.inputs))  # nothing to walk, nothing to ignore
        if self._ignore is None:
            from .ignore import IgnoreRules

            self._ignore = IgnoreRules(self.root)
        empty: list[tuple[str, bool]] = []
        files = expand(self.root, intent.inputs, self._ignore, intent.exclude, self.produced, empty)
        if empty:
            self.unmatched[name] = empty
        else:
            self.unmatched.pop(name, None)
        return files


def _in_place(intent: Intent, inputs: Mapping[str, str | None], outputs: Iterable[str]) -> dict[str, str | None]:
    """The step's outputs that are also its inputs, each with its digest as the step was decided: None for a file the
    step created where its input patterns look (a declared output is an input wherever it lies, ignored by git or
    not). freshness.decide counts such an input as that while it holds what the step produced: a step never chases
    its own tail."""
    return {
        path: inputs.get(path)
        for path in outputs
        if path in inputs or (matches_any(path, intent.inputs) and not matches_any(path, intent.exclude))
    }


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
        self.forced: Set[str] = frozenset()  # steps that run whatever their state (`runner improve`'s intent)
        self._worker_config: WorkerConfig | None = None
        self._sub_configs: dict[str, WorkerConfig] = {}  # a sub-project's own [worker]'s (worker_config_of)
        self.worker_kind = worker_kind  # `--worker replay`: the same steps, served from recordings
        self._agent_static: dict[str, str] = {}
        self._versions: Versions | None = None  # what the runtime commands printed in this run (toolchain.py)
        self.input_files = InputFiles(self.root, compiled.produced)

    @property
    def worker_config(self):
        if self._worker_config is None:
            from .workers import config_for

            self._worker_config = config_for(self.spec, self.worker_kind)
        return self._worker_config

    def worker_config_of(self, name: str):
        """The worker config of an agent step: its sub-project's own [worker] (spec.worker_of), else the root's."""
        if not self.spec.workers:
            return self.worker_config
        folder = name.rpartition(":")[0]
        if not any(declared == folder for declared, _worker in self.spec.workers):
            return self.worker_config
        if folder not in self._sub_configs:
            from .workers import config_for

            self._sub_configs[folder] = config_for(self.spec, self.worker_kind, name)
        return self._sub_configs[folder]

    def env(self, name: str) -> tuple[tuple[str, str], ...]:
        """A step's `env` as its command gets it: each $NAME read from runner's environment (a UsageError
        names the variable that is not set)."""
        intent = self.spec.intents[name]
        if not any("$" in value for _key, value in intent.env):
            return intent.env
        out = []
        for key, value in intent.env:
            try:
                out.append((key, expand_env(value, os.environ) if "$" in value else value))
            except KeyError as unset:
                from .load import unset_variable

                raise unset_variable(self.spec, name, key, unset.args[0]) from None
        return tuple(out)

    def toolchain(self, name: str) -> dict[str, str] | None:
        """What step `name`'s runtime commands print (runner/toolchain.py), each run once a run; None when it has
        none. A command of the intent's own that fails stops the run (runtime_failed): keyed on, its error text
        would stand for a tool nobody has."""
        entry = (
            self.compiled.runtimes.get(self.compiled.parts[name].get("toolchain", ""))
            if self.compiled.runtimes
            else None
        )
        if entry is None:
            return None
        from .toolchain import Failed, Versions, runtime_failed

        if self._versions is None:
            self._versions = Versions(self.root, trust_kept=not self.force)  # -B asks every tool again
        commands, cwd, _path = entry
        own = self.spec.intents[name].runtime
        try:
            return dict(self._versions.run(commands, cwd, dict(self.env(name)), strict=own))
        except Failed as failed:
            raise runtime_failed(self.spec, name, own.index(failed.command), failed.command, failed.why) from None

    def record(self, name: str, key: str) -> tuple[StepRecord | None, str | None]:
        """The cache's record under `key` (the database's, or the shared cache's), and why it must not be restored
        for step `name`, or None: a record names only what its step declares (runner/confine.py). The state
        index's last result is not asked for here: this runner wrote it, from a record it had checked."""
        record = self.cache.get_record(key)
        if record is None:
            return None, None
        from .confine import refused_record  # a cache hit's alone: never loaded by a no-op or a build from scratch

        return record, refused_record(self, name, key, record.outputs)

    def static_digest(self, name: str) -> str:
        """An agent step's key also holds the worker's version (a Codex upgrade re-runs it), asked once; a step
        whose `env` reads variables, their values (the expanded env is what the key holds)."""
        toolchain = self.toolchain(name) if self.compiled.runtimes else None
        also = [["toolchain", sorted(toolchain.items())]] if toolchain is not None else []
        if self.spec.intents[name].kind != STEP_AGENT:
            static = self.compiled.static[name]
            if self.compiled.env_names and any("$" in v for _k, v in self.spec.intents[name].env):
                return digest_value([static, self.env(name), *also])
            return digest_value([static, *also]) if also else static
        if name not in self._agent_static:
            from .workers import get_worker

            config = self.worker_config_of(name)
            version = get_worker(config).version(config)
            self._agent_static[name] = digest_value([self.compiled.static[name], version, *also])
        return self._agent_static[name]

    def replay_key(self, name: str, decision: Decision) -> str:
        """The key without the worker: recordings made by one worker are served to the replay worker."""
        return step_key(self.compiled.static_replay[name], decision.inputs, decision.dep_digests)

    def decide(self, name: str, dep_outputs: Mapping[str, str | None], pending: Set[str] = frozenset()) -> Decision:
        """RUN or SKIP by the one rule (runner.freshness.decide); an agent step's output a person edited is kept
        first (runner.edits.decide_agent)."""
        if name in self.compiled.agents:
            from .edits import decide_agent

            return decide_agent(self, name, dep_outputs, pending)
        return decide(self, self.ask(name, dep_outputs), dep_outputs, pending)

    def keep_result(self, name: str, key: str, outputs: dict, inputs: Mapping) -> None:
        """The step's last good result in the state index, with the outputs that are also its inputs (_in_place)."""
        self.state.set(name, key, outputs, _in_place(self.spec.intents[name], inputs, outputs))

    def ask(self, name: str, dep_outputs: Mapping[str, str | None], last: LastResult | None = None) -> Asked:
        """What the rule is asked about step `name`: its input files (the globs expanded), its static digest once
        no dependency is waiting, and its last good result (`last`: as a kept edit makes it, edits.py)."""
        intent = self.spec.intents[name]
        if intent.kind == STEP_AGGREGATE:
            return Asked(name, intent, [], None, None)
        static = None if waiting_on(intent, dep_outputs) else self.static_digest(name)
        return Asked(name, intent, self.input_files(name, intent), static, last or self.state.get(name))

    def parts(self, name: str) -> dict[str, str]:
        """The digest of each key ingredient but the files: the compiled parts, and the expanded env's."""
        parts = self.compiled.parts[name]
        if self.compiled.env_names and any("$" in v for _k, v in self.spec.intents[name].env):
            parts = {**parts, "env": digest_value(self.env(name))}
        if "toolchain" in parts:  # what the runtime commands print, not which they are
            parts = {**parts, "toolchain": digest_value(sorted((self.toolchain(name) or {}).items()))}
        return parts

    def ingredients(self, name: str, decision: Decision) -> dict:
        made = {"parts": self.parts(name), "inputs": decision.inputs, "deps": decision.dep_digests}
        toolchain = self.toolchain(name) if self.compiled.runtimes else None
        if toolchain is not None:  # each command's output, for the reason a later run words (toolchain.changed)
            made["toolchain"] = toolchain
        return made


def unmatched_warnings(
    spec, unmatched: Mapping[str, list[tuple[str, bool]]], produced: tuple[str, ...] = ()
) -> list[str]:
    """`warning: FILE:LINE: intent.NAME.inputs[I]: ...` for each input glob that matched no file, but for one a
    declared output (`produced`) could fill once its step has run."""
    if not unmatched:  # the usual case: the loader (~50 ms to import at 100,000 steps' spec) is not needed
        return []
    from .load import located, toml_path

    found: list[tuple[str, str, object]] = []
    for name, patterns in unmatched.items():
        intent = spec.intents[name]
        for pattern, ignored in patterns:
            if any(may_overlap(pattern, output) for output in produced):
                continue
            why = (
                "; git ignores every file it could match (.gitignore, .git/info/exclude): name a file literally "
                "to read it anyway, or declare it among a step's outputs"
                if ignored
                else ""
            )
            where = toml_path(["intent", name, "inputs", intent.inputs.index(pattern)])
            found.append((where, f"'{pattern}' matches no file{why}", pattern))
    problems = sorted(located(spec, found), key=lambda p: (p.line or 0, p.path))  # as the file reads
    return [f"warning: {problem.render()}" for problem in problems]


def make_plan(planner: Planner, order: list[str], doubtful: set[str] | None = None) -> list[Decision]:
    """Decide every selected step in order, assuming a step that must run changes its outputs. `doubtful`: the
    steps to decide (freshness.doubtful_steps, None for all); the others are up to date by the target's proof,
    as `runner make` reports them, and their dependants see what they last produced."""
    produced: dict[str, str | None] = {}
    pending: set[str] = set()
    decisions: dict[str, Decision] = {}
    todo = order
    if doubtful is not None:
        todo = [name for name in order if name in doubtful]
        deps = planner.compiled.deps
        for name in order:
            if name not in doubtful:
                decisions[name] = Decision(name, SKIP, [UP_TO_DATE])
        for name in todo:
            for dep in deps[name]:
                if dep not in doubtful and dep not in produced:
                    produced[dep] = produced_by_proven(planner.state, dep)
    for wave in _waves(planner, todo) if planner.cache.reads_remote else [todo]:
        if len(wave) > 1:  # what the wave's decisions ask the shared cache, asked at once (as make does)
            planner.cache.prefetch(partial(decide_each, planner, wave, produced, pending))
        for name in wave:
            d = decisions[name] = planner.decide(name, produced, pending)
            if d.action == RUN or d.key is None:
                produced[name] = None
                pending.add(name)
            else:
                produced[name] = outputs_digest(d.outputs)
    return [decisions[name] for name in order]


def _waves(planner: Planner, order: list[str]) -> list[list[str]]:
    """`order` in waves: each step after every wave holding one of its dependencies (its key is known once
    they are decided)."""
    level: dict[str, int] = {}
    waves: list[list[str]] = []
    for name in order:
        at = 1 + max((level[d] for d in planner.compiled.deps[name] if d in level), default=-1)
        level[name] = at
        if at == len(waves):
            waves.append([])
        waves[at].append(name)
    return waves


def produced_by_proven(state, name: str) -> str:
    """The output digest a proved step's dependants see: its last good result's."""
    last = state.get(name)
    return outputs_digest(last.outputs if last else {})


def decide_each(planner: Planner, names: list[str], produced, pending) -> None:
    """Decide each step, its decision dropped: what cache.prefetch watches to learn what deciding asks."""
    for name in names:
        try:
            planner.decide(name, produced, pending)
        except Exception:  # noqa: BLE001 - said when the step is decided in its turn
            pass
