"""Whether a step is up to date: the one rule, and the shortcuts that give its answer faster.

The rule (`decide`)
    A step is up to date when its key matches a recorded success and its declared outputs hold the
    recorded bytes. The key digests the step's definition, prompt, adapter, regexes, worker and policy
    (the compiled spec's static digest; an agent step's also holds the worker's version), the contents of
    its inputs, and its dependencies' output digests, so a dependency that ran again and wrote the same
    bytes changes nothing (early cutoff). An input that is also the step's output counts as the bytes it
    had before the step ran, for as long as it holds what the step produced: a step never chases its own
    tail. A recorded success is the step's last good result (the state index) or any cache record of the
    key. An output that lost its bytes is restored from the blob store; the step runs only if the blob is
    gone; an agent step's output a person edited is never written over, but kept as its result (edits.py).
    An aggregate is up to date when its dependencies are; a step that declares nothing to key on runs every
    time, like a phony make rule; `-B` runs everything.

The shortcuts, each answering as the rule does, and the invariant each rests on
    1. Digests from stats (`StatCache`, as git's index). A file's digest is reused while its stats (size,
       mtime, ctime, inode) equal those taken when it was hashed and its mtime and ctime are older than the
       hashing by more than RACY_NS. Invariant: a write changes ctime, which no user can set back, and
       mtime; only a write within one clock tick of the hashing could leave every stat as it was, and the
       racy window refuses to vouch for that tick (git's "racily clean" rule).
    2. The compiled spec (`compiled.load_compiled`). Reused while each spec file's stats equal those taken
       when it was compiled, none of them modified within RACY_NS before the compile began (a spec whose
       files were that fresh is used once and not kept). Invariant: as 1, with the clock started before
       the first read, so an edit made while the spec was read falls inside the window.
    3. The target's proof (`prove_target`: the warm no-op). A good run records, for each spec file and
       declared path of its target, the stats its verdicts rested on: for a step the rule decided, the
       stats its decision read, and those of its outputs once it wrote or restored them; for a step that
       shortcut 4 proved, the stats as the run began; for a spec file, those the compiled spec was made
       from. A path seen in two states by two verdicts, a spec file changed between the compile and the
       run, and a path too fresh for its stats to vouch for bytes nobody hashed, are recorded as a stat
       no file has. Where the stats could not vouch for the bytes the run used, their digest is kept and
       checked. A run that finds every recorded stat (and kept digest) again would decide each step as
       the recorded run did: nothing to do. Invariant: 1, and every file a step reads is a declared path
       (a glob, or a step that runs every time, leaves its target without a proof: what a glob expands to
       also rests on the ignore rules, runner/ignore.py, which no declared path shows). The values of the
       variables `env` values read ($NAME) are part of keys: the proof keeps their digest, and holds only
       while it is the same. The proof is found by the targets as typed and the intents file (`-f`,
       `proof_name`), in this folder (its device and inode: a copy's proof is the original's, `_slot`):
       the spec files' stats vouch that those names still select the same steps.
       A touch (`_touched`): when a few declared files (no spec file) have new stats, the proof still
       holds if each one's bytes now are the bytes the proof vouched for: its kept digest, or the stat
       cache's digest of a file with exactly the recorded stats, hashed when they vouched for it (1). The
       proof then records the new stats (with a kept digest while they are too fresh). When the no-op
       drops kept digests whose stats now vouch, it writes them to the stat cache, each with the stats
       taken before its bytes were read. Invariant: 3 and 1; every byte a verdict rested on is the same.
    4. The edit's cone (`first_look`, `doubtful_steps`). Against that proof, a path whose stats differ is
       changed; a step that declares no changed path, is no agent step, has a last good result, and
       depends on no step left to decide, is up to date as the recorded run found it. Only the cone
       downstream of the changed paths is decided by the rule (all of it when a variable `env` reads
       changed). Invariant: 3, path by path.
       An edit of the spec (`FirstLook.after_edit`): a proof made from the compilation this one replaced
       (compiled.Compiled.previous) still stands for a step whose fingerprint (its static digest and its
       dependencies, all a key takes from the spec) is the same in both, which it was in the last proof's
       order, and whose declared paths are as that proof recorded them; the edited steps and the cone below
       them are decided. A proof from any older compilation, or a worker file changed, proves nothing.
       Invariant: 3, and the fingerprint of every step holds what its key takes from the spec files.

Everything here is imported by the warm no-op before anything heavy: keep the imports to the standard
library's cheapest, `keys` and `index_file`.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import time

from . import __version__, forked
from .index_file import IndexFile, write_marshal
from .keys import content_digest, digest_file, step_key, with_canaries

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the no-op path; mypy reads it as True
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence, Set
    from typing import Any

    from .edits import KeptEdit
    from .plan import Planner

RUN, SKIP = "run", "skip"
ALWAYS = "no inputs or dependencies declared: runs every time (declare inputs to cache it)"

# A file modified within this window of being hashed may share every stat with the hashed version (coarse
# filesystem clocks), so its stats do not vouch for its bytes: git's "racily clean" rule.
RACY_NS = 1_000_000_000
NEVER = (-1, -1, -1, -1)  # a stat no file has: a proof holding it for a path never holds

PROOF = os.path.join(".runner", "noop")
_OLD_PROOF_FILES = (os.path.join(".runner", "noop-paths"),)  # runner 0.1's second proof file, removed by forget()


def stat_of(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a stat proof compares: size, mtime, ctime and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def vouches(stat: tuple[int, int, int, int], taken_ns: int) -> bool:
    """A file's stats (stat_of) taken at `taken_ns` vouch for its bytes: neither its mtime nor its ctime
    (a write that put the mtime back moves it) is within the racy window of that moment."""
    return max(stat[1], stat[2]) + RACY_NS < taken_ns


# ---- shortcut 1: digests from stats ---------------------------------------------------------------------------


class StatCache:
    """path -> (size, mtime_ns, ctime_ns, inode, hashed_at_ns, digest), as git's index: a no-op reads no file.

    Each entry is kept as its own marshal bytes and decoded when its path is asked for: a run that looks at a
    few hundred of a 10,000-file project's paths does not build 10,000 tuples to write them back.

    It also keeps what the run's verdicts saw (`views`) for the target's proof: each digest asked `by` a step
    is a view of that path; a step's own write (`written`, `remember`) replaces its own view. Two different
    views of one path by two verdicts make it SEEN_TWICE. A view is the marshal bytes of the entry the verdict
    read (None: no file), the very bytes object the cache holds (`seen` decodes it): a clean build views
    every path, and a tuple of its own per view cost ~270 B a path.
    """

    SEEN_TWICE = "seen twice"

    def __init__(self, path: str):
        self.path = path
        self._changed: set[str] = set()  # paths whose entries changed since read or saved: what save() appends
        self.reads = 0  # how many files had to be hashed (for tests and the benchmark)
        # paths hashed by this process: within one run, a file hashed and not written since (its stats
        # unchanged) is not read again; its view keeps the hashing time, so the proof checks its bytes
        self.fresh: set[str] = set()
        self._file = IndexFile(path)
        self._encoded = self._file.read()
        # path -> (the encoded entry a verdict saw or None, the step that first saw it, seen by another step
        # too) or SEEN_TWICE
        self.views: dict[str, tuple | str] = {}
        # path -> the entry made when the runner hashed a file its step had written (or it restored), the writer
        # done: no write of the run can leave that entry's stats as they were (runner/inputs_held.py)
        self.own: dict[str, bytes] = {}

    def entry(self, rel: str) -> tuple | None:
        encoded = self._encoded.get(rel)
        if encoded is None:
            return None
        entry = marshal.loads(encoded)
        return entry if len(entry) == 6 else None  # runner 0.1's entries had no ctime: hashed again

    def _set(self, rel: str, entry: tuple) -> bytes:
        encoded = self._encoded[rel] = marshal.dumps(entry)
        self.fresh.add(rel)
        self._changed.add(rel)
        return encoded

    def digest(self, root: str, rel: str, by: str | None = None) -> str | None:
        """The content digest of root/rel, or None if it does not exist (or is not a regular file). `by`: the
        step whose verdict rests on it (a view for the proof)."""
        full = root + "/" + rel
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            if self._encoded.pop(rel, None) is not None:
                self._changed.add(rel)
            if by is not None:
                self._view(rel, None, by, False)
            return None
        stat = stat_of(st)
        encoded = self._encoded.get(rel)
        entry = None if encoded is None else marshal.loads(encoded)
        if (
            entry is not None
            and len(entry) == 6
            and entry[:4] == stat
            and (vouches(stat, entry[4]) or rel in self.fresh)
        ):
            value = entry[5]
        elif not stat_is_file(st):  # what os.path.isfile asks, from the stat just taken
            return None
        else:
            value = digest_file(full)
            self.reads += 1
            encoded = self._set(rel, (*stat, time.time_ns(), value))
        if by is not None:
            self._view(rel, encoded, by, False)
        return value

    def written(self, root: str, rel: str, by: str) -> str | None:
        """The digest of a file step `by` just wrote or had restored: its view of the path from now on."""
        if self._encoded.pop(rel, None) is not None:  # its stats may not have moved within the tick: hash it
            self._changed.add(rel)
        self.fresh.discard(rel)
        value = self.digest(root, rel)
        encoded = self._encoded.get(rel) if value is not None else None
        if encoded is not None:
            self.own[rel] = encoded
        self._view(rel, encoded, by, True)
        return value

    def remember(self, rel: str, st: os.stat_result, value: str, by: str) -> None:
        """A digest computed elsewhere (the executor hashes outputs as it stores them), of what `by` wrote;
        `st` was taken before the bytes were read."""
        encoded = self.own[rel] = self._set(rel, (*stat_of(st), time.time_ns(), value))
        self._view(rel, encoded, by, True)

    def doubt(self, rel: str, wrong_bytes: bool = False) -> None:
        """`rel` changed under a step that read it: no proof rests on it; `wrong_bytes`: its entry's stats hold
        other bytes (a write within the racy window): hashed anew."""
        self.views[rel] = self.SEEN_TWICE
        if wrong_bytes and self._encoded.pop(rel, None) is not None:
            self._changed.add(rel)
            self.fresh.discard(rel)

    def _view(self, rel: str, view: bytes | None, by: str, wrote: bool) -> None:
        old = self.views.get(rel)
        if old is None or (wrote and not isinstance(old, str) and old[1] == by and not old[2]):
            self.views[rel] = (view, by, False)
        elif isinstance(old, str):
            return
        elif old[0] is not view and seen(old[0])[:2] != seen(view)[:2]:
            # another stat or digest: two verdicts rest on two states of the file
            self.views[rel] = self.SEEN_TWICE
        elif old[1] != by and not old[2]:
            self.views[rel] = (old[0], old[1], True)

    def save(self) -> None:
        if self._changed:
            self._file.write(self._encoded, self._changed, trim=True)
            self._changed.clear()


def seen(view: bytes | None) -> tuple:
    """(stat, digest, hashed_at) of a view (StatCache.views): what a verdict saw of a file; (None, None, 0)
    for no file."""
    if view is None:
        return None, None, 0
    entry = marshal.loads(view)
    return entry[:4], entry[5], entry[4]


def input_digests(stat: StatCache, root: str, files: list[str], by: str, entries: dict) -> dict[str, str | None]:
    """The digest of each input file (`Planner.input_files`: the expanded globs), None for a missing one; `entries`
    gets the stat cache entry each digest came from, for the re-check after the step (runner/inputs_held.py)."""
    digests = {}
    for rel in files:
        value = digests[rel] = stat.digest(root, rel, by)
        entries[rel] = None if value is None else stat._encoded.get(rel)
    return digests


# ---- the rule ---------------------------------------------------------------------------------------------


UP_TO_DATE = "up to date"  # the reason of a step whose last result stands


class Decision:
    """RUN or SKIP for one step, with the reasons and what its key was made of."""

    kept: KeptEdit | None = None  # a person's edit to an agent step's output, kept first (runner/edits.py)

    def __init__(
        self,
        intent: str,
        action: str,
        reasons: list[str],
        key: str | None = None,
        outputs: dict | None = None,
        restore: dict | None = None,
        inputs: dict | None = None,
        dep_digests: dict | None = None,
        inplace: dict | None = None,
        slice_key: str | None = None,
        seen: dict | None = None,
    ):
        self.intent = intent
        self.action = action  # RUN | SKIP
        self.reasons = reasons
        self.key = key  # None when it depends on a step that has not run yet
        self.outputs: dict[str, str | None] = {} if outputs is None else outputs  # known outputs (SKIP)
        self.restore: dict[str, str] = {} if restore is None else restore  # output path -> blob to restore
        self.inputs: dict[str, str | None] = {} if inputs is None else inputs
        self.dep_digests: dict[str, str | None] = {} if dep_digests is None else dep_digests
        self.inplace: dict[str, str | None] = {} if inplace is None else inplace  # pre-run digests of in-place inputs
        # the key without canary patterns: where the step falls in each canary's slice (parse.Pattern.used_for)
        self.slice_key = key if slice_key is None else slice_key
        # input path -> the stat cache entry its digest came from (None: no file): what inputs_held re-checks
        self.seen: dict[str, bytes | None] = {} if seen is None else seen

    def __repr__(self) -> str:
        return f"Decision({self.intent!r}, {self.action!r}, {self.reasons!r})"

    def to_json(self) -> dict:
        return {"intent": self.intent, "action": self.action, "reasons": self.reasons}


def decide(
    planner: Planner,
    name: str,
    dep_outputs: Mapping[str, str | None],
    pending: Set[str] = frozenset(),
    last: tuple | None = None,
) -> Decision:
    """The rule, for one step. `dep_outputs[dep]` is the digest of the dep's outputs, or None if the dep has
    yet to run (`pending`: those that will). `last`: its last good result as a kept edit makes it (edits.py)."""
    from .spec import STEP_AGENT, STEP_AGGREGATE, runs_always  # not on the no-op path, which never decides a step

    intent = planner.spec.intents[name]
    waiting = [d for d in intent.deps if dep_outputs.get(d) is None]
    if intent.kind == STEP_AGGREGATE:
        reasons = [f"aggregate of {len(intent.deps)} step{'s' if len(intent.deps) != 1 else ''}"]
        if waiting:
            return Decision(name, SKIP, reasons)
        # an aggregate "produces" its dependencies' outputs, so a step depending on it sees them
        return Decision(name, SKIP, reasons, key="aggregate", outputs={d: dep_outputs[d] for d in intent.deps})
    last = last or planner.state.get(name)
    entries: dict[str, bytes | None] = {}
    inputs = input_digests(planner.stat, planner.root, planner.input_files(name, intent), name, entries)
    inplace = {}
    if last and last[2]:
        # an input the step edits in place counts as the bytes it had before the step ran, while it holds
        # exactly what the step produced
        for path, before in last[2].items():
            if path in inputs and inputs[path] == last[1].get(path):
                inputs[path] = before
                inplace[path] = before
    if waiting:
        reasons = [f"dependency {d} will run" for d in waiting if d in pending] or [
            f"dependency {d} has not run" for d in waiting
        ]
        return Decision(name, RUN, reasons, inputs=inputs, inplace=inplace, seen=entries)
    deps = {d: dep_outputs[d] for d in intent.deps}
    key = slice_key = step_key(planner.static_digest(name), inputs, deps)
    if intent.kind == STEP_AGENT and (gates := planner.compiled.gates.get(name)):
        key = with_canaries(key, gates)  # the canary patterns whose slice it is in read its verify output
    made: dict[str, Any] = {
        "key": key,
        "inputs": inputs,
        "dep_digests": deps,
        "inplace": inplace,
        "slice_key": slice_key,
        "seen": entries,
    }
    if planner.force:
        return Decision(name, RUN, ["forced"], **made)
    if name in planner.forced:
        return Decision(name, RUN, ["runner improve: run again with feedback"], **made)
    if runs_always(intent):
        return Decision(name, RUN, [ALWAYS], **made)
    if last and last[0] == key:
        return _check_outputs(planner, name, last[1], made, [UP_TO_DATE])
    record, refused = planner.record(name, key)  # refused: it names what the step may not write (runner/confine.py)
    if refused:
        return Decision(name, RUN, [refused], **made)
    remote = planner.cache.remote_why(key)  # the shared cache's word on a local miss (runner/stores)
    if record is None:
        why = planner.why_missed(name, last, inputs, deps)
        return Decision(name, RUN, why + [remote] if remote else why, **made)
    return _check_outputs(planner, name, record.outputs, made, [remote or "inputs match an earlier cached run"])


def _check_outputs(planner: Planner, name: str, outputs: Mapping, made: dict, why: list[str]) -> Decision:
    """SKIP if each recorded output holds its bytes or can get them back from the blob store, else RUN."""
    restore, reasons = {}, []
    for path, want in outputs.items():
        have = planner.stat.digest(planner.root, path, name)
        if have == want or want is None:
            continue
        state = "missing" if have is None else "changed"
        if not planner.cache.has_blob(want):
            return Decision(name, RUN, [f"output {path} {state} and its cached copy is gone"], **made)
        restore[path] = want
        reasons.append(f"output {path} {state}: restore from cache")
    if reasons and why[0] == UP_TO_DATE:
        why = []
    return Decision(name, SKIP, why + reasons, outputs=dict(outputs), restore=restore, **made)


# ---- shortcut 3: the target's proof ------------------------------------------------------------------------


class _Taken:
    """The stats of a proof's paths as just taken: as the proof records them (`pieces`, _stats_bytes) at once, as
    a list (`stats`) when a caller needs them one by one. A no-op whose pieces all match the proof's never
    decodes the half a forked child took."""

    __slots__ = ("pieces", "_head", "_stats", "_decoded")

    def __init__(self, pieces: list[bytes], head: list, whole: bool):
        self.pieces = pieces
        self._head = head  # the stats of the first paths, len(head) a multiple of _CHUNK unless `whole`
        self._stats = head if whole else None
        self._decoded: dict[int, list] = {}  # the pieces __getitem__ decoded

    def __getitem__(self, i: int) -> tuple[int, int, int, int] | None:
        """The stat of path i, decoding only its piece (a touch asks for a few paths' of 110,000)."""
        if self._stats is not None:
            return self._stats[i]
        if i < len(self._head):
            return self._head[i]
        k = i // _CHUNK
        piece = self._decoded.get(k)
        if piece is None:
            piece = self._decoded[k] = marshal.loads(self.pieces[k])
        return piece[i % _CHUNK]

    @property
    def stats(self) -> list[tuple[int, int, int, int] | None]:
        if self._stats is None:
            loads = marshal.loads
            self._stats = self._head + [s for piece in self.pieces[len(self._head) // _CHUNK :] for s in loads(piece)]
        return self._stats


def _take(root: str, paths: list[str]) -> _Taken:
    """(size, mtime, ctime, inode) of each path under `root` (None: not there). When they are many, a forked
    child takes the second half's and sends back its pieces (forked.Child: 0.30-0.35 s instead of 0.39-0.59 s
    for 110,000 paths on two cores); if the child fails, this process takes them."""
    if not forked.worth_it(len(paths)):
        stats = _stats_here(root, paths)
        return _Taken(_stats_bytes(stats), stats, whole=True)
    cut = len(paths) // 2 // _CHUNK * _CHUNK  # the child's pieces are the proof's pieces from `cut` on
    with forked.Child(lambda: _stats_bytes(_stats_here(root, paths[cut:]))) as child:
        head = _stats_here(root, paths[:cut])
        tail = child.result()
    if not isinstance(tail, list) or len(tail) != -(-(len(paths) - cut) // _CHUNK):
        tail = _stats_bytes(_stats_here(root, paths[cut:]))
    return _Taken(_stats_bytes(head) + tail, head, whole=False)


def _stats_here(root: str, paths: list[str]) -> list[tuple[int, int, int, int] | None]:
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


_CHUNK = 512  # stats per piece of a proof's recorded stats


def _stats_bytes(stats: list) -> list[bytes]:
    """The proof's record of `stats`: marshal bytes of each _CHUNK of them. An edit then decodes only the
    pieces holding a changed stat (decoding all 110,000 took 0.04-0.065 s of a 100,000-step edit)."""
    # marshal version 2 writes no back-references, so equal stats give equal bytes whichever objects hold them
    dumps = marshal.dumps
    return [dumps(stats[i : i + _CHUNK], 2) for i in range(0, len(stats), _CHUNK)]


def _stats_digest(pieces: list[bytes]) -> str:
    return hashlib.sha256(b"".join(pieces)).hexdigest()


def _joined(names: list[str] | str) -> str:
    """A proof's paths or order as it stores them: one string of the names joined by NULs (no path or intent
    name holds one). Loaded, one split makes the list (12 ms for 110,000 paths, where the marshal of the list
    took 31 ms), and the no-op's report is made from the string whole (`noop.cached_text`)."""
    return names if isinstance(names, str) else "\0".join(names)


def _names(stored: list[str] | str) -> list[str]:
    """The names a proof stores (_joined; a list in the layout before)."""
    if isinstance(stored, list):
        return stored
    return stored.split("\0") if stored else []


def _slot(root: str, target: str | None) -> str:
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


_loaded: dict[str, dict] = {}  # root -> the proof file as this process read it (the no-op, then the pipeline)
# root -> (the paths as stored, as a list, their stats, when, the proof's stats as recorded, the positions that
# differ from them) as a failed no-op proof just took and compared them
_checked: dict[str, tuple] = {}


def _load(root: str) -> dict:
    proofs = _loaded.pop(root, None)
    if proofs is not None:
        return proofs
    try:
        with open(os.path.join(root, PROOF), "rb") as f:
            proofs = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return proofs if isinstance(proofs, dict) else {}


def _entry(root: str, proofs: dict, target: str | None) -> tuple | None:
    """(paths, digest of their stats, order (both as _joined stores them), kept digests, token, number of spec
    files, stats as recorded (_stats_bytes), the variables `env` values read with the digest of their values, the
    positions of the aggregates in order, the digests of the bytes the spec's loader read of its files)."""
    entry = proofs.get(_slot(root, target))
    return entry if isinstance(entry, tuple) and len(entry) == 10 else None


def env_digest(names: tuple[str, ...]) -> str:
    """What the variables `env` values read hold now (a digest: a secret's value is never written)."""
    environ = os.environ
    return hashlib.sha256("\0".join(f"{n}\0{environ.get(n, chr(1))}" for n in names).encode()).hexdigest()


def prove_target(root: str, target: str | None) -> tuple[str, tuple[int, ...]] | None:
    """The steps of `target` in order (_joined) and the positions of its aggregates among them, if its last good
    run's proof holds now (nothing to do); else None."""
    proofs = _load(root)
    entry = _entry(root, proofs, target)
    if entry is None:
        return None
    stored_paths, digest, order, kept, token, n_sources, stats_bytes, env, aggregates, spec_read = entry
    if env[0] and env_digest(env[0]) != env[1]:  # a variable an `env` value reads changed: keys may differ
        _loaded[root] = proofs
        return None
    paths = _names(stored_paths)
    taken_at = time.time_ns()
    taken = _take(root, paths)
    touched = False
    now_bytes = taken.pieces
    now_digest = digest
    if now_bytes != stats_bytes:
        # the pieces differ: so do their digests, but for a proof of the layout before (its stats one piece)
        now_digest = _stats_digest(now_bytes)
    if now_digest != digest:
        changed = _changed(stats_bytes, now_bytes)
        proved = None if changed is None else _touched(root, paths, taken, n_sources, changed, kept, spec_read)
        if proved is None:
            # the pipeline, next in this process, asks which paths changed
            _checked[root] = stored_paths, paths, taken.stats, taken_at, stats_bytes, changed
            _loaded[root] = proofs
            return None
        kept, touched = proved, True
    folders: set[str] = set()
    for rel, want in kept.items():  # the stats did not vouch for these bytes: check them
        if content_digest(root, rel, folders) != want:
            _loaded[root] = proofs
            return None
    if touched:  # the touched files' new stats stand for the same bytes from now on: the next no-op is stats only
        stats_bytes, digest = now_bytes, now_digest
    if kept or touched:
        # a kept digest whose file is now past the racy window is vouched for by its stats alone
        now = time.time_ns()
        position = {rel: i for i, rel in enumerate(paths)} if kept else {}
        still = {rel: d for rel, d in kept.items() if (s := taken[position[rel]]) is None or not vouches(s, now)}
        if still != kept or touched:
            proofs[_slot(root, target)] = (
                stored_paths,
                digest,
                order,
                still,
                token,
                n_sources,
                stats_bytes,
                env,
                aggregates,
                spec_read,
            )
            _write(root, proofs)
            # what the dropped digests said goes to the stat cache, so a later touch of the file finds its bytes
            dropped = {rel: (taken[position[rel]], taken_at, d) for rel, d in kept.items() if rel not in still}
            _vouched(root, {rel: found for rel, found in dropped.items() if rel not in folders}, read_after=True)
    return _joined(order), aggregates


def _vouched(root: str, found: Mapping[str, tuple], index: IndexFile | None = None, read_after: bool = False) -> None:
    """Stat cache entries (shortcut 1) for files whose bytes were checked just now: each was read after its stats
    were taken at `taken`, and only stats that vouch at that moment are written (a write after it moves them).
    `index`: the stat cache as the caller looked into it already. `read_after`: every path is a file (no folder,
    whose digest is of its names) read after its stats were taken, and none is stated again: a write since those
    stats, which vouched (their ctime older than `taken` by the racy window), gave the file a later ctime, so
    their entry is never matched (at 100,000 steps the first no-op after a clean build made ~0.5 s of stats)."""
    entries = {}
    for rel, (st, taken, d) in found.items():
        if st is None or not vouches(st, taken):
            continue
        if read_after:
            entries[rel] = (*st, taken, d)
            continue
        try:
            now = os.stat(rel if rel[0] == "/" else root + "/" + rel)
        except OSError:
            continue
        if stat_is_file(now) and stat_of(now) == st:  # a folder's kept digest is of its names, not bytes
            entries[rel] = (*st, taken, d)
    if not entries:
        return
    index = index or _stat_cache(root)
    try:
        index.update({rel: marshal.dumps(entry) for rel, entry in entries.items()})
    except OSError:
        pass  # a cache: the pipeline hashes the file again


_TOUCHED_AT_MOST = 64  # more changed stats than this: an edit or a checkout, for the pipeline's cone to sort out


def _changed(stats_bytes: list[bytes], now_bytes: list[bytes]) -> list | None:
    """(position, recorded stat) of each path whose stats differ from the proof's, found without a Python-level
    loop over a 100,000-path proof: only the pieces whose bytes differ from `now_bytes` (the stats now, as
    _stats_bytes makes them) are decoded and compared. None if the recorded stats are damaged (or of an older
    layout)."""
    from itertools import compress
    from operator import ne

    if not isinstance(stats_bytes, list) or len(stats_bytes) != len(now_bytes):
        return None
    changed: list[tuple[int, tuple | None]] = []
    for k in compress(range(len(now_bytes)), map(ne, now_bytes, stats_bytes)):
        start = k * _CHUNK
        part = marshal.loads(now_bytes[k])
        try:
            recorded = marshal.loads(stats_bytes[k])
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(recorded, list) or len(recorded) != len(part):
            return None
        changed += [(start + i, recorded[i]) for i in compress(range(len(part)), map(ne, recorded, part))]
    return changed


def _touched(
    root: str,
    paths: list[str],
    stats: _Taken,
    n_sources: int,
    changed: list,
    kept: Mapping[str, str],
    spec_read: Mapping[str, str],
) -> dict[str, str] | None:
    """Shortcut 3's touch: the few declared files whose stats differ from the proof's but whose bytes are the
    ones the proof vouched for (a `touch`, a checkout that rewrote a file as it was). The new kept digests
    (`kept`, and each touched file's digest while its new stats are too fresh to vouch for it) if every
    changed path is such a file, else None. What the proof vouched for: a kept digest, or else the stat
    cache's digest of a file with exactly the recorded stats, hashed when they vouched for it (shortcut 1); for a
    spec file, the digest of the bytes its loader read (`spec_read`: the compiled spec is reused for those same
    bytes, compiled.load_compiled), and none for a spec folder, prompt, regex or worker file, whose stats must hold."""
    if len(changed) > _TOUCHED_AT_MOST:
        return None  # an edit or a checkout, for the pipeline's cone to sort out
    if any(i < n_sources and paths[i] not in spec_read for i, _was in changed):
        return None  # a spec or worker file the loader did not read itself: the keys rest on more than its bytes
    if any(was is not None and (now := stats[i]) is not None and was[0] != now[0] for i, was in changed):
        return None  # a new size is new bytes: an edit, told without reading the stat cache
    index: IndexFile | None = None
    new_kept = dict(kept)
    vouched: dict[str, tuple] = {}
    for i, was in changed:
        rel, now = paths[i], stats[i]
        if was is None or now is None or tuple(was) == NEVER:
            return None  # made, deleted, or seen in two states: the rule decides
        want = kept.get(rel) or (spec_read.get(rel) if i < n_sources else None)
        if want is None:
            index = index or _stat_cache(root)
            encoded = index.lookup(rel)
            entry = marshal.loads(encoded) if encoded is not None else None
            if not entry or len(entry) != 6 or tuple(entry[:4]) != tuple(was) or not vouches(was, entry[4]):
                return None  # nobody can say which bytes the recorded stats stood for
            want = entry[5]
        full = rel if rel[0] == "/" else root + "/" + rel
        hashed_at = time.time_ns()
        try:
            st = os.stat(full)
            if not stat_is_file(st) or stat_of(st) != now:
                return None  # a folder, or a file written since the stats were taken
            have = digest_file(full)
        except OSError:
            return None
        if have != want:
            return None  # an edit
        if vouches(now, hashed_at):
            new_kept.pop(rel, None)
            if i >= n_sources:  # a spec file's bytes are the proof's to vouch for (spec_read), not the stat cache's
                vouched[rel] = (now, hashed_at, have)
        else:
            new_kept[rel] = have  # too fresh for its stats to vouch for these bytes: checked by digest next time
    # the new stats stand for these bytes in the stat cache too: else the next touch of the file, finding there
    # only the stats from before this one, could not tell its bytes, and every other touch ran the pipeline
    _vouched(root, vouched, index)
    return new_kept


def _stat_cache(root: str) -> IndexFile:
    return IndexFile(os.path.join(root, ".runner", "stat"))


def stat_is_file(st: os.stat_result) -> bool:
    return st.st_mode & 0o170000 == 0o100000  # stat.S_ISREG without importing stat on the no-op path


def snapshot_paths(sources: list[str], order: list[str], compiled) -> list[str] | None:
    """The files a proof of the steps `order` stats, spec files first, then what each step declares, each once (a
    dependency's output is usually a declared input too); None when no proof can hold (a step runs every time,
    or a glob could match a new file without any stat changing)."""
    if not compiled.unprovable.isdisjoint(order):
        return None
    return list(dict.fromkeys([*sources, *compiled.declared_paths(order)]))


# ---- shortcut 4: the edit's cone ------------------------------------------------------------------------


class FirstLook:
    """What the declared files looked like as a run began, against the last good run of its target."""

    __slots__ = (
        "changed",
        "differ",
        "order",
        "paths",
        "stats",
        "taken",
        "kept",
        "proofs",
        "aggregates",
        "stored",
        "edited",
    )

    def __init__(self, proofs: dict):
        self.proofs = proofs  # the proof file as read under the project lock, for record_proof
        self.changed: set[str] | None = None  # paths that differ from the proof; None: all (a spec file did)
        self.differ: set[str] | None = None  # paths that differ from the proof; None: there was none to compare
        self.order: list[str] | None = None  # the target's steps, as the last good run had them
        self.paths: list[str] | None = None  # the files the target's proof stats (snapshot_paths)
        self.stats: list = []  # the stat of each of `paths` as the run began
        self.taken = 0  # when those stats were taken
        self.kept: dict[str, str] = {}  # the last proof's digests of bytes its stats could not vouch for
        self.aggregates: tuple[int, ...] = ()  # the positions of the aggregates in `order`, as the proof has them
        self.stored: tuple = ((), ())  # `paths` and `order` as the proof stores them (_joined)
        # the last proof, made from the compilation an edit of the spec replaced (after_edit): its entry
        self.edited: tuple | None = None

    def stat_paths(self, root: str, paths: list[str] | None) -> None:
        """No usable proof: take the stats of the target's files as the run begins, for the next proof."""
        self.paths = paths
        self.taken = time.time_ns()
        self.stats = [] if paths is None else _take(root, paths).stats

    def after_edit(self, root: str, sources: list[str], n_spec: int, order: list[str]) -> set[str] | None:
        """After stat_paths, when the spec was edited since the last proof (`edited`): the paths that differ
        from that proof (`differ`, `changed`), and the steps of `order` it says nothing of (None: no cone, every
        step to decide). The spec files' own changes are left out of `changed`: what they changed for a step is
        in its fingerprint, which the caller compares (compiled.edited_since)."""
        if self.edited is None or self.paths is None:
            return None
        stored_paths, stats_bytes, kept, env, stored_order = self.edited
        if bool(env[0]) and env_digest(env[0]) != env[1]:
            return None
        old_paths = _names(stored_paths)
        try:
            old_stats = [s for piece in stats_bytes for s in marshal.loads(piece)]
        except (EOFError, ValueError, TypeError):
            return None
        if len(old_stats) != len(old_paths):
            return None
        was = dict(zip(old_paths, old_stats, strict=True))
        missing = object()  # a path the last proof did not stat: differs
        differ = {rel for rel, now in zip(self.paths, self.stats, strict=True) if was.get(rel, missing) != now}
        differ.update(rel for rel, want in kept.items() if rel not in differ and content_digest(root, rel) != want)
        changed = _step_paths(differ, sources, n_spec)
        if changed is None:
            return None
        self.differ, self.kept, self.changed = differ, kept, changed
        old_order = set(_names(stored_order))
        return {name for name in order if name not in old_order}


def first_look(
    root: str,
    target: str | None,
    token: str,
    sources: list[str],
    reuse: bool,
    previous: str | None = None,
    n_spec: int = 0,
) -> FirstLook:
    """Compare the declared files of `target` with its last good run's proof, made from the same compiled
    spec (`token`) and spec files (`sources`): that run's order and paths hold, and `changed` says which
    paths differ. `reuse`: the proof and stats a failed no-op proof read in this process still stand (no
    other runner held the lock since). Without such a proof, `order` and `paths` stay None, for the caller
    to work out. `previous`: the token of the compilation this one replaced; a proof made from that one is kept
    in `edited`, for after_edit. The first `n_spec` sources are the compiled spec's own files: under the same
    token, one that differs from the proof reads as that compilation read it (it was reused by content,
    compiled._unchanged: the same bytes after a touch, the same document after a comment), so it changes no
    step; any other source (a worker's file) that differs leaves every step to decide."""
    checked_stored, checked_paths, checked, checked_at, checked_bytes, checked_changed = _checked.pop(
        root, (None, None, None, 0, None, None)
    )
    if not reuse:
        _loaded.pop(root, None)
        checked_stored = None
    look = FirstLook(_load(root))
    entry = _entry(root, look.proofs, target)
    if entry is None:
        return look
    stored_paths, _digest, stored_order, kept, entry_token, n_sources, stats_bytes, env, aggregates, _read = entry
    if entry_token != token:
        if entry_token == previous:
            look.edited = (stored_paths, stats_bytes, kept, env, stored_order)
        return look
    if n_sources != len(sources):
        return look
    same = checked_stored is not None and checked_stored == stored_paths  # what the no-op's proof stat'ed
    paths = checked_paths if same else _names(stored_paths)
    if paths[:n_sources] != sources:
        return look
    if same and checked_changed is not None and checked_bytes == stats_bytes:
        stats, look.taken = checked, checked_at  # the failed no-op proof compared them: not decoded twice
        changed = checked_changed
    else:
        if same:
            stats, look.taken = checked, checked_at
            now_bytes = _stats_bytes(stats)
        else:
            look.taken = time.time_ns()
            taken = _take(root, paths)
            stats, now_bytes = taken.stats, taken.pieces
        found = _changed(stats_bytes, now_bytes)
        if found is None:  # damaged: no proof, rather than half of one
            return look
        changed = found
    differ = {paths[i] for i, _was in changed}
    differ.update(rel for rel, want in kept.items() if rel not in differ and content_digest(root, rel) != want)
    look.order, look.paths, look.stats, look.kept, look.differ = _names(stored_order), paths, stats, kept, differ
    look.aggregates, look.stored = aggregates, (stored_paths, stored_order)
    env_changed = bool(env[0]) and env_digest(env[0]) != env[1]  # no path shows which steps read a variable
    look.changed = None if env_changed else _step_paths(differ, sources, n_spec)
    return look


def _step_paths(differ: set[str], sources: list[str], n_spec: int) -> set[str] | None:
    """The paths of `differ` that say which steps to decide: None when a worker's file (a source past the first
    `n_spec`, the compiled spec's own) differs, since no path shows which steps read it; the spec files left out,
    since what they changed for a step is in its fingerprint (after_edit), or nothing at all under the same
    compilation (first_look)."""
    if not differ.isdisjoint(sources[n_spec:]):
        return None
    return differ.difference(sources[:n_spec])


def doubtful_steps(
    compiled, order: list[str], changed: set[str] | None, has_state, edited: Iterable[str] = ()
) -> set[str] | None:
    """The steps the rule must decide (None: all of them), given the paths `changed` since the last good run
    of this target (None if unknown): those that declare a changed path, agent steps (their key also holds
    the worker's version, which no file here shows), steps with no last result to report (aggregates), and
    everything downstream of these; `edited`: steps whose key an edit of the spec may have changed.
    Found from the changed paths out, it costs the cone, not the graph."""
    if changed is None:
        return None
    declared_by, dependants = compiled.declared_by, compiled.dependants
    pending = [name for path in changed for name in declared_by.get(path, ())]
    pending += compiled.agents.intersection(order)
    pending += [name for name in order if name not in has_state]
    pending += edited
    doubtful: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in doubtful:
            doubtful.add(name)
            pending += dependants[name]
    return doubtful


def record_proof(
    root: str,
    target: str | None,
    token: str,
    n_sources: int,
    spec_stats: list,
    spec_kept: Mapping[str, str | None],
    spec_read: Mapping[str, str],
    order: list[str],
    look: FirstLook,
    stat: StatCache,
    doubtful: set[str] | None,
    declared_by: Mapping[str, tuple[str, ...]],
    env_names: tuple[str, ...] = (),
    aggregates: Set[str] = frozenset(),
) -> None:
    """After a good run of the steps `order`, record the proof of `target` (see shortcut 3 above).

    `spec_stats`: the stats the compiled spec was made from, one per compiled spec file (the first paths),
    `spec_kept` the digests of those whose stats could not vouch for the bytes read, `spec_read` the digests of
    the bytes the loader read of the files it read itself; `doubtful`: the steps
    the rule decided (None: all), the others were proved as the run began; `stat.views`: what the decided
    steps' verdicts saw; `aggregates`: the targets with only deps, which the no-op reports as a run does
    (not at all).
    """
    proofs = look.proofs
    slot = _slot(root, target)
    paths = look.paths
    if paths is None:
        if proofs.pop(slot, None) is not None:
            _write(root, proofs)
        return
    # replaced in place: the stats as the run began go as the proof's take their place (a copy held both,
    # ~22 MB at the end of a 100,000-step build); `look` serves no one after this
    stats = look.stats
    kept: dict[str, str] = {}
    differ = look.differ
    proven = None if doubtful is None else set(order).difference(doubtful)
    views = stat.views
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
        saw, digest, hashed_at = seen(view[0])
        if proven and saw != stats[i] and not proven.isdisjoint(declared_by.get(rel, ())):
            stats[i] = NEVER  # two verdicts rest on two states of the file
            continue
        stats[i] = saw
        if saw is not None and not vouches(saw, hashed_at):
            kept[rel] = digest
    stats_bytes = _stats_bytes(stats)
    env = (env_names, env_digest(env_names)) if env_names else ((), "")
    if look.order is order:  # the last proof's paths and order, from the same compiled spec: stored as they were
        positions, (stored_paths, stored_order) = look.aggregates, look.stored
    else:
        positions = tuple(i for i, name in enumerate(order) if name in aggregates) if aggregates else ()
        stored_paths, stored_order = paths, order
    proofs[slot] = (
        _joined(stored_paths),
        _stats_digest(stats_bytes),
        _joined(stored_order),
        kept,
        token,
        n_sources,
        stats_bytes,
        env,
        positions,
        dict(spec_read),
    )
    # another folder's proofs (a copy's, a checkout whose .runner a CI cache restored) and another version's are
    # never read here: dropped, or a .runner restored run after run grew by a proof (7 MB at 100,000 steps) each time
    ours = _folder(root)
    for other in [key for key in proofs if not (isinstance(key, str) and key.startswith(ours))]:
        del proofs[other]
    _write(root, proofs, trim=True)


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
    proofs = _load(root)
    if proofs.pop(_slot(root, target), None) is not None:
        _write(root, proofs)


def forget(root: str) -> None:
    for name in (PROOF, *_OLD_PROOF_FILES):
        try:
            os.unlink(os.path.join(root, name))
        except FileNotFoundError:
            pass


def _write(root: str, proofs: dict, trim: bool = False) -> None:
    try:
        write_marshal(os.path.join(root, PROOF), proofs, trim=trim)
    except OSError:
        pass  # a read-only state folder only costs the fast path
