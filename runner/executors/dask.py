"""Steps on a Dask cluster (the one importer of `distributed`): a shell step's command, or an agent attempt, a task.

The runner that the user started still plans, keys, records and applies: a task only runs the step's command
in the project's folder on a worker that sees the project at the same path (a shared filesystem), and returns
its exit code, what it printed and the worker's name. The outputs it wrote are hashed by the runner, as a local
step's are (step_outputs.py `hash_outputs`). Hermetic mode (runner/executors/hermetic.py): the worker does not see
the project; the task gets the step's inputs from the remote cache and puts its outputs there.

A worker that dies mid-step: the scheduler gives the task to another worker (Dask's allowed-failures), and the
runner sees one result, so the step is recorded once. The scheduler that goes away: the client cancels every
future ("scheduler-connection-lost"); each step in flight fails with that reason and the run stops (exit 1).

An agent step keeps its candidate loop on the runner (steps/agent.py); each attempt is one task (`run_attempt`):
steps/agent.py's `detached_attempt` on the worker, the same judging as an attempt made here, its AttemptDone sent
back; the runner writes the attempt's record and applies a verified change through its journaled apply.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import tempfile
import threading
import uuid
from collections.abc import Callable

from ..errors import UsageError
from ..process import RUN_VAR, kill_groups, start
from ..steps.base import StepContext, StepOutcome
from ..steps.shell import command_line, ended

CONNECT_TIMEOUT = 3.0  # seconds to reach the scheduler before the run gives up, saying so
CANCEL_WAIT = 2.0  # seconds an interrupt waits for the workers to kill the steps' commands
OUTPUT_LIMIT = 16 << 20  # bytes of a step's output sent back to the runner for its log


class DaskExecutor:
    """Shell steps as Dask futures: `submit` gives a concurrent.futures.Future of the step's StepOutcome,
    resolved once the task's result is here (which then wakes the scheduler's loop, as an agent step's end does).

    The results are fetched by one thread, in batches: every task that finished meanwhile in one `gather` (one
    round trip per worker), rather than a round trip per task in Dask's one callback thread."""

    on_cluster = True

    def __init__(self, client, address: str, hermetic=None):
        self.client = client
        self.hermetic = hermetic  # hermetic.Hermetic: steps see only what they declare; None: a shared filesystem
        self._manifests: dict[str, dict[str, str]] = {}  # a hermetic step's key -> what it was given
        self.address = address
        self.name = f"dask {address}"
        self.token = uuid.uuid4().hex  # names this run's commands on the workers, for cancel_all
        self.lost: str | None = None  # why the cluster is gone: execute.py stops the run once it is set
        self._cancelling = False  # cancel_all cancelled the futures: their "cancelled" is not a lost cluster
        self._lock = threading.Lock()
        # key -> (the Dask future, the step's future, its context, its command line, the scheduler's wake-up)
        self._pending: dict[str, tuple] = {}
        self._attempts: dict[str, tuple] = {}  # an agent attempt's key -> (its Dask future, what wakes its thread)
        self._finished: queue.SimpleQueue = queue.SimpleQueue()  # keys whose Dask future is done; None: stop
        self._fetcher = threading.Thread(target=self._fetch, name="runner-dask-results", daemon=True)
        self._fetcher.start()

    @classmethod
    def connect(cls, address: str, where: str, hermetic=None) -> DaskExecutor:
        """Connect to the scheduler at `address` within CONNECT_TIMEOUT; `where` names what gave the address."""
        from distributed import Client

        # the client's own log lines (reconnect attempts, a closing comm) would bury the runner's messages,
        # which say what happened to each step
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"error: {where}: no Dask scheduler answered at {address} within {CONNECT_TIMEOUT:g}s "
                f"({type(exc).__name__}); start one with `dask scheduler` and its workers with "
                f"`dask worker {address}`, or run here with --executor local"
            ) from None
        return cls(client, address, hermetic)

    def slots(self) -> int:
        """-j's default: twice the threads the cluster's workers have, so each worker holds a step queued behind
        the one it runs and no thread waits out a round trip to the runner between two steps (1,000 steps of
        `sleep 0.2` on 4 workers of 4 threads: 0.87 of linear at -j 16, 0.96 at -j 32; bench/README.md)."""
        try:
            return max(1, 2 * sum(self.client.nthreads().values()))
        except Exception:  # noqa: BLE001 - a scheduler gone between connect and here: the run says so later
            return 1

    def close(self) -> None:
        self._finished.put(None)
        try:
            self.client.close(timeout=CANCEL_WAIT)
        except Exception:  # noqa: BLE001 - a scheduler already gone: nothing is left to close
            pass

    # ---- one step ---------------------------------------------------------------------------------
    def submit(self, ctx: StepContext, decision, wake: Callable[[], object]) -> concurrent.futures.Future:
        """Hand the step's command to the cluster. Hermetic: `decision`'s inputs (and the dependencies' outputs)
        are put in the remote cache first, and the task materialises them; a shared filesystem runs in place."""
        done: concurrent.futures.Future = concurrent.futures.Future()
        intent = ctx.intent
        if self.lost or ctx.cancelled.is_set():
            done.set_result(self._lost() if self.lost else _interrupted())
            wake()
            return done
        try:
            line = command_line(ctx)
        except UsageError as exc:  # adapter = "auto" that detects nothing, or two toolchains alike
            done.set_result(StepOutcome(ok=False, error=str(exc)))
            wake()
            return done
        env = dict(ctx.environ if ctx.environ is not None else os.environb)  # the step's environment, as locally,
        # but for the run's token: it names this machine's children, and a worker's are killed by kill_run
        env.pop(RUN_VAR.encode(), None)
        env.update((os.fsencode(k), os.fsencode(v)) for k, v in intent.env)
        key = f"runner-{intent.name}-{uuid.uuid4().hex[:12]}"
        if self.hermetic is not None:
            from .hermetic import HermeticError, run_hermetic

            try:
                manifest = self.hermetic.manifest(ctx, decision.inputs)
            except HermeticError as exc:
                done.set_result(StepOutcome(ok=False, error=str(exc)))
                wake()
                return done
            self._manifests[key] = manifest
            future = self.client.submit(
                run_hermetic, run_command, worker_name, line, intent.cwd, env, manifest, tuple(intent.outputs),
                self.hermetic.url, self.hermetic.timeout, ctx.timeout, self.token, key=key, pure=False,
            )  # fmt: skip
        else:
            cwd = os.path.normpath(os.path.join(ctx.spec.root, intent.cwd))
            future = self.client.submit(run_command, line, cwd, env, ctx.timeout, self.token, key=key, pure=False)
        with self._lock:
            self._pending[key] = (future, done, ctx, line, wake)
        future.add_done_callback(lambda _f: self._finished.put(key))  # in Dask's callback thread: no waiting
        return done

    def _fetch(self) -> None:
        """The results' thread: take every key that finished, fetch their results together, answer each step."""
        while True:
            keys = [self._finished.get()]
            while True:
                try:
                    keys.append(self._finished.get_nowait())
                except queue.Empty:
                    break
            stop = None in keys
            with self._lock:
                batch = [(key, self._pending[key]) for key in keys if key is not None and key in self._pending]
            results = self._gather([(key, entry[0]) for key, entry in batch if entry[0].status == "finished"])
            for key, (future, done, ctx, line, wake) in batch:
                try:
                    outcome = self._outcome(ctx, line, future, results.get(key), self._manifests.pop(key, None))
                except Exception as exc:  # noqa: BLE001 - the step must be answered, whatever went wrong here
                    outcome = StepOutcome(ok=False, error=f"its result could not be read: {type(exc).__name__}: {exc}")
                with self._lock:
                    mine = self._pending.pop(key, None) is not None  # else cancel_all answered it already
                if mine:
                    done.set_result(outcome)
                    wake()
            if stop:
                return

    def _gather(self, finished: list[tuple[str, object]]) -> dict[str, object]:
        """key -> the task's result, or the exception that kept it from here."""
        if not finished:
            return {}
        try:
            values = self.client.gather([future for _key, future in finished])
            return {key: value for (key, _future), value in zip(finished, values, strict=True)}
        except Exception:  # noqa: BLE001 - one of them failed: each alone, so the others still come
            found: dict[str, object] = {}
            for key, future in finished:
                try:
                    found[key] = future.result()  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001 - said in that step's outcome
                    found[key] = exc
            return found

    def _outcome(self, ctx: StepContext, line: str, future, result, manifest=None) -> StepOutcome:
        status = future.status
        if status == "cancelled":
            if self._cancelling:
                return _interrupted()
            if self.lost is None:
                self.lost = f"the Dask scheduler at {self.address} went away"
            return self._lost()
        if status == "error":
            try:
                return _task_failed(future.exception())
            except Exception as exc:  # noqa: BLE001 - the exception could not be fetched: the cluster is gone
                result = exc
        if not isinstance(result, dict):  # the result could not be fetched: the cluster is gone
            if self.lost is None:
                self.lost = f"the Dask scheduler at {self.address} went away ({type(result).__name__})"
            return self._lost()
        outcome = _shell_outcome(ctx, line, result)
        if self.hermetic is not None and "error" not in result:
            outcome = self.hermetic.outcome(ctx, outcome, result, manifest or {})
        return outcome

    # ---- one agent attempt ------------------------------------------------------------------------
    def attempt(self, job, ctx: StepContext, inputs: dict[str, str | None]):
        """Run one agent attempt (steps/agent.py AttemptJob) as a Dask task and wait for its AttemptDone, in the
        agent step's own thread. Ctrl-C (cancel_all) kills the attempt's processes on the worker and answers
        at once; a worker that dies mid-attempt: Dask gives the task to another, which starts it afresh (so
        the change comes back, and is applied, once); the scheduler gone: the attempt fails saying so and the
        run stops (`lost`). Hermetic: the step's manifest (`inputs` as the plan hashed them, its dependencies'
        outputs) and the project's regex files are put in the remote cache first, and the task materialises
        them in place of the project."""
        from ..steps.agent import AttemptDone

        cancelled = ctx.cancelled
        task: tuple = (run_attempt, job, self.token)
        manifest: dict[str, str] = {}
        if self.hermetic is not None and self.lost is None and not cancelled.is_set():
            from ..libraries import folder_of
            from .hermetic import HermeticError, run_hermetic_attempt

            try:
                manifest = self.hermetic.manifest(ctx, inputs)
                library = self.hermetic.library(ctx.spec.root, folder_of(job.intent.name))
            except HermeticError as exc:
                return _attempt_failed(str(exc), kind="permanent")
            task = (
                run_hermetic_attempt, run_attempt, worker_name, job, manifest, library,
                self.hermetic.url, self.hermetic.timeout, self.token,
            )  # fmt: skip
        if self.lost is None and not cancelled.is_set():
            key = f"runner-{job.intent.name}-attempt-{uuid.uuid4().hex[:12]}"
            ready = threading.Event()
            with self._lock:
                future = None if self._cancelling else self.client.submit(*task, key=key, pure=False)
                if future is not None:
                    self._attempts[key] = (future, ready)
            if future is not None:
                future.add_done_callback(lambda _f: ready.set())
                while not ready.wait(0.5):
                    if cancelled.is_set():  # cancel_all sets `ready` once the worker was told
                        ready.wait(CANCEL_WAIT + 1)
                        break
                with self._lock:
                    self._attempts.pop(key, None)
                if future.status == "finished" and not cancelled.is_set():
                    try:
                        done = future.result()
                    except Exception as exc:  # noqa: BLE001 - the result could not be fetched: the cluster is gone
                        gone = f"the Dask scheduler at {self.address} went away ({type(exc).__name__})"
                        self.lost = self.lost or gone
                    else:
                        return done if self.hermetic is None else self.hermetic.attempt_done(ctx, done, manifest)
                elif future.status == "error":
                    return _attempt_failed(_task_failed(_exception(future)).error or "the Dask task failed")
                elif not cancelled.is_set() and not self._cancelling and self.lost is None:
                    self.lost = f"the Dask scheduler at {self.address} went away"
        if self.lost is not None:
            return _attempt_failed(self._lost().error or "", kind="permanent")
        from ..workers.base import failed

        stopped = failed("timeout", "interrupted")
        return AttemptDone(answer=stopped, change=_no_change(), kind="interrupted", error="interrupted", called=False)

    def _lost(self) -> StepOutcome:
        return StepOutcome(ok=False, error=f"{self.lost}: the run stops; the next run resumes from the cache")

    def cancel_all(self) -> None:
        """Ctrl-C: kill every command of this run on the workers (bounded by CANCEL_WAIT), then answer each
        step in flight as interrupted, at once."""
        with self._lock:
            self._cancelling = True
            pending = [(entry[0], entry[1]) for entry in self._pending.values()]
            self._pending.clear()
            attempts = list(self._attempts.values())

        def cancel() -> None:
            try:
                self.client.cancel([future for future, _done in pending] + [future for future, _ready in attempts])
                self.client.run(kill_run, self.token, on_error="ignore")
            except Exception:  # noqa: BLE001 - a scheduler already gone has no task left to cancel
                pass

        thread = threading.Thread(target=cancel, name="runner-dask-cancel", daemon=True)
        thread.start()
        thread.join(CANCEL_WAIT)
        for _future, ready in attempts:  # the agent attempts waiting on their tasks: answered as interrupted
            ready.set()
        for _future, done in pending:
            done.set_result(_interrupted())


