"""The exception tree and the exit codes every command ends with."""

from __future__ import annotations

import os
from typing import NamedTuple

EXIT_OK = 0
EXIT_STEP_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_BLOCKED = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130


class Problem(NamedTuple):
    """One thing wrong with the user's files, located as precisely as we can."""

    file: str
    message: str
    path: str = ""  # TOML path such as intent.test.deps[1]
    line: int | None = None
    column: int | None = None

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.path:
            # a hostile name (5,000 characters) would bury the message: show its ends (to_json keeps it whole)
            path = self.path if len(self.path) <= 100 else f"{self.path[:60]}...{self.path[-30:]}"
            return f"{where}: {path}: {self.message}"
        return f"{where}: {self.message}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column, "path": self.path, "message": self.message}


class RunnerError(Exception):
    """Base of every error the CLI turns into a message and an exit code."""

    exit_code = EXIT_INTERNAL
    # the command already printed its --json answer for this error (`runner validate`: the problems):
    # the boundary adds no error object after it, so stdout stays one JSON document
    answered_in_json = False

    def render(self) -> str:
        return str(self)


class UserError(RunnerError):
    """The user's mistake: bad spec, bad usage. Exit 2, never a traceback."""

    exit_code = EXIT_USER_ERROR


class SpecError(UserError):
    """Every problem found in the spec, reported together."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        n = len(self.problems)
        head = f"error: {n} problem{'s' if n != 1 else ''} in the spec"
        return "\n".join([head] + ["  " + p.render() for p in self.problems])


class UsageError(UserError):
    """A command was called wrongly (unknown target, bad option value)."""


class SetupError(UserError):
    """An agent step's worker cannot start or reach its model (binary, key variable, refused key, unreachable
    base_url): the run stopped at once, without retries. Exit 2: the set-up is the user's to fix."""

    def render(self) -> str:
        return (
            f"error: {self}\nThe run stopped at once: no retry can mend the agent set-up. "
            "`runner validate` checks it without calling a model."
        )


class SetupNotReady(UserError):
    """`validate`, `status` or `make -n` found that the worker cannot start the agent steps (no model called)."""

    def __init__(self, worker: str, problems: list[Problem]):
        self.worker = worker
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        head = f"error: the agent set-up is not ready: the {self.worker} worker cannot start the agent steps"
        return "\n".join([head] + ["  " + p.render() for p in self.problems])


class BlockedError(RunnerError):
    """Work stopped waiting for a human or a budget. Exit 3."""

    exit_code = EXIT_BLOCKED


class LockHeldError(BlockedError):
    """Another runner holds the project lock and we were told not to wait."""


class NoSpaceError(RunnerError):
    """A write of the runner's found the device full (ENOSPC) or the user's quota spent (EDQUOT): what it was
    writing and what to do, never a traceback. Exit 1, as a failed step; 2 when nothing could start."""

    exit_code = EXIT_STEP_FAILED

    def __init__(self, path: str, exit_code: int = EXIT_STEP_FAILED):
        self.path = path  # as the user finds it from the project root
        self.exit_code = exit_code
        super().__init__(self.render())

    def render(self) -> str:
        return f"error: no space left on the device (writing {self.path}): free some space and run again"


class InternalError(RunnerError):
    """A bug in the runner itself. Exit 4 with a traceback in .runner/last-error.log."""

    exit_code = EXIT_INTERNAL


def interrupted_line() -> str:
    """What a Ctrl-C ends with on stderr, wherever it landed (before a command, in one, in click's own code): on a
    terminal on a line of its own, below the ^C the terminal echoed; in a log or a pipe the one line alone."""
    try:
        own_line = os.isatty(2)
    except OSError:
        own_line = False
    return ("\n" if own_line else "") + "runner: interrupted\n"


def from_a_ctrl_c(exc: BaseException) -> bool:
    """Whether `exc` is Python's wrapping of a Ctrl-C: a KeyboardInterrupt raised where the interpreter turns it into
    another error with it as the cause (a class's `__set_name__` while a module is imported: "RuntimeError: Error
    calling __set_name__", seen once in CI as click imported `platform`). Only the cause counts, never the context: an
    error raised while a Ctrl-C was being handled is a bug of its own."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False
