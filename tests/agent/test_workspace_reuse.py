"""A spent attempt's worktree, brought back for another attempt (runner.attempt._bring_back), holds exactly what a
new worktree would: on random sequences of edits to the project (tracked, untracked, staged, deleted, modes,
ignored files, commits, ignore rules) and of what attempts leave in their workspace (edits, new folders, deletions,
symlinks, the private folders, git commands), each brought-back workspace is compared, file by file, with a new
one made at the same moment, and so are the digests and linked folders the attempt starts from."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.attempt import make_workspace, new_home, remove_workspace

GIT_ENV = dict(
    os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"
)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=GIT_ENV)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.write_text(text)


def _project() -> Path:
    root = Path(tempfile.mkdtemp(prefix="reuse-")) / "proj"
    for rel, text in {
        "a.txt": "a\n",
        "src/b.py": "b = 1\n",
        "src/deep/c.py": "c = 1\n",
        "run.sh": "#!/bin/sh\n",
        ".gitignore": "venv/\n*.log\n",
    }.items():
        _write(root / rel, text)
    os.symlink("a.txt", root / "alias")
    _write(root / "venv/bin/tool", "tool\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    return root


# what may happen to the project between two attempts
PROJECT_EDITS = [
    "modify_tracked",
    "delete_tracked",
    "add_untracked",
    "delete_untracked",
    "stage_new",
    "chmod_tracked",
    "ignored_file",
    "commit",
    "new_ignored_folder",
    "replace_symlink",
    "revert_all",
]
# what an attempt may leave in its workspace
ATTEMPT_LEFTOVERS = [
    "edit",
    "delete",
    "nested_new",
    "private",
    "symlink",
    "chmod",
    "git_add",
    "empty_folder",
]


def _edit_project(root: Path, edit: str, n: int) -> None:
    if edit == "modify_tracked":
        _write(root / "src/b.py", f"b = {n}\n")
    elif edit == "delete_tracked":
        (root / "src/deep/c.py").unlink(missing_ok=True)
    elif edit == "add_untracked":
        _write(root / f"out/u{n}.txt", f"u{n}\n")
    elif edit == "delete_untracked":
        for path in sorted((root / "out").glob("*.txt"))[:1] if (root / "out").is_dir() else []:
            path.unlink()
    elif edit == "stage_new":
        _write(root / f"staged{n}.txt", "staged\n")
        _git(root, "add", f"staged{n}.txt")
    elif edit == "chmod_tracked":
        os.chmod(root / "run.sh", 0o755 if not os.access(root / "run.sh", os.X_OK) else 0o644)
    elif edit == "ignored_file":
        _write(root / f"src/x{n}.log", "log\n")
    elif edit == "commit":
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"c{n}", "--allow-empty")
    elif edit == "new_ignored_folder":
        with open(root / ".gitignore", "a") as f:
            f.write(f"cache{n}/\n")
        _write(root / f"cache{n}/x", "x\n")
    elif edit == "replace_symlink":
        (root / "alias").unlink(missing_ok=True)
        if n % 2:
            _write(root / "alias", "now a file\n")
        else:
            os.symlink("src/b.py", root / "alias")
    elif edit == "revert_all":
        _git(root, "checkout", "-q", "--", ".")


def _leave(ws: Path, leftover: str, n: int) -> None:
    if leftover == "edit":
        _write(ws / "a.txt", f"edited {n}\n")
    elif leftover == "delete":
        (ws / "src/b.py").unlink(missing_ok=True)
    elif leftover == "nested_new":
        _write(ws / f"new{n}/deeper/file.txt", "new\n")
    elif leftover == "private":
        _write(ws / ".runner/left.txt", "private\n")
    elif leftover == "symlink" and not (ws / f"link{n}").is_symlink():
        os.symlink("a.txt", ws / f"link{n}")
    elif leftover == "chmod":
        if (ws / "a.txt").is_file():
            os.chmod(ws / "a.txt", 0o755)
    elif leftover == "git_add":
        _write(ws / f"added{n}.txt", "added\n")
        _git(ws, "add", "-A")
    elif leftover == "empty_folder":
        (ws / f"empty{n}").mkdir(exist_ok=True)


def _seen(ws: Path) -> tuple:
    """What an agent or a verify command sees of a workspace: its entries (_tree), and what git says there (the
    commit it is at, what differs from it; without refreshing its index, which would make it unfit to keep)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "--no-optional-locks", *args], cwd=ws, capture_output=True, text=True).stdout

    return _tree(ws), git("rev-parse", "HEAD"), git("status", "--porcelain", "--untracked-files=all")


