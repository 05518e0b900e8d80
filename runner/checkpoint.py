"""Git checkpoints (`checkpoint = "commit"` in a policy): commit an applied change's files alone, revert such commits.

The commit is made through a temporary index (read-tree HEAD, the applied paths added, write-tree, commit-tree,
update-ref), so neither the user's other staged changes nor their unstaged edits go into it, and no hook runs.
The user's own index then gets the committed paths' new entries only, so `git status` shows the commit as made.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_TIMEOUT = 120.0


class CheckpointError(Exception):
    """Git could not make or revert a checkpoint; the message says why, in git's words."""


def git_dir_of(root: Path) -> Path | None:
    """The folder holding `.git` (a folder, or a worktree's file) for root or one above it; None outside git.
    No git process: `runner validate` asks this for every policy with a checkpoint."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _git(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=GIT_TIMEOUT, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckpointError(f"git {args[0]} could not run: {exc}") from None


def _said(proc: subprocess.CompletedProcess) -> str:
    return (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[-1]


def commit_paths(root: Path, index_dir: Path, paths: list[str], message: str) -> str:
    """Commit the working tree's bytes of `paths` (relative to root; a missing one is committed as deleted) on top
    of HEAD, and nothing else; returns the new commit's id."""
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    parent = head.stdout.strip() if head.returncode == 0 else None
    index_dir.mkdir(parents=True, exist_ok=True)
    index = index_dir / f"checkpoint-index-{os.getpid()}"
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    try:
        steps = [("read-tree", parent) if parent else ("read-tree", "--empty")]
        for args in steps:
            proc = _git(root, *args, env=env)
            if proc.returncode != 0:
                raise CheckpointError(f"git {' '.join(args)} failed: {_said(proc)}")
        proc = _git(root, "update-index", "--add", "--remove", "--", *paths, env=env)
        if proc.returncode != 0:
            raise CheckpointError(f"git update-index failed: {_said(proc)}")
        tree = _git(root, "write-tree", env=env)
        if tree.returncode != 0:
            raise CheckpointError(f"git write-tree failed: {_said(tree)}")
        made = _git(root, "commit-tree", tree.stdout.strip(), *(["-p", parent] if parent else []), "-m", message)
        if made.returncode != 0:
            raise CheckpointError(f"git commit-tree failed: {_said(made)}")
        commit = made.stdout.strip()
        moved = _git(root, "update-ref", "-m", "runner checkpoint", "HEAD", commit, parent or "")
        if moved.returncode != 0:
            raise CheckpointError(f"git update-ref failed: {_said(moved)}")
    finally:
        index.unlink(missing_ok=True)
    # the user's index: the committed paths as committed (their other entries untouched)
    _git(root, "update-index", "--add", "--remove", "--", *paths)
    return commit


def _in_progress(root: Path) -> bool:
    """A revert or cherry-pick is under way in the repository (its sequencer folder, or REVERT_HEAD)."""
    for name in ("sequencer", "REVERT_HEAD", "CHERRY_PICK_HEAD"):
        where = _git(root, "rev-parse", "--git-path", name).stdout.strip()
        if where and (root / where).exists():
            return True
    return False


def revert(root: Path, commits: list[str]) -> list[str]:
    """`git revert --no-edit` the commits (give them newest first); the revert commits made, oldest first. On a
    failure (a conflict, staged changes git will not overwrite) the revert is aborted, leaving the tree as it
    was."""
    if _in_progress(root):
        raise CheckpointError("a revert or cherry-pick is already under way in this repository: finish or abort it")
    before = _git(root, "rev-parse", "--verify", "-q", "HEAD").stdout.strip()
    proc = _git(root, "revert", "--no-edit", *commits)
    if proc.returncode != 0:
        if _in_progress(root):
            _git(root, "revert", "--abort")
        raise CheckpointError(f"git revert refused: {_said_all(proc)}")
    made = _git(root, "rev-list", "--reverse", f"{before}..HEAD")
    return [line for line in made.stdout.split() if line]


def _said_all(proc: subprocess.CompletedProcess) -> str:
    lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    # git's own reasons; "fatal: revert failed" only says that it failed
    wanted = [
        line for line in lines if line.startswith(("error:", "CONFLICT", "fatal:")) and "revert failed" not in line
    ]
    wanted = wanted or lines[-1:]
    return "; ".join(dict.fromkeys(wanted)) or f"exit {proc.returncode}"


def diff_between(root: Path, old: str, new: str) -> str:
    """`git diff old new`: what a range of commits changed."""
    return _git(root, "diff", old, new).stdout
