"""`python -m runner ARGS` for the tests' helpers, without an interpreter's start and runner's imports each time
(~0.2 s a call, ~2,500 calls a suite): the runner's own entry point (`runner.entry.console`) in a process forked
from a copy of the test process made before any test ran, with the argv, folder, environment and standard
streams a fresh process would have.

The copy (the "zygote", as Android starts its apps) is forked once per test process (`start`, from
tests/conftest.py's pytest_configure). It closes every file the test process had open and takes the signal
handlers, warning filters and hooks an interpreter starts with; at its first call it forgets every runner module
and imports them anew; then it only forks, one process a call. So each runner starts from runner's state as
imported, whatever the tests did in-process (module caches, the proof a failed no-op hands the pipeline, the
run's mask, handlers, the folder it changed to), in a process with one thread and no file but its standard
streams, as a fresh one. It is a real process: its own pid, children and process-group membership, pipes at the
file-descriptor level for stdout and stderr (what steps and `os.write` print is captured too), /dev/null or the
given bytes on stdin, its exit code from `waitpid`, SIGKILL on a timeout or when the test is interrupted.

What it cannot give is a fresh interpreter: the tests that fence the no-op's imports, time the start or run
`python -X ...` start real processes, and a call whose environment would start an interpreter otherwise (a
PYTHON*, LANG or LC_* variable unlike this process's, but for PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE, which
the forked runner takes as an interpreter would) gets one here. `RUNNER_TESTS_SUBPROCESS=1` gives every call a
real `python -m runner` (to check the suite's results without this helper).
"""

from __future__ import annotations

import gc
import importlib
import io
import locale
import os
import pickle
import pkgutil
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

RUNNER_MAIN = str(Path(__file__).resolve().parents[1] / "runner" / "__main__.py")
SUBPROCESS = os.environ.get("RUNNER_TESTS_SUBPROCESS", "") not in ("", "0")
# the variables that change how an interpreter starts: a call that sets them otherwise gets a real one, but for
# the two the forked runner takes as an interpreter would (its streams unbuffered, no bytecode written)
_STARTUP = ("PYTHON", "LANG", "LC_")
_TAKEN = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
ENCODING = locale.getpreferredencoding(False)  # what a fresh interpreter's standard streams and subprocess's text use
_DEFAULT_FILTERS = [  # CPython's, for a release build without -W or -X dev (lowest priority first)
    ("ignore", ResourceWarning),
    ("ignore", ImportWarning),
    ("ignore", PendingDeprecationWarning),
    ("ignore", DeprecationWarning),
]
_LONG = struct.Struct("q")

_control: socket.socket | None = None  # this process's end of the line to the zygote
_zygote_pid: int | None = None


def start() -> None:
    """Fork the zygote (once a test process; the xdist controller, which runs no test, needs none)."""
    global _control, _zygote_pid
    if SUBPROCESS or _control is not None:
        return
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fresh_path = _fresh_path()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            ours.close()
            _zygote(theirs, fresh_path)
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    _control, _zygote_pid = ours, pid


def run(
    args: Sequence[str],
    cwd: str | os.PathLike,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: bytes | str | None = None,
) -> subprocess.CompletedProcess:
    """As `subprocess.run([sys.executable, "-m", "runner", *args], cwd=cwd, env=env, timeout=timeout,
    capture_output=True, text=True, stdin=subprocess.DEVNULL)`, or with `input=input`."""
    argv = [sys.executable, "-m", "runner", *args]
    env = dict(os.environ if env is None else env)
    if not SUBPROCESS and _control is None:
        start()
    if SUBPROCESS or _starts_differently(env) or _control is None:
        return _subprocess(argv, cwd, env, timeout, input)
    cwd = os.fspath(cwd)
    if not os.path.isdir(cwd):
        raise FileNotFoundError(2, "No such file or directory", cwd)  # as subprocess says it
    data = input.encode(ENCODING) if isinstance(input, str) else input
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if data is not None else (os.open(os.devnull, os.O_RDONLY), None)
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            socket.send_fds(_control, [b"run"], [theirs.fileno(), in_r, out_w, err_w])
        except OSError:  # the zygote is gone: a real process, as without it
            for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
                if fd is not None:
                    os.close(fd)
            return _subprocess(argv, cwd, env, timeout, input)
        finally:
            theirs.close()
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        request = pickle.dumps((list(args), cwd, env))
        mine.sendall(_LONG.pack(len(request)) + request)
        message, fds, _, _ = socket.recv_fds(mine, _LONG.size, 1)
        if len(message) != _LONG.size or len(fds) != 1:
            raise RuntimeError("tests/runner_cli.py: the zygote did not start the runner")
        pidfd = fds[0]
        finished = False
        try:
            out, err = _communicate(out_r, err_r, in_w, data, timeout, argv)
            status = _LONG.unpack(_read_exactly(mine, _LONG.size))[0]
            finished = True
        finally:
            if not finished:  # a timeout, or the test interrupted (pytest-timeout, Ctrl-C): no runner outlives it
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.close(pidfd)
    finally:
        mine.close()
    return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), _decode(out), _decode(err))


