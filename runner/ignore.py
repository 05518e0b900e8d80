"""What git ignores in a project: the `.gitignore` files from the work tree's top down, and `.git/info/exclude`
(pathspec's one importer).

Input globs never yield an ignored file (runner/globs.py walks with these rules), so `inputs = ["**/*.js"]` does
not hash an ignored `node_modules/`. The rules are git's own, read as git reads them: every `.gitignore` from the
top of the git work tree that holds the project (the project root itself when it is in none) down to the folder
of a path, a deeper file's patterns overriding a shallower one's, the last matching pattern of a file deciding,
`!pattern` re-including, and `.git/info/exclude` below them all. Not read: git's per-user `core.excludesFile`,
which would give the same project different keys on two machines. What git tracks does not matter either: the
rules alone decide, so a checkout and its CI clone expand a glob alike. The rules are read afresh by each
command (a `.gitignore` edit changes what a glob expands to, and so the step's key).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

GIT_DIR = ".git"


def _work_tree_top(root: str) -> str | None:
    """The nearest folder at or above `root` holding `.git` (a folder, or a worktree's file), as git finds it."""
    folder = root
    while True:
        if os.path.exists(os.path.join(folder, GIT_DIR)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _git_dir(top: str) -> str | None:
    """The folder holding `info/exclude`: `.git` itself, or for a linked worktree (`.git` is a file saying
    `gitdir: ...`) the common folder its `commondir` names."""
    dot_git = os.path.join(top, GIT_DIR)
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git) as f:
            line = f.readline().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = os.path.join(top, line[len("gitdir:") :].strip())
    try:
        with open(os.path.join(gitdir, "commondir")) as f:
            return os.path.normpath(os.path.join(gitdir, f.read().strip()))
    except OSError:
        return gitdir


def _read(path: str) -> GitIgnoreSpec | None:
    """The rules of one ignore file, or None when there is none (pathspec is imported only once there is)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    if not lines:
        return None
    from pathspec import GitIgnoreSpec  # ~25 ms: paid by a project that has ignore files, when a glob expands

    return GitIgnoreSpec.from_lines(lines)


class IgnoreRules:
    """Whether a project path is ignored, the rules of each folder read once (a command's lifetime)."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        top = _work_tree_top(self.root)
        # paths are matched relative to the work tree's top: a project inside a repository (examples/x) is
        # ignored by the repository's own rules too
        self.prefix = "" if top is None or top == self.root else os.path.relpath(self.root, top) + "/"
        base: list[tuple[str, GitIgnoreSpec]] = []
        if top is not None:
            git_dir = _git_dir(top)
            exclude = _read(os.path.join(git_dir, "info", "exclude")) if git_dir else None
            if exclude is not None:
                base.append(("", exclude))
            folder = ""  # the .gitignore of each folder from the top down to (not including) the project root
            for name in self.prefix.split("/")[:-1]:
                spec = _read(os.path.join(top, folder, ".gitignore"))
                if spec is not None:
                    base.append((folder, spec))
                folder += name + "/"
        self._rules: dict[str, list[tuple[str, GitIgnoreSpec]]] = {}
        own = _read(os.path.join(self.root, ".gitignore"))
        self._rules[""] = base + ([(self.prefix, own)] if own is not None else [])

    def _for_folder(self, folder: str) -> list[tuple[str, GitIgnoreSpec]]:
        """The rules that apply in project folder `folder` ("" for the root), shallowest first."""
        rules = self._rules.get(folder)
        if rules is None:
            parent = folder.rpartition("/")[0]
            rules = self._for_folder(parent)
            own = _read(os.path.join(self.root, folder, ".gitignore"))
            if own is not None:
                rules = rules + [(self.prefix + folder + "/", own)]
            self._rules[folder] = rules
        return rules

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores project path `rel` (as `a/b/c`), given that no folder above it is ignored."""
        if rel == GIT_DIR or rel.endswith("/" + GIT_DIR):
            return True  # git's own folder is never part of the work tree
        path = self.prefix + rel + ("/" if is_dir else "")
        for base, spec in reversed(self._for_folder(rel.rpartition("/")[0])):
            include = spec.check_file(path[len(base) :]).include
            if include is not None:
                return include
        return False
