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
