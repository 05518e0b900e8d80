"""The warm no-op: prove from file stats alone that a target is up to date, before importing anything heavy.

After a successful `runner make`, the stats (size, mtime, inode) of every spec file, input and output of
the target are digested into .runner/noop. The next `runner make` of the same target stats the same
files; if the digest is unchanged nothing can have changed, so it reports every step cached without
loading the spec, the graph or the cache. Any difference, or anything unusual on the command line,
falls through to the full pipeline, which decides from content digests.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import time

from . import __version__
from .keys import RACY_NS, write_marshal

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the no-op path; mypy reads it as True
if TYPE_CHECKING:
    from collections.abc import Mapping

SNAPSHOT = os.path.join(".runner", "noop")
SNAPSHOT_PATHS = os.path.join(".runner", "noop-paths")  # per-path stats: read only when the proof fails
# the options of a plain `runner make`, as the names runner.make_command.run takes them
_FLAGS = {"-k": "keep_going", "--keep-going": "keep_going", "--no-wait": "no_wait", "--json": "as_json"}
_WITH_VALUE = {"-C": "directory", "--directory": "directory", "-j": "jobs", "--jobs": "jobs", "--timeout": "timeout"}


_checked: dict[str, tuple] = {}  # root -> (paths, their stats) as a failed no-op proof just took them


def _each_stat(root: str, paths: list[str]) -> tuple[list, list[str]]:
    """(the stats of `paths`, the paths modified too recently for their mtime to be trusted)."""
    racy_after = time.time_ns() - RACY_NS
    stats: list[tuple[int, int, int] | None] = []
    racy: list[str] = []
    stat = os.stat
    prefix = root + "/"
    for rel in paths:
        try:
            st = stat(rel if rel[0] == "/" else prefix + rel)
        except OSError:
            stats.append(None)
            continue
        if st.st_mtime_ns > racy_after:
            racy.append(rel)
        stats.append((st.st_size, st.st_mtime_ns, st.st_ino))
    return stats, racy


def _stats_digest(stats: list) -> str:
    # marshal version 2 writes no back-references, so equal stats give equal bytes whichever objects hold them
    return hashlib.sha256(marshal.dumps(stats, 2)).hexdigest()


def content_digest(root: str, rel: str) -> str | None:
    """What a path holds: a file's bytes, a folder's names (an entry added within the same mtime tick)."""
    full = rel if rel[0] == "/" else root + "/" + rel
    try:
        if os.path.isdir(full):
            return hashlib.sha256("\0".join(sorted(os.listdir(full))).encode()).hexdigest()
        with open(full, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _slot(target: str | None) -> str:
    """A target's entry in the snapshot files (another runner version's entries are never read)."""
    return f"{__version__}\0{target or ''}"


def cached_lines(names: list[str]) -> list[str]:
    """The `step_finished` lines of steps reported up to date. Intent names are [A-Za-z0-9_.-] (the schema
    says so), so the lines need no JSON encoder: a 10,000-step no-op or edit is mostly these."""
    return [
        f'{{"event": "step_finished", "intent": "{n}", "status": "cached", "reasons": ["up to date"]}}' for n in names
    ]


def _load(root: str, name: str = SNAPSHOT) -> dict:
    try:
        with open(os.path.join(root, name), "rb") as f:
            return marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}


def snapshot_paths(
    sources: list[str], order: list[str], declared: Mapping[str, tuple[str, ...]], unprovable: frozenset[str]
) -> list[str] | None:
    """The files a no-op proof of the steps `order` stats, spec files first; None when no proof can hold
    (a step runs every time, or a glob could match a new file without any stat changing)."""
    if not unprovable.isdisjoint(order):
        return None
    paths = list(sources)
    for name in order:
        paths += declared[name]
    return list(dict.fromkeys(paths))  # a dependency's output is usually also a declared input


class FirstLook:
    """What the declared files looked like as a run began, against the last good run of its target."""

    __slots__ = ("changed", "order", "paths", "stats", "racy_digests", "snapshots")  # no typing import

    def __init__(self, snapshots: tuple[dict, dict]):
        self.snapshots = snapshots  # both snapshot files as read under the project lock, for save_snapshot
        self.changed: set[str] | None = None  # paths whose stats (or bytes) differ; None: nothing to compare
        self.order: list[str] | None = None  # the target's steps, as the last good run had them
        self.paths: list[str] | None = None  # the files the target's no-op proof stats (snapshot_paths)
        self.stats: list = []  # (size, mtime_ns, inode) or None for each of `paths`, when the run began
        self.racy_digests: dict[str, str] = {}  # the last good run's digests of paths its stats could not vouch for

    def stat_paths(self, root: str, paths: list[str] | None) -> None:
        """No usable snapshot: take the stats of the target's files as the run begins, for the next proof."""
        self.paths = paths
        self.stats = [] if paths is None else _each_stat(root, paths)[0]


