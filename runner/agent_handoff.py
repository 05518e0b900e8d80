"""What the scheduler does around an agent step: the gate before a model call, the attempts in a pool thread, the
run's budget, and applying a verified change. The agent machinery is imported by the first agent step only."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .names import stored
from .plan import RUN, Decision, Planner
from .record import RunRecord
from .steps import StepContext, StepOutcome
from .workspace import Layout

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .apply import Retirer
    from .approve import ApplyContext
    from .attempt import Workspaces
    from .policy import RunBudget
    from .steps.agent import AgentRun


class AgentHandoff:
    """The agent steps of one run. Attempts run in a thread pool (made on the first agent step, so a spec of
    shell steps never imports concurrent.futures; the seam for a remote pool later); asking, applying and
    recording stay on the scheduler's thread."""

    def __init__(self, planner: Planner, layout: Layout, record: RunRecord, options, emit, context):
        self.planner = planner
        self.spec = planner.spec
        self.layout = layout
        self.record = record
        self.options = options
        self.emit = emit
        self.context = context  # name -> StepContext, with the scheduler's journal of started processes
        self.phase_confirmed = False  # confirm-phase: one question before the first agent step of the run
        self._budget: RunBudget | None = None  # the run's purse for agent steps, made by the first one
        self._budget_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._warming: threading.Thread | None = None
        # a Dask executor (runner/executors/dask.py): each attempt one task on a worker; None: attempts run here
        executor = getattr(options, "executor", None)
        self._cluster = executor if executor is not None and executor.on_cluster else None
        self._warm = threading.Event()  # set once the worker can send its first call
        self._retirer: Retirer | None = None  # made by the first apply
        self._workspaces: Workspaces | None = None  # made by the first agent step
        # verified changes the scheduler was handed, and how many of them it has applied: it starts the next steps
        # before it applies (execute.py, _handle), and a step's workspace waits for the changes verified before it
        # started, so that it holds them (as a step started after their apply would)
        self._applies = threading.Condition()
        self._handed = 0
        self._applied = 0

    def held(self, name: str, decision: Decision) -> str | None:
        """Why an agent step that must run does not start now (a change waiting for approval, a question
        declined or not askable here), or None."""
        if decision.action != RUN:
            return None
        return self._pending(name, decision) or self._precall_gate(name)

    def _pending(self, name: str, decision: Decision) -> str | None:
        """An agent step whose verified change already waits for approval is not asked again."""
        if not decision.key:
            return None
        from .approve import pending_for

        if pending_for(self.layout.state_dir, name, decision.key):
            return (
                f"a verified change waits for approval: `runner approve {name}` applies it "
                f"(no model call), `runner approve {name} --reject` drops it"
            )
        return None

    def _precall_gate(self, name: str) -> str | None:
        """Ask (on a terminal) or block (without one) before an agent step calls a model, as its policy says."""
        from .approve import precall_question, take_grant

        intent = self.spec.intents[name]
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

    def submit(self, name: str, decision: Decision, on_done) -> Future:
        """Start the step's attempts in the pool; `on_done(future)` wakes the scheduler."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            from .attempt import Workspaces

            self._pool = ThreadPoolExecutor(max_workers=max(1, self.options.jobs), thread_name_prefix="step")
            self._workspaces = Workspaces()
            if self._cluster is None:
                self._warming = threading.Thread(target=self._warm_worker, name="warm-worker", daemon=True)
                self._warming.start()
            else:  # on a cluster the worker is called in the Dask workers: nothing to load here first
                self._warm.set()
        with self._applies:
            handed = self._handed
        future = self._pool.submit(self._attempts, name, decision, handed)
        future.add_done_callback(on_done)
        return future

    def handed(self) -> None:
        """The scheduler took a verified change, to apply it once it has started the next steps (finish)."""
        with self._applies:
            self._handed += 1

    def _settled(self, handed: int) -> None:
        """Wait until the first `handed` verified changes are applied: a workspace made now holds them."""
        with self._applies:
            self._applies.wait_for(lambda: self._applied >= handed)

    def _warm_worker(self) -> None:
        """Let the worker load what its first call needs (the openai worker's HTTP client, its answer's regexes) at
        the first agent step. The attempts wait until the client is in (_attempts): its import is the first call's
        critical path, and sixteen attempts making their workspaces at once (git processes, hashing) would
        take most of the interpreter's time from it (the first call of 16 at -j 16 went 2.7-4.3 s after the
        start); a worker that answers with files makes its workspace while the model answers, off that path."""
        from .workers import get_worker

        try:
            config = self.planner.worker_config
            warm = getattr(get_worker(config), "warm", None)
            if warm is not None:
                warm(config, self._warm.set)
        except Exception:  # only a head start: the first call loads the same things and reports what fails
            pass
        finally:
            self._warm.set()

    def _attempts(self, name: str, decision: Decision, handed: int) -> StepOutcome:
        """In a pool thread: the attempts; the scheduler thread then asks, applies and records."""
        self._warm.wait()
        from .steps.agent import AgentAttempts

        ctx: StepContext = self.context(name)
        ctx.extra["agent"] = self._agent_run(name, decision, handed)
        return AgentAttempts().run(ctx)

    def _agent_run(self, name: str, decision: Decision, handed: int) -> AgentRun:
        from .steps.agent import AgentRun

        assert decision.key is not None  # an agent step starts once its dependencies ran: its key is known
        workspaces = self._workspaces
        assert workspaces is not None  # made by submit()
        return AgentRun(
            root=Path(self.spec.root),
            attempts_dir=self.record.dir / "attempts",
            worker_config=self.planner.worker_config_of(name),
            step_key=decision.key,
            slice_key=decision.slice_key,
            replay_key=self.planner.replay_key(name, decision),
            budget=self._run_budget(),
            input_files=sorted(p for p, d in decision.inputs.items() if d is not None),
            record=self.options.record,
            halt_on=self.options.halt_on,
            emit=self.emit,
            improve=(self.options.improve.get(name) or {}).get("prompt"),
            cluster=self._cluster,
            inputs=decision.inputs,
            home=workspaces.home,
            remove=workspaces.remove,
            settled=lambda: self._settled(handed),
        )

    def _run_budget(self) -> RunBudget:
        """The default policy's run_budget: one purse for every agent step of the run, made by the first
        (agent steps ask from their pool threads, hence the lock)."""
        with self._budget_lock:
            if self._budget is None:
                from .policy import RunBudget

                b = self.spec.policies["default"].run_budget
                self._budget = RunBudget(tokens=b.tokens, seconds=b.seconds, attempts=b.attempts)
            return self._budget

    def finish(
        self,
        name: str,
        decision: Decision,
        change,
        drift: list | None = None,
        details: dict | None = None,
        moved: dict[str, str] | None = None,
    ) -> tuple[str, dict, str | None]:
        """Apply a verified change as the step's policy says: (status, outputs, message). `moved`: inputs that
        changed while the step ran (inputs_held.py). Its change was verified in copies made after its key, from
        bytes that key may not name and the project may no longer hold: it is neither applied, nor saved for
        approval, nor recorded (a version of the team's own files nobody verified against them); the step fails,
        and the next run asks again."""
        from .approve import FAILED, finish

        try:
            about = self._about(name, details or {})
            if moved:
                from .inputs_held import not_applied_reason

                diff = Path(about["transcript"]).with_name("diff.patch")  # the winning attempt's, in the run's record
                return FAILED, {}, not_applied_reason(moved, os.path.relpath(diff, self.spec.root))
            from .edits import edited_while_running

            if edited := edited_while_running(self.planner, name, change.files):  # never written over: kept next run
                from .edits import not_applied_reason as edited_reason

                diff = Path(about["transcript"]).with_name("diff.patch")
                return FAILED, {}, edited_reason(edited, os.path.relpath(diff, self.spec.root))
            return finish(self._apply_context(), self.spec.intents[name], decision, change, drift, about)
        finally:
            with self._applies:
                self._applied += 1
                self._applies.notify_all()

    def _about(self, name: str, details: dict) -> dict:
        """What the change's version records beside its files: how it was made, what it cost, where the winning
        attempt's transcript is."""
        chosen = details.get("chosen", 1)
        tries = next((c["attempts"] for c in details.get("candidates", ()) if c["candidate"] == chosen), 1)
        about = {
            "kind": "make",
            "tokens": details.get("tokens", 0),
            "attempts": details.get("attempts", 0),
            "seconds": details.get("seconds", 0.0),  # the step's time, for its record (`runner explain`)
            "transcript": str(self.record.dir / "attempts" / stored(name) / f"c{chosen}-a{tries}" / "transcript.jsonl"),
        }
        improving = self.options.improve.get(name)
        if improving:
            about |= {"kind": "improve", "feedback": improving["feedback"], "improves": improving["version"]}
        return about

    def _apply_context(self) -> ApplyContext:
        from .approve import ApplyContext

        return ApplyContext(
            planner=self.planner,
            state_dir=self.layout.state_dir,
            run_id=self.record.run_id,
            halt_on=self.options.halt_on,
            ask=self.options.ask,
            retirer=self._retirer_made(),
        )

    def _retirer_made(self) -> Retirer:
        if self._retirer is None:
            from .apply import Retirer

            self._retirer = Retirer()
        return self._retirer

    def keep_edit(self, name: str, decision: Decision) -> None:
        """A person's edit to the step's outputs, recorded as its next version before anything else happens to it
        (runner/edits.py); journaled as the run's applies are, their order kept by the same retirer."""
        from .edits import keep

        keep(self.planner, name, decision, self.record.run_id, self._retirer_made())

    @staticmethod
    def before_restore(folders, decision: Decision) -> dict[str, bytes | None]:
        """What each output the cache is about to restore holds now (None: nothing), read without following a
        link out of the project (nor out of its sub-project's folder): the base of the version the restore may
        become."""
        from .confine import Refused
        from .names import split

        folder = split(decision.intent)[0]
        before: dict[str, bytes | None] = {}
        for rel in decision.restore:
            try:
                before[rel] = folders.read(rel, folder)[1]
            except (FileNotFoundError, IsADirectoryError, Refused):
                before[rel] = None
        return before

    def keep_restored(self, name: str, decision: Decision, before: dict[str, bytes | None]) -> None:
        """Outputs restored from the cache, recorded as the intent's next version when no version of its held
        them (runner/edits.py); journaled as the run's applies are."""
        from .edits import keep_restored

        keep_restored(self.planner, name, decision, before, self.record.run_id, self._retirer_made())

    def shutdown(self) -> None:
        with self._applies:  # a change handed but never applied (the run failed on its way) holds no step back
            self._applied = self._handed
            self._applies.notify_all()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._workspaces is not None:  # no attempt workspace outlives the run
            self._workspaces.close()
        if self._retirer is not None:  # every applied file synced and its journal gone before the run's end
            self._retirer.close()
            self._retirer = None
        if self._warming is not None:
            self._warming.join()  # no import may still run while the interpreter exits
