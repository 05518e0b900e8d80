"""Isolated attempt workspaces: a copy of the project per attempt, and the change it made, found by digests."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .background import Background

# never copied into an attempt, never part of a change
PRIVATE = (".git", ".runner")


@dataclass
class Change:
    """What an attempt did to its workspace: path -> new bytes (None: deleted), plus the symlinks it made."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)  # path -> link target

    def digests(self) -> dict[str, str | None]:
        return {p: hashlib.sha256(b).hexdigest() if b is not None else None for p, b in self.files.items()}

    def __bool__(self) -> bool:
        return bool(self.files or self.symlinks)

    def diff(self, root: Path) -> str:
        """A unified diff against the project as it is now (for approvals and the record)."""
        out: list[str] = []
        for rel, new in sorted(self.files.items()):
            old_path = root / rel
            old = old_path.read_bytes() if old_path.is_file() else None
            a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
            b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
            out += difflib.unified_diff(
                a,
                b,
                fromfile=f"a/{rel}" if old is not None else "/dev/null",
                tofile=f"b/{rel}" if new is not None else "/dev/null",
            )
        for rel, target in sorted(self.symlinks.items()):
            out.append(f"symlink {rel} -> {target}\n")
        return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def _git_files(root: Path) -> list[str]:
    """The files git tracks or would track under root (what a copy holds when no worktree can be made)."""
    try:
        listed = _git(root, "ls-files", "-co", "--exclude-standard", "-z")
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [f for f in listed.stdout.decode().split("\0") if f] if listed.returncode == 0 else []


def _git_ignored(root: Path) -> list[str]:
    """The top-level folders git ignores (a venv, node_modules), but runner's private ones."""
    try:
        ignored = _git(root, "ls-files", "-oi", "--exclude-standard", "--directory", "-z")
    except (OSError, subprocess.TimeoutExpired):
        return []
    folders = sorted(
        {
            f.rstrip("/").split("/")[0]
            for f in ignored.stdout.decode().split("\0")
            if f.endswith("/") and "/" not in f.rstrip("/")
        }
    )
    return [d for d in folders if d not in PRIVATE]


_tops: dict[str, Path] = {}  # project -> its repository's top folder, once HEAD named a commit there


def _git_top(root: Path) -> tuple[Path, bool] | None:
    """(the repository's top folder, whether HEAD names a commit), or None outside a git repository: one
    `git rev-parse`, asked until it finds a commit (each git process an attempt starts costs ~5 ms of CPU, and
    -j 16 attempts start together). A remembered answer stays safe: were HEAD gone, `git worktree add` fails
    and the attempt gets a copy."""
    known = _tops.get(str(root))
    if known is not None:
        return known, True
    try:
        top = _git(root, "rev-parse", "--show-toplevel", "HEAD")
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = top.stdout.decode().splitlines()
    if not lines or not os.path.isabs(lines[0]):
        return None
    has_head = top.returncode == 0 and len(lines) == 2
    if has_head:
        _tops[str(root)] = Path(lines[0])
    return Path(lines[0]), has_head


def snapshot(root: Path, private: bool = False) -> dict[str, str]:
    """path -> digest of every regular file under root, not following symlinked folders; the private
    folders only when asked (after an attempt: anything there was written by the agent)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if (private or d not in PRIVATE) and not os.path.islink(os.path.join(folder, d))]
        for name in files:
            full = os.path.join(folder, name)
            if os.path.islink(full):
                continue
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            with open(full, "rb") as f:
                out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out


def _may_link(folder: str, writable: tuple[str, ...]) -> bool:
    """An ignored folder is linked, not copied, only if the step may not write anywhere in it."""
    for pattern in writable:
        head = pattern.split("/", 1)[0]
        if head == folder or any(ch in head for ch in "*?["):
            return False
    return True


def make_workspace(
    project: Path, home: Path, writable: tuple[str, ...] = (), plain: bool = False
) -> tuple[Path, dict[str, str], list[str]]:
    """A private copy of the project under `home` for one candidate; returns (its root, the digests of its
    files, the folders linked rather than copied).

    In a git repository it is a git worktree of HEAD with the working tree's uncommitted changes laid over
    it, so the agent sees the history and the files as they are now; otherwise a plain copy. Ignored top-level
    folders (a venv, node_modules) are symlinked, so verification finds the tools without copying them, unless
    the step may write there (`writable`: its outputs and scope): those are copied, so no write can pass
    through a link into the project. `plain`: a plain copy whatever git says (a hermetic attempt's `project`
    is a scratch folder holding a step's manifest, which may lie inside some repository of the worker's).
    """
    repo = None if plain else _git_top(project)
    if repo is None:
        ws = home / "ws"
        ws.mkdir(parents=True)
        for entry in os.listdir(project):
            if entry in PRIVATE:
                continue
            src = project / entry
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, ws / entry, symlinks=True, ignore=shutil.ignore_patterns(*PRIVATE))
            else:
                shutil.copy2(src, ws / entry, follow_symlinks=False)
        return ws, snapshot(ws), []
    top_dir, has_head = repo
    ignored = _git_ignored(project)
    tree = _worktree(project, home, top_dir) if has_head else None
    if tree is not None:
        ws = tree
    else:  # no commit yet, or git refused: copy what git would commit
        _tops.pop(str(project), None)  # and ask again next time
        ws = home / "ws"
        for rel in _git_files(project):
            _copy_file(project, ws, rel)
    linked = [d for d in ignored if _may_link(d, writable)]
    for folder in ignored:
        if folder not in linked and (project / folder).is_dir() and not (ws / folder).exists():
            shutil.copytree(project / folder, ws / folder, symlinks=True)
    for folder in linked:
        if not (ws / folder).exists():
            os.symlink(project / folder, ws / folder)
    return ws, snapshot(ws), linked


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120)


def _copy_file(src_root: Path, dest_root: Path, rel: str) -> None:
    src = src_root / rel
    if not src.exists() and not src.is_symlink():
        return  # deleted in the working tree but still in the index
    target = dest_root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, target, follow_symlinks=False)


def _worktree(project: Path, home: Path, top_dir: Path) -> Path | None:
    """A detached worktree of HEAD under home, overlaid with the uncommitted state; the project's place in it."""
    try:
        wt = home / "wt"
        if _git(top_dir, "worktree", "add", "--detach", "--quiet", str(wt), "HEAD").returncode != 0:
            return None
        status = _git(
            top_dir,
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
            str(project.resolve().relative_to(top_dir.resolve())),
        )
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    for entry in status.stdout.decode().split("\0"):
        if len(entry) < 4:
            continue
        code, rel = entry[:2], entry[3:]  # porcelain paths are relative to the repository's top
        if "D" in code and not (top_dir / rel).exists():
            (wt / rel).unlink(missing_ok=True)
        elif not (top_dir / rel).is_dir():
            _copy_file(top_dir, wt, rel)
    return wt / project.resolve().relative_to(top_dir.resolve())


