"""Agent steps' work (the kind the scheduler sees is steps/agent_kind.py): ask a worker for a change in an isolated
copy, check it against the policy, verify it with the adapter's commands, retry with feedback; with candidates = N,
N attempts side by side and the best wins."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import process
from ..attempt import (
    Change,
    find_change,
    make_workspace,
    new_home,
    remove_workspace,
    revert,
    snapshot,
    undo_side_effects,
)
from ..drift import find_drift
from ..errors import UserError
from ..events import attempt_finished, attempt_started
from ..globs import expand
from ..names import split, stored
from ..policy import RunBudget, Spent, check_change, only_outside_scope, step_budget_exhausted, writable_scope
from ..prompts import choose, render
from ..redact import Mask
from ..spec import Intent, Policy
from .base import StepContext, StepOutcome
from .shell import adapter_commands
from .verify_feedback import findings_text, reports_read

if TYPE_CHECKING:
    from ..workers.base import WorkerConfig, WorkerRequest, WorkerResult

BACKOFF = (1.0, 4.0, 10.0)
VERIFY_TIMEOUT = 1800.0
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")  # what a step reports it spent
# attempt kinds that end a candidate at once: a retry with the same set-up, input or policy cannot do better
FINAL_KINDS = ("permanent", "config", "setup", "policy", "interrupted")


@dataclass
class AgentRun:
    """What the scheduler hands an agent step beyond its intent."""

    root: Path
    attempts_dir: Path  # under the run's record: prompts, transcripts, diffs, verify logs
    worker_config: WorkerConfig
    step_key: str
    replay_key: str  # the key without the worker: what recordings are filed under
    input_files: list[str]
    budget: RunBudget
    record: bool = False
    halt_on: frozenset = frozenset()
    emit: Callable[[dict], object] | None = None
    ask: Callable[[str], bool] | None = None  # on a terminal, else None
    slice_key: str | None = None  # the key without canary patterns: which canaries read its verify output
    improve: str | None = None  # `runner improve`: the feedback and the previous version, added to every prompt
    # where attempts run when not here: an executor with `attempt(job, cancelled) -> AttemptDone` (a Dask cluster,
    # runner/executors/dask.py); None: in this process, each candidate keeping its workspace between attempts
    cluster: Any = None
    # the step's declared inputs as the plan hashed them (path -> digest, None: missing): what a hermetic
    # cluster carries to its workers (runner/executors/hermetic.py)
    inputs: dict[str, str | None] = field(default_factory=dict)
    # where an attempt makes its workspace, and what is done with it once spent: the run's (attempt.Workspaces)
    home: Callable[[Path, str], Path] = new_home
    remove: Callable[[Path, Path], None] = remove_workspace
    # waits until the changes verified before the step started are applied, so that its workspace holds them
    settled: Callable[[], None] | None = None


@dataclass
class Attempt:
    candidate: int
    number: int
    ok: bool = False
    change: Change | None = None
    error: str | None = None
    kind: str | None = None  # transient | permanent | timeout | config | setup | policy | logic | budget
    retry: bool = False  # a policy failure the next attempt can mend (it changed nothing the policy lets it write)
    tokens: int = 0
    seconds: float = 0.0
    workspace: Path | None = None
    summary: str = ""  # the worker's final message: what the agent says it did (read for drift)
    worker: str | None = None  # the Dask worker that ran it; None: this machine


@dataclass
class CandidateResult:
    candidate: int
    attempts: list[Attempt] = field(default_factory=list)
    spent: Spent = field(default_factory=Spent)
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))  # tokens, by kind
    prompt: str | None = None  # the canary variant of its template it used (prompt:NAME/VARIANT), if one

    @property
    def final(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def score(self) -> tuple:
        """Verified first, then fewer attempts, fewer tokens, less time (lower sorts first)."""
        f = self.final
        return (not (f and f.ok), len(self.attempts), self.spent.tokens, self.spent.seconds)


class AgentAttempts:
    """An agent step's candidates and their attempts, in a pool thread (runner/agent_handoff.py)."""

    def run(self, ctx: StepContext) -> StepOutcome:
        run: AgentRun = ctx.extra["agent"]
        intent = ctx.intent
        policy = ctx.spec.policies[intent.policy]
        if policy.run_shell == "never" and intent.verify:
            return StepOutcome(
                ok=False,
                error=f"policy '{policy.name}' forbids running the verify commands "
                f"(run_shell = \"never\"); drop 'verify' or allow run_shell",
            )
        began = time.monotonic()
        n = intent.candidates
        results = [CandidateResult(candidate=i + 1) for i in range(n)]
        threads = [threading.Thread(target=self._candidate, args=(ctx, run, r), daemon=True) for r in results]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        best = min(results, key=CandidateResult.score)
        details = {
            "candidates": [
                {
                    "candidate": r.candidate,
                    "attempts": len(r.attempts),
                    "verified": bool(r.final and r.final.ok),
                    "tokens": r.spent.tokens,
                    "seconds": round(r.spent.seconds, 2),
                }
                for r in results
            ],
            "chosen": best.candidate,
            "tokens": sum(r.spent.tokens for r in results),
            # attempts that reached the worker (one stopped by a budget before it started is not counted)
            "attempts": sum(r.spent.attempts for r in results),
            "usage": {k: sum(r.usage[k] for r in results) for k in USAGE_KEYS},
            "seconds": round(time.monotonic() - began, 3),  # the step's own time, its verify commands' included
        }
        if run.worker_config.kind == "replay":  # recorded answers: their tokens were spent once, when recorded
            details["replayed"] = True
        final = best.final
        worker = next((a.worker for a in reversed(best.attempts) if a.worker), None)  # on a Dask cluster
        for home in {a.workspace for r in results for a in r.attempts if a.workspace}:
            run.remove(home, run.root)  # the winner is applied from memory; no copy is kept
        if final is None:
            return StepOutcome(ok=False, error="no attempt was made", details=details)
        if final.ok:
            assert final.change is not None
            drift = find_drift(intent, list(final.change.files), final.summary)
            if drift:  # a flag, not a refusal: the change passed its policy and its verification
                details["drift"] = drift
            return StepOutcome(ok=True, change=final.change, details=details, worker=worker)
        setup = next((a for r in results for a in r.attempts if a.kind == "setup"), None)
        if setup is not None:  # the worker cannot reach its model: the run stops (exit 2)
            return StepOutcome(ok=False, error=setup.error, setup=True, details=details, worker=worker)
        if final.kind == "budget":
            return StepOutcome(ok=False, blocked=final.error, error=final.error, details=details, worker=worker)
        if final.kind == "interrupted":
            return StepOutcome(ok=False, interrupted=True, error="interrupted", details=details, worker=worker)
        log = _verify_log(run, intent, final)
        error = final.error
        if log is not None and error:  # the failure block reads the log as a shell step's: its findings once
            error = error.split("\n", 1)[0]
        return StepOutcome(ok=False, error=error, details=details, worker=worker, log=log)

    # ---- one candidate: attempts with feedback ---------------------------------------------
    def _candidate(self, ctx: StepContext, run: AgentRun, result: CandidateResult) -> None:
        from ..workers import get_worker

        intent = ctx.intent
        policy = ctx.spec.policies[intent.policy]
        worker = get_worker(run.worker_config)
        # a canary variant of the template where the step falls in its slice (its key holds that variant)
        template, variant = choose(run.root, ctx.intent.prompt, _template(ctx), run.slice_key)
        result.prompt = variant.ref if variant else None
        feedback = None
        workspace = None  # shared by the candidate's attempts: a retry fixes what the last one left
        max_attempts = intent.max_attempts
        if policy.step_budget.attempts is not None:
            max_attempts = min(max_attempts, policy.step_budget.attempts)
        for number in range(1, max_attempts + 1):
            attempt = Attempt(candidate=result.candidate, number=number)
            result.attempts.append(attempt)
            stop = step_budget_exhausted(policy, result.spent) or run.budget.exhausted()
            if stop:
                attempt.kind, attempt.error = "budget", f"stopped before attempt {number}: {stop}"
                return
            if ctx.cancelled.is_set():
                attempt.kind, attempt.error = "interrupted", "interrupted"
                return
            workspace = self._attempt(ctx, run, worker, template, attempt, feedback, result, workspace)
            if attempt.ok or (attempt.kind in FINAL_KINDS and not attempt.retry):
                return
            feedback = attempt.error
            if attempt.kind in ("transient", "timeout") and number < max_attempts:
                ctx.cancelled.wait(BACKOFF[min(number - 1, len(BACKOFF) - 1)])

    def _attempt(self, ctx, run: AgentRun, worker, template, attempt: Attempt, feedback, result, workspace):
        """One attempt, here or on a Dask worker (`run.cluster`), and its artefacts under the run's record;
        returns what the candidate's next attempt starts from: here, the workspace (path, digests before,
        symlinks before); on the cluster, the change this attempt left (the next one may land on another
        worker, which lays it over a fresh workspace)."""
        intent = ctx.intent
        # numbered across candidates so each attempt has its own recording
        index = (attempt.candidate - 1) * intent.max_attempts + attempt.number
        folder = run.attempts_dir / stored(intent.name) / f"c{attempt.candidate}-a{attempt.number}"
        folder.mkdir(parents=True, exist_ok=True)
        # a one-call worker (openai) reads no file and runs no command: its prompt shows the files and says so
        prompt = render(template, intent, run.root, run.input_files, feedback, run.worker_config.kind == "openai")
        if run.improve:
            prompt += run.improve
        mask = ctx.mask  # every artefact of the attempt is masked as it is written; the change itself is not
        (folder / "prompt.md").write_text(mask.text(prompt))
        _emit(run, attempt_started(intent.name, attempt.candidate, attempt.number, result.prompt))
        began = time.monotonic()
        job = AttemptJob(
            root=run.root,
            intent=intent,
            policy=ctx.spec.policies[intent.policy],
            worker=_config_fields(run.worker_config),
            prompt=prompt,
            replay_key=run.replay_key,
            index=index,
            verify=_verify_commands(ctx),
            slice_key=run.slice_key,
            mask=mask,
        )
        if run.cluster is not None:
            job.env = dict(os.environ)  # what the worker and the verify commands need, as a shell step's env
            job.carried = workspace
            done = run.cluster.attempt(job, ctx, run.inputs)
            if done.verify_log is not None:  # masked on the worker, as the feedback made from it was
                (folder / "verify.log").write_bytes(done.verify_log)
            workspace = done.left
        else:
            home = run.home(run.root, intent.name) if workspace is None else workspace[0]
            attempt.workspace = home
            log = folder / "verify.log"
            done, workspace = attempt_in(job, home, workspace, ctx.cancelled, ctx.journal, log, worker, run.settled)
        answer, change = done.answer, done.change
        attempt.ok, attempt.kind, attempt.error, attempt.retry = done.ok, done.kind, done.error, done.retry
        attempt.change = change if done.ok else None
        attempt.worker = done.worker
        # the attempt's time is its whole: the model's answer, the change found and its verify commands run
        attempt.tokens, attempt.seconds = answer.usage.total, time.monotonic() - began
        attempt.summary = answer.final_message or ""
        if done.called:  # an attempt stopped before its call (a cluster gone) spent nothing
            result.spent.tokens += answer.usage.total
            result.spent.seconds += answer.duration_s
            result.spent.attempts += 1
            for k, v in answer.usage.to_json().items():
                result.usage[k] += v
            run.budget.charge(answer.usage.total, answer.duration_s)
        (folder / "transcript.jsonl").write_text(mask.text(answer.transcript))
        if run.record and done.called:
            from ..workers.replay import record_exchange, resolve_replays_dir

            files = {p: (b.decode("utf-8", "replace") if b is not None else None) for p, b in change.files.items()}
            request = _request(job, run.root, None, None)
            record_exchange(resolve_replays_dir(run.worker_config, run.root), request, answer, files)
        (folder / "diff.patch").write_text(mask.text(change.diff(run.root)))
        (folder / "result.json").write_text(
            mask.text(
                json.dumps(
                    {
                        "ok": attempt.ok,
                        "kind": attempt.kind,
                        "error": attempt.error,
                        "tokens": attempt.tokens,
                        "seconds": round(attempt.seconds, 3),
                        "worker": answer.to_json() | {"files": None},
                        **({"dask_worker": done.worker} if done.worker else {}),
                    },
                    indent=2,
                )
            )
        )
        a = attempt
        _emit(
            run,
            attempt_finished(
                intent.name, a.candidate, a.number, a.ok, a.kind, a.error, a.tokens, a.seconds, done.worker
            ),
        )
        return workspace


