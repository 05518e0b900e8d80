"""The scheduler: -j N, keep-going, timeouts, interrupts; each cache entry is written as its step finishes."""

from __future__ import annotations

import heapq
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from pathlib import Path

from .approve import ApplyContext, finish, pending_for, precall_question, take_grant
from .cache import StepRecord
from .keys import digest_bytes, expand, outputs_digest
from .plan import RUN, Decision, Planner
from .record import RunRecord, tail
from .spec import STEP_AGENT, STEP_AGGREGATE, Spec
from .steps import StepContext, StepOutcome, step_for
from .policy import RunBudget
from .steps.agent import AgentRun
from .steps.shell import kill_group
from .workspace import Layout, journal_end, journal_start

RAN, CACHED, RESTORED, FAILED, SKIPPED, BLOCKED = "ran", "cached", "restored", "failed", "skipped", "blocked"


@dataclass
class RunOptions:
    jobs: int = 1
    keep_going: bool = False
    force: bool = False
    timeout: float | None = None  # default per-step timeout
    record: bool = False  # write every worker exchange to replays/
    halt_on: frozenset = frozenset()  # boundaries that need a human this run (write_files, run_shell)
    ask: object = None  # callable(question, detail) -> bool when a human is at a terminal
    worker: str | None = None  # override [worker] kind for this run (e.g. replay)


@dataclass
class Summary:
    run_id: str
    counts: dict[str, int] = field(default_factory=lambda: {RAN: 0, CACHED: 0, RESTORED: 0, FAILED: 0, SKIPPED: 0,
                                                            BLOCKED: 0})
    failed: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # selected steps that did not finish
    interrupted: bool = False
    duration: float = 0.0


