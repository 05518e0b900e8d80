"""Shell steps: one shell line (or an adapter command) in the project, its own process group, a timeout; and the
shell step kind (ShellStep) the scheduler starts them through."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UserError
from ..names import home
from ..nospace import full_output, is_no_space, words
from ..process import kill_groups
from .base import StepContext, StepOutcome
from .spawn import CreatedAhead, SpawnedChild, start_process

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

    from ..plan import Decision
    from ..spec import Intent
    from .base import Scheduler, Started

LOG_KEPT = 1 << 16  # bytes of a log that met a full disk kept (its first ones): the rest of its space is freed


def adapter_commands(ctx: StepContext) -> dict:
    """The intent's adapter commands as they run in this project (variants detected, vars filled)."""
    from ..adapters import resolve

    if not ctx.intent.adapter:
        return {}
    return resolve(ctx.intent.adapter, Path(home(ctx.spec.root, ctx.intent.name)), ctx.spec.adapters).commands


def command_line(ctx: StepContext) -> str:
    """`run` is a shell line, or the name of one of the intent's adapter commands."""
    line = ctx.intent.run
    assert line is not None  # a shell step is one with `run` (spec.Intent.kind)
    cmd = adapter_commands(ctx).get(line) if ctx.intent.adapter else None
    return cmd.run if cmd else line


class RunningShell:
    """A shell step in flight: its child in its own process group, its output pipe, its deadline.

    What the child prints comes through a pipe and goes to the step's log, which is created on the first
    byte: most steps of a big build print nothing, and creating a file costs more than starting the step.
    With secrets in the run's environment, each chunk is masked on its way to the log, so a secret the child
    prints never reaches the disk: a chunk's end that could be the start of a secret (Mask.cut) is held back
    until the next chunk (or the end), since a secret cut by a chunk boundary starts there.

    With `ctx.on_output` (`runner make -v`), what goes to the log is also cut into whole lines and handed
    on as it comes (masked as the log is): the piece after the last newline waits for the rest of its line.
    """

    def __init__(self, ctx: StepContext, proc: subprocess.Popen | SpawnedChild, line: str, output_fd: int):
        self.ctx = ctx
        self.proc = proc
        self.line = line
        self.output_fd: int | None = output_fd
        self.log: str | None = None  # the log's path, once the child printed something
        self._log_fd: int | None = None
        self._held = b""  # masked output not yet written: it may end with the start of a secret
        self._partial = b""  # streamed (-v): the start of a line whose end has not come yet
        self._header = 0  # streamed (-v): bytes of the log's "$ command" header not to stream
        self.unwritten: str | None = None  # the log, once a write to it found no space left
        self.started = time.monotonic()
        self.deadline = self.started + ctx.timeout if ctx.timeout else None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def pump(self) -> bool:
        """Move what the child has printed so far into its log; False once every writer closed the pipe.

        At most 1 MB a call: a step that prints without pause must not keep the scheduler from the others
        (nor, once it exited, a background process it left writing to the pipe)."""
        fd = self.output_fd
        if fd is None:
            return False
        for _chunk in range(16):
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return True
            if not data:
                return False
            if self.unwritten is not None:
                continue  # the log could not be written: the step has failed, what it prints is drained
            try:
                if self._log_fd is None:
                    self.log = self.ctx.log_path
                    self._log_fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
                    header = f"$ {self.line}\n".encode()
                    if self.ctx.on_output is not None:
                        self._header = len(self.ctx.mask.data(header) if self.ctx.mask else header)
                    data = header + data
                if self.ctx.mask:
                    data = self._mask(data)
                os.write(self._log_fd, data)
            except OSError as exc:
                if not is_no_space(exc):
                    raise
                self._log_full()
                continue
            if self.ctx.on_output is not None:
                self._stream(data)
        return True

    def _log_full(self) -> None:
        """The log met a full disk: the step will fail (what it printed cannot be recorded), and the rest of
        what it prints is drained unwritten; the log is cut to its first LOG_KEPT bytes, so the space it took
        is there again for the run's own records."""
        self.unwritten = self.ctx.log_path
        if self._log_fd is not None:
            try:
                os.ftruncate(self._log_fd, min(os.fstat(self._log_fd).st_size, LOG_KEPT))
            except OSError:
                pass
            os.close(self._log_fd)
            self._log_fd = None
        self._held = b""

    def _stream(self, data: bytes, end: bool = False) -> None:
        """Hand on the whole lines of what the log just got (the header excepted); `end`: the last piece
        too. A line longer than 64 KB is handed on in pieces of that size rather than held without bound."""
        if self._header:
            skip = min(self._header, len(data))
            data, self._header = data[skip:], self._header - skip
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        while len(self._partial) > 1 << 16:
            lines.append(self._partial[: 1 << 16])
            self._partial = self._partial[1 << 16 :]
        if end and self._partial:
            lines.append(self._partial)
            self._partial = b""
        if lines:
            on_output = self.ctx.on_output
            assert on_output is not None  # only called when streaming
            on_output(self.ctx.intent.name, [line.decode("utf-8", "replace").rstrip("\r") for line in lines])

    def _mask(self, data: bytes) -> bytes:
        """What of the output so far can be written masked; the rest waits in _held for what follows."""
        mask = self.ctx.mask
        data = mask.data(self._held + data)
        keep = mask.cut(data)
        if not keep:
            self._held = b""
            return data
        self._held = data[len(data) - keep :]
        return data[: len(data) - keep]

    def close_output(self) -> None:
        """The child has exited: take what is left in the pipe. A background grandchild that still holds
        the pipe is not waited for (its later writes get EPIPE, as under ninja)."""
        if self.output_fd is None:
            return
        self.pump()
        os.close(self.output_fd)
        self.output_fd = None
        if self._log_fd is not None:
            held, self._held = self._held, b""
            try:
                if held:
                    os.write(self._log_fd, held)
            except OSError as exc:
                if not is_no_space(exc):
                    raise
                self._log_full()
                return
            if self.ctx.on_output is not None:
                self._stream(held, end=True)
            os.close(self._log_fd)
            self._log_fd = None

    def timed_out(self) -> StepOutcome:
        kill_groups([self.proc.pid])  # not reaped yet: the group is still the step's own
        code = self.proc.wait()
        self.close_output()
        return ended(self.ctx, code, self.log, timed_out=True, unwritten=self.unwritten)

    def finished(self, code: int) -> StepOutcome:
        if self.ctx.cancelled.is_set():  # the scheduler's interrupt stopped the group before reaping it
            self.close_output()
            return StepOutcome(ok=False, exit_code=code, interrupted=True, error="interrupted", log=self.log)
        self.close_output()
        return ended(self.ctx, code, self.log, unwritten=self.unwritten)


