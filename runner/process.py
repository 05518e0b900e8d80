"""A child process group's life, for every process runner starts (shell steps, verify commands, the Codex worker):
started as the leader of its own session with stdin closed, journaled while it runs so that a crashed runner's
next start kills it (or, where no journal records it, tethered: it dies with the process that started it),
waited for against a wall-clock timeout and a cancel event, and killed as a whole group (SIGTERM, a grace,
SIGKILL) by one function, `kill_groups`. Linux only: pidfd, /proc and CLOCK_BOOTTIME.

Shell steps start through steps/spawn.py (posix_spawn: a 10,000-step build starts 10,000 of them, and Popen
costs more than the step) and are journaled by the scheduler with their outputs; they share the kill and the
recovery. Verify commands and the Codex worker start here (`start`), as a `Group`.

Every child a journaled run starts holds the run's token in its environment (RUN_VAR): a child runs a moment
before its pid is known and journaled, and a runner killed in that moment leaves a child no journal line names;
the next start finds it by the token (`groups_holding`).

A group no journal records (a step's command on a Dask worker, an agent attempt's verify commands and Codex
there, a question asked outside any step) has no next start to stop it: it is tethered instead. Its leader is a
small shell (TETHER) that runs the command as its child, beside a watcher that reads a pipe whose one write end
the starting process holds; the kernel closes that end however the starter dies (SIGKILL, a crash), and the
watcher, reading end-of-file, kills the whole group. A parent-death signal (PR_SET_PDEATHSIG) would reach the
leader alone, fire when the *thread* that forked it exits (Dask runs tasks on a thread pool), and be lost on a
shell started with that signal ignored (a worker under nohup); the pipe depends on none of these.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import subprocess
    import threading
    from collections.abc import Iterable, Mapping, Sequence

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL: enough to flush and exit, short enough for Ctrl-C
CANCEL_POLL = 0.1  # seconds: how late a wait notices its cancel event (an Event has no fd to select on)
SAME_PROCESS_WINDOW = 1.0  # seconds between our clock reading at the start and the kernel's start time
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RUN_VAR = "RUNNER_RUN"  # NAME=token in the environment of every child of a run: never in a step's key or record

# The leader of a tethered group: `sh -c TETHER sh STDIN COMMAND...`, the tether's read end as its stdin (dash, the
# usual /bin/sh, names no fd past 9 in a redirection, and Popen keeps a passed fd at its own number: stdin is the
# one place to put it). The watcher is a child of this shell, in its group: it reads the tether, which no one
# writes, so its `read` ends only at end-of-file, when the starter is gone, and then it kills the group. The
# command runs in the foreground with its own stdin (a path: /dev/null, or /dev/fd/N for a pipe the caller
# writes), its stderr (kept on fd 4 while this shell's own goes to /dev/null: dash would print "Killed" or
# "Segmentation fault" there; a subshell applies the redirections, as dash would in this shell for a plain
# command) and every signal as it would have it. SIGTERM is caught so that kill_groups' grace
# is the command's: this shell exits once the command has. A command a signal ended is reported as ended by that
# signal (raised again on this shell, SIGHUP to SIGTERM, no core file), as it would be untethered; a normal end
# kills the watcher first, so the group is left as the command left it, as an untethered step's is.
TETHER = (
    "stdin=$1; shift; trap : TERM; exec 3<&0 4>&2 2>/dev/null; "
    "{ read _ <&3; kill -KILL 0; } >/dev/null 4>&- & watcher=$!; "
    'exec 3<&-; (exec "$@" <"$stdin" 2>&4 4>&-); code=$?; kill -KILL $watcher; wait $watcher; '
    "if [ $code -gt 128 ] && [ $code -lt 144 ]; then trap - TERM; ulimit -c 0; kill -$((code - 128)) $$; fi; "
    "exit $code"
)


class Journal(Protocol):
    """Where a started process is recorded until it is reaped (workspace.InflightJournal)."""

    token: str  # the run's: every child it starts holds RUN_VAR=token in its environment

    def start(self, key: str, pid: int, outputs: list[str]) -> str: ...

    def end(self, *keys: str) -> None: ...


def kill_groups(pgids: Iterable[int], grace: float = KILL_GRACE) -> None:
    """Stop whole process groups: SIGTERM to each, up to `grace` seconds (shared) for their leaders to exit,
    then SIGKILL to each group, so nothing a leader leaves behind survives it. Every process runner kills
    goes through here: a step's timeout, Ctrl-C, a verify or Codex attempt cut short, recovery after a crash.

    Each pgid is its leader's pid, and the caller vouches that it is still the group it started: the leader
    is the caller's child and not yet reaped (until then its pid, hence the group id, cannot go to anyone
    else), or `same_process` has just matched it to a journal entry. Leaders are not reaped here.
    """
    waiting: list[int] = []  # pidfds of the leaders signalled, readable once they have exited
    signalled: list[int] = []
    try:
        for pgid in pgids:
            try:
                # before the signal: a leader that exits at once would leave no pid to open
                pidfd = os.pidfd_open(pgid)
            except OSError:
                pidfd = None  # the leader is reaped; its group may still have members
            try:
                os.killpg(pgid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                if pidfd is not None:
                    os.close(pidfd)
                continue
            signalled.append(pgid)
            if pidfd is not None:
                waiting.append(pidfd)
        deadline = time.monotonic() + grace
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(waiting, [], [], left)
            for pidfd in ready:
                waiting.remove(pidfd)
                os.close(pidfd)
    finally:
        for pidfd in waiting:
            os.close(pidfd)
    for pgid in signalled:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def boot_time() -> float:
    """Now on the clock /proc/PID/stat's start times count from, as a journal entry records it (reading
    /proc at a shell step's start would cost more than the step)."""
    return round(time.clock_gettime(time.CLOCK_BOOTTIME), 3)


