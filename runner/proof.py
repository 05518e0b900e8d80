"""Shortcut 6 of the rule (runner/freshness.py): the target's proof, what a good run records of the stats its
verdicts rested on, as the file holds it, and how it is written. The warm no-op checks it (runner/noop.py)."""

from __future__ import annotations

import hashlib
import marshal
import os
from collections import namedtuple

from . import __version__, forked
from .index_file import write_marshal
from .stat_cache import NEVER, seen, vouches

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from .compiled import Compiled
    from .cone import FirstLook
    from .stat_cache import View

PROOF = os.path.join(".runner", "noop")
_OLD_PROOF_FILES = (os.path.join(".runner", "noop-paths"),)  # runner 0.1's second proof file, removed by forget()

# A target's entry in the proof file (marshal stores it as a plain 10-tuple): its paths and its steps' order (both
# as joined stores them), the digest of their stats, the digests kept of bytes the stats could not vouch for, the
# compiled spec's token, how many of the paths are spec and worker files (they come first), the stats as recorded
# (stat_pieces), the variables `env` values read with the digest of their values, the positions of the aggregates
# in order, and the digests of the bytes the spec's loader read of its files.
ProofEntry = namedtuple("ProofEntry", "paths digest order kept token n_sources stats_bytes env aggregates spec_read")
# What a no-op that found the proof broken took and compared, handed to the pipeline in the same process
# (Missed.checked) so the first look does not stat 100,000 paths again: the paths as stored and as a list, their
# stats and when they were taken, the proof's stats as recorded, and (position, recorded stat) of each that differs
# (None: the recorded stats were damaged).
Checked = namedtuple("Checked", "stored_paths paths stats taken_at stats_bytes changed")
# A no-op that could not answer: the project root, the proof file as it read it and what it checked (or None), for
# the pipeline, which stands on them only if no other runner held the lock since (cone.first_look)
Missed = namedtuple("Missed", "root proofs checked")