def stop_run(address: str, token: str) -> str | None:
    """At the start after a runner was killed while steps of its run were on the cluster at `address`: kill
    them (kill_run on every worker, as Ctrl-C does), within CONNECT_TIMEOUT to reach the scheduler and
    CANCEL_WAIT for the workers; what to say, None when nothing was left running. The client the killed runner
    held is gone, so the scheduler has dropped its queued tasks; a task already running goes on until killed."""
    from distributed import Client

    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # as in connect: the runner says what happened
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, a bad address: said, and the start goes on
        return (
            f"no Dask scheduler answered at {address} within {CONNECT_TIMEOUT:g}s ({type(exc).__name__}): the steps "
            "a killed run started there may still be running"
        )
    answers: dict = {}

    def kill() -> None:
        try:
            answers.update(client.run(kill_run, token, on_error="ignore"))
        except Exception:  # noqa: BLE001 - the scheduler gone meanwhile: said below, as no answer
            pass

    thread = threading.Thread(target=kill, name="runner-dask-recover", daemon=True)
    thread.start()
    thread.join(CANCEL_WAIT)
    try:
        client.close(timeout=CANCEL_WAIT)
    except Exception:  # noqa: BLE001 - a scheduler already gone: nothing is left to close
        pass
    if thread.is_alive():
        return (
            f"the Dask workers at {address} did not answer within {CANCEL_WAIT:g}s: the steps a killed run started "
            "there may still be running"
        )
    killed = sum(n for n in answers.values() if isinstance(n, int))
    if not killed:
        return None
    tasks = "task" if killed == 1 else "tasks"
    return f"stopped {killed} {tasks} a killed run left running on the Dask cluster at {address}"


