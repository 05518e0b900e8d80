"""Starting a shell step's process: `/bin/sh -c LINE`, or the command itself when the line needs no shell."""

from __future__ import annotations

import os
import select
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

# A line of plain words, optionally ending in one `> file` or `>> file`, means the same to /bin/sh as
# the command started with that file as its stdout. make runs a line without shell syntax itself for the
# same reason: starting the shell as well costs as much as a small command does.
_PLAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=+@%,-")
_SHELL_WORDS = frozenset(
    [
        "!",
        ".",
        ":",
        "[",
        "[[",
        "alias",
        "bg",
        "break",
        "builtin",
        "case",
        "cd",
        "command",
        "continue",
        "do",
        "done",
        "echo",
        "elif",
        "else",
        "esac",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fc",
        "fg",
        "fi",
        "for",
        "function",
        "getopts",
        "hash",
        "if",
        "in",
        "jobs",
        "kill",
        "let",
        "local",
        "printf",
        "pwd",
        "read",
        "readonly",
        "return",
        "select",
        "set",
        "shift",
        "source",
        "test",
        "then",
        "time",
        "times",
        "trap",
        "true",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "until",
        "wait",
        "while",
    ]
)


def plain_command(line: str) -> tuple[list[str], str | None, bool] | None:
    """(argv, stdout file, append) for a line that needs no shell, else None. The scheduler asks twice for
    the steps that start next (their redirects made ahead, then their starts): the last few answers are kept."""
    plain = _plain.get(line, _UNSEEN)
    if plain is _UNSEEN:
        if len(_plain) >= 64:  # a few lines ahead of the starts is all it takes; a 100,000-step run keeps none
            _plain.clear()
        plain = _plain[line] = _parse_plain(line)
    return plain  # type: ignore[return-value]


_UNSEEN = object()
_plain: dict[str, tuple[list[str], str | None, bool] | None] = {}  # line -> its answer, never changed by callers


def _parse_plain(line: str) -> tuple[list[str], str | None, bool] | None:
    if "\n" in line:
        return None
    words = line.split()
    target, append = None, False
    if len(words) >= 3 and words[-2] in (">", ">>"):
        target, append = words[-1], words[-2] == ">>"
        words = words[:-2]
    if not words or words[0] in _SHELL_WORDS or "=" in words[0]:
        return None  # a builtin, a keyword or an assignment: the shell's own
    for word in words if target is None else words + [target]:
        if not _PLAIN_CHARS.issuperset(word):
            return None
    return words, target, append


class SpawnedChild:
    """A child from posix_spawn, with the part of Popen's interface the scheduler uses."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if timeout is not None:
            pidfd = os.pidfd_open(self.pid)
            try:
                ready, _, _ = select.select([pidfd], [], [], timeout)
            finally:
                os.close(pidfd)
            if not ready:
                import subprocess

                raise subprocess.TimeoutExpired(str(self.pid), timeout)
        _pid, status = os.waitpid(self.pid, 0)
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def start_process(
    line: str, cwd: str, env, output_fd: int, ahead: CreatedAhead | None = None
) -> SpawnedChild | subprocess.Popen:
    """The step's process in its own session, stdin from /dev/null, stdout and stderr to `output_fd`;
    `env` maps bytes to bytes."""
    plain = plain_command(line) if _may_skip_shell(cwd, env) else None
    if plain is not None and plain[1] is not None and ahead is not None:
        ahead.claim(plain[1])  # started here or by the shell, the step owns the file from now on
    program = _program(plain[0][0]) if plain is not None else None
    if plain is not None and program is not None:
        argv, target, append = plain
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, output_fd, 1),
            (os.POSIX_SPAWN_DUP2, output_fd, 2),
        ]
        if target is not None:
            mode = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
            actions.append((os.POSIX_SPAWN_OPEN, 1, target, mode, 0o666))
        try:
            # SIGPIPE and SIGXFSZ back to their defaults, as Popen's restore_signals does (Python ignores them)
            return SpawnedChild(
                os.posix_spawn(
                    program, argv, env, file_actions=actions, setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ)
                )
            )
        except OSError:
            pass  # gone since it was looked up, the redirect's folder missing: the shell says so, as always
    import subprocess  # only for a line that needs the shell: a plain make never imports it

    # close_fds=False is safe (Python opens every fd non-inheritable) and skips a walk of /proc/self/fd
    return subprocess.Popen(
        ["/bin/sh", "-c", line],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output_fd,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=False,
    )


_programs: dict[tuple[str, str], str] = {}  # (PATH, name) -> the file it starts


def _program(name: str) -> str | None:
    """The file `name` starts, looked up in PATH once per process (None: not there). posix_spawnp would look
    it up in the child, trying execve in each folder on PATH before the right one while the parent waits (vfork)."""
    if "/" in name:
        return name
    path = os.environ.get("PATH", os.defpath)
    found = _programs.get((path, name))
    if found is None:
        for folder in path.split(os.pathsep):
            candidate = os.path.join(folder or ".", name)
            if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
                _programs[path, name] = found = candidate
                break
    return found


def _may_skip_shell(cwd: str, env) -> bool:
    """posix_spawn has no working-directory action, and _program looks the program up in our PATH."""
    if env.get(b"PATH") != os.environb.get(b"PATH"):
        return False
    try:  # one getcwd(2) answers the usual case; samefile's two stats see through a symlinked folder
        return cwd == os.getcwd() or os.path.samefile(cwd, ".")
    except OSError:
        return False


class CreatedAhead:
    """Empty files for the `> file` redirects of the steps that start next, made while the scheduler waits.

    A plain line's redirect is opened in the vfork child, and the scheduler waits until that child has
    exec'd. Creating a file is usually cheap, but right after many files were deleted (a clean build
    after `rm -rf out`) ext4 takes ~0.6 ms to find an inode for it, longer than starting the step: make
    pays that in its /bin/sh child, in parallel, and runner's scheduler paid it between two steps. Made
    while the scheduler would otherwise wait for a child, the child's open then only truncates an empty
    file. A file is made only where none exists (O_EXCL), is the step's own once the step starts
    (`claim`), and is removed again if its step does not start. A run killed outright (SIGKILL) can leave
    one empty: its step has no record for those inputs, so the next run that reaches it runs it.
    """

    def __init__(self):
        self._made: set[str] = set()  # made here and not yet claimed

    def make(self, line: str, cwd: str, env) -> None:
        """A step whose line is `line` starts soon: make its redirect's file, if it needs one."""
        plain = plain_command(line) if _may_skip_shell(cwd, env) else None
        if plain is None or plain[1] is None or plain[2] or plain[1] in self._made:
            return
        try:
            os.close(os.open(plain[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        except OSError:
            return  # it exists (the usual case outside a clean build), or its folder does not
        self._made.add(plain[1])

    def claim(self, path: str) -> None:
        """The step that redirects to `path` is starting: from now on the file is its own."""
        self._made.discard(path)

    def close(self) -> None:
        """Remove the files made for steps that did not start."""
        for path in self._made:
            try:
                os.unlink(path)
            except OSError:
                pass
        self._made.clear()