# ---- one attempt, wherever it runs ------------------------------------------------------------------
@dataclass
class AttemptJob:
    """One attempt as plain data: all that `attempt_in` needs, here or in a Dask task on another machine that
    sees the project at the same path (so it pickles: no events, no journal, no mappingproxy)."""

    root: Path
    intent: Intent
    policy: Policy
    worker: dict  # the WorkerConfig's fields, `extra` a plain dict (WorkerConfig keeps a mappingproxy)
    prompt: str
    replay_key: str
    index: int  # the attempt's number across candidates: its recording
    # (name, shell line, parse families, JUnit report globs), or why not
    verify: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] | str
    slice_key: str | None
    mask: Mask
    env: dict[str, str] | None = None  # None: this process's environment; the runner's, on a worker
    carried: Change | None = None  # on a worker: the candidate's previous attempt's change, laid over a new copy
    # a hermetic worker (runner/executors/hermetic.py): `root` is a scratch folder holding only the step's
    # manifest (a plain copy is made of it, never a git worktree), `regexes` the project's regex files beside it
    hermetic: bool = False
    regexes: Path | None = None  # a folder holding the project's regexes/ folders as the root does; None: root

    def config(self) -> WorkerConfig:
        from ..workers.base import WorkerConfig

        return WorkerConfig(**self.worker)


