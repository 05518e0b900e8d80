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
    """The nearest folder at or above `directory` holding intents.toml (as git finds .git), unless a folder above
    it holds an intents.toml whose `[project] include` takes that folder in as a sub-project: then that one, the
    monorepo's root (one DAG, one .runner/ wherever the command is typed). Symlinks resolved, as
    the working folder always is (`cd LINK && runner make` runs in the real folder): named through a link (`-C
    LINK`) or not, a project is one root, and its compiled spec and proofs serve both (a 100,000-step project
    named both ways in turn was compiled and decided whole each time, ~30 s)."""
    start = folder = os.path.realpath(directory)
    while not os.path.isfile(os.path.join(folder, "intents.toml")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent
    above = folder
    while (parent := os.path.dirname(above)) != above:  # a few stats up to /; a file read only if it names `include`
        above = parent
        if os.path.isfile(os.path.join(above, "intents.toml")) and _included(above, folder):
            return above
    return folder


def including_root(directory: str) -> str | None:
    """The folder above `directory` whose intents.toml's `[project] include` takes it in (the nearest), whether or
    not `directory` holds an intents.toml yet: where `runner init` typed in a monorepo's member writes a
    sub-project's file. None when no folder above includes it."""
    folder = above = os.path.realpath(directory)
    while (parent := os.path.dirname(above)) != above:
        above = parent
        if os.path.isfile(os.path.join(above, "intents.toml")) and _included(above, folder):
            return above
    return None


def _included(root: str, folder: str) -> bool:
    """Whether root's intents.toml includes `folder` as a sub-project."""
    try:
        with open(os.path.join(root, "intents.toml"), "rb") as f:
            raw = f.read()
    except OSError:
        return False
    if b"include" not in raw:
        return False
    import tomllib  # only where a folder above holds an intents.toml naming `include`

    try:
        project = tomllib.loads(raw.decode("utf-8-sig")).get("project")
    except (ValueError, RecursionError):
        return False  # the load says what is wrong with it, from the folder whose file reads
    patterns = project.get("include") if isinstance(project, dict) else None
    rel = os.path.relpath(folder, root)
    return isinstance(patterns, list) and any(isinstance(p, str) and included_by(rel, p) for p in patterns)


def included_by(rel: str, pattern: str) -> bool:
    """Whether the folder `rel` (relative to the root, '/'-separated) is one `include` pattern names: its names
    matched one by one (fnmatch's *, ? and [...] within a name; a name starting with '.' only by one that does)."""
    from fnmatch import fnmatchcase

    parts, want = rel.split("/"), [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    if len(parts) != len(want):
        return False
    return all(
        fnmatchcase(part, glob) and (not part.startswith(".") or glob.startswith("."))
        for part, glob in zip(parts, want, strict=True)
    )


def here(root: str, directory: str) -> str:
    """The sub-project folder (relative to `root`) `directory` is in: the nearest folder at or above it, below
    root, holding an intents.toml; "" when it is the root's own."""
    folder = os.path.realpath(directory)
    if folder == root or not folder.startswith(root.rstrip("/") + "/"):
        return ""
    while folder != root and len(folder) > len(root):
        if os.path.isfile(os.path.join(folder, "intents.toml")):
            return os.path.relpath(folder, root)
        folder = os.path.dirname(folder)
    return ""


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
