"""Whether the inputs a step's key was made from held still while it ran: the re-check before its record is stored.

A step's key is made when it is decided, from its inputs' digests then; it reads them later, as it runs. A file
edited in between (a person saving, a checkout, another process) would have its record stored under the key of
bytes it never read: put the old bytes back, and the cache, local and shared, serves an output made from the new
ones. So once the step has ended, each input is looked at again against the stat cache entry its digest came from
(`Decision.seen`), as git's index is:

- its stats (size, mtime, ctime, inode) are the entry's and vouch for its bytes (stat_cache.vouches: neither time
  within the racy window of the hashing): unchanged, no byte read. A write since moved its ctime, which nobody
  can set back.
- the same stats, too fresh to vouch (a write within the same clock tick may have kept them all): its bytes say.
  But for a file this run's own step wrote, or the runner restored, and hashed once the writer was done
  (StatCache.own): a write that kept those stats must have come from outside the run, after the hash and yet in
  the clock tick of the writer's last write, milliseconds before it. A clean build's inputs are mostly such
  files: bench/'s 10,000 steps re-read none of their 23,561 inputs so, 22,561 without (the re-check's whole cost
  there ~0.2 s of CPU, ~8 us an input, most of it the stat).
- other stats: changed, whatever its bytes are now. The same bytes again prove nothing of what the step read: a
  file rewritten in place is empty, then partly written, for a moment (an editor saving an unchanged file, a
  `> file` redirect), and a step reading it then made its output from bytes no key names (the differential test
  found one so: its step checked an empty input, then copied the whole one). So a `touch`, or a step that
  rewrites its own input as it was (a formatter), leaves nothing cached: the step runs again next time (Bazel's
  concurrent-change guard judges by the ctime alone too).
- a file missing when decided and there now, or the other way round; an input glob that expands to another set of
  files now (one created under it, or deleted).

But for the step's own declared outputs that its inputs match: writing them is its job, and the rule counts them
as they were before it ran (freshness.decide).

Any of these, and the step's record is not stored (local and shared cache, state index), the views of the changed
paths no longer vouch for a no-op proof (StatCache.doubt), and the run says which inputs changed. A hermetic step
(runner/executors/hermetic.py) is not re-checked: it read its inputs from its manifest, by the key's digests.
"""

from __future__ import annotations

import marshal
import os
from typing import TYPE_CHECKING

from .globs import GLOB_CHARS, matches_any, may_overlap
from .keys import digest_file
from .stat_cache import StatEntry, stat_is_file, vouches

if TYPE_CHECKING:
    from .freshness import Decision
    from .plan import Planner
    from .stat_cache import StatCache

CHANGED, CREATED, DELETED = "changed", "created", "deleted"


def changed_inputs(planner: Planner, name: str, decision: Decision) -> dict[str, str]:
    """The inputs of step `name` that changed since `decision` hashed them, each with how (CHANGED, CREATED or
    DELETED); empty when its key holds what it read. Marks each changed path in the stat cache (StatCache.doubt)."""
    root, stat, seen = planner.root, planner.stat, decision.seen
    changed: dict[str, str] = {}
    intent = planner.spec.intents[name]
    # its declared outputs its inputs match are its own to write (freshness.decide counts them as they were)
    mine = [o for o in intent.outputs if any(may_overlap(o, i) for i in intent.inputs)]
    # a step with an input glob is among the unprovable (compiled.py): most steps skip the patterns' scan
    if name in planner.compiled.unprovable and any(not GLOB_CHARS.isdisjoint(p) for p in intent.inputs):
        made = planner.input_files(name, intent)
        changed.update((rel, CREATED) for rel in made if rel not in seen and not (mine and matches_any(rel, mine)))
    if seen:
        folder, own, loads = _folder(root), stat.own, marshal.loads
        for rel, entry in seen.items():
            if mine and matches_any(rel, mine):
                continue
            try:
                st = os.stat(rel, dir_fd=folder)
            except OSError:
                st = None
            # the usual answer, inline (a clean build asks it of every input): the entry's stats, and they vouch
            if st is not None and entry is not None:
                was = StatEntry._make(loads(entry))
                now = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if now == was.stat and (own.get(rel) is entry or vouches(now, was.hashed_at)):
                    continue
            how = _how(stat, root, rel, st, entry)
            if how is not None:
                changed[rel] = how
    if not changed:
        return changed
    for rel in changed:
        stat.doubt(rel)
    return dict(sorted(changed.items()))


def _how(stat: StatCache, root: str, rel: str, st: os.stat_result | None, entry: bytes | None) -> str | None:
    """How `rel`, whose stats are now `st` (None: no such path), changed since its digest came from the stat cache
    entry `entry` (None: there was no file), or None; stats alone did not vouch for its bytes."""
    if st is None:
        return None if entry is None else DELETED
    if entry is None:
        return CREATED if stat_is_file(st) else None
    if not stat_is_file(st):
        return DELETED  # a folder or a device in its place: no file to read
    was = StatEntry._make(marshal.loads(entry))
    if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != was.stat:
        return CHANGED
    try:  # the entry's stats, too fresh to vouch: a write in the same clock tick kept them all, or none did
        same = digest_file(root + "/" + rel) == was.digest
    except OSError:
        return DELETED
    if not same:
        stat.doubt(rel, wrong_bytes=True)  # its stats hold other bytes than its entry's: hashed anew next time
    return None if same else CHANGED


_open: list[tuple[str, int]] = []  # the one project folder held open: (root, descriptor)


def _folder(root: str) -> int:
    """The project's folder, opened once for the run's re-checks: a path looked up from it costs the kernel only
    its own parts, not the root's again for each (half the stat of a clean build's ~2 inputs a step, measured on
    this machine's deep roots; proof.stats_here does the same). One at a time: another root closes it."""
    if _open and _open[0][0] == root:
        return _open[0][1]
    while _open:
        os.close(_open.pop()[1])
    _open.append((root, os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)))
    return _open[0][1]


def not_cached_reason(changed: dict[str, str]) -> str:
    """The words of a step whose inputs changed while it ran (shell: it ran, nothing was cached)."""
    return f"{_which(changed)} while the step ran: nothing was cached, the next `runner make` runs it again"


def not_applied_reason(changed: dict[str, str], diff: str) -> str:
    """The words of an agent step whose inputs changed while it ran: its change was verified on other bytes."""
    return (
        f"{_which(changed)} while the step ran: its change was verified against other bytes, so it is not "
        f"applied (its diff: {diff}); the next `runner make` runs the step again"
    )


def _which(changed: dict[str, str]) -> str:
    if len(changed) == 1:
        [(rel, how)] = changed.items()
        return f"input {rel} {how}"
    return "inputs " + ", ".join(f"{rel} ({how})" for rel, how in changed.items()) + " changed"