@dataclass
class AttemptDone:
    """What one attempt returns to the runner (plain, picklable): the answer, the change found, the verdict."""

    answer: WorkerResult
    change: Change
    ok: bool = False
    kind: str | None = None
    error: str | None = None
    retry: bool = False
    called: bool = True  # the worker was asked (what it spent counts)
    worker: str | None = None  # the Dask worker that ran it; None: this machine
    verify_log: bytes | None = None  # on a worker: the verify commands' output (masked), for the run's record
    left: Change | None = None  # on a worker: what the next attempt starts from (the change, less a revert)
    workspace: str | None = None  # on a worker: where the attempt ran (the paths its verify printed are under it)


# what the agent and the verify commands run with in an attempt's workspace: git commands there (`git status`, a
# linter's, an agent's look around) must not rewrite the worktree's index to refresh its stat data, which git
# does when it can take the lock; a worktree whose index moved cannot be brought back for the next attempt
# (attempt._bring_back) and is made anew (~15 ms of git's CPU, more at -j 16)
IN_WORKSPACE = {"GIT_OPTIONAL_LOCKS": "0"}


class _FileWork:
    """The attempts' work on their workspaces' files (making one, finding the change, undoing a verify's side
    effects; not the verify commands, which may run for minutes) goes two at a time: sixteen together hand the
    interpreter's lock between them at every system call, and the scheduler's thread, which applies finished
    steps and starts the next ones, waits its turn among them (64 openai steps at -j 16, six alternating runs
    each: 5.06-5.82 s -> 4.98-5.34 s). A finish goes first: it frees a slot for the next step, where a workspace
    being made is for a step that has its slot (and, for the openai worker, its call out already)."""

    def __init__(self, slots: int) -> None:
        self._changed = threading.Condition()
        self._slots = slots
        self._busy = 0
        self._finishes_waiting = 0

    @contextmanager
    def finishing(self):
        with self._changed:
            self._finishes_waiting += 1
            self._changed.wait_for(lambda: self._busy < self._slots)
            self._finishes_waiting -= 1
            self._busy += 1
        try:
            yield
        finally:
            self._give()

    @contextmanager
    def making(self):
        with self._changed:
            self._changed.wait_for(lambda: self._busy < self._slots and not self._finishes_waiting)
            self._busy += 1
        try:
            yield
        finally:
            self._give()

    def _give(self) -> None:
        with self._changed:
            self._busy -= 1
            self._changed.notify_all()