class Taken:
    """The stats of a proof's paths as just taken: as the proof records them (`pieces`, stat_pieces) at once, as
    a list (`stats`) when a caller needs them one by one. A no-op whose pieces all match the proof's never
    decodes the half a forked child took."""

    __slots__ = ("pieces", "_head", "_stats", "_decoded")

    def __init__(self, pieces: list[bytes], head: list, whole: bool):
        self.pieces = pieces
        self._head = head  # the stats of the first paths, len(head) a multiple of CHUNK unless `whole`
        self._stats = head if whole else None
        self._decoded: dict[int, list] = {}  # the pieces __getitem__ decoded

    def __getitem__(self, i: int) -> tuple[int, int, int, int] | None:
        """The stat of path i, decoding only its piece (a touch asks for a few paths' of 110,000)."""
        if self._stats is not None:
            return self._stats[i]
        if i < len(self._head):
            return self._head[i]
        k = i // CHUNK
        piece = self._decoded.get(k)
        if piece is None:
            piece = self._decoded[k] = marshal.loads(self.pieces[k])
        return piece[i % CHUNK]

    @property
    def stats(self) -> list[tuple[int, int, int, int] | None]:
        if self._stats is None:
            loads = marshal.loads
            self._stats = self._head + [s for piece in self.pieces[len(self._head) // CHUNK :] for s in loads(piece)]
        return self._stats


def take_stats(root: str, paths: list[str]) -> Taken:
    """(size, mtime, ctime, inode) of each path under `root` (None: not there). When they are many, a forked
    child takes the second half's and sends back its pieces (forked.Child: 0.30-0.35 s instead of 0.39-0.59 s
    for 110,000 paths on two cores); if the child fails, this process takes them."""
    if not forked.worth_it(len(paths)):
        stats = stats_here(root, paths)
        return Taken(stat_pieces(stats), stats, whole=True)
    cut = len(paths) // 2 // CHUNK * CHUNK  # the child's pieces are the proof's pieces from `cut` on
    with forked.Child(lambda: stat_pieces(stats_here(root, paths[cut:]))) as child:
        head = stats_here(root, paths[:cut])
        tail = child.result()
    if not isinstance(tail, list) or len(tail) != -(-(len(paths) - cut) // CHUNK):
        tail = stat_pieces(stats_here(root, paths[cut:]))
    return Taken(stat_pieces(head) + tail, head, whole=False)


def stats_here(root: str, paths: list[str]) -> list[tuple[int, int, int, int] | None]:
    stats: list[tuple[int, int, int, int] | None] = []
    append = stats.append
    stat = os.stat
    # looked up from the project's folder, as make does from its own: the kernel then walks only the path's
    # own parts, not the root's again for each (0.36 s instead of 0.42-0.62 s for 110,000 paths, and the
    # no-op at 100,000 steps is mostly this loop); an absolute path ignores dir_fd
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in paths:
            try:
                st = stat(rel, dir_fd=folder)
            except OSError:
                append(None)
                continue
            append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    finally:
        os.close(folder)
    return stats


CHUNK = 512  # stats per piece of a proof's recorded stats


def stat_pieces(stats: list) -> list[bytes]:
    """The proof's record of `stats`: marshal bytes of each CHUNK of them. An edit then decodes only the
    pieces holding a changed stat (decoding all 110,000 took 0.04-0.065 s of a 100,000-step edit)."""
    # marshal version 2 writes no back-references, so equal stats give equal bytes whichever objects hold them
    dumps = marshal.dumps
    return [dumps(stats[i : i + CHUNK], 2) for i in range(0, len(stats), CHUNK)]


def pieces_digest(pieces: list[bytes]) -> str:
    return hashlib.sha256(b"".join(pieces)).hexdigest()


def joined(names: list[str] | str) -> str:
    """A proof's paths or order as it stores them: one string of the names joined by NULs (no path or intent
    name holds one). Loaded, one split makes the list (12 ms for 110,000 paths, where the marshal of the list
    took 31 ms), and the no-op's report is made from the string whole (`events.cached_text`)."""
    return names if isinstance(names, str) else "\0".join(names)


def names_of(stored: list[str] | str) -> list[str]:
    """The names a proof stores (joined; a list in the layout before)."""
    if isinstance(stored, list):
        return stored
    return stored.split("\0") if stored else []


def slot_of(root: str, target: str | None) -> str:
    """A target's entry in the proof file (another runner version's entries are never read), for this folder:
    a copy of the project (`cp -a` keeps every mtime) holds the original's proof, whose spec files are named
    by absolute paths that still hold the original's stats, and must not take it for its own."""
    return _folder(root) + (target or "")


def _folder(root: str) -> str:
    """How every slot of this runner version and this folder begins (a target's name may hold NULs)."""
    st = os.stat(root)
    return f"{__version__}\0{st.st_dev}:{st.st_ino}\0"


def proof_name(targets: Sequence[str], spec_file: str = "intents.toml") -> str | None:
    """What the proof file calls a run of `targets` as named on the command line (intents or output paths,
    none for the default) from `spec_file` (`-f FILE`): the fast no-op finds the proof by what was typed,
    before any spec is read, and the proof's own stats of the spec files vouch that the names still resolve
    to the same steps. A NUL joins the parts: no name or path holds one."""
    name = targets if isinstance(targets, str) else "\0".join(targets)
    if spec_file != "intents.toml":
        name = f"{spec_file}\0\0{name}"
    return name or None


def load_proofs(root: str) -> dict:
    """The proof file: slot -> ProofEntry as marshal stores it ({} when there is none or it is damaged)."""
    try:
        with open(os.path.join(root, PROOF), "rb") as f:
            proofs = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return proofs if isinstance(proofs, dict) else {}


def proof_entry(root: str, proofs: dict, target: str | None) -> ProofEntry | None:
    """The entry of `target` in this folder, None if there is none (or it has another layout)."""
    entry = proofs.get(slot_of(root, target))
    return ProofEntry._make(entry) if isinstance(entry, tuple) and len(entry) == 10 else None


def env_digest(names: tuple[str, ...]) -> str:
    """What the variables `env` values read hold now (a digest: a secret's value is never written)."""
    environ = os.environ
    return hashlib.sha256("\0".join(f"{n}\0{environ.get(n, chr(1))}" for n in names).encode()).hexdigest()


def changed_stats(stats_bytes: list[bytes], now_bytes: list[bytes]) -> list | None:
    """(position, recorded stat) of each path whose stats differ from the proof's, found without a Python-level
    loop over a 100,000-path proof: only the pieces whose bytes differ from `now_bytes` (the stats now, as
    stat_pieces makes them) are decoded and compared. None if the recorded stats are damaged (or of an older
    layout)."""
    from itertools import compress
    from operator import ne

    if not isinstance(stats_bytes, list) or len(stats_bytes) != len(now_bytes):
        return None
    changed: list[tuple[int, tuple | None]] = []
    for k in compress(range(len(now_bytes)), map(ne, now_bytes, stats_bytes)):
        start = k * CHUNK
        part = marshal.loads(now_bytes[k])
        try:
            recorded = marshal.loads(stats_bytes[k])
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(recorded, list) or len(recorded) != len(part):
            return None
        changed += [(start + i, recorded[i]) for i in compress(range(len(part)), map(ne, recorded, part))]
    return changed


def snapshot_paths(sources: list[str], order: list[str], compiled) -> list[str] | None:
    """The files a proof of the steps `order` stats, spec files first, then what each step declares, each once (a
    dependency's output is usually a declared input too); None when no proof can hold (a step runs every time,
    or a glob could match a new file without any stat changing)."""
    if not compiled.unprovable.isdisjoint(order):
        return None
    return list(dict.fromkeys([*sources, *compiled.declared_paths(order)]))


def record_proof(
    root: str,
    target: str | None,
    compiled: Compiled,
    n_sources: int,
    order: list[str],
    look: FirstLook,
    views: Mapping[str, View | str],
    doubtful: set[str] | None,
) -> None:
    """After a good run of the steps `order`, record the proof of `target` (freshness.py, shortcut 6), made from
    `compiled` and the first `n_sources` paths of `look` (the compiled spec's files, then the worker's).

    From `compiled`: the stats the compiled spec was made from, one per spec file (`spec_stats`), the digests of
    those whose stats could not vouch for the bytes read (`spec_kept`), the digests of the bytes the loader read
    of the files it read itself (`spec_read`), and the targets with only deps (`aggregates`), which the no-op
    reports as a run does (not at all). `doubtful`: the steps the rule decided (None: all), the others were
    proved as the run began; `views`: what the decided steps' verdicts saw (StatCache.views).
    """
    spec_stats, spec_kept, declared_by = compiled.spec_stats, compiled.spec_kept, compiled.declared_by
    proofs = look.proofs
    slot = slot_of(root, target)
    paths = look.paths
    if paths is None:
        if proofs.pop(slot, None) is not None:
            write_proofs(root, proofs)
        return
    # replaced in place: the stats as the run began go as the proof's take their place (a copy held both,
    # ~22 MB at the end of a 100,000-step build); `look` serves no one after this
    stats = look.stats
    kept: dict[str, str] = {}
    differ = look.differ
    proven = None if doubtful is None else set(order).difference(doubtful)
    for i in _to_settle(paths, n_sources, differ, views, look.kept):
        rel = paths[i]
        if i < len(spec_stats):
            if spec_stats[i] != stats[i]:
                stats[i] = NEVER  # the spec changed after it was compiled
            elif rel in spec_kept:
                digest = spec_kept[rel]
                if digest is None:
                    stats[i] = NEVER
                else:
                    kept[rel] = digest
            continue
        if i < n_sources:
            if stats[i] is not None and not vouches(stats[i], look.taken):
                stats[i] = NEVER  # a worker file too fresh to vouch for the version the run read
            continue
        view = views.get(rel)
        if view is None:  # only proved steps rest on it: as the run began, vouched for by the last proof
            if differ is not None and rel not in differ:
                if rel in look.kept:
                    kept[rel] = look.kept[rel]
            elif stats[i] is not None and not vouches(stats[i], look.taken):
                stats[i] = NEVER
            continue
        if isinstance(view, str):
            stats[i] = NEVER  # two verdicts rest on two states of the file
            continue
        saw, digest, hashed_at = seen(view.encoded)
        if proven and saw != stats[i] and not proven.isdisjoint(declared_by.get(rel, ())):
            stats[i] = NEVER  # two verdicts rest on two states of the file
            continue
        stats[i] = saw
        if saw is not None and not vouches(saw, hashed_at):
            kept[rel] = digest
    stats_bytes = stat_pieces(stats)
    env_names = compiled.env_names
    if compiled.runtimes:  # where runtime commands' programs resolve, and what a version manager's shims read
        from .toolchain import MANAGER_VARIABLES

        env_names = tuple(sorted({*env_names, "PATH", *MANAGER_VARIABLES}))
    env = (env_names, env_digest(env_names)) if env_names else ((), "")
    aggregates = compiled.aggregates
    if look.order is order:  # the last proof's paths and order, from the same compiled spec: stored as they were
        positions, (stored_paths, stored_order) = look.aggregates, look.stored
    else:
        positions = tuple(i for i, name in enumerate(order) if name in aggregates) if aggregates else ()
        stored_paths, stored_order = paths, order
    entry = ProofEntry(
        paths=joined(stored_paths),
        digest=pieces_digest(stats_bytes),
        order=joined(stored_order),
        kept=kept,
        token=compiled.token,
        n_sources=n_sources,
        stats_bytes=stats_bytes,
        env=env,
        aggregates=positions,
        spec_read=dict(compiled.spec_read),
    )
    proofs[slot] = tuple(entry)  # marshal stores plain tuples
    # another folder's proofs (a copy's, a checkout whose .runner a CI cache restored) and another version's are
    # never read here: dropped, or a .runner restored run after run grew by a proof (7 MB at 100,000 steps) each time
    ours = _folder(root)
    for other in [key for key in proofs if not (isinstance(key, str) and key.startswith(ours))]:
        del proofs[other]
    write_proofs(root, proofs, trim=True)


def _to_settle(paths: list[str], n_sources: int, differ, views: Mapping, kept: Mapping) -> Sequence[int]:
    """The positions in `paths` whose recorded stat record_proof must work out. Given the paths that `differ`
    from the last proof, that is the spec and worker files, the paths a verdict saw (`views`), those that
    differ, and those the last proof kept a digest of: any other path is as the last proof had it, vouched
    for by it, and keeps its stat as the run began (an edit of one leaf in 100,000 steps settles a few
    hundred, not all of them)."""
    if differ is None:
        return range(len(paths))
    position = dict(zip(paths, range(len(paths)), strict=True))
    found = {position[rel] for group in (views, differ, kept) for rel in group if rel in position}
    return sorted(found.union(range(n_sources)))


def drop_proof(root: str, target: str | None) -> None:
    """No proof for `target` until its next good run."""
    proofs = load_proofs(root)
    if proofs.pop(slot_of(root, target), None) is not None:
        write_proofs(root, proofs)


def forget(root: str) -> None:
    for name in (PROOF, *_OLD_PROOF_FILES):
        try:
            os.unlink(os.path.join(root, name))
        except FileNotFoundError:
            pass


def write_proofs(root: str, proofs: dict, trim: bool = False) -> None:
    try:
        write_marshal(os.path.join(root, PROOF), proofs, trim=trim)
    except OSError:
        pass  # a read-only state folder only costs the fast path
