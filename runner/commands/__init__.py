"""One module per command, each declaring its arguments and options as data and running as a plain function.

runner/cli.py turns the declarations into click commands (click's one importer), adds `-C DIR` and `--json` to
every command, and calls `run(invocation, **values)`; `run` returns the exit code (None: 0) or raises a
RunnerError, which cli's one error boundary words. A command module imports the stages it needs inside
`run`, so building the command line imports none of them. A new command is a module here, named in NAMES.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import NamedTuple

# in the order `runner --help` lists them
NAMES = (
    "make",
    "list",
    "status",
    "explain",
    "graph",
    "validate",
    "log",
    "report",
    "serve",
    "cache",
    "approve",
    "history",
    "show",
    "improve",
    "rollback",
    "replay",
    "init",
    "import",
    "new",
    "adapters",
    "parse",
    "learn",
    "audit",
    "clean",
    "completion",
)

# a command whose name is a Python keyword lives in a module named otherwise (`runner import` in import_.py)
MODULES = {"import": "import_"}


class Param(NamedTuple):
    """One argument or option, as click's command line reads it."""

    decls: tuple[str, ...]  # ("target",) for an argument, ("-j", "--jobs") for an option
    dest: str  # the keyword `run` receives
    kind: str = "value"  # argument | flag | value | multiple
    help: str = ""
    type: type | tuple[str, ...] = str  # str, int, float, or the choices
    minimum: float | None = None  # an int at least this, a float above it
    maximum: float | None = None  # a float at most this
    required: bool = False
    default: object = None
    nargs: int = 1  # an argument's count: -1 for any number
    metavar: str | None = None
    complete: str | None = None  # what the shell completes: "targets" (intents, with descriptions), "file"


class Command(NamedTuple):
    name: str
    help: str  # its first line is the summary `runner --help` shows
    params: tuple[Param, ...] = ()
    run: Callable[..., int | None] | None = None
    subcommands: tuple[Command, ...] = ()  # a group (`runner cache stats`) has these instead of run


class Invocation(NamedTuple):
    """What every command gets besides its own values: the shared options and how to ask a human."""

    directory: Path
    as_json: bool
    ask: Callable[[str, str], bool] | None  # (question, detail) -> yes; None when nobody is at a terminal
    # `runner make`: what the warm no-op read before it found the target's proof broken (proof.Missed)
    missed: object = None


def argument(name: str, required: bool = True, nargs: int = 1, default: object = None) -> Param:
    return Param((name,), name, "argument", required=required, nargs=nargs, default=default)


def targets_argument(dest: str = "targets") -> Param:
    """TARGET...: intents, or output paths an intent declares (`runner make build/report.md`); none: the default."""
    return Param((dest,), dest, "argument", nargs=-1, complete="targets", metavar="[TARGET]...")


def target_argument(dest: str = "target", required: bool = False) -> Param:
    return Param((dest,), dest, "argument", required=required, complete="targets")


def flag(*decls: str, dest: str, help: str) -> Param:
    return Param(decls, dest, "flag", help, default=False)


def option(*decls: str, dest: str, help: str, **how) -> Param:
    return Param(decls, dest, "multiple" if how.pop("multiple", False) else "value", help, **how)


# `--affected BASE` of make and status: only the steps a change since the git commit BASE affects (runner/affected.py)
AFFECTED = Param(
    ("--affected",),
    "affected",
    help="Only the intents a change since the git commit BASE affects (inputs, definition, or a dependency's).",
    metavar="BASE",
)


# `-f FILE` of the commands that read the intents: its folder is the project root, as intents.toml's is
SPEC_FILE = Param(
    ("-f", "--file"),
    "spec_file",
    help="Read the intents from FILE instead of intents.toml (the project root is FILE's folder).",
    metavar="FILE",
    complete="file",
)


def load(name: str) -> Command:
    command: Command = import_module(f"{__name__}.{MODULES.get(name, name)}").COMMAND
    return command


def echo(text: str) -> None:
    print(text, flush=True)


def warn(warnings: list[str]) -> None:
    """Warnings about the spec (an input glob that matches no file) go to stderr, beside errors."""
    for line in warnings:
        print(line, file=sys.stderr, flush=True)


def print_json(value) -> None:
    echo(json.dumps(value, indent=2))
