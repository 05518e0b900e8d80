"""The project root, the .runner/ layout, the project lock and the journal of steps in flight."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import time
from json.encoder import encode_basestring_ascii as _json_text  # json.dumps' own, for one str
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .errors import LockHeldError
from .nospace import is_no_space
from .process import boot_time, groups_holding, kill_groups, same_process
from .project_root import locate as locate_str

if TYPE_CHECKING:
    from collections.abc import Callable

STATE_DIR = ".runner"
SPEC_FILE = "intents.toml"  # runner.load takes it from here (a warm run never imports the loader)


class Layout(NamedTuple):
    """Where runner keeps its state in a project."""

    root: Path

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def cache_dir(self) -> str:
        return str(self.state_dir / "cache")

    @property
    def stat_file(self) -> str:
        return str(self.state_dir / "stat")

    @property
    def state_file(self) -> str:
        return str(self.state_dir / "state")

    @property
    def spec_cache(self) -> str:
        return str(self.state_dir / "spec.pickle")

    def spec_cache_of(self, spec_file: str) -> str:
        """The compiled spec of an intents file: intents.toml's is `spec.pickle`; another's (`-f FILE`) has its
        own, so switching files does not compile each one again every time."""
        if spec_file == SPEC_FILE:
            return self.spec_cache
        import hashlib

        return str(self.state_dir / f"spec-{hashlib.sha256(spec_file.encode()).hexdigest()[:16]}.pickle")

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    @property
    def lock_file(self) -> str:
        return str(self.state_dir / "lock")

    def ensure(self) -> None:
        if not self.state_dir.is_dir():
            self.state_dir.mkdir(parents=True, exist_ok=True)
            # .runner/ is machine state: keep it out of the user's commits without asking them to
            (self.state_dir / ".gitignore").write_text("*\n")


class ProjectLock:
    """An flock on .runner/lock; the holder's pid and command are written inside for the message."""

    def __init__(self, layout: Layout, command: str):
        self.layout = layout
        self.command = command
        self.fd: int | None = None
        self.waited = False  # another runner held the lock first: what was read before it is stale

    def holder(self) -> str:
        try:
            info = json.loads(Path(self.layout.lock_file).read_text() or "{}")
        except (OSError, ValueError):
            return "another runner"
        return f"pid {info.get('pid')} ({info.get('command')}, since {info.get('since')})"

    def acquire(self, wait: bool, on_wait=None, timeout: float | None = None) -> None:
        self.layout.ensure()
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise
            holder = self.holder()
            if not wait:
                os.close(fd)
                raise LockHeldError(
                    f"error: {self.layout.root} is locked by {holder}; wait for it, or run "
                    f"again without --no-wait to queue behind it"
                ) from None
            self.waited = True
            if on_wait:
                on_wait(holder)
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if deadline is not None and time.monotonic() > deadline:
                        os.close(fd)
                        raise LockHeldError(f"error: gave up waiting for the lock held by {holder}") from None
                    time.sleep(0.05)
        self.fd = fd
        os.ftruncate(fd, 0)
        about = {"pid": os.getpid(), "host": os.uname().nodename, "command": self.command}
        try:
            os.write(fd, json.dumps({**about, "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        except OSError as exc:  # who holds it is only for the message a second runner prints: the lock holds
            if not is_no_space(exc):
                raise

    def _open(self) -> int:
        """The lock file, opened; one a disk or a person damaged is made again while nobody holds it: a folder
        in its place (runner locks a file, so no runner holds it), another user's that this one may not open
        (a `sudo runner make`'s) when no process holds a lock on it (/proc/locks). One held is left alone: the
        error says whose folder it is."""
        path = self.layout.lock_file
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except IsADirectoryError:
            pass
        except PermissionError:
            if _locked(path):
                raise
        from .damaged import clear

        clear(path)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def __enter__(self) -> ProjectLock:
        self.acquire(wait=True)
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _locked(path: str) -> bool:
    """Whether any process holds a lock on the file at `path`, which this user may not open (/proc/locks lists
    every lock with its file's device and inode)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            held = f.read()
    except OSError:
        return True  # cannot tell: held, as far as anyone may assume
    return f" {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} " in held


def find_root(start: Path, spec_file: str | None = None) -> Path:
    """The nearest folder at or above `start` holding intents.toml (as git finds .git); else `start`. With
    `-f FILE` (`spec_file`, relative to `start`): the folder holding FILE, as paths in it are relative to it."""
    return Path(locate_str(str(start), spec_file)[0])


def locate(start: Path, spec_file: str | None = None) -> tuple[Path, str]:
    """(the project root, the intents file's name in it): find_root's root, and `-f FILE`'s name or intents.toml."""
    root, name = locate_str(str(start), spec_file)
    return Path(root), name


# ---- processes in flight ----------------------------------------------------------------------
# One append-only file. Its head line holds the run's token ("run"), which every child the run starts holds in
# its environment (process.RUN_VAR); a run on a Dask cluster adds the scheduler's address and the token that
# names its tasks on the workers ("cluster"), before any is submitted. Then a "start" line (a key, the process
# group, when it started, the declared outputs) once a process runs, an "end" line once it is settled. A shell
# step's key is its intent, its outputs its declared ones, and its end comes once its result is stored (a step
# on the cluster has process group 0: it has none here); a verify command's or the Codex worker's key is its
# intent, what it is and its pid ("tests verify 4242"), with no outputs (it works in the attempt's own copy), and
# its end comes once it is reaped. A run that ends with every child settled empties the file.
#
# At the next start, a file that is not empty was left by a run that did not settle everything (killed, crashed,
# or interrupted while a child would not stop). Every process group of this user that holds the run's token is
# killed: a child runs a moment before its pid is known and written, and a kill in that moment leaves a child
# no start line names, which the token finds, as it finds what a child moved to a session of its own. So is
# every group a start line without an end names, if its leader is still the process that started then (a
# child that cleared its environment). The run's tasks on a cluster are killed on its workers (a scheduler
# that does not answer is said once). Then the outputs of every start without an end are removed, so no
# half-written file is taken for a result, and the file is emptied. A child killed in that first moment has
# no line naming its outputs: they stay, and cannot pass for a result either (its step has no record of what
# they hold, so the next run runs it, or puts the recorded bytes back). Appends of a line each (one write(2)
# with O_APPEND, so lines from the scheduler and from agent threads never interleave), no fsync: a line lost
# with the machine's power had no process left to kill, and an output it named is one the freshness rule
# does not trust.


class InflightJournal:
    def __init__(self, layout: Layout):
        self.path = layout.state_dir / "inflight"
        self.token = os.urandom(16).hex()  # the run's: RUN_VAR in every child's environment (process.with_token)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        try:  # before any child starts: without it, a kill's orphans could not be found by their token
            os.write(self.fd, (json.dumps({"run": self.token}) + "\n").encode())
        except OSError as exc:
            os.close(self.fd)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None  # the error names the journal

    def cluster(self, address: str, token: str) -> None:
        """The run's steps go to the Dask scheduler at `address`, their commands named on the workers by `token`."""
        os.write(self.fd, (json.dumps({"cluster": address, "token": token}) + "\n").encode())

    def start(self, key: str, pid: int, outputs: list[str]) -> str:
        # when the child was started: recovery kills the group only if the process now holding that pid
        # started then (process.same_process). The line is json.dumps' of {"start", "pgid", "started",
        # "outputs"}, made without its encoder's general path: a clean build writes one a step.
        self._append(
            f'{{"start": {_json_text(key)}, "pgid": {pid}, "started": {boot_time()!r}, '
            f'"outputs": [{", ".join(map(_json_text, outputs))}]}}\n'.encode()
        )
        return key

    def end(self, *keys: str) -> None:
        """The steps' children were reaped and their ends settled: one write for all of them."""
        if keys:
            self._append("".join(f'{{"end": {_json_text(key)}}}\n' for key in keys).encode())

    def _append(self, line: bytes) -> None:
        """A line the disk has no room for is left out: a start line missing, the run's token still finds the
        child; an end line missing, the next start removes outputs the cache holds (or that their step makes
        again). A full disk is then said by the write that cannot do without its bytes."""
        try:
            os.write(self.fd, line)
        except OSError as exc:
            if not is_no_space(exc):
                raise

    def close(self, settled: bool) -> None:
        """`settled`: every child the run started was waited for and its step ended, so nothing here is
        left to recover; emptied, the next run's start does not parse a 10,000-step build's journal."""
        if settled:
            os.ftruncate(self.fd, 0)
        os.close(self.fd)


def recover_inflight(layout: Layout, stop_cluster: Callable[[str, str], str | None]) -> list[str]:
    """Clean up after the processes a killed runner left running (above); returns what is worth saying.
    `stop_cluster(address, token)`: kill the run's tasks on that Dask cluster and say how it went, None: nothing
    to say (the command brings it, executors.stop_abandoned: the core does not import the executors)."""
    started: dict[str, dict] = {}
    tokens: list[str] = []
    clusters: list[tuple[str, str]] = []
    path = layout.state_dir / "inflight"
    try:
        with open(path, "rb") as f:  # bytes: a damaged line must not stop the rest
            for line in f:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line torn by the crash, or damaged (not UTF-8, not JSON)
                if not isinstance(entry, dict):
                    continue
                if "start" in entry:
                    started[entry["start"]] = entry
                elif isinstance(end := entry.get("end"), str):
                    started.pop(end, None)
                elif isinstance(token := entry.get("run"), str) and token:
                    tokens.append(token)
                elif isinstance(address := entry.get("cluster"), str) and isinstance(entry.get("token"), str):
                    clusters.append((address, entry["token"]))
    except FileNotFoundError:
        return []
    if not (started or tokens or clusters):
        return []  # a run that settled everything: nothing to scan for
    alive = {
        e["pgid"]
        for e in started.values()
        if e.get("pgid") and e.get("started") is not None and same_process(e["pgid"], e["started"])
    }
    for token in tokens:
        alive |= groups_holding(token)
    kill_groups(sorted(alive))  # all at once: one grace for all of them
    said: list[str] = []
    for address, token in clusters:  # before the outputs go: a task still running would write them again
        if (message := stop_cluster(address, token)) is not None:
            said.append(message)
    from .confine import remove  # a recovery's alone
    from .names import split

    root = str(layout.root)
    for name, entry in started.items():
        # through folders opened as a run removes a failed step's outputs: never through a link out of the project
        # (one made since the crash), nor, for a sub-project's step, out of its folder
        folder = split(name)[0] if isinstance(name, str) else ""
        outputs = entry.get("outputs")
        for rel in outputs if isinstance(outputs, list) else ():
            if isinstance(rel, str):
                remove(root, rel, folder)
    os.truncate(path, 0)  # recovered: a later start that runs nothing must not do it again
    return said


def is_terminal(stream=None) -> bool:
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def at_terminal() -> bool:
    """A human is there: stdin, stdout and stderr are all a terminal (so a question can be asked)."""
    return is_terminal(sys.stdout) and is_terminal(sys.stderr) and is_terminal(sys.stdin)