def first_look(root: str, target: str | None, token: str, sources: list[str]) -> FirstLook:
    """Compare the declared files of `target` with its last good run, made from the same compiled spec
    (`token`) and spec files (`sources`): that run's order and paths hold, and `changed` says which paths
    differ (the stats a failed no-op proof just took are reused). Without such a run, `order` and `paths`
    stay None, for the caller to work out.

    Every step of that run was up to date, so a step none of whose inputs and outputs changed, and none
    of whose dependencies must run, is still up to date: the full pipeline decides only the others.
    """
    slot = _slot(target)
    look = FirstLook((_load(root), _load(root, SNAPSHOT_PATHS)))
    entry, detail = look.snapshots[0].get(slot), look.snapshots[1].get(slot)
    checked_paths, checked = _checked.pop(root, (None, None))
    if (
        entry is None
        or detail is None
        or len(entry) != 5
        or entry[4] != token
        or detail[0] != entry[1]
        or detail[1] != len(sources)
        or entry[0][: len(sources)] != sources
        or len(detail[2]) != len(entry[0])  # a damaged file: no proof, rather than a shorter one
    ):
        return look
    paths, _digest, order, racy_digests, _token = entry
    stats = checked if checked_paths == paths else _each_stat(root, paths)[0]
    changed = {rel for rel, a, b in zip(paths, detail[2], stats, strict=True) if a != b}
    changed.update(
        rel for rel, want in racy_digests.items() if rel not in changed and content_digest(root, rel) != want
    )
    look.order, look.paths, look.stats, look.racy_digests = order, paths, stats, racy_digests
    look.changed = None if any(rel in changed for rel in sources) else changed
    return look


def save_snapshot(
    root: str,
    target: str | None,
    token: str,
    n_sources: int,
    order: list[str],
    look: FirstLook,
    observed: dict[str, tuple],
) -> None:
    """Record the no-op proof for `target` after a good run of the steps `order`, compiled as `token`.

    Each file's stats are those it had when the run read it: `observed` (path -> size, mtime, inode,
    hashed_at, digest) for files the run hashed or confirmed, else its stats as the run began. A file
    edited after its step read it (a user saving during a long build) then differs from the proof.
    A file modified within the racy window of this save (git's rule, against the time its index is
    written) could change again without its stats showing it, so the digest of the bytes the run used is
    kept too and checked by the next no-op.
    """
    entries, detail = look.snapshots
    slot = _slot(target)
    paths = look.paths
    if paths is None:
        if entries.pop(slot, None) is not None:
            _write(root, entries)
        return
    racy_after = time.time_ns() - RACY_NS
    stats = list(look.stats)
    position = {rel: i for i, rel in enumerate(paths)} if observed else {}
    racy_digests = {}
    for rel, seen in observed.items():
        i = position.get(rel)
        if i is not None:
            stats[i] = seen[:3]
            if seen[1] > racy_after:
                racy_digests[rel] = seen[4]
    for rel, st in zip(paths, stats, strict=True):
        if st is not None and st[1] > racy_after and rel not in racy_digests:
            racy_digests[rel] = look.racy_digests.get(rel) or content_digest(root, rel)
    digest = _stats_digest(stats)
    entries[slot] = (paths, digest, order, racy_digests, token)
    _write(root, entries)
    detail[slot] = (digest, n_sources, stats)
    _write(root, detail, SNAPSHOT_PATHS)


def drop_snapshot(root: str, target: str | None) -> None:
    """No proof for `target` until its next good run."""
    entries = _load(root)
    if entries.pop(_slot(target), None) is not None:
        _write(root, entries)


