"""Shortcuts 1 and 2 of the rule (runner/freshness.py): a file's digest reused while its stats vouch for its bytes, as
git's index does, and the racy window those stats rest on."""

from __future__ import annotations

import marshal
import os
import time
from collections import namedtuple
from stat import S_ISREG  # os imports stat: free

from .index_file import IndexFile
from .keys import digest_file

# A file modified within this window of being hashed may share every stat with the hashed version (coarse
# filesystem clocks), so its stats do not vouch for its bytes: git's "racily clean" rule. The tests shorten it
# (entry.set_racy_window); never below a clock tick.
RACY_NS = 1_000_000_000
NEVER = (-1, -1, -1, -1)  # a stat no file has: a proof holding it for a path never holds


def stat_of(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a stat proof compares: size, mtime, ctime and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def vouches(stat: tuple[int, int, int, int], taken_ns: int) -> bool:
    """A file's stats (stat_of) taken at `taken_ns` vouch for its bytes: neither its mtime nor its ctime
    (a write that put the mtime back moves it) is within the racy window of that moment."""
    return max(stat[1], stat[2]) + RACY_NS < taken_ns


def stat_is_file(st: os.stat_result) -> bool:
    """Whether the stat just taken is a regular file's (os.path.isfile would take another)."""
    return S_ISREG(st.st_mode)


class StatEntry(namedtuple("StatEntry", "size mtime_ns ctime_ns inode hashed_at digest")):
    """One file's entry in the stat cache (as marshal stores it, a plain 6-tuple): its stats (stat_of), when its
    bytes were hashed, and their digest."""

    __slots__ = ()

    @property
    def stat(self) -> tuple[int, int, int, int]:
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode)

    @staticmethod
    def decoded(encoded: bytes) -> StatEntry | None:
        """The entry of marshal bytes; None for runner 0.1's entries, which had no ctime (the file is hashed again)."""
        entry = marshal.loads(encoded)
        return StatEntry._make(entry) if len(entry) == 6 else None


# What a verdict saw of a file (StatCache.views): its entry's marshal bytes (None: no file), the step that first saw
# it, and whether another step saw the same
View = namedtuple("View", "encoded by shared")
# A view decoded (seen()): the stats, the digest and when it was hashed; (None, None, 0) for no file
Seen = namedtuple("Seen", "stat digest hashed_at")


class StatCache:
    """path -> StatEntry, as git's index: a no-op reads no file.

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
        # path -> the View a run's verdicts took of it, or SEEN_TWICE
        self.views: dict[str, View | str] = {}
        # path -> the entry made when the runner hashed a file its step had written (or it restored), the writer
        # done: no write of the run can leave that entry's stats as they were (runner/inputs_held.py)
        self.own: dict[str, bytes] = {}

    def entry(self, rel: str) -> StatEntry | None:
        encoded = self._encoded.get(rel)
        return None if encoded is None else StatEntry.decoded(encoded)

    def _set(self, rel: str, entry: StatEntry) -> bytes:
        encoded = self._encoded[rel] = marshal.dumps(tuple(entry))  # marshal stores plain tuples
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
        entry = None if encoded is None else StatEntry.decoded(encoded)
        if entry is not None and entry.stat == stat and (vouches(stat, entry.hashed_at) or rel in self.fresh):
            value = entry.digest
        elif not stat_is_file(st):
            return None
        else:
            value = digest_file(full)
            self.reads += 1
            encoded = self._set(rel, StatEntry(*stat, time.time_ns(), value))
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
        encoded = self.own[rel] = self._set(rel, StatEntry(*stat_of(st), time.time_ns(), value))
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
        if old is None or (wrote and not isinstance(old, str) and old.by == by and not old.shared):
            self.views[rel] = View(view, by, False)
        elif isinstance(old, str):
            return
        elif old.encoded is not view and seen(old.encoded)[:2] != seen(view)[:2]:
            # another stat or digest: two verdicts rest on two states of the file
            self.views[rel] = self.SEEN_TWICE
        elif old.by != by and not old.shared:
            self.views[rel] = old._replace(shared=True)

    def save(self) -> None:
        if self._changed:
            self._file.write(self._encoded, self._changed, trim=True)
            self._changed.clear()


def seen(encoded: bytes | None) -> Seen:
    """What a verdict saw of a file, from its view's encoded entry (View.encoded); (None, None, 0) for no file."""
    if encoded is None:
        return Seen(None, None, 0)
    entry = marshal.loads(encoded)
    return Seen(entry[:4], entry[5], entry[4])


def input_digests(stat: StatCache, root: str, files: list[str], by: str, entries: dict) -> dict[str, str | None]:
    """The digest of each input file (`Planner.input_files`: the expanded globs), None for a missing one; `entries`
    gets the stat cache entry each digest came from, for the re-check after the step (runner/inputs_held.py)."""
    digests = {}
    for rel in files:
        value = digests[rel] = stat.digest(root, rel, by)
        entries[rel] = None if value is None else stat._encoded.get(rel)
    return digests