def ended(
    ctx: StepContext,
    code: int,
    log: str | None,
    timed_out: bool = False,
    worker: str | None = None,
    unwritten: str | None = None,
):
    """A shell step's outcome from how its command ended, wherever it ran (here, or on a Dask worker).
    `unwritten`: the log, when the disk was too full to write it. A command that failed with a declared
    output's device full failed writing there, whatever it printed (or could not print) about it; one that
    did not fail, its log unwritten, fails for that (a full log was cut, so its device is not full any more)."""
    root = ctx.spec.root
    full = full_output(root, ctx.intent.outputs) if code != 0 else None
    if full is not None or unwritten is not None:
        error = words(os.path.join(root, full) if full is not None else str(unwritten), root)
        return StepOutcome(ok=False, exit_code=code, error=error, log=log, worker=worker)
    if timed_out:
        error = f"timed out after {ctx.timeout:g}s; its process group was killed"
        return StepOutcome(ok=False, exit_code=code, timed_out=True, log=log, error=error, worker=worker)
    if code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return StepOutcome(ok=False, exit_code=code, error=f"command {how}", log=log, worker=worker)
    return StepOutcome(ok=True, exit_code=0, log=log, worker=worker)


def _folder(spec, intent) -> str:
    """Where the step's command runs (a project has a few: worked out once each, not at every start)."""
    key = (spec.root, intent.cwd)
    folder = _folders.get(key)
    if folder is None:
        folder = _folders[key] = os.path.normpath(os.path.join(spec.root, intent.cwd))
    return folder


_folders: dict[tuple[str, str], str] = {}  # (root, cwd) -> the folder


def create_ahead(spec, intent, environ, ahead: CreatedAhead) -> None:
    """The step starts soon: make the file its `> file` redirect creates now (spawn.CreatedAhead). A line
    from an adapter or with its own environment is left to `start`, which works those out."""
    if not intent.adapter and not intent.env:
        ahead.make(intent.run, _folder(spec, intent), environ)


def start(ctx: StepContext) -> RunningShell | StepOutcome:
    """Start the step's child without waiting for it (the scheduler waits for many at once)."""
    if ctx.cancelled.is_set():
        return StepOutcome(ok=False, interrupted=True, error="interrupted before it started")
    try:
        line = command_line(ctx)
    except UserError as exc:  # adapter = "auto" that detects nothing, or two toolchains alike
        return StepOutcome(ok=False, error=str(exc))
    env = ctx.environ if ctx.environ is not None else os.environb
    if ctx.intent.env:
        env = dict(env)
        env.update((os.fsencode(k), os.fsencode(v)) for k, v in ctx.intent.env)
    cwd = _folder(ctx.spec, ctx.intent)
    read_end, write_end = os.pipe()
    try:
        proc = start_process(line, cwd, env, write_end, ctx.created_ahead)
    except OSError as exc:
        os.close(read_end)
        return StepOutcome(ok=False, error=f"could not start /bin/sh in {cwd}: {exc.strerror}")
    finally:
        os.close(write_end)
    os.set_blocking(read_end, False)
    ctx.on_process(proc.pid)
    return RunningShell(ctx, proc, line, read_end)


class ShellStep:
    """Shell steps as the scheduler runs them: never held; a child of the scheduler's, or a task on the cluster
    (runner/executors/); the file its line's `> file` creates made while other children run (spawn.CreatedAhead);
    its log is what its gate's candidate patterns read."""

    reported = True
    decided_ahead = True
    versioned = False

    def held(self, run: Scheduler, name: str, decision: Decision) -> str | None:
        return None

    def ahead(self, run: Scheduler, name: str, intent: Intent) -> None:
        # never a file made through a link out of the project: the check its start makes, made now
        escape = run.escapes[name] = run.folders.before_start(intent)
        if escape is None and run.created_ahead is not None:
            create_ahead(run.spec, intent, run.environ, run.created_ahead)

    def start(self, run: Scheduler, name: str, decision: Decision, wake: Callable[..., object]) -> Started:
        intent = run.spec.intents[name]
        escape = run.escapes.pop(name) if name in run.escapes else run.folders.before_start(intent)
        if escape is not None:  # an output or the cwd leads out through a link made since the spec was checked
            return StepOutcome(ok=False, error=escape)
        if run.cluster is not None:  # on the cluster: a future, as an agent step's; no pid here to journal
            run.journals[name] = run.inflight.start(name, 0, list(intent.outputs))
            return run.cluster.submit(run.context(name), decision, wake)
        return start(run.context(name))

    def observed(self, record_dir: Path, name: str, outcome: StepOutcome) -> str | None:
        return outcome.log