def _tree(ws: Path) -> dict[str, object]:
    """Every entry a user or a tool would see: files (bytes and executable bit), symlinks (target), folders; the
    worktree's `.git` file names its own admin folder and differs between any two worktrees."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(ws):
        for name in dirs + files:
            full = Path(folder) / name
            rel = str(full.relative_to(ws))
            if rel == ".git":
                continue
            if full.is_symlink():
                out[rel] = ("link", os.readlink(full))
            elif full.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", full.read_bytes(), os.stat(full).st_mode & 0o111)
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
    return out


rounds = st.lists(
    st.tuples(
        st.lists(st.sampled_from(ATTEMPT_LEFTOVERS), max_size=3),
        st.lists(st.sampled_from(PROJECT_EDITS), max_size=3),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60)
@given(rounds=rounds)
@example(rounds=[([], ["replace_symlink"]), ([], ["revert_all"])])  # HEAD's symlink comes back
@example(rounds=[([], ["replace_symlink"]), ([], [])])  # a retargeted symlink, and it stays fit to keep
def test_a_brought_back_worktree_holds_what_a_new_one_would(rounds):
    root = _project()
    kept_home = new_home(root, "kept")
    try:
        ws, _before, _linked = make_workspace(root, kept_home, ("out/*",))
        for n, (leftovers, edits) in enumerate(rounds):
            for leftover in leftovers:
                _leave(ws, leftover, n)
            for edit in edits:
                _edit_project(root, edit, n)
            reused_before = (kept_home / "wt").stat().st_ino
            ws, before, linked = make_workspace(root, kept_home, ("out/*",))
            fresh_home = new_home(root, "fresh")
            try:
                fresh_ws, fresh_before, fresh_linked = make_workspace(root, fresh_home, ("out/*",))
                assert _seen(ws) == _seen(fresh_ws), (leftovers, edits)
                before.pop(".git"), fresh_before.pop(".git")  # each worktree's `.git` names its own admin folder
                assert (before, linked) == (fresh_before, fresh_linked)
            finally:
                remove_workspace(fresh_home, root)
            unfit = {"symlink", "git_add"} & set(leftovers) or {"commit", "new_ignored_folder"} & set(edits)
            if not unfit:  # nothing that makes it unfit: it was brought back, not made again
                assert (kept_home / "wt").stat().st_ino == reused_before, (leftovers, edits)
    finally:
        remove_workspace(kept_home, root)
        shutil.rmtree(root.parent, ignore_errors=True)


def test_a_tracked_symlink_the_project_made_a_file_is_a_file_in_the_workspace_and_nothing_is_written_through():
    """The comparison above holds a brought-back worktree to a new one, which lays the project's files by the same
    copy: this holds both to the project. A tracked symlink replaced by a regular file (uncommitted) is that file in
    the workspace, and HEAD's file the symlink pointed at keeps HEAD's bytes (never written through the link)."""
    root = _project()
    kept_home = new_home(root, "kept")
    try:
        make_workspace(root, kept_home, ("out/*",))
        (root / "alias").unlink()
        _write(root / "alias", "now a file\n")
        ws = make_workspace(root, kept_home, ("out/*",))[0]  # brought back
        assert not (ws / "alias").is_symlink() and (ws / "alias").read_text() == "now a file\n"
        assert (ws / "a.txt").read_text() == "a\n"
        fresh_home = new_home(root, "fresh")
        try:
            fresh = make_workspace(root, fresh_home, ("out/*",))[0]
            assert not (fresh / "alias").is_symlink() and (fresh / "alias").read_text() == "now a file\n"
            assert (fresh / "a.txt").read_text() == "a\n"
        finally:
            remove_workspace(fresh_home, root)
    finally:
        remove_workspace(kept_home, root)
        shutil.rmtree(root.parent, ignore_errors=True)
