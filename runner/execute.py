"""The scheduler: -j N, keep-going, timeouts, interrupts; each cache entry is written as its step finishes."""

from __future__ import annotations

import heapq
import os
import selectors
import threading
import time
from typing import TYPE_CHECKING

from .agent_handoff import AgentHandoff
from .cache import StepRecord
from .confine import Folders, Refused
from .events import cached_text, run_started, step_finished, step_ran, step_skipped, step_started, step_stopped
from .inputs_held import changed_inputs, not_cached_reason
from .intent_env import SECRET_STAND_IN, brought_back
from .interrupts import Interrupts
from .keys import outputs_digest
from .names import split
from .nospace import is_no_space, words
from .plan import RUN, Decision, Planner, decide_each, produced_by_proven
from .process import RUN_VAR, kill_groups
from .record import RunRecord, tail
from .redact import Mask
from .run_clock import ATTEMPT_EVENTS, RunClock
from .run_options import RunOptions
from .step_outputs import damaged_copy, hash_outputs, remove_outputs, restore_produced
from .steps import StepContext, StepKind, StepOutcome, kind_of
from .steps.shell import CreatedAhead, RunningShell
from .summary import BLOCKED, CACHED, FAILED, KEPT, RAN, RESTORED, SKIPPED, Summary
from .workspace import InflightJournal, Layout

if TYPE_CHECKING:
    from concurrent.futures import Future

_EXITED, _PRINTED = "exited", "printed"  # what a shell step's file descriptor in the selector says
PREFETCH = 63  # ready steps whose shared-cache reads are made together with the next one's (_prefetch)
_UNREAD = "unread"  # stands for a proven step's outputs where only an aggregate no step reads would see them
_AGGREGATE = "aggregate"  # what _finish_skip says of a step no kind reports: its dependencies are done


class _Active:
    """A step that is running, as it is waited for: a child of the scheduler's (watched through its pidfd and its
    output pipe) or a future (an agent step's attempts, a step on a cluster)."""

    __slots__ = ("name", "decision", "kind", "started", "slot", "shell", "future", "pidfd", "watching_output")

    def __init__(self, name: str, decision: Decision, kind: StepKind, started: float, slot: int):
        self.name = name
        self.decision = decision
        self.kind = kind
        self.started = started
        self.slot = slot  # the job slot it holds (0 .. jobs-1), given back as it leaves `active`
        self.shell: RunningShell | None = None
        self.future: Future | None = None
        self.pidfd: int | None = None
        self.watching_output = False  # a shell step's output pipe is in the selector