class _Pool:
    """Where steps run. A local thread pool driving child processes; the seam for a remote one later."""

    def __init__(self, jobs: int):
        self.executor = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="step")

    def submit(self, fn, *args) -> Future:
        return self.executor.submit(fn, *args)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class Executor:
    def __init__(self, planner: Planner, layout: Layout, record: RunRecord, emit, options: RunOptions):
        self.planner = planner
        self.spec = planner.spec
        self.layout = layout
        self.record = record
        self._emit_lock = threading.Lock()
        self._emit = emit
        self.options = options
        self.apply_ctx = ApplyContext(planner=planner, state_dir=layout.state_dir, run_id=record.run_id,
                                      halt_on=options.halt_on, ask=options.ask)
        self.budget = _run_budget(self.spec)
        self.phase_confirmed = False  # confirm-phase: one question before the first agent step of the run
        self.cancelled = threading.Event()
        self.running_pgids: dict[str, int] = {}
        self.journals: dict[str, object] = {}
        self._lock = threading.Lock()

    def emit(self, event: dict) -> None:
        with self._emit_lock:  # agent attempts report from their own threads
            self._emit(event)

    # ---- the loop ----------------------------------------------------------------------------
    def run(self, order: list[str]) -> Summary:
        summary = Summary(run_id=self.record.run_id)
        started = time.monotonic()
        selected = set(order)
        position = {name: i for i, name in enumerate(order)}
        deps = {n: [d for d in self.spec.intents[n].deps if d in selected] for n in order}
        dependants: dict[str, list[str]] = {n: [] for n in order}
        for n in order:
            for d in deps[n]:
                dependants[d].append(n)
        waiting = {n: len(deps[n]) for n in order}
        ready = [(position[n], n) for n in order if waiting[n] == 0]  # a heap: earliest in order first
        heapq.heapify(ready)
        produced: dict[str, str] = {}  # intent -> digest of its outputs
        running: dict[Future, tuple[str, Decision, float]] = {}
        stop = False

        def release(name: str) -> None:
            for d in dependants[name]:
                waiting[d] -= 1
                if waiting[d] == 0:
                    heapq.heappush(ready, (position[d], d))

        self.emit({"event": "run_started", "run_id": self.record.run_id, "steps": len(order),
                   "jobs": self.options.jobs})
        pool = _Pool(self.options.jobs)
        try:
            while ready or running:
                while ready and not stop and len(running) < self.options.jobs:
                    name = heapq.heappop(ready)[1]
                    decision = self.planner.decide(name, produced)
                    waiting_change = self._pending(name, decision)
                    if waiting_change:
                        summary.counts[BLOCKED] += 1
                        summary.blocked.append(name)
                        self.emit({"event": "step_finished", "intent": name, "status": BLOCKED,
                                   "reasons": [waiting_change]})
                        continue
                    held = self._precall_gate(name) if decision.action == RUN else None
                    if held:
                        status = FAILED if held.startswith("you declined") else BLOCKED
                        summary.counts[status] += 1
                        (summary.failed if status == FAILED else summary.blocked).append(name)
                        self.emit({"event": "step_finished", "intent": name, "status": status, "error": held,
                                   "reasons": [held]})
                        continue
                    if decision.action == RUN:
                        self.emit({"event": "step_started", "intent": name, "reasons": decision.reasons})
                        future = pool.submit(self._run_step, name, decision)
                        running[future] = (name, decision, time.monotonic())
                        continue
                    status = self._finish_skip(name, decision)
                    produced[name] = outputs_digest(decision.outputs)
                    summary.counts[status] += 1
                    release(name)
                if stop and ready:
                    for _pos, name in sorted(ready):
                        self._skip(name, "not started: the run stopped after a failure", summary)
                    ready.clear()
                if not running:
                    continue
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in done:
                    name, decision, t0 = running.pop(future)
                    outcome, outputs = future.result()
                    status, outputs = self._report_run(name, decision, outcome, time.monotonic() - t0, outputs)
                    summary.counts[status] += 1
                    if status == BLOCKED:
                        summary.blocked.append(name)
                        continue
                    if status == FAILED:
                        summary.failed.append(name)
                        if not self.options.keep_going:
                            stop = True
                        self._skip_dependants(name, dependants, summary, waiting)
                        continue
                    produced[name] = outputs_digest(outputs)
                    release(name)
        except KeyboardInterrupt:
            summary.interrupted = True
            self._interrupt(running, summary)
        finally:
            pool.shutdown()
            summary.duration = time.monotonic() - started
        summary.left = [n for n in order if n not in produced]
        return summary

    def _precall_gate(self, name: str) -> str | None:
        """Ask (on a terminal) or block (without one) before an agent step calls a model, as its policy says."""
        intent = self.spec.intents[name]
        if intent.kind != STEP_AGENT:
            return None
        policy = self.spec.policies[intent.policy]
        question = precall_question(policy, self.options.halt_on, intent, self.phase_confirmed)
        if question is None:
            return None
        if self.options.ask is not None:
            if self.options.ask(f"Run agent step {name}?", question):
                self.phase_confirmed = self.phase_confirmed or policy.approval == "confirm-phase"
                return None
            return f"you declined to run it ({question})"
        if take_grant(self.layout.state_dir, name):
            return None
        return f"{question}: `runner approve {name}` allows its next run (no terminal to ask here)"

    def _pending(self, name: str, decision: Decision) -> str | None:
        """An agent step whose verified change already waits for approval is not asked again."""
        if self.spec.intents[name].kind != STEP_AGENT or decision.action != RUN or not decision.key:
            return None
        if pending_for(self.layout.state_dir, name, decision.key):
            return (f"a verified change waits for approval: `runner approve {name}` applies it "
                    f"(no model call), `runner approve {name} --reject` drops it")
        return None

    # ---- one step (in a pool thread) ---------------------------------------------------------
    def _run_step(self, name: str, decision: Decision) -> tuple[StepOutcome, dict]:
        """Run the step, then store its outputs and record from this thread, so the scheduler
        thread is free to start the next step (diskcache is safe across threads)."""
        intent = self.spec.intents[name]
        timeout = intent.timeout or self.options.timeout
        t0 = time.monotonic()

        def on_process(pid: int) -> None:
            with self._lock:
                self.running_pgids[name] = pid
                self.journals[name] = journal_start(self.layout, name, pid, list(intent.outputs))
            if self.cancelled.is_set():  # the interrupt landed while the child was starting
                kill_group(pid, grace=0.2)

        ctx = StepContext(spec=self.spec, intent=intent, log_path=self.record.log_path(name), timeout=timeout,
                          cancelled=self.cancelled, on_process=on_process)
        if intent.kind == STEP_AGENT:
            ctx.extra["agent"] = self._agent_run(name, decision)
            return step_for(intent.kind).run(ctx), {}  # the scheduler thread asks, applies and records
        try:
            outcome = step_for(intent.kind).run(ctx)
        finally:
            with self._lock:
                self.running_pgids.pop(name, None)
        with self._lock:
            journal = self.journals.pop(name, None)
        outputs: dict = {}
        if outcome.ok:
            outputs, missing = self._collect_outputs(name)
            if missing:
                outcome = StepOutcome(ok=False, exit_code=0, error=f"declared output {missing} was not produced")
            else:
                self.planner.cache.put_record(StepRecord(
                    intent=name, key=decision.key, outputs=outputs, created=time.time(),
                    ingredients=self.planner.ingredients(name, decision), duration=time.monotonic() - t0,
                    run_id=self.record.run_id))
                with self._lock:
                    self.planner.state.set(name, decision.key, outputs,
                                           {p: d for p, d in decision.inputs.items() if p in outputs})
        if not outcome.ok and journal:
            self._remove_outputs(intent.outputs)  # never leave a half-written output behind
        if journal:
            journal_end(journal)
        return outcome, outputs

    def _agent_run(self, name: str, decision: Decision) -> AgentRun:
        return AgentRun(root=Path(self.spec.root), attempts_dir=self.record.dir / "attempts",
                        worker_config=self.planner.worker_config, step_key=decision.key,
                        replay_key=self.planner.replay_key(name, decision), budget=self.budget,
                        input_files=sorted(p for p, d in decision.inputs.items() if d is not None),
                        record=self.options.record, halt_on=self.options.halt_on, emit=self.emit)

    def _report_run(self, name: str, decision: Decision, outcome: StepOutcome, duration: float,
                    outputs: dict) -> tuple[str, dict]:
        event = {"event": "step_finished", "intent": name, "duration": round(duration, 3),
                 "log": str(self.record.log_path(name))}
        if outcome.details:
            event["agent"] = outcome.details
        if outcome.ok and outcome.change is not None:
            status, outputs, message = finish(self.apply_ctx, self.spec.intents[name], decision, outcome.change)
            if status != RAN:
                self.emit({**event, "status": status, "error": message, "reasons": [message]})
                return status, {}
            event["outputs"] = outputs  # what `runner replay` compares a re-execution against
        if outcome.ok:
            self.emit({**event, "status": RAN, "reasons": decision.reasons})
            return RAN, outputs
        if outcome.blocked:
            self.emit({**event, "status": BLOCKED, "error": outcome.blocked, "reasons": [outcome.blocked]})
            return BLOCKED, {}
        self.emit({**event, "status": FAILED, "exit_code": outcome.exit_code, "error": outcome.error,
                   "timed_out": outcome.timed_out, "interrupted": outcome.interrupted,
                   "log_tail": tail(self.record.log_path(name)) if self.spec.intents[name].kind != STEP_AGENT
                   else None})
        return FAILED, {}

    def _collect_outputs(self, name: str) -> tuple[dict[str, str], str | None]:
        """Digest each output and keep a copy in the blob store, reading each file once."""
        intent = self.spec.intents[name]
        root = self.spec.root
        files = expand(root, intent.outputs)
        outputs = {}
        for rel in files:
            full = os.path.join(root, rel)
            try:
                st = os.stat(full)
                with open(full, "rb") as f:
                    data = f.read()
            except (FileNotFoundError, IsADirectoryError):
                return {}, rel
            digest = digest_bytes(data)
            self.planner.stat.remember(rel, st, digest)
            self.planner.cache.put_blob(digest, data)
            outputs[rel] = digest
        return outputs, None

    def _finish_skip(self, name: str, decision: Decision) -> str:
        status = CACHED
        if decision.restore:
            for rel, digest in decision.restore.items():
                self.planner.cache.restore(digest, os.path.join(self.spec.root, rel))
                self.planner.stat.digest(self.spec.root, rel)
            status = RESTORED
        if self.spec.intents[name].kind != STEP_AGGREGATE and decision.key:
            self.planner.state.set(name, decision.key, decision.outputs, decision.inplace)
        self.emit({"event": "step_finished", "intent": name, "status": status, "reasons": decision.reasons})
        return status

    def _skip(self, name: str, why: str, summary: Summary) -> None:
        summary.counts[SKIPPED] += 1
        self.emit({"event": "step_finished", "intent": name, "status": SKIPPED, "reasons": [why]})

    def _skip_dependants(self, failed: str, dependants, summary: Summary, waiting: dict) -> None:
        seen, stack = set(), list(dependants[failed])
        while stack:
            name = stack.pop()
            if name in seen or waiting.get(name) == -1:  # already skipped for another failed dependency
                continue
            seen.add(name)
            waiting[name] = -1  # never becomes ready
            self._skip(name, f"dependency {failed} failed", summary)
            stack.extend(dependants[name])

    def _remove_outputs(self, patterns) -> None:
        for rel in expand(self.spec.root, tuple(patterns)):
            try:
                os.unlink(os.path.join(self.spec.root, rel))
            except (FileNotFoundError, IsADirectoryError):
                pass

    def _interrupt(self, running: dict, summary: Summary) -> None:
        """Stop every child group, wait for their threads, drop their partial outputs."""
        self.cancelled.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        try:
            with self._lock:
                pgids = list(self.running_pgids.values())
            for pgid in pgids:
                try:
                    os.killpg(pgid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            done, _ = wait(list(running), timeout=3.0)
            with self._lock:
                for pgid in self.running_pgids.values():
                    try:
                        os.killpg(pgid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            wait(list(running))
            for future, (name, decision, t0) in list(running.items()):
                outcome, _outputs = future.result()
                if not outcome.ok:  # a step that finished just before the interrupt is kept
                    outcome.interrupted = True
                    summary.failed.append(name)
                summary.counts[self._report_run(name, decision, outcome, time.monotonic() - t0, {})[0]] += 1
            running.clear()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _run_budget(spec: Spec) -> RunBudget:
    """The run's budget is the default policy's run_budget: one purse for every agent step of the run."""
    b = spec.policies["default"].run_budget
    return RunBudget(tokens=b.tokens, seconds=b.seconds, attempts=b.attempts)
