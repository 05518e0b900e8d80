"""Where a project is: the nearest folder holding intents.toml (as git finds .git), or the folder of `-f FILE`.
Imported by the warm no-op (runner/noop.py): the standard library's os only."""

from __future__ import annotations

import os


def locate(directory: str, spec_file: str | None) -> tuple[str, str]:
    """(the project root, the intents file's name in it). With `-f FILE` the root is the folder holding FILE
    (relative to `directory`), whose paths are relative to it; else find_root's, and intents.toml."""
    if spec_file is None:
        return find_root(directory), "intents.toml"
    path = os.path.join(directory, spec_file)
    return os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path)  # the folder resolved, as below


def find_root(directory: str) -> str:
    """The nearest folder at or above `directory` holding intents.toml (as git finds .git). Symlinks resolved, as
    the working folder always is (`cd LINK && runner make` runs in the real folder): named through a link (`-C
    LINK`) or not, a project is one root, and its compiled spec and proofs serve both (a 100,000-step project
    named both ways in turn was compiled and decided whole each time, ~30 s)."""
    start = folder = os.path.realpath(directory)
    while not os.path.isfile(os.path.join(folder, "intents.toml")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent
    return folder


def joined_directory(before: str, after: str) -> str:
    """`-C before COMMAND -C after`: the second relative to the first, as git takes two `-C`s."""
    return before if after == "." else os.path.join(before, after)


# ---- -C DIR and -f FILE before the command (`runner -C proj status`, `runner -f other.toml list`), as git, make and
# just take them. The command line's (click) callbacks: they only read the context they are given.


def directory_given(ctx, value) -> str:
    """A command's -C, on top of the one before the command: given both, the second is relative to the first."""
    leading = ctx.find_root().params.get("directory")  # each -C before the command, relative to the one before it
    if not leading or ctx.parent is None:
        return str(value)
    before = "."
    for directory in leading:
        before = joined_directory(before, str(directory))
    given = ctx.get_parameter_source("directory").name != "DEFAULT"
    return joined_directory(before, str(value)) if given else before


def spec_file_given(ctx, param, value: str | None) -> str | None:
    """A command's -f, or else the one before the command."""
    return ctx.find_root().params.get("spec_file") if value is None else value


def reads_intents(command) -> bool:
    """Whether a command (runner.commands.Command) or one of its subcommands takes -f FILE."""
    return any(p.dest == "spec_file" for p in command.params) or any(map(reads_intents, command.subcommands))
