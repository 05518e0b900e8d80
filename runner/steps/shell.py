"""Shell steps: one shell line (or an adapter command) in the project, its own process group, a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ..errors import UserError
from . import StepContext, StepOutcome

KILL_GRACE = 2.0


def adapter_commands(ctx: StepContext) -> dict:
    """The intent's adapter commands as they run in this project (variants detected, vars filled)."""
    from ..adapters import resolve

    if not ctx.intent.adapter:
        return {}
    return resolve(ctx.intent.adapter, Path(ctx.spec.root), ctx.spec.adapters).commands


def command_line(ctx: StepContext) -> str:
    """`run` is a shell line, or the name of one of the intent's adapter commands."""
    cmd = adapter_commands(ctx).get(ctx.intent.run) if ctx.intent.adapter else None
    return cmd.run if cmd else ctx.intent.run


def kill_group(pgid: int, grace: float = KILL_GRACE, proc: subprocess.Popen | None = None) -> None:
    """SIGTERM the whole group, then SIGKILL what is left after the grace period."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if proc is not None:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class RunningShell:
    """A shell step in flight: its child in its own process group, its log, its deadline."""

    def __init__(self, ctx: StepContext, proc: subprocess.Popen, line: str):
        self.ctx = ctx
        self.proc = proc
        self.line = line
        self.started = time.monotonic()
        self.deadline = self.started + ctx.timeout if ctx.timeout else None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def timed_out(self) -> StepOutcome:
        kill_group(self.proc.pid, proc=self.proc)
        self.proc.wait()
        return StepOutcome(ok=False, exit_code=self.proc.returncode, timed_out=True,
                           error=f"timed out after {self.ctx.timeout:g}s; its process group was killed")

    def finished(self, code: int) -> StepOutcome:
        if self.ctx.cancelled.is_set():
            kill_group(self.proc.pid, grace=0.2)
            return StepOutcome(ok=False, exit_code=code, interrupted=True, error="interrupted")
        if code != 0:
            how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
            return StepOutcome(ok=False, exit_code=code, error=f"command {how}")
        return StepOutcome(ok=True, exit_code=0)


def start(ctx: StepContext) -> RunningShell | StepOutcome:
    """Start the step's child without waiting for it (the scheduler waits for many at once)."""
    if ctx.cancelled.is_set():
        return StepOutcome(ok=False, interrupted=True, error="interrupted before it started")
    try:
        line = command_line(ctx)
    except UserError as exc:  # adapter = "auto" that detects nothing, or two toolchains alike
        return StepOutcome(ok=False, error=str(exc))
    env = None
    if ctx.intent.env:
        env = dict(os.environ)
        env.update(dict(ctx.intent.env))
    cwd = os.path.join(ctx.spec.root, ctx.intent.cwd)
    with open(ctx.log_path, "wb") as log:
        log.write(f"$ {line}\n".encode())
        log.flush()
        try:
            # close_fds=False is safe (Python opens every fd non-inheritable) and skips a walk of /proc/self/fd
            proc = subprocess.Popen(["/bin/sh", "-c", line], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True, close_fds=False)
        except OSError as exc:
            return StepOutcome(ok=False, error=f"could not start /bin/sh in {cwd}: {exc.strerror}")
    ctx.on_process(proc.pid)
    return RunningShell(ctx, proc, line)


class ShellStep:
    def run(self, ctx: StepContext) -> StepOutcome:
        """The blocking form of start(): run, wait (with the timeout), judge."""
        running = start(ctx)
        if isinstance(running, StepOutcome):
            return running
        try:
            code = running.proc.wait(ctx.timeout)
        except subprocess.TimeoutExpired:
            return running.timed_out()
        return running.finished(code)