_FILE_WORK = _FileWork(2)


def attempt_in(job: AttemptJob, home: Path, workspace, cancel, journal, log_path: Path, worker=None, settled=None):
    """Make (or reuse) the attempt's workspace under `home`, call the worker, find the change, judge it
    against the policy and the verify commands: (AttemptDone, workspace). The one body of an attempt, called
    by the step here and by the Dask task on a worker (runner/executors/dask.py, through `detached_attempt`).
    `settled()`: returns once the project holds what a workspace made now must hold."""
    from ..workers import get_worker

    config = job.config()
    worker = worker if worker is not None else get_worker(config)
    writable = tuple(job.intent.outputs) + tuple(job.policy.scope)

    def make() -> tuple:
        if settled is not None:
            settled()
        with _FILE_WORK.making():
            ws, before, links = make_workspace(job.root, home, writable, plain=job.hermetic)
        if job.carried:  # after the digests: the change found is the candidate's whole change, as here
            _lay(ws, job.carried)
        return (home, ws, before, links)

    # a worker that answers with files (openai) never looks at the workspace while its model thinks: the
    # first attempt's workspace is made during the call instead of before it (the change is still found
    # by digests taken before the answer's files are written)
    overlap = workspace is None and not getattr(worker, "reads_workspace", True)
    if workspace is None and not overlap:
        workspace = make()
    request = _request(job, workspace[1] if workspace else home, cancel, journal)  # home: a worker not reading it
    if workspace is None:
        answer, workspace = _call_beside(worker, request, make)
    else:
        answer = worker.run(request)
    _home, ws, before, links = workspace
    done = AttemptDone(answer=answer, change=Change())
    with _FILE_WORK.finishing():
        if answer.ok and answer.files and config.kind == "openai":
            from ..workers.replay import apply_files

            refused = apply_files(ws, answer.files)
            if refused:
                done.kind, done.error = "policy", f"{refused} (policy '{job.policy.name}')"
        after = snapshot(ws, private=True)
        done.change = find_change(ws, before, links, after)
    _judge(job, done, answer, ws, cancel, journal, log_path, after)
    return done, workspace


