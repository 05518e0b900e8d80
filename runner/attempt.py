"""Isolated attempt workspaces: a copy of the project per attempt, and the change it made, found by digests."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .background import Background
from .names import stored
from .stat_cache import stat_of, vouches

# never copied into an attempt, never part of a change
PRIVATE = (".git", ".runner")
PRIVATE_PARTS = frozenset(PRIVATE)


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
            out.append(file_diff(rel, old_path.read_bytes() if old_path.is_file() else None, new))
        for rel, target in sorted(self.symlinks.items()):
            out.append(f"symlink {rel} -> {target}\n")
        return "".join(out)


def file_diff(rel: str, old: bytes | None, new: bytes | None) -> str:
    """The unified diff of one file from `old` to `new` bytes (None: no file), every line ending in a newline."""
    a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    lines = difflib.unified_diff(
        a,
        b,
        fromfile=f"a/{rel}" if old is not None else "/dev/null",
        tofile=f"b/{rel}" if new is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


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
    """path -> digest of every regular file under root, not following symlinks; the private folders only
    when asked (after an attempt: anything there was written by the agent). Sixteen attempts hash their
    workspaces at once at -j 16: the directory entries' own types and bare os.open/os.read keep the system
    calls (each one a hand-off of the interpreter's lock between those threads) to four a file, from nine.

    An attempt hashes its workspace three times (as it starts, once the agent is done, after the verify) and a
    kept worktree is hashed again by the next attempt: a file whose stats vouch for the digest taken last time
    (stat_cache.vouches, git's racily-clean rule, as the project's own stat cache) is not read again."""
    known = _digests.setdefault(str(root), {})
    found = {
        rel: _digest(known, rel, entry.path, entry.stat(follow_symlinks=False))
        for rel, entry in _entries(root, private)
        if entry.is_file(follow_symlinks=False)
    }
    for rel in known.keys() - found.keys() if len(known) > len(found) else ():
        if private or PRIVATE_PARTS.isdisjoint(rel.split("/")[:-1]):
            del known[rel]  # gone: the memo holds only what the workspace holds
    return found


# root -> path -> (stat_of, when its digest was taken, the digest): snapshot's memo of each workspace, dropped with
# it (each workspace is hashed by one attempt at a time), and _same_file's of the project, kept for the process
_digests: dict[str, dict[str, tuple[tuple[int, int, int, int], int, str]]] = {}


def _digest(known: dict, rel: str, path: str, st: os.stat_result) -> str:
    """The digest of the regular file at `path` (`st`: its stats, taken now), from `known` (a root's memo) when
    those stats vouch for it."""
    stats = stat_of(st)
    memo = known.get(rel)
    if memo is not None and memo[0] == stats and vouches(stats, memo[1]):
        return memo[2]
    taken = time.time_ns()  # before the bytes are read: a write after it moves the stats out of the window
    digest = file_digest(path)
    known[rel] = (stats, taken, digest)
    return digest


def _entries(root: Path, private: bool = True):
    """(path under root, its directory entry) for every entry but a folder, symlinks included and not followed;
    the private folders only when asked."""
    folders = [("", str(root))]
    while folders:
        rel_folder, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if private or entry.name not in PRIVATE:
                        folders.append((rel, entry.path))
                else:
                    yield rel, entry


def file_digest(path: str) -> str:
    """The sha256 of a file's bytes (os.read: a Python file object adds an fstat, an ioctl and two lseeks)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        digest = hashlib.sha256()
        while data := os.read(fd, 1 << 20):
            digest.update(data)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _may_link(folder: str, writable: tuple[str, ...]) -> bool:
    """An ignored folder is linked, not copied, only if the step may not write anywhere in it."""
    for pattern in writable:
        head = pattern.split("/", 1)[0]
        if head == folder or any(ch in head for ch in "*?["):
            return False
    return True


def make_workspace(
    project: Path, home: Path, writable: tuple[str, ...] = (), plain: bool = False
) -> tuple[Path, dict[str, str], dict[str, str]]:
    """A private copy of the project under `home` for one candidate; returns (its root, the digests of its
    files, its symlinks as made, each with its target: the folders linked rather than copied among them, and
    what the project holds, which the agent did not make).

    In a git repository it is a git worktree of HEAD with the working tree's uncommitted changes laid over
    it, so the agent sees the history and the files as they are now; otherwise a plain copy. Ignored top-level
    folders (a venv, node_modules) are symlinked, so verification finds the tools without copying them, unless
    the step may write there (`writable`: its outputs and scope): those are copied, so no write can pass
    through a link into the project. `plain`: a plain copy whatever git says (a hermetic attempt's `project`
    is a scratch folder holding a step's manifest, which may lie inside some repository of the worker's).

    A `home` whose worktree a spent attempt left (Workspaces keeps them) is brought back to what a new one
    would hold (_bring_back): checking out HEAD costs more than the attempt's own work (~15 ms of git's CPU for
    50 files), and an attempt at -j 16 competes with fifteen others for two cores.
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
        return ws, snapshot(ws), _links(ws)
    top_dir, has_head = repo
    with _kept_lock:
        kept = _kept.pop(str(home), None)
    if kept is not None:
        brought = _bring_back(project, home / "wt", kept, writable)
        if brought is not None:
            return brought
        remove_workspace(home, project)
        home.mkdir()
    ignored = _git_ignored(project)
    tree = _worktree(project, home, top_dir) if has_head else None
    head_files: dict[str, str] | None = None
    if tree is not None:
        ws, oid, entries = tree  # ws: the project's place in the worktree
        # only a worktree that is the whole project may be kept: what an agent left elsewhere in the
        # repository would not be looked at again
        if oid is not None and ws == home / "wt":
            head_files, head_links = snapshot(ws, private=True), _symlinks(ws)
        for xy, rel in entries:  # paths relative to the repository's top, laid over the worktree's
            _overlay(top_dir, home / "wt", xy, rel)
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
    before = snapshot(ws)
    if tree is not None and head_files is not None and linked == ignored:  # a copied folder would drift: not kept
        git_state = _git_state(ws)
        if git_state is not None:
            kept = _Kept(
                head=tree[1] or "",
                head_files=head_files,
                head_links=head_links,
                layout=_layout(ws, modes=True),
                overlaid=frozenset(rel for _xy, rel in tree[2]),
                ignored=ignored,
                marks=_ignore_marks(project, tree[2], [*head_files, *head_links]),
                git_state=git_state,
            )
            with _kept_lock:
                _kept[str(home)] = kept
    return ws, before, _links(ws)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120)


def _copy_file(src_root: Path, dest_root: Path, rel: str) -> None:
    """Copy one path of the project into a workspace: a regular file's bytes, permission bits and mtime, or a
    symlink as a symlink. Bare system calls rather than shutil.copy2 (a dozen more: its xattrs, its checks):
    a kept worktree takes each step applied since it was last used this way, sixteen threads at once."""
    src, target = str(src_root / rel), str(dest_root / rel)
    try:
        st = os.lstat(src)
    except (FileNotFoundError, NotADirectoryError):
        return  # deleted in the working tree but still in the index
    try:
        old = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        os.makedirs(os.path.dirname(target), exist_ok=True)
    else:
        if stat.S_ISLNK(old.st_mode) or stat.S_ISLNK(st.st_mode):
            os.unlink(target)  # a symlink is made anew, never written through (an uncommitted retarget, a type change)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), target)
        return
    fd_in = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fd_out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd_out, stat.S_IMODE(st.st_mode))
            while os.sendfile(fd_out, fd_in, None, 1 << 30):
                pass
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def _overlay(top_dir: Path, wt: Path, xy: str, rel: str) -> None:
    """Lay one path `git status` lists (relative to the repository's top) over the worktree as the project has it."""
    if "D" in xy and not os.path.lexists(top_dir / rel):
        (wt / rel).unlink(missing_ok=True)
    elif not os.path.isdir(top_dir / rel):
        _copy_file(top_dir, wt, rel)


def _status(top_dir: Path, project: Path) -> tuple[str | None, list[tuple[str, str]]] | None:
    """(the commit HEAD names, None before the first; [(XY, path)] of what differs from it under the project), or
    None when git fails. One `git status` says both (porcelain v2's branch header)."""
    status = _git(
        top_dir,
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        str(project.resolve().relative_to(top_dir.resolve())),
    )
    if status.returncode != 0:
        return None
    oid: str | None = None
    entries = []
    for entry in status.stdout.decode().split("\0"):
        if entry.startswith("# branch.oid "):
            oid = entry.split()[2] if entry.split()[2] != "(initial)" else None
        elif entry.startswith("1 "):  # an ordinary change: XY sub mH mI mW hH hI path
            fields = entry.split(" ", 8)
            entries.append((fields[1], fields[8]))
        elif entry.startswith("u "):  # unmerged: XY sub m1 m2 m3 mW h1 h2 h3 path
            fields = entry.split(" ", 10)
            entries.append((fields[1], fields[10]))
        elif entry.startswith("? "):
            entries.append(("??", entry[2:]))
    return oid, entries


def _worktree(project: Path, home: Path, top_dir: Path) -> tuple[Path, str | None, list[tuple[str, str]]] | None:
    """A detached worktree of HEAD under home (the project's place in it), with the commit it holds and what the
    working tree changed since (to lay over it), or None when git refuses."""
    try:
        wt = home / "wt"
        if _git(top_dir, "worktree", "add", "--detach", "--quiet", str(wt), "HEAD").returncode != 0:
            return None
        status = _status(top_dir, project)
        place = wt / project.resolve().relative_to(top_dir.resolve())
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    if status is None:
        return None
    return place, status[0], status[1]


# ---- spent worktrees brought back for another attempt ------------------------------------------------------


@dataclass
class _Kept:
    """A spent attempt's worktree (the whole project) and what bringing it back to the project's state needs."""

    head: str  # the commit it was checked out at
    head_files: dict[str, str]  # its files' digests as checked out: HEAD's (private folders included)
    head_links: frozenset[str]  # the symlinks HEAD holds
    # the symlinks it held after it was last made (linked folders included), and its files' permission bits
    layout: tuple[frozenset[str], dict[str, int]]
    overlaid: frozenset[str]  # the uncommitted paths laid over the checkout then
    ignored: list[str]  # the project's ignored top-level folders then, every one linked
    marks: tuple  # what decides which top-level folders git ignores (_ignore_marks)
    git_state: tuple  # its own index and HEAD: an agent's or a verify's git commands there make it unfit


_kept: dict[str, _Kept] = {}  # home -> its worktree's state, while the home may be brought back
_kept_lock = threading.Lock()


def _bring_back(project: Path, wt: Path, kept: _Kept, writable: tuple[str, ...]):
    """Make a spent worktree hold what a new one would (HEAD, the project's uncommitted state over it, the
    ignored folders linked): every file the attempt changed, and every path either state lays over HEAD, is put
    back as the project has it or removed. None when that cannot be known to be the same (HEAD moved, the
    ignore rules or the top-level folders changed, the attempt left a symlink or ran git there): a new one.
    Only a project that is its repository's top is kept, so git's paths are the project's."""
    try:
        if not wt.is_dir() or _git_state(wt) != kept.git_state:
            return None
        if [d for d in kept.ignored if _may_link(d, writable)] != kept.ignored:
            return None  # this step may write in an ignored folder: it gets a copy, in a new worktree
        status = _status(project, project)
        if status is None or status[0] != kept.head:
            return None
        entries = status[1]
        links, modes = _layout(wt, modes=True)
        marks = _ignore_marks(project, entries, [*kept.head_files, *kept.head_links])
        if marks != kept.marks or links != kept.layout[0]:
            return None
        current = snapshot(wt, private=True)
        wanted = dict((rel, xy) for xy, rel in entries)
        changed = {p for p in current.keys() | kept.head_files.keys() if current.get(p) != kept.head_files.get(p)}
        changed |= {p for p, bits in modes.items() if kept.layout[1].get(p, bits) != bits}
        touched = []
        for rel in sorted(changed | kept.overlaid | wanted.keys()):
            source, target = project / rel, wt / rel
            if rel in wanted or rel in kept.head_files or rel in kept.head_links:
                if rel not in wanted and not (source.is_file() or source.is_symlink()):
                    return None  # a file of HEAD's gone without git saying so
                if _same_file(project, wt, rel, current.get(rel)):
                    continue
                if target.is_symlink() or target.is_file():
                    target.unlink()
                elif target.is_dir():
                    return None
                _overlay(project, wt, wanted.get(rel, ""), rel)
            elif target.is_symlink() or target.is_file():
                target.unlink()
            touched.append(rel)
        _drop_empty_folders(wt, [*kept.head_files, *kept.head_links])
        # what it holds now, from what it held and the paths put back: no second walk and hash of it all
        now_links = set(links)
        for rel in touched:
            current.pop(rel, None)
            modes.pop(rel, None)
            now_links.discard(rel)
            st = os.lstat(wt / rel) if os.path.lexists(wt / rel) else None
            if st is not None and stat.S_ISLNK(st.st_mode):
                now_links.add(rel)
            elif st is not None and stat.S_ISREG(st.st_mode):
                current[rel], modes[rel] = file_digest(str(wt / rel)), st.st_mode & 0o7777
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    kept.layout, kept.overlaid = (frozenset(now_links), modes), frozenset(wanted)
    with _kept_lock:
        _kept[str(wt.parent)] = kept
    # the digests the attempt starts from leave out the private folders, as snapshot(wt) does
    before = {rel: digest for rel, digest in current.items() if PRIVATE_PARTS.isdisjoint(rel.split("/")[:-1])}
    return wt, before, {rel: os.readlink(wt / rel) for rel in now_links}


def _same_file(project: Path, wt: Path, rel: str, digest: str | None) -> bool:
    """The worktree's regular file already is the project's: same bytes (its digest known), same mode. The
    project's digests are remembered as a workspace's are (a kept worktree compares each output applied this
    run, sixteen at each wave of a run at -j 16)."""
    if digest is None:
        return False
    try:
        source, target = os.lstat(project / rel), os.lstat(wt / rel)
    except OSError:
        return False
    if not stat.S_ISREG(source.st_mode) or source.st_mode != target.st_mode:
        return False
    return _digest(_digests.setdefault(str(project), {}), rel, str(project / rel), source) == digest


def _symlinks(root: Path) -> frozenset[str]:
    """The symlinks under root (not followed)."""
    return _layout(root)[0]


def _links(root: Path) -> dict[str, str]:
    """The symlinks under root (not followed), each with its target."""
    return {rel: os.readlink(entry.path) for rel, entry in _entries(root) if entry.is_symlink()}


def _layout(root: Path, modes: bool = False) -> tuple[frozenset[str], dict[str, int]]:
    """The symlinks under root (not followed) and, when asked, the permission bits of its regular files
    (a digest says nothing of a chmod)."""
    links, bits = set(), {}
    for rel, entry in _entries(root):
        if entry.is_symlink():
            links.add(rel)
        elif modes and entry.is_file(follow_symlinks=False):
            bits[rel] = entry.stat(follow_symlinks=False).st_mode & 0o7777
    return frozenset(links), bits


def _drop_empty_folders(root: Path, head: Iterable[str]) -> None:
    """An empty folder an attempt left, or emptied, goes, but one of HEAD's (`head`: its paths): a new worktree
    holds those even when the project's state deletes every file in one."""
    keep = {str(Path(rel).parent) for rel in head}
    keep |= {str(parent) for rel in keep for parent in Path(rel).parents}
    for folder, dirs, _files in os.walk(root, topdown=False):
        for d in dirs:
            full = os.path.join(folder, d)
            if not os.path.islink(full) and not os.listdir(full) and os.path.relpath(full, root) not in keep:
                os.rmdir(full)


def _git_state(wt: Path) -> tuple | None:
    """The worktree's own index and HEAD files' identities (git keeps them under the repository's .git)."""
    try:
        gitdir = (wt / ".git").read_text().strip().removeprefix("gitdir: ")
        stats = [os.stat(os.path.join(gitdir, name)) for name in ("index", "HEAD")]
    except OSError:
        return None
    return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)


def _ignore_marks(project: Path, entries: list[tuple[str, str]], head: Iterable[str]) -> tuple:
    """What decides the project's ignored top-level folders: its top-level entries that neither HEAD (`head`: its
    paths) holds nor `git status` names (a new one may be ignored), and the ignore files that could make one so."""
    known = {rel.split("/", 1)[0] for _xy, rel in entries} | {rel.split("/", 1)[0] for rel in head}
    # (an empty folder is never ignored: git does not see it)
    tops = sorted(
        e for e in os.listdir(project) if e not in known and e not in PRIVATE and not _empty_folder(project / e)
    )
    stats = []
    for rel in [".gitignore", ".git/info/exclude"] + [f"{e}/.gitignore" for e in tops]:
        try:
            st = os.stat(project / rel)
        except OSError:
            continue
        stats.append((rel, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(tops), tuple(stats)


def _empty_folder(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink() and not os.listdir(path)
    except OSError:
        return False


def remove_workspace(home: Path, project: Path) -> None:
    """Drop a candidate's workspace; a worktree is unregistered from the project's repository too (a prune
    only when the targeted remove did not do it: two git processes fewer per attempt)."""
    _forget(home)
    if (home / "wt").exists():
        _removed(home, project, _git(project, "worktree", "remove", "--force", str(home / "wt")).returncode)
    shutil.rmtree(home, ignore_errors=True)


def remove_workspaces(spent: list[tuple[Path, Path]]) -> None:
    """Drop the (home, project) workspaces kept until the run's end, their `git worktree remove`s at once: one
    after another, sixteen took 0.12-0.13 s of the run's end (0.06 s at once, on 2 cores)."""
    removing = []
    for home, project in spent:
        _forget(home)
        if (home / "wt").exists():
            argv = ["git", "worktree", "remove", "--force", str(home / "wt")]
            quiet = subprocess.DEVNULL
            removing.append((home, project, subprocess.Popen(argv, cwd=project, stdout=quiet, stderr=quiet)))
        else:
            shutil.rmtree(home, ignore_errors=True)
    for home, project, proc in removing:
        _removed(home, project, proc.wait(timeout=120))
        shutil.rmtree(home, ignore_errors=True)


def _forget(home: Path) -> None:
    """What this process remembers of a workspace that goes: kept for another attempt, its files' digests."""
    with _kept_lock:
        _kept.pop(str(home), None)
    for root in list(_digests):  # a copy: other attempts add theirs meanwhile
        if root == str(home) or root.startswith(str(home) + os.sep):
            _digests.pop(root, None)


def _removed(home: Path, project: Path, code: int) -> None:
    """After `git worktree remove`: when git could not remove it, the folder goes and the repository forgets it."""
    if code != 0 or (home / "wt").exists():
        shutil.rmtree(home, ignore_errors=True)
        _git(project, "worktree", "prune")


KEEP = 64  # spent worktrees kept for another attempt at most (a run at -j 16 has 16 in use)


class Workspaces(Background):
    """The run's attempt workspaces once spent: a worktree kept for another attempt (make_workspace brings it
    back), any other removed on a thread of its own, so that a step's slot is free once its change is found
    rather than after `git worktree remove` (~15 ms, more on a busy machine). The workspaces are outside the
    project (one left in the temp folder harms no run); close() removes the kept ones and waits for every
    removal, so none outlives the run."""

    def __init__(self) -> None:
        super().__init__(remove_workspace, "workspace-remover", (OSError, subprocess.SubprocessError))
        self._free: list[tuple[Path, Path]] = []  # (home, project)
        self._free_lock = threading.Lock()

    def home(self, project: Path, name: str) -> Path:
        """Where an attempt of step `name` makes its workspace: a kept one of this project's, or a new folder."""
        with self._free_lock:
            for i, (home, kept_for) in enumerate(self._free):
                if kept_for == project:
                    del self._free[i]
                    return home
        return new_home(project, name)

    def remove(self, home: Path, project: Path) -> None:
        with _kept_lock:
            keep = str(home) in _kept
        with self._free_lock:
            if keep and len(self._free) < KEEP:
                self._free.append((home, project))
                return
        self.put(home, project)

    def close(self) -> None:
        with self._free_lock:
            spent, self._free = self._free, []
        try:
            remove_workspaces(spent)
        except (OSError, subprocess.SubprocessError):
            pass  # outside the project, in the temp folder: harms no run (as a removal on the thread)
        super().close()


def new_home(project: Path, name: str) -> Path:
    """A new folder for an attempt's workspace, outside the project, so nothing an agent writes through '..' can
    land in it."""
    return Path(tempfile.mkdtemp(prefix=f"runner-{stored(name)}-"))  # a sub-project's PATH:NAME: one file name


def find_change(
    workspace: Path, before: dict[str, str], links: Mapping[str, str], after: dict[str, str] | None = None
) -> Change:
    """Compare the workspace with its digests and symlinks from before the attempt (`links`: path -> target):
    what changed, whatever the agent says. `after`: the workspace's snapshot (private folders included), when the
    caller took it already."""
    if after is None:
        after = snapshot(workspace, private=True)
    change = Change()
    for rel, digest in after.items():
        if before.get(rel) != digest:
            change.files[rel] = (workspace / rel).read_bytes()
    for rel in before:
        if rel not in after and not (workspace / rel).is_symlink():
            change.files[rel] = None
    for rel, target in sorted(_links(workspace).items()):
        if links.get(rel) != target:  # a link the project holds (node_modules/.bin's) is none of the agent's
            change.symlinks[rel] = target
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