def _subprocess(argv, cwd, env, timeout, input) -> subprocess.CompletedProcess:
    stdin = None if input is not None else subprocess.DEVNULL
    return subprocess.run(
        argv, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True, input=input, stdin=stdin
    )


def _starts_differently(env: Mapping[str, str]) -> bool:
    names = {k for k in (*env, *os.environ) if k.startswith(_STARTUP) and k not in _TAKEN}
    return any(env.get(k) != os.environ.get(k) for k in names)


def _decode(data: bytes) -> str:
    # as subprocess's text mode: the locale's encoding, strict, universal newlines
    return data.decode(ENCODING).replace("\r\n", "\n").replace("\r", "\n")


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise RuntimeError("tests/runner_cli.py: the zygote went away before the runner's exit status")
        data += chunk
    return data


def _communicate(out_r, err_r, in_w, data, timeout, argv) -> tuple[bytes, bytes]:
    """Both pipes read to their end (every process holding them gone, as subprocess's communicate waits), the
    input written as the runner reads it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    view = memoryview(data or b"")
    with selectors.DefaultSelector() as selector:
        selector.register(out_r, selectors.EVENT_READ)
        selector.register(err_r, selectors.EVENT_READ)
        if in_w is not None:
            if view:
                os.set_blocking(in_w, False)
                selector.register(in_w, selectors.EVENT_WRITE)
            else:
                os.close(in_w)
                in_w = None
        try:
            while selector.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    out, err = b"".join(chunks[out_r]), b"".join(chunks[err_r])
                    raise subprocess.TimeoutExpired(argv, timeout, out, err)
                for key, _ in selector.select(left):
                    if key.fd == in_w:
                        try:
                            view = view[os.write(in_w, view[:65536]) :]
                        except BrokenPipeError:
                            view = view[:0]
                        if not view:
                            selector.unregister(in_w)
                            os.close(in_w)
                            in_w = None
                        continue
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        chunks[key.fd].append(chunk)
                    else:
                        selector.unregister(key.fd)
        finally:
            for fd in (out_r, err_r, in_w):
                if fd is not None:
                    os.close(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _fresh_path() -> list[str]:
    """sys.path of a fresh `python -m runner` after its first entry (the folder it runs in): no test folder."""
    shown = "import sys; print('\\n'.join(sys.path[1:]))"
    return subprocess.run([sys.executable, "-c", shown], capture_output=True, text=True, check=True).stdout.splitlines()


# ---- the zygote ------------------------------------------------------------------------------------------------


def _zygote(control: socket.socket, fresh_path: list[str]) -> None:
    """Made like a fresh interpreter once, then a fork for each request until the test process goes away."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    gc.collect()  # garbage holding a file closes it now, not after the number is reused below
    os.closerange(3, control.fileno())
    os.closerange(control.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
    _fresh_interpreter()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the test process's to act on; runners get theirs
    imported = False
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the caller's line)
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _, _ = socket.recv_fds(control, 16, 4)
                    if not message:
                        return  # the test process is gone
                    if not imported:  # at the first call: a test process that starts no runner pays nothing
                        _import_runner()
                        imported = True
                    pidfd, pid, line = _fork_runner(control, selector, fds, fresh_path)
                    if pidfd is not None:
                        waiting[pidfd] = (pid, line)
                        selector.register(pidfd, selectors.EVENT_READ)
                else:
                    pid, line = waiting.pop(key.fd)
                    selector.unregister(key.fd)
                    os.close(key.fd)
                    _, status = os.waitpid(pid, 0)
                    try:
                        line.sendall(_LONG.pack(status))
                    except OSError:
                        pass  # the caller gave up on it (a timeout, an interrupted test)
                    line.close()


def _import_runner() -> None:
    """Every runner module imported anew (~1 s, once): runner's state as imported, whatever the test process did
    with it before the zygote was made, and nothing for a runner to import again."""
    for name in [n for n in sys.modules if n == "runner" or n.startswith("runner.")]:
        del sys.modules[name]
    import runner

    for module in pkgutil.walk_packages(runner.__path__, "runner."):
        try:
            importlib.import_module(module.name)
        except Exception:  # noqa: BLE001 - a runner that imports it fails the same way, and says so
            pass


def _fork_runner(control, selector, fds, fresh_path):
    line = socket.socket(fileno=fds[0])
    stdio = fds[1:]
    try:
        size = _LONG.unpack(_read_exactly(line, _LONG.size))[0]
        args, cwd, env = pickle.loads(_read_exactly(line, size))
    except (OSError, RuntimeError, ValueError):
        for fd in stdio:
            os.close(fd)
        line.close()
        return None, None, None
    pid = os.fork()
    if pid == 0:
        _runner(args, cwd, env, stdio, fresh_path)  # never returns
    for fd in stdio:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    try:
        socket.send_fds(line, [_LONG.pack(pid)], [pidfd])
    except OSError:
        pass  # the caller is gone: the runner still runs to its end and is reaped
    return pidfd, pid, line


def _runner(args: list[str], cwd: str, env: dict[str, str], stdio: list[int], fresh_path: list[str]):
    """The forked runner: its standard streams, folder, environment, sys.path and argv as a fresh `python -m
    runner ARGS` in `cwd` has them, then the console script, which ends the process with os._exit."""
    code = 70
    try:
        for fd, target in zip(stdio, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the zygote's lines and the other calls' (objects never freed)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.path[:] = [os.getcwd(), *fresh_path]
        sys.argv = [RUNNER_MAIN, *args]
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), ENCODING)
        sys.stdout = _writer(1, "strict", unbuffered=bool(env.get("PYTHONUNBUFFERED")))
        sys.stderr = _writer(2, "backslashreplace", unbuffered=bool(env.get("PYTHONUNBUFFERED")))
        from runner.entry import console

        console()
    except BaseException:  # noqa: BLE001 - as an interpreter reports what escaped its main module
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            code = 1
    finally:
        os._exit(code)