class Executor:
    def __init__(
        self,
        planner: Planner,
        layout: Layout,
        record: RunRecord,
        emit,
        options: RunOptions,
        doubtful: set[str] | None = None,
        mask: Mask | None = None,
    ):
        self.planner = planner
        self.mask = Mask() if mask is None else mask  # the run's secrets: hidden in step logs
        # the steps to decide (freshness.doubtful_steps); the others are known to be up to date. None: all
        self.doubtful = doubtful
        self.spec = planner.spec
        self.layout = layout
        self.record = record
        self._emit_lock = threading.Lock()
        self._emit = emit
        self._scheduler = threading.get_ident()
        self.options = options
        self.agents = AgentHandoff(planner, layout, record, options, self.emit, self.context)
        self.cancelled = threading.Event()
        self.journals: dict[str, str] = {}
        self.inflight = InflightJournal(layout)
        self.environ = dict(os.environb)  # what shell steps inherit: the environment as the run began,
        # and the run's token, by which the next start finds a child a kill left unjournaled (workspace.py)
        self.environ[RUN_VAR.encode()] = self.inflight.token.encode()
        executor = options.executor
        self.cluster = executor if executor is not None and executor.on_cluster else None
        self.hermetic = getattr(self.cluster, "hermetic", None) is not None  # steps read their manifest, by digest
        if self.cluster is not None:  # written before any step goes there: a kill at any moment finds it
            self.inflight.cluster(self.cluster.address, self.cluster.token)
        # with a core to spare, the scheduler makes the next steps' redirect files while a child runs; with
        # every core busy that only moves the work (measured: 10k clean -j2 on 2 cores, 12.6 s -> 13.1 s)
        ahead = options.jobs < (os.cpu_count() or 1) and self.cluster is None  # a remote step makes its own
        self.created_ahead = CreatedAhead() if ahead else None
        self.folders = Folders(self.spec.root, self.spec.subprojects)  # where its folders lead: worked out once a run
        self.escapes: dict[str, str | None] = {}  # a step decided ahead: its check before the start, made then
        self._deferred: list[tuple] = []  # shell steps finished, their records not yet stored
        self._deferred_names: set[str] = set()
        self._deferred_since = time.monotonic()
        self._unrecorded: list[tuple[str, str | None]] = []  # (step, journal key) whose records a full disk refused
        self.clock = RunClock(options.jobs)  # every event's `at`; the job slots

    def emit(self, event: dict, line: str | None = None) -> None:
        """Report an event; `line` is its JSON when the caller already has it. The scheduler's own events
        are written out before it next waits; an agent step's, from its pool thread, at once."""
        if line is None and event["event"] in ATTEMPT_EVENTS:
            event["at"] = self.clock.at()
        with self._emit_lock:  # agent attempts report from their own threads
            self._emit(event, line)
            if threading.get_ident() != self._scheduler:
                self._flush_events()

    def _vacate(self, name: str) -> None:
        """The step leaves `active`: its slot is free for the next start, and its time ends (its outputs are
        hashed after the next step started on the slot)."""
        active = self.active.pop(name, None)
        if active is not None:
            self.clock.give_back(active.slot, name)

    def _flush_events(self) -> None:
        flush = getattr(self._emit, "flush", None)
        if flush is not None:
            flush()

    # ---- the loop ----------------------------------------------------------------------------
    # One thread runs the schedule: shell steps are children it waits for through pidfds (as make and
    # ninja wait for theirs), so no thread hand-off sits between one step's end and the next one's start;
    # agent steps, which block for minutes, run in a small thread pool and wake the loop when done.
    def run(self, order: list[str]) -> Summary:
        summary = self.summary = Summary(run_id=self.record.run_id)
        self.clock = RunClock(self.options.jobs)
        started = self.clock.began
        all_deps = self.planner.compiled.deps
        self.produced: dict[str, str] = {}  # intent -> digest of its outputs
        doubtful = self.doubtful
        if doubtful is None:
            todo, selected = order, set(order)
        else:  # an edit in a 10,000-step graph leaves a few hundred steps to schedule
            todo = [n for n in order if n in doubtful]
            selected = doubtful
        self.position = {name: i for i, name in enumerate(todo)}
        # an aggregate names a set of steps and is no step of its own: the run neither reports nor counts it.
        # Each one is in `todo`: with no result of its own to vouch for it, it is never proved up to date.
        self.aggregates = aggregates = self.planner.compiled.aggregates
        steps = len(order) - sum(1 for name in aggregates if name in self.position)
        self.emit(run_started(self.record.run_id, steps, self.options.jobs, self.clock.started))
        if doubtful is not None:
            self._report_proven([n for n in order if n not in doubtful])
        self.dependants: dict[str, list[str]] = {n: [] for n in todo}
        self.waiting: dict[str, int] = {}
        state = self.planner.state
        graph_dependants = self.planner.compiled.dependants
        unread: list[str] = []  # proven deps only an aggregate that nothing here depends on names
        for n in todo:
            waiting = 0
            # `all` over 14,000 sinks: what they produced makes only its own outputs' digest, which no step
            # of this run reads, so their last results are not decoded and hashed for it
            top = n in aggregates and selected.isdisjoint(graph_dependants[n])
            for d in all_deps[n]:
                if d in selected:
                    self.dependants[d].append(n)
                    waiting += 1
                elif doubtful is None or d in self.produced:
                    pass
                elif top:
                    unread.append(d)
                else:  # up to date: what it last produced
                    self.produced[d] = produced_by_proven(state, d)
            self.waiting[n] = waiting
        for d in unread:
            self.produced.setdefault(d, _UNREAD)
        self.active: dict[str, _Active] = {}
        self.exited: list[tuple[_Active, StepOutcome]] = []  # shell steps that exited well, not yet completed
        self.stop = False
        self.ready = [(self.position[n], n) for n in todo if self.waiting[n] == 0]
        self._decided: dict[str, Decision] = {}  # ready steps decided while waiting (_decide_ahead)
        # ready steps whose shared-cache reads were made at once (_prefetch); None: no shared cache to read
        self._prefetched: set[str] | None = set() if self.planner.cache.reads_remote else None
        heapq.heapify(self.ready)  # earliest first
        selector = selectors.DefaultSelector()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        selector.register(wake_r, selectors.EVENT_READ, None)
        self.interrupts = Interrupts()
        self.interrupts.install()
        settled = False
        try:
            while self.ready or self.active:
                self._fill(selector, wake_w)
                self._store_deferred(force=not self.ready or self.stop)
                if self.stop and self.ready:
                    for _pos, name in sorted(self.ready):
                        self._skip(name, "not started: the run stopped after a failure")
                    self.ready.clear()
                if self.active:
                    self._decide_ahead()
                    self._wait(selector, wake_r, wake_w)
                    if self.exited:
                        # a slot is free: start the next ready step first, then hash what the exited
                        # steps wrote (their dependants become ready only then)
                        self._fill(selector, wake_w)
                        self._complete_exited()
            settled = True
        except KeyboardInterrupt:
            summary.interrupted = True
            self.interrupts.ignore()
            self._interrupt(selector)
            settled = not self.active
        except Exception as exc:
            if not is_no_space(exc):
                raise
            # a write of the runner's own (a restore, the journal) found the disk full: stopped as by an interrupt
            summary.no_space = getattr(exc, "filename", None) or str(self.layout.state_dir)
            self._interrupt(selector)
            settled = not self.active
        finally:
            self._store_deferred()
            for name, journal in self._unrecorded:  # no output is kept without its record
                remove_outputs(self.spec.root, self.spec.intents[name].outputs, split(name)[0])
                if journal:
                    self.inflight.end(journal)
            if self.created_ahead is not None:  # before anyone looks at the outputs: none for a step that did not start
                self.created_ahead.close()
            self.agents.shutdown()
            selector.close()
            os.close(wake_r)
            os.close(wake_w)
            summary.duration = time.monotonic() - started
            self.inflight.close(settled and not self._deferred)
            self.interrupts.restore()
        unrecorded = {name for name, _journal in self._unrecorded}  # in `produced`: dependants decided on them
        summary.left = [n for n in todo if (n not in self.produced or n in unrecorded) and n not in aggregates]
        return summary

    def _release(self, name: str) -> None:
        for d in self.dependants[name]:
            self.waiting[d] -= 1
            if self.waiting[d] == 0:
                heapq.heappush(self.ready, (self.position[d], d))

    def _fill(self, selector, wake_w: int) -> None:
        """Decide ready steps in order; start those that must run while there are free slots."""
        summary = self.summary
        # `noted`: a Ctrl-C that came while _handle fills the slots agent steps freed waits for the held section's end
        while self.ready and not self.stop and len(self.active) < self.options.jobs and not self.interrupts.noted:
            name = heapq.heappop(self.ready)[1]
            if self._prefetched is not None and name not in self._prefetched:
                self._prefetch(name)
            if self._deferred and not self._deferred_names.isdisjoint(self.planner.compiled.deps[name]):
                self._store_deferred()  # a step's report never comes before its dependencies' reports
            decision = self._decided.pop(name, None) or self.planner.decide(name, self.produced)
            kind = kind_of(self.spec.intents[name])
            if decision.kept is not None:  # never written over: the intent's next version before anything else
                with self.interrupts.held():
                    self.agents.keep_edit(name, decision)
            if decision.action != RUN:
                status = self._finish_skip(name, decision, kind)
                if isinstance(status, str):
                    if status is not _AGGREGATE:
                        summary.counts[status] += 1
                    self.produced[name] = outputs_digest(decision.outputs)
                    self._release(name)
                    continue
                decision = status  # its cached copy could not be restored: it runs, an agent step through its gate
            held = kind.held(self, name, decision)
            if held:
                status = FAILED if held.startswith("you declined") else BLOCKED
                summary.counts[status] += 1
                (summary.failed if status == FAILED else summary.blocked).append(name)
                self.emit(step_stopped(name, status, held))
                continue
            now, slot = time.monotonic(), self.clock.take_slot()
            self.emit(*step_started(name, decision.reasons, at=self.clock.at(now), slot=slot))
            active = _Active(name, decision, kind, now, slot)
            with self.interrupts.held():  # an interrupt here would leave a child that nobody kills
                started = self._start(active, selector, wake_w)
            self.interrupts.take()
            if isinstance(started, StepOutcome):  # it could not even start: its slot was never in `active`
                self.clock.give_back(slot)
                self._complete(active, started)

    def _prefetch(self, name: str) -> None:
        """With a shared cache to read: what deciding `name` and the next PREFETCH ready steps asks of it, asked
        at once (cache.prefetch). Their dependencies are done, so their keys are what they will be."""
        prefetched = self._prefetched
        assert prefetched is not None
        prefetched.add(name)
        names = [name] + [n for _pos, n in heapq.nsmallest(PREFETCH, self.ready) if n not in prefetched]
        prefetched.update(names)
        self.planner.cache.prefetch(lambda: decide_each(self.planner, names, self.produced, frozenset()))

    def _decide_ahead(self) -> None:
        """While every slot is busy, decide the steps that start next (the first entries of the ready
        heap), so that a child's exit is followed by the next start at once. Their dependencies are done,
        so nothing can change the decision in between."""
        if len(self.active) < self.options.jobs or self.stop:
            return
        for _position, name in self.ready[: self.options.jobs]:
            intent = self.spec.intents[name]
            kind = kind_of(intent)
            if name not in self._decided and kind.decided_ahead:
                if self._prefetched is not None and name not in self._prefetched:
                    self._prefetch(name)
                decision = self._decided[name] = self.planner.decide(name, self.produced)
                if decision.action == RUN and self.created_ahead is not None:
                    kind.ahead(self, name, intent)

    def _start(self, active: _Active, selector, wake_w: int) -> StepOutcome | None:
        """Start the step and put it where an interrupt finds it (`active`), or say why it could not start."""
        name = active.name
        started = active.kind.start(self, name, active.decision, lambda *_done: os.write(wake_w, b"."))
        if isinstance(started, StepOutcome):
            return started
        if not isinstance(started, RunningShell):  # a future: it wakes the loop when done
            active.future = started
            self.active[name] = active
            return None
        active.shell = started
        self.active[name] = active
        active.pidfd = os.pidfd_open(started.pid)
        selector.register(active.pidfd, selectors.EVENT_READ, (name, _EXITED))
        selector.register(started.output_fd, selectors.EVENT_READ, (name, _PRINTED))
        active.watching_output = True
        return None

    def _wait(self, selector, wake_r: int, wake_w: int) -> None:
        """Block until a child exits, an agent step ends, or a step's deadline passes; finish what ended.

        Shell steps that exited with 0 move from `active` to `exited`, to be completed once the freed
        slots are filled again.
        """
        self.interrupts.take()  # before blocking: one that came while storing would wait for a child
        with self._emit_lock:
            self._flush_events()  # whoever reads the events sees each one before the runner blocks
        deadlines = [a.shell.deadline for a in self.active.values() if a.shell and a.shell.deadline]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        events = selector.select(timeout)
        # what select() returned is handled whole: a signal between unregistering a step's descriptor and
        # noting it would have the interrupt's clean-up unregister (or close) it a second time
        with self.interrupts.held():
            self._handle(selector, wake_r, wake_w, events)
        self.interrupts.take()

    def _handle(self, selector, wake_r: int, wake_w: int, events: list) -> None:
        """Finish what select() said ended; then agent steps that ended and shell steps past their deadline."""
        for key, _mask in events:
            if key.data is None:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                continue
            name, what = key.data
            active = self.active.get(name)
            if active is None or active.shell is None:
                continue
            if what == _PRINTED:
                if not active.shell.pump():
                    selector.unregister(key.fd)
                    active.watching_output = False
                continue
            self._unwatch(selector, active)
            outcome = active.shell.finished(active.shell.proc.wait())
            if outcome.ok:
                self.exited.append((active, outcome))  # before leaving `active`: an interrupt finds it in one
                self._vacate(name)
            else:
                self._complete(active, outcome)  # at once: a failure may stop the run before the next start
        now = time.monotonic()
        verified: list[tuple[_Active, StepOutcome]] = []  # agent steps whose verified change waits to be applied
        for active in list(self.active.values()):
            if active.future is not None and active.future.done():
                self._ended(active, verified)
            elif active.shell and active.shell.deadline and now >= active.shell.deadline:
                self._unwatch(selector, active)
                self._complete(active, active.shell.timed_out())
        # the slots they freed are filled first, then each change is applied: an apply is ~10 ms of this thread,
        # and at -j 16 sixteen steps end together (their model calls went out together), so the last one's slot
        # would wait for fifteen applies before it started the next step. Agent steps ending meanwhile join in.
        while verified:
            self._fill(selector, wake_w)
            self._complete(*verified.pop(0))
            for active in list(self.active.values()):
                if active.future is not None and active.future.done():
                    self._ended(active, verified)
        if self.cluster is not None and self.cluster.lost:  # the cluster's scheduler went away: nothing more starts
            self.stop = True

    def _ended(self, active: _Active, verified: list[tuple[_Active, StepOutcome]]) -> None:
        """A step run as a future ended: a verified change joins `verified` (its slot is free now; applied after
        the next start), anything else is completed at once (a failure may stop the run before the next start)."""
        assert active.future is not None
        outcome = active.future.result()
        if outcome.ok and outcome.change is not None:
            self._vacate(active.name)
            verified.append((active, outcome))
            self.agents.handed()
        else:
            self._complete(active, outcome)

    def _complete_exited(self) -> None:
        while self.exited:
            self._complete(*self.exited.pop(0))

    @staticmethod
    def _unwatch(selector, active: _Active) -> None:
        if active.pidfd is not None:
            selector.unregister(active.pidfd)
            os.close(active.pidfd)
            active.pidfd = None
        if active.watching_output and active.shell is not None:
            selector.unregister(active.shell.output_fd)  # closed by the step as it finishes
            active.watching_output = False

    def _complete(self, active: _Active, outcome: StepOutcome) -> None:
        """A step ended: judge it, tell the user, and let its dependants go as early as possible."""
        name, summary = active.name, self.summary
        self._vacate(name)
        outputs: dict = {}
        datas: dict = {}
        if outcome.ok and outcome.change is None:
            if outcome.produced is None:
                outputs, datas, problem = hash_outputs(self.planner, self.folders, name)
            else:  # a hermetic step: its outputs are in the remote cache, not yet here
                outputs, datas, problem = restore_produced(self.planner, name, outcome.produced)
            if problem:
                outcome = StepOutcome(ok=False, exit_code=0, error=problem)
        journal = self.journals.pop(name, None)
        if not outcome.ok and journal:
            # never leave a half-written output behind (a sub-project's step's: only inside its folder)
            remove_outputs(self.spec.root, self.spec.intents[name].outputs, split(name)[0])
            self.inflight.end(journal)
        duration = self.clock.end(name) - active.started
        if outcome.ok and outcome.change is None:
            # a shell step: its dependants may start now; its record is stored, and only then reported
            # as ran, once the next children are running
            summary.counts[RAN] += 1
            self.produced[name] = outputs_digest(outputs)
            self._release(name)
            moved = changed_inputs(self.planner, name, active.decision) if outcome.produced is None else None
            if moved:  # its outputs stand, but were made from bytes its key does not name: no record is stored
                if journal:
                    self.inflight.end(journal)
                self._report_run(name, active.decision, outcome, duration, outputs, moved)
                return
            if not self._deferred:
                self._deferred_since = time.monotonic()
            self._deferred.append((name, active.decision, outcome, outputs, datas, duration, journal))
            self._deferred_names.add(name)
            return
        status, outputs = self._report_run(name, active.decision, outcome, duration, outputs)
        summary.counts[status] += 1
        if "usage" in outcome.details:
            summary.spent(outcome.details)
        if status == BLOCKED:
            summary.blocked.append(name)
        elif status == FAILED:
            summary.failed.append(name)
            if outcome.setup and summary.setup_error is None:
                summary.setup_error = f"agent step {name}: {outcome.error}"
            if not self.options.keep_going or outcome.setup:  # a broken set-up fails every agent step alike
                self.stop = True
            self._skip_dependants(name)
        else:
            self.produced[name] = outputs_digest(outputs)
            self._release(name)

    def _store_deferred(self, force: bool = True) -> None:
        """Write the blobs, record and state of each finished shell step, then report it as ran.

        Batched in one database transaction per few dozen steps (a commit per step costs more than the
        step's own process); a step is reported as ran only once its record is stored.
        """
        if not self._deferred:
            return
        if not force and len(self._deferred) < 32 and time.monotonic() - self._deferred_since < 0.25:
            return
        batch = list(self._deferred)
        with self.interrupts.held():  # sqlite left inside a cut transaction refuses the next one
            try:
                self._store_batch(batch)
            except Exception as exc:
                if not is_no_space(exc):
                    raise
                self._unstored(batch)

    def _unstored(self, batch: list[tuple]) -> None:
        """A full disk refused the batch's records: each step fails as if its command had (its outputs go, once
        no step that started on them runs), and nothing more starts: every write would meet the same disk."""
        error, self.stop = words(os.path.join(self.planner.cache.directory, "cache.db"), self.spec.root), True
        for name, decision, _outcome, _outputs, _datas, duration, journal in batch:
            self._unrecorded.append((name, journal))
            self._report_run(name, decision, StepOutcome(ok=False, error=error), duration, {})
            self.summary.counts[RAN] -= 1
            self.summary.counts[FAILED] += 1
            self.summary.failed.append(name)
            self._deferred_names.discard(name)
        del self._deferred[: len(batch)]

    def _store_batch(self, batch: list[tuple]) -> None:
        blobs: dict[str, bytes] = {}
        records = []
        for name, decision, _outcome, outputs, datas, duration, _journal in batch:
            blobs.update(datas)
            records.append(
                StepRecord(
                    intent=name,
                    key=decision.key,
                    outputs=outputs,
                    created=time.time(),
                    ingredients=self.planner.ingredients(name, decision),
                    duration=duration,
                    run_id=self.record.run_id,
                )
            )
        self.planner.cache.put_many(blobs, records)
        # committed: only now may the steps be reported as ran (an interrupt before this point leaves
        # them on the list, and the final store of the run tries again)
        self.inflight.end(*(journal for *_step, journal in batch if journal))
        for name, decision, outcome, outputs, _datas, duration, _journal in batch:
            self.planner.keep_result(name, decision.key, outputs, decision.inputs)
            self._report_run(name, decision, outcome, duration, outputs)
            self._deferred_names.discard(name)
        del self._deferred[: len(batch)]
        self._deferred_since = time.monotonic()

    # ---- one step -------------------------------------------------------------------------------
    def context(self, name: str) -> StepContext:
        intent = self.spec.intents[name]

        def on_process(pid: int) -> None:
            self.journals[name] = self.inflight.start(name, pid, list(intent.outputs))

        if any("$" in value or value.startswith(SECRET_STAND_IN) for _key, value in intent.env):
            # $NAME and $$ expanded, as the key holds them; a kept-out secret read back, hidden from now on
            intent = intent._replace(env=brought_back(self.spec, name, self.planner.env(name), self.mask))
        return StepContext(
            spec=self.spec,
            intent=intent,
            log_path=self.record.log_path(name),
            timeout=intent.timeout or self.options.timeout,
            cancelled=self.cancelled,
            on_process=on_process,
            journal=self.inflight,
            environ=self.environ,
            created_ahead=self.created_ahead,
            mask=self.mask,
            on_output=self.options.on_output,
        )

    def _report_run(
        self, name: str, decision: Decision, outcome: StepOutcome, duration: float, outputs: dict, moved=None
    ) -> tuple[str, dict]:
        """Report a step that ran; `moved`: a shell step's inputs that changed while it ran (inputs_held.py)."""
        duration = round(duration, 3)
        # the keys between its duration and its status, as they apply; first when it left its slot (its report may
        # come later: _store_deferred)
        more: dict = {"at": self.clock.ended_at(name)}
        reasons = decision.reasons
        if outcome.worker:
            more["worker"] = outcome.worker
        if outcome.log:
            more["log"] = outcome.log
        if name in self.planner.compiled.gates:  # what its candidate patterns are compared on (shadow.observe)
            observed = kind_of(self.spec.intents[name]).observed(self.record.dir, name, outcome)
            if observed is not None:
                self.summary.observed.append((name, decision.slice_key, observed, outcome.ok))
        if outcome.details:
            more["agent"] = {k: v for k, v in outcome.details.items() if k != "drift"}
            if "usage" in outcome.details:  # what the step spent, as run_finished gives it for the run
                more["attempts"] = outcome.details["attempts"]
                more["usage"] = outcome.details["usage"]
        drift = outcome.details.get("drift")
        if drift:  # flagged whatever becomes of the change: applied, waiting for approval, or rejected
            more["drift"] = drift
            self.summary.drift.append(name)
        if outcome.ok and outcome.change is not None:  # verified on copies of its inputs: are they as its key says?
            moved = None if self.hermetic else changed_inputs(self.planner, name, decision)
        if moved:
            more["inputs_changed"] = list(moved)
            reasons = [*reasons, not_cached_reason(moved)]
            self.summary.uncached.append(name)
        if outcome.ok and outcome.change is not None:
            status, outputs, message = self.agents.finish(name, decision, outcome.change, drift, outcome.details, moved)
            if status != RAN:
                self.emit(step_stopped(name, status, message, duration=duration, **more))
                return status, {}
            more["outputs"] = outputs  # what `runner replay` compares a re-execution against
        if outcome.ok:
            self.emit(*step_ran(name, duration, reasons, **more))
            return RAN, outputs
        if outcome.blocked:
            self.emit(step_stopped(name, BLOCKED, outcome.blocked, duration=duration, **more))
            return BLOCKED, {}
        self.emit(
            step_finished(
                name,
                duration=duration,
                **more,
                status=FAILED,
                reasons=decision.reasons,  # why it ran: every step_finished says why (events.json)
                exit_code=outcome.exit_code,
                error=outcome.error,
                timed_out=outcome.timed_out,
                interrupted=outcome.interrupted,
                log_tail=tail(outcome.log) if outcome.log else None,
                **self._explain(name, outcome.log),
            )
        )
        return FAILED, {}

    def _explain(self, name: str, log: str | None) -> dict:
        """A failed step's findings and excerpt (excerpt.py), and its reports' reading even with no log."""
        from .step_log import explain_step

        return explain_step(self.spec, self.spec.intents[name], log, self.record.dir.parent, self.record.run_id)

    def _report_proven(self, names: list[str]) -> None:
        """Report the steps known to be up to date as cached from the state index alone, before anything
        starts: a 10,000-step graph with one edited file is mostly these. Each has a last good result and none
        depends on a step still to decide (freshness.doubtful_steps), so no report precedes a dependency's."""
        self.summary.counts[CACHED] += len(names)
        with self._emit_lock:
            self._emit.cached(names, cached_text("\0".join(names)))

    def _finish_skip(self, name: str, decision: Decision, kind: StepKind) -> str | Decision:
        """Report a step that need not run, restoring its outputs first; or, when a cached copy turned out gone or
        damaged (its digest does not match) or its way leads out of the project, the decision to run it after all."""
        status = CACHED
        if decision.restore:
            before = self.agents.before_restore(self.folders, decision) if kind.versioned else None
            for rel, digest in decision.restore.items():
                try:
                    if not self.planner.cache.restore(digest, self.spec.root, rel, split(name)[0]):
                        return damaged_copy(decision)
                except Refused as exc:  # a link met on the way: nothing written through it
                    return damaged_copy(decision, f"output {rel} not restored: it {exc}")
                self.planner.stat.written(self.spec.root, rel, name)
            status = RESTORED
            if before is not None:  # bytes the cache brought: the intent's next version when none of its held them
                with self.interrupts.held():
                    self.agents.keep_restored(name, decision, before)
        if decision.kept is not None:
            status = KEPT
        if not kind.reported:
            return _AGGREGATE
        if decision.key:
            self.planner.keep_result(name, decision.key, decision.outputs, decision.inputs)
        more: dict = {}
        if decision.kept is not None:
            more["version"] = decision.kept.number
        if decision.key and self.planner.cache.from_remote(decision.key):
            more["remote"] = True  # the shared cache served it: the step line says so
        self.emit(step_finished(name, status=status, reasons=decision.reasons, **more))
        return status

    def _skip(self, name: str, why: str) -> None:
        if not kind_of(self.spec.intents[name]).reported:
            return
        self.summary.counts[SKIPPED] += 1
        self.emit(step_skipped(name, why))

    def _skip_dependants(self, failed: str) -> None:
        seen, stack = set(), list(self.dependants[failed])
        while stack:
            name = stack.pop()
            if name in seen or self.waiting.get(name) == -1:  # already skipped for another failed dependency
                continue
            seen.add(name)
            self.waiting[name] = -1  # never becomes ready
            self._skip(name, f"dependency {failed} failed")
            stack.extend(self.dependants[name])

    def _interrupt(self, selector) -> None:
        """Stop every child group and agent step, wait for them, drop their partial outputs."""
        self.cancelled.set()
        # a cache write the interrupt cut short may have left sqlite inside a transaction nobody will end:
        # closing the connection rolls it back, and the next write opens a fresh one
        self.planner.cache.close()
        self._complete_exited()  # they finished before the interrupt: kept
        shells = [(a, a.shell) for a in self.active.values() if a.shell is not None]
        # every group at once, each leader not yet reaped (so its group id is still the step's); a step
        # whose leader was reaped just before the interrupt had ended by itself, as one that ended earlier
        kill_groups([running.pid for _a, running in shells if running.proc.returncode is None])
        for a, running in shells:
            code = running.proc.wait()
            self._unwatch(selector, a)
            outcome = running.finished(code)
            outcome.interrupted = not outcome.ok  # one that finished just before the interrupt is kept
            self._complete(a, outcome)
        if self.cluster is not None:  # every step on the cluster ends now, its remote command killed
            self.cluster.cancel_all()
        for a, future in [(a, a.future) for a in self.active.values() if a.future is not None]:
            outcome = future.result()  # the agent step stops its worker on `cancelled`
            outcome.interrupted = outcome.interrupted or not outcome.ok
            self._complete(a, outcome)