def _interrupted() -> StepOutcome:
    return StepOutcome(ok=False, interrupted=True, error="interrupted")


def _task_failed(exc: BaseException | None) -> StepOutcome:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):  # every worker that took it died: Dask's allowed-failures ran out
        return StepOutcome(ok=False, error=f"the Dask workers that ran it died, as many times as Dask allows: {exc}")
    return StepOutcome(ok=False, error=f"the Dask task failed: {type(exc).__name__}: {exc}")


def _exception(future) -> BaseException | None:
    try:
        return future.exception()
    except Exception as exc:  # noqa: BLE001 - the exception could not be fetched: that is the failure
        return exc


def _no_change():
    from ..attempt import Change

    return Change()


def _attempt_failed(error: str, kind: str = "transient"):
    """An attempt that never came back from the cluster: failed as its worker would (a transient failure is
    retried, with backoff, as a dropped stream is)."""
    from ..steps.agent import AttemptDone
    from ..workers.base import failed

    return AttemptDone(answer=failed(kind, error), change=_no_change(), kind=kind, error=error, called=False)


def _shell_outcome(ctx: StepContext, line: str, result: dict) -> StepOutcome:
    """What the worker returned, as a local shell step's outcome: the same errors, the log written (masked)
    on this side, where the run's record lives."""
    worker = result.get("worker")
    if "error" in result:
        return StepOutcome(ok=False, error=result["error"], worker=worker)
    log = None
    output: bytes = result.get("output", b"")
    if output:
        data = ctx.mask.data(f"$ {line}\n".encode() + output)
        with open(ctx.log_path, "wb") as f:
            f.write(data)
        log = ctx.log_path
        if ctx.on_output is not None:  # -v: the lines come when the step ends, not as it prints them
            ctx.on_output(ctx.intent.name, data.decode("utf-8", "replace").splitlines()[1:])
    return ended(ctx, result["code"], log, timed_out=bool(result.get("timed_out")), worker=worker)