def started_at(pid: int) -> float | None:
    """When process `pid` started, in seconds on CLOCK_BOOTTIME, or None if there is no such process."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return int(os.read(fd, 4096).rsplit(b")", 1)[1].split()[19]) / _CLOCK_TICKS
        finally:
            os.close(fd)
    except (OSError, IndexError, ValueError):
        return None


def same_process(pid: int, started: float) -> bool:
    """Is `pid` still the process a journal saw start at `started` (boot_time), not a later one given its pid?"""
    alive_since = started_at(pid)
    return alive_since is not None and abs(alive_since - started) < SAME_PROCESS_WINDOW


def groups_holding(token: str) -> set[int]:
    """The process groups of this user's live processes whose environment holds RUN_VAR=token (a run's children,
    and what they started, unless it cleared its environment), but for our own group. One pass over /proc:
    recovery after a crash, never a step's start. A group id stays its group's while any member lives, so a
    group found here is still that group when `kill_groups` signals it a moment later."""
    needle = f"{RUN_VAR}={token}".encode()
    uid, mine = os.getuid(), os.getpgid(0)
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:  # empty for a zombie: it holds nothing to kill
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                pgid = int(f.read().rsplit(b")", 1)[1].split()[2])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if pgid != mine:  # a runner started by the killed run's step is one of its children: not itself
            found.add(pgid)
    return found


def with_token(env: Mapping[str, str] | Mapping[bytes, bytes], token: str) -> dict:
    """`env` with RUN_VAR=token in place of any it held (an outer run's, when a step runs runner)."""
    out: dict = {k: v for k, v in env.items() if k != RUN_VAR and k != RUN_VAR.encode()}
    out[RUN_VAR] = token  # Popen encodes each name and value, str or bytes
    return out


class Group:
    """A child started by `start`: the leader of its own process group, journaled until it is reaped.

    A pidfd on the leader, opened while it cannot have been reaped, is what `wait` watches; `wait` and
    `exited` never reap, so the group id stays the leader's until `reap`, and `kill` cannot reach a
    stranger that was given the same pid."""

    def __init__(self, proc: subprocess.Popen[bytes], journal: Journal | None, label: str, tether: int | None = None):
        self.proc = proc
        self.pid = proc.pid
        self._tether = tether  # the write end of a tethered group's pipe: closed once the leader is reaped
        self._pidfd: int | None = os.pidfd_open(proc.pid)
        self._journal = journal
        self._key = journal.start(f"{label} {proc.pid}", proc.pid, []) if journal is not None else None

    def exited(self) -> bool:
        """Has the leader exited? (It stays a zombie, holding its pid, until `reap`.)"""
        if self._pidfd is None:
            return True
        ready, _, _ = select.select([self._pidfd], [], [], 0)
        return bool(ready)

    def wait(self, timeout: float | None, cancel: threading.Event | None = None) -> str | None:
        """Block until the leader exits (None), `timeout` seconds pass ("timeout") or `cancel` is set
        ("cancelled"). The leader is not reaped: `kill` may follow."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pidfd is not None:
            step = None if cancel is None else CANCEL_POLL
            if deadline is not None:
                left = max(0.0, deadline - time.monotonic())
                step = left if step is None else min(step, left)
            ready, _, _ = select.select([self._pidfd], [], [], step)
            if ready:
                return None
            if cancel is not None and cancel.is_set():
                return "cancelled"
            if deadline is not None and time.monotonic() >= deadline:
                return "timeout"
        return None

    def kill(self, grace: float = KILL_GRACE) -> None:
        """Stop the whole group (kill_groups); then `reap`."""
        if self._pidfd is not None:
            kill_groups([self.pid], grace)

    def reap(self, timeout: float | None = None) -> int | None:
        """Collect the leader's exit status and end its journal entry (None: still running after `timeout`)."""
        import subprocess

        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self._untether()
        if self._key is not None and self._journal is not None:
            self._journal.end(self._key)
            self._key = None
        return code

    def _untether(self) -> None:
        """Let go of the tether (reap does, once the leader is gone): a watcher still reading it kills the group."""
        if self._tether is not None:
            os.close(self._tether)
            self._tether = None


def start(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike,
    env: Mapping[str, str] | Mapping[bytes, bytes],
    stdout: int | IO,
    stderr: int | IO,
    journal: Journal | None,
    label: str,
    stdin_pipe: bool = False,
) -> Group:
    """Start `argv` as the leader of a new session (no terminal signal reaches it: runner stops it itself),
    stdin /dev/null, or a pipe the caller writes and closes (`stdin_pipe`), recorded in `journal` under
    `label` and its pid, with the journal's run token in its environment; with no journal, tethered (TETHER).
    Raises OSError when it cannot start."""
    import subprocess

    if journal is not None:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=with_token(env, journal.token),
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        tether = None
    else:
        proc, tether = _start_tethered(argv, cwd, env, stdout, stderr, stdin_pipe)
    try:
        return Group(proc, journal, label, tether)
    except BaseException:
        kill_groups([proc.pid], grace=0)  # an error between the start and the journal must not leave it running
        proc.wait()
        if tether is not None:
            os.close(tether)
        raise


def _start_tethered(argv, cwd, env, stdout, stderr, stdin_pipe: bool) -> tuple[subprocess.Popen[bytes], int]:
    """`argv` under a TETHER leader: (the leader, the tether's write end, which only this process holds)."""
    import subprocess

    program = _program(os.fsdecode(argv[0]), cwd, env)
    tether_r, tether_w = os.pipe()  # both close-on-exec: no other child of this process inherits the write end
    feed_r = feed_w = None
    try:
        stdin_path, passed = os.devnull, [tether_r]
        if stdin_pipe:  # the caller's pipe reaches the command as /dev/fd/N: fd 0 carries the tether
            feed_r, feed_w = os.pipe()
            stdin_path = f"/dev/fd/{feed_r}"
            passed.append(feed_r)
        proc = subprocess.Popen(
            ["/bin/sh", "-c", TETHER, "sh", stdin_path, program, *argv[1:]],
            cwd=cwd,
            env=env,
            stdin=tether_r,
            stdout=stdout,
            stderr=stderr,
            pass_fds=passed,
            start_new_session=True,
        )
    except BaseException:
        for fd in (tether_w, feed_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (tether_r, feed_r):
            if fd is not None:
                os.close(fd)
    if feed_w is not None:  # the caller writes the command's stdin as Popen's own pipe
        proc.stdin = open(feed_w, "wb")  # noqa: SIM115 - Popen's stdin, closed by the caller as Popen's is
    return proc, tether_w


def _program(name: str, cwd, env) -> str:
    """The file `name` starts, found as Popen finds it (in `env`'s PATH, or from `cwd` for a name with a slash):
    the tether's shell would say a missing program on the command's stderr and exit 127, where Popen raises."""
    import shutil

    if "/" in name:
        found = name if os.access(os.path.join(cwd, name), os.X_OK) else None
    else:
        found = shutil.which(name, path=os.fsdecode(env.get("PATH", env.get(b"PATH", os.defpath))))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return found