def detached_attempt(job: AttemptJob, cancel: threading.Event) -> AttemptDone:
    """An attempt in a workspace of its own, made and removed here (a Dask task on a worker): the candidate's
    previous change laid over it first, the verify log and what the next attempt starts from sent back."""
    home = new_home(job.root, job.intent.name)
    try:
        log_path = home / "verify.log"
        done, (_home, ws, before, links) = attempt_in(job, home, None, cancel, None, log_path)
        done.verify_log = log_path.read_bytes() if log_path.exists() else None
        done.left = find_change(ws, before, links)
        done.workspace = str(ws)
        return done
    finally:
        remove_workspace(home, job.root)


def _request(job: AttemptJob, workspace: Path, cancel, journal) -> WorkerRequest:
    from ..workers.base import WorkerRequest

    return WorkerRequest(
        prompt=job.prompt,
        workspace=workspace,
        intent=job.intent.name,
        step_key=job.replay_key,
        config=job.config(),
        attempt=job.index,
        env=dict(os.environ if job.env is None else job.env, **IN_WORKSPACE),
        cancel=cancel,
        journal=journal,
    )


def _config_fields(config: WorkerConfig) -> dict:
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    fields["extra"] = dict(config.extra)
    return fields


def _verify_commands(ctx: StepContext) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] | str:
    """The intent's verify commands as shell lines with their parse families and the reports they write,
    resolved here (the adapters are the runner's), or why they could not be."""
    if not ctx.intent.verify:
        return []
    try:
        commands = adapter_commands(ctx)
    except UserError as exc:
        return f"the verify commands could not be resolved: {exc}"
    out = []
    for name in ctx.intent.verify:
        cmd = commands.get(name)
        out.append((name, cmd.run if cmd else name, tuple(cmd.parse) if cmd else (), cmd.reports if cmd else ()))
    return out