# ---- on the worker ------------------------------------------------------------------------------------
_RUNNING: dict[str, set[int]] = {}  # a run's token -> the process groups of its commands on this worker
_RUNNING_LOCK = threading.Lock()
_CANCELS: dict[str, set[threading.Event]] = {}  # a run's token -> the cancel events of its agent attempts here


def run_command(line: str, cwd: str, env: dict[bytes, bytes], timeout: float | None, token: str) -> dict:
    """The Dask task: run one step's shell line in its own process group, wait (killing the group at the
    step's timeout), and say what happened. Never raises for the command's own failure.

    No journal here: the group is tethered to this worker process (process.TETHER), so a worker that dies
    mid-step, however it dies, takes the whole group with it, and nothing of the step goes on writing the outputs
    behind the retry's back on another worker."""
    name = worker_name()
    with tempfile.TemporaryFile() as out:
        try:
            group = start(["/bin/sh", "-c", line], cwd=cwd, env=env, stdout=out, stderr=out, journal=None, label="step")
        except OSError as exc:
            return {"worker": name, "error": f"could not start /bin/sh in {cwd} on {name}: {exc.strerror}"}
        with _RUNNING_LOCK:
            _RUNNING.setdefault(token, set()).add(group.pid)
        try:
            timed_out = group.wait(timeout) == "timeout"
            if timed_out:
                group.kill()
        finally:
            with _RUNNING_LOCK:  # before the reap: kill_run never signals a pid that may be someone else's
                _RUNNING.get(token, set()).discard(group.pid)
            code = group.reap()
        out.seek(0)
        output = out.read(OUTPUT_LIMIT)
    return {"worker": name, "code": code, "output": output, "timed_out": timed_out}