def _writer(fd: int, errors: str, unbuffered: bool) -> io.TextIOWrapper:
    """sys.stdout or sys.stderr on a pipe, as an interpreter makes it: block-buffered (stderr by line), or with
    PYTHONUNBUFFERED each write goes straight to the pipe (a runner killed mid-run has printed what it printed)."""
    raw = io.FileIO(fd, "w", closefd=False)
    if unbuffered:
        return io.TextIOWrapper(raw, ENCODING, errors, line_buffering=fd == 2, write_through=True)  # type: ignore[type-var]
    return io.TextIOWrapper(io.BufferedWriter(raw), ENCODING, errors, line_buffering=fd == 2)


def _fresh_interpreter() -> None:
    """The signal handlers and mask, warning filters and hooks an interpreter starts with: pytest's, xdist's and
    pytest-timeout's go (itimers are not inherited by a fork)."""
    import faulthandler

    faulthandler.disable()
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if sig == signal.SIGINT:
                signal.signal(sig, signal.default_int_handler)
            elif sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_IGN)
            else:
                signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    sys.excepthook = sys.__excepthook__
    sys.unraisablehook = sys.__unraisablehook__
    threading.excepthook = threading.__excepthook__
    # warnings: pytest records them into a list during a test; an interpreter prints them to stderr
    warnings.resetwarnings()
    for action, category in _DEFAULT_FILTERS:
        warnings.simplefilter(action, category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    del sys.modules["warnings"]
    pristine = importlib.import_module("warnings")  # a fresh copy of the module: its own way of showing
    sys.modules["warnings"] = warnings
    warnings._showwarnmsg_impl = pristine._showwarnmsg_impl  # type: ignore[attr-defined]
    warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