def remove_workspace(home: Path, project: Path) -> None:
    """Drop a candidate's workspace; a worktree is unregistered from the project's repository too (a prune
    only when the targeted remove did not do it: two git processes fewer per attempt)."""
    if (home / "wt").exists():
        removed = _git(project, "worktree", "remove", "--force", str(home / "wt")).returncode == 0
        if not removed or (home / "wt").exists():
            shutil.rmtree(home, ignore_errors=True)
            _git(project, "worktree", "prune")
    shutil.rmtree(home, ignore_errors=True)


class Remover(Background):
    """Removes spent attempt workspaces on a thread of its own, so that a step's slot is free once its change is
    found rather than after `git worktree remove` (~15 ms, more on a busy machine). The workspaces are outside the
    project (one left in the temp folder harms no run); close() waits for every removal, so none outlives the
    run."""

    def __init__(self) -> None:
        super().__init__(remove_workspace, "workspace-remover", (OSError, subprocess.SubprocessError))

    def remove(self, home: Path, project: Path) -> None:
        self.put(home, project)


def find_change(workspace: Path, before: dict[str, str], linked: list[str]) -> Change:
    """Compare the workspace with its digests from before the attempt: what changed, whatever the agent says."""
    after = snapshot(workspace, private=True)
    change = Change()
    for rel, digest in after.items():
        if before.get(rel) != digest:
            change.files[rel] = (workspace / rel).read_bytes()
    for rel in before:
        if rel not in after and not (workspace / rel).is_symlink():
            change.files[rel] = None
    for folder, dirs, files in os.walk(workspace):
        for name in files + dirs:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, workspace)
            if os.path.islink(full) and rel not in linked:
                change.symlinks[rel] = os.readlink(full)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return change


def revert(ws: Path, project: Path, paths) -> None:
    """Put these paths of the workspace back as the project has them (deleting what the project lacks), so the
    next attempt starts without a write that was refused."""
    for rel in paths:
        target, source = ws / rel, project / rel
        if source.is_file() and not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.is_file() or target.is_symlink():
            target.unlink()


def undo_side_effects(ws: Path, before_step: dict[str, str], project: Path, change: Change) -> None:
    """Put back what a verification command wrote (caches, bytecode, reports), so that only the agent's
    own edits make the change. A file's pre-verify content is the agent's version or the project's."""
    after = snapshot(ws, private=True)
    for rel, digest in after.items():
        if before_step.get(rel) == digest:
            continue
        target = ws / rel
        if rel not in before_step:
            target.unlink()
        elif (data := change.files.get(rel)) is not None:
            target.write_bytes(data)
        elif (project / rel).is_file():
            shutil.copy2(project / rel, target)
    for rel in before_step:
        if rel not in after:
            source = change.files.get(rel) if rel in change.files else None
            if source is not None:
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_bytes(source)
            elif (project / rel).is_file():
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(project / rel, ws / rel)
    for folder, dirs, _files in os.walk(ws, topdown=False):  # drop the folders verification created
        for d in dirs:
            full = os.path.join(folder, d)
            if not os.path.islink(full) and not os.listdir(full):
                rel = os.path.relpath(full, ws)
                if not any(p == rel or p.startswith(rel + "/") for p in before_step):
                    os.rmdir(full)