def forget(root: str) -> None:
    for name in (SNAPSHOT, SNAPSHOT_PATHS):
        try:
            os.unlink(os.path.join(root, name))
        except FileNotFoundError:
            pass


def _write(root: str, entries: dict, name: str = SNAPSHOT) -> None:
    try:
        write_marshal(os.path.join(root, name), entries)
    except OSError:
        pass  # a read-only state folder only costs the fast path


def parse_plain_make(argv: list[str]) -> dict | None:
    """The options of a plain `runner make` (`-C DIR`, `-j N`, `-k`, `--no-wait`, `--timeout S`, `--json`, a
    target) as runner.make_command.run's arguments; None for anything else, and for a value click would refuse
    (click says what is wrong with it)."""
    if not argv or argv[0] != "make":
        return None
    options: dict = {"directory": "."}
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _FLAGS:
            options[_FLAGS[arg]] = True
        elif arg in _WITH_VALUE:
            if i + 1 >= len(argv):
                return None
            name, value = _WITH_VALUE[arg], argv[i + 1]
            if name == "directory":
                options[name] = value
            elif not _positive(value, integer=name == "jobs"):
                return None
            else:
                options[name] = int(value) if name == "jobs" else float(value)
            i += 1
        elif arg.startswith("--directory="):
            options["directory"] = arg.split("=", 1)[1]
        elif arg.startswith("-j") and _positive(arg[2:], integer=True):
            options["jobs"] = int(arg[2:])
        elif arg.startswith("-") or "target" in options:
            return None
        else:
            options["target"] = arg
        i += 1
    return options


def _positive(value: str, integer: bool) -> bool:
    try:
        return (int(value) if integer else float(value)) > 0
    except ValueError:
        return False


def find_root(directory: str) -> str:
    """The nearest folder at or above `directory` holding intents.toml (as git finds .git)."""
    start = folder = os.path.abspath(directory)
    while not os.path.isfile(os.path.join(folder, "intents.toml")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent
    return folder


def try_noop(argv: list[str]) -> int | None:
    """Exit code 0 after reporting a proven no-op, or None to run the full pipeline."""
    parsed = parse_plain_make(argv)
    if parsed is None:
        return None
    started = time.monotonic()
    target, as_json = parsed.get("target"), parsed.get("as_json", False)
    root = find_root(parsed["directory"])
    entries = _load(root)
    entry = entries.get(_slot(target))
    if entry is None or len(entry) != 5:
        return None
    paths, digest, order, racy_digests, token = entry
    stats, racy_now = _each_stat(root, paths)
    if _stats_digest(stats) != digest:
        _checked[root] = paths, stats  # the full pipeline, next in this process, asks which paths changed
        return None
    for rel, want in racy_digests.items():  # same stats, but an mtime too fresh to prove the same bytes
        if content_digest(root, rel) != want:
            return None
    if racy_digests and not racy_now:  # they have aged past the racy window: stats alone suffice now
        entries[_slot(target)] = (paths, digest, order, {}, token)
        _write(root, entries)
    _report(root, order, as_json, started)
    return 0


def _report(root: str, order: list[str], as_json: bool, started: float) -> None:
    from .record import new_run_id
    from .report import summary_line

    run_id = new_run_id()
    lines = [f'{{"event": "run_started", "run_id": "{run_id}", "steps": {len(order)}, "fast": true}}']
    lines += cached_lines(order)
    finished = {
        "event": "run_finished",
        "run_id": run_id,
        "status": "ok",
        "ran": 0,
        "cached": len(order),
        "restored": 0,
        "failed": 0,
        "skipped": 0,
        "duration": round(time.monotonic() - started, 3),
    }
    import json

    lines.append(json.dumps(finished))
    text = "\n".join(lines) + "\n"
    run_dir = os.path.join(root, ".runner", "runs", run_id)
    try:
        os.makedirs(os.path.join(run_dir, "logs"))
        with open(os.path.join(run_dir, "events.jsonl"), "w") as f:
            f.write(text)
    except OSError:
        pass
    sys.stdout.write(text if as_json else summary_line(finished) + "\n")
    sys.stdout.flush()