def run_attempt(job, token: str):
    """The Dask task of one agent attempt: steps/agent.py's detached_attempt in a workspace of its own on this
    worker, stopped (its worker call and verify commands killed) when kill_run names the run."""
    from ..steps.agent import detached_attempt

    cancel = threading.Event()
    with _RUNNING_LOCK:
        _CANCELS.setdefault(token, set()).add(cancel)
    try:
        done = detached_attempt(job, cancel)
    finally:
        with _RUNNING_LOCK:
            _CANCELS.get(token, set()).discard(cancel)
    done.worker = worker_name()
    return done


def worker_name() -> str:
    """The name of the Dask worker running this task ("local" when called outside a worker)."""
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:  # not in a worker (called directly)
        return "local"
    return worker.name if isinstance(worker.name, str) and worker.name else worker.address


def kill_run(token: str) -> int:
    """Run on every worker by cancel_all: kill the process groups of the run's commands, stop its agent
    attempts; how many."""
    with _RUNNING_LOCK:
        groups = list(_RUNNING.pop(token, ()))
        attempts = list(_CANCELS.pop(token, ()))
    for cancel in attempts:  # the attempt kills its own worker call and verify group on seeing it
        cancel.set()
    kill_groups(groups)  # leaders not yet reaped: run_command takes a pid out of _RUNNING before its reap
    return len(groups) + len(attempts)