def _lay(ws: Path, change: Change) -> None:
    """Write a change into a fresh workspace: where the candidate's previous attempt left its copy."""
    for rel, data in change.files.items():
        target = ws / rel
        if data is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(data)
    for rel, link in change.symlinks.items():
        target = ws / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        os.symlink(link, target)


def _judge(
    job: AttemptJob, done: AttemptDone, answer, ws: Path, cancel, journal, log_path: Path, found: dict[str, str]
) -> None:
    """Refuse, retry or verify the change found; `found`: the workspace's digests it was found from."""
    intent, policy, change = job.intent, job.policy, done.change
    if done.kind == "policy":
        return
    if not answer.ok:
        done.kind = answer.failure or "transient"
        done.error = f"the {job.worker['kind']} worker failed ({done.kind}): {answer.error}"
        if answer.failure == "timeout" and cancel.is_set():
            done.kind = "interrupted"
        return
    # what a live agent reports writing outside its workspace explains a refusal; recorded events
    # (replay) name the workspace of the recording, not this one
    claimed = _claimed_outside(answer.events, ws) if job.worker["kind"] == "codex" else []
    problems = [f"{p}: outside the project (policy '{policy.name}')" for p in claimed]
    problems += check_change(change, policy, intent)
    # a literal path is expanded as it is, present or not: an output is there when one of its files is
    missing = [o for o in intent.outputs if not any(os.path.lexists(ws / rel) for rel in expand(str(ws), (o,)))]
    if problems and not claimed and only_outside_scope(change, policy, intent):
        # nothing it may write was changed: a green step would apply nothing (retried, with this feedback)
        revert(ws, job.root, change.files)  # the next attempt starts without them
        done.kind, done.retry = "policy", True
        done.error = (
            f"the attempt changed only files its policy does not let it write ({', '.join(sorted(change.files))}), "
            f"so it changed nothing: an agent step must change its {writable_scope(policy, intent)}"
        )
        return
    if problems:
        done.kind = "policy"
        more = f"; and {len(problems) - 5} more (the attempt's diff.patch has them all)" if len(problems) > 5 else ""
        done.error = "refused: " + "; ".join(problems[:5]) + more
        return
    if missing:
        if change:
            done.kind, done.error = "logic", f"declared outputs not produced: {', '.join(missing)}"
            return
        # nothing there and nothing made: the goal is not done (retried with this reason)
        done.kind, done.retry = "policy", True
        done.error = f"the attempt changed nothing: an agent step must change its {writable_scope(policy, intent)}"
        done.error += f" (the outputs {', '.join(missing)} do not exist)"
        return
    failure = _verify(job, ws, cancel, journal, log_path)
    with _FILE_WORK.finishing():
        undo_side_effects(ws, found, job.root, change)  # the workspace is still as the change was found in it
    if failure:
        # a verify cut short by Ctrl-C says nothing about the change: not a retry with feedback
        done.kind, done.error = ("interrupted" if cancel.is_set() else "logic"), failure
        if not change and not cancel.is_set():  # the outputs as they stand are not right, and it left them so
            done.error = f"the attempt changed nothing, and {failure}"
        return
    # an attempt that changed nothing where the outputs exist and verify: the answer still holds (its last
    # version, or a person's kept edit), so the step is done at the cost of this one attempt
    done.ok = True


# ---- verification ----------------------------------------------------------------------------
def _verify(job: AttemptJob, ws: Path, cancel, journal, log_path: Path) -> str | None:
    """Run each verify command in the attempt workspace; the failure as feedback, or None."""
    if isinstance(job.verify, str):
        return job.verify
    env = dict(os.environ if job.env is None else job.env, RUNNER_ATTEMPT="1", **IN_WORKSPACE)
    for name, line, families, reports in job.verify:
        if cancel.is_set():
            return "interrupted"
        began = time.time()
        with open(log_path, "ab") as log:
            log.write(job.mask.text(f"$ {line}\n").encode())
            log.flush()
            start = log.tell()
            try:
                group = process.start(
                    ["/bin/sh", "-c", line],
                    cwd=ws / split(job.intent.name)[0],  # a sub-project's intent: its folder (names.split)
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    journal=journal,
                    label=f"{job.intent.name} verify",
                )
            except OSError as exc:
                return f"verification `{name}` ({line}) could not start: {exc.strerror}"
            # Ctrl-C sets `cancelled`: the run stops now, not when the verify is done
            stopped = group.wait(job.intent.timeout or VERIFY_TIMEOUT, cancel)
            if stopped:
                group.kill()
            code = group.reap()
        # the command wrote the log itself: mask it now, before its output is read back (so the feedback,
        # the next prompt, the events and result.json never carry a secret it printed); only bytes past
        # `start` can change, the earlier commands' output having been masked the same way
        job.mask.file(log_path)
        _timed(job, log_path, name, line, began, code if not stopped else None)
        if stopped == "cancelled":
            return "interrupted"
        if code == 0:
            continue
        with open(log_path, "rb") as f:
            f.seek(start)
            output = f.read().decode("utf-8", "replace")
        how = "timed out" if stopped else f"failed (exit {code})"
        read = reports_read(ws, reports, began)
        return f"verification `{name}` ({line}) {how}.\n" + findings_text(job, families, output, read)
    return None


def _timed(job: AttemptJob, log_path: Path, name: str, line: str, began: float, code: int | None) -> None:
    """A verify command's line in the attempt's verify.jsonl: when it ran and how it ended (a trace's slice)."""
    seconds = round(time.time() - began, 3)
    timed = {"name": name, "command": job.mask.text(line), "began": round(began, 3), "seconds": seconds}
    with open(log_path.with_name("verify.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(timed | {"exit_code": code}) + "\n")


def _call_beside(worker, request, make) -> tuple:
    """(the worker's answer, make()): the call in a helper thread while this one makes the workspace. Both
    finish before either's error is raised: no worker call outlives its attempt."""
    box: dict = {}

    def call() -> None:
        try:
            box["answer"] = worker.run(request)
        except BaseException as exc:  # re-raised on the step's thread, as a direct call would raise it
            box["error"] = exc

    thread = threading.Thread(target=call, name=f"{request.intent}-call", daemon=True)
    thread.start()
    try:
        made = make()
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return box["answer"], made


def _claimed_outside(events: list[dict], ws: Path) -> list[str]:
    """Paths the agent reported writing outside its workspace (used to explain a refusal, never to trust a write)."""
    out = []
    root = os.path.realpath(ws)
    for event in events:
        item = event.get("item") or {}
        if item.get("type") != "file_change":
            continue
        for change in item.get("changes") or []:
            path = change.get("path") or ""
            full = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
            if full != root and not full.startswith(root + os.sep):
                out.append(path)
    return sorted(set(out))


def _verify_log(run: AgentRun, intent: Intent, final: Attempt) -> str | None:
    """A step that failed its verify has that output as its log, as a shell step has (the failure block reads
    it and ends with its path), when the verify commands printed something a reader can go by; a silent one
    (its findings from its reports) keeps them in its error instead."""
    if final.kind != "logic":
        return None
    log = run.attempts_dir / stored(intent.name) / f"c{final.candidate}-a{final.number}" / "verify.log"
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return str(log) if any(line.strip() and not line.startswith("$ ") for line in text.splitlines()) else None


def _template(ctx: StepContext) -> str | None:
    name = ctx.intent.prompt
    if not name:
        return None
    return Path(ctx.spec.prompts[name]).read_text(encoding="utf-8")


def _emit(run: AgentRun, event: dict) -> None:
    if run.emit:
        run.emit(event)
