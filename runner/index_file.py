"""The index files' format on disk: a snapshot of key -> marshal bytes with a log of later changes (IndexFile:
the state index, the stat cache), tables whose values are decoded only when asked for (PackedTable, Entries:
the compiled spec's, a snapshot's), a file replaced whole or not at all, and memory handed back after a big one."""

from __future__ import annotations

import marshal
import os
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from itertools import accumulate

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from typing import BinaryIO


class IndexFile:
    """An index (key -> the marshal bytes of its entry: the state index, the stat cache) kept as a snapshot
    and, beside it, an append-only log of what later runs changed (`PATH.log`), so that an edit of one file
    in a 100,000-step project writes the few hundred entries it changed, not all of them (~16 MB).

    The snapshot is one marshal dict, replaced atomically. The log opens with the identity of the snapshot it
    extends (inode, size, mtime): a log left beside another snapshot (rewritten since, by a compaction, an
    apply's journal or an older runner) is ignored, never laid over it. Each record is its length and a
    marshal dict of the changed keys (None: removed); a record cut short by a crash ends the log there, and
    the next write starts anew from a full snapshot, as does one finding the log not as this process left it
    (only the stat cache has a second writer: another runner's no-op, whose entries are then lost, costing a
    hash of those files again). When the log would outgrow half the snapshot (or 64 KiB),
    the snapshot is rewritten whole and the log removed."""

    LOG_AT_LEAST = 1 << 16
    MAP_AT_LEAST = 1 << 20  # a snapshot this big is mapped, not copied (map_file)

    def __init__(self, path: str):
        self.path = path
        self.log_path = path + ".log"
        self._snapshot: tuple[int, int, int] | None = None  # the identity of the snapshot the log extends
        self._log_size = 0  # bytes of the log that were read or written whole; -1: damaged, write anew
        self._looked: tuple[list[dict], Entries | None] | None = None  # lookup()'s: the log, the whole

    def read(self) -> Entries:
        """The entries (a missing or unreadable snapshot: none). They stay encoded until asked for; a file in
        runner 0.1's first layout (plain values) is encoded on read, one in the layout before sorted keys (one
        dict) taken as it is."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                identity = _identity(st)
                data = map_file(f) if st.st_size >= self.MAP_AT_LEAST else f.read()
            value = _sorted_entries(data) if data[:4] == _SORTED else marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            return Entries()
        if isinstance(value, Entries):
            entries = value
        elif isinstance(value, dict):
            if not isinstance(next(iter(value.values()), b""), bytes):
                value = {key: marshal.dumps(entry) for key, entry in value.items()}
            entries = Entries.holding(value)
        else:
            return Entries()
        self._snapshot = identity
        entries.replay(self._records())
        return entries

    def lookup(self, key: str) -> bytes | None:
        """One entry, from the log when a record there has it (the latest one): a touch of a file looks up one
        path, and the 16 MB snapshot of a 100,000-step project is read only when the log does not say."""
        if self._looked is None:
            log = self._read_log()
            if log is None:
                return None
            self._looked = (log, None)
        log, whole = self._looked
        for record in reversed(log):
            if key in record:
                return record[key]
        if whole is None:
            whole = self.read()
            self._looked = (log, whole)
        return whole.get(key)

    def update(self, changes: dict[str, bytes | None]) -> None:
        """Write `changes` (None: removed) without reading the whole index when the log can take them: an index
        not read yet reads only its log, to know that it extends the snapshot there now and where it ends (the
        no-op after an edit vouches for its outputs so: 0.043-0.056 s less than reading the 16 MB stat cache)."""
        if self._snapshot is None and self._log_size == 0:
            self._read_log()
        if self._appendable() and self._append(marshal.dumps(changes), durable=False):
            return
        entries = self.read()
        _apply(entries, changes)
        self.write(entries, changes)

    def _read_log(self) -> list[dict] | None:
        """The log's records, taken against the snapshot as it stands now (None: there is no snapshot)."""
        try:
            self._snapshot = _identity(os.stat(self.path))
        except OSError:
            return None
        return self._records()

    def _records(self) -> list[dict]:
        """The log's records, if it extends the snapshot read (`_snapshot`); sets how much of it is whole."""
        self._log_size = 0
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except OSError:
            return []
        records: list[dict] = []
        at = 0
        while at < len(data):
            size = int.from_bytes(data[at : at + 8], "little")
            end = at + 8 + size
            try:
                record = marshal.loads(data[at + 8 : end]) if end <= len(data) else None
            except (EOFError, ValueError, TypeError):
                record = None
            if at == 0:
                if record != self._snapshot:
                    return []  # the log of another snapshot: what it says is already in this one, or older
            elif isinstance(record, dict) and all(v is None or isinstance(v, bytes) for v in record.values()):
                records.append(record)
            else:
                self._log_size = -1  # cut short or damaged: the rest is lost, and the next write is whole
                return records
            at = end
        self._log_size = at
        return records

    def write(self, entries: Mapping[str, bytes], changed, durable: bool = False, trim: bool = False) -> None:
        """Save `entries`, of which the keys `changed` differ from what was read or last written."""
        # a clean build changes every entry: that is a snapshot, not a record made only to be thrown away
        small = len(changed) * 4 <= max(len(entries), 1024)
        if small and self._appendable() and self._append(marshal.dumps({k: entries.get(k) for k in changed}), durable):
            return
        self._looked = None
        write_atomic(self.path, snapshot_parts(entries), durable, trim)
        try:
            self._snapshot = _identity(os.stat(self.path))
        except OSError:
            self._snapshot = None
        self._log_size = 0
        from .damaged import clear  # after the new snapshot: a crash between leaves a log it ignores

        clear(self.log_path)

    def _appendable(self) -> bool:
        """The log extends the snapshot as it stands now."""
        if self._snapshot is None or self._log_size < 0:
            return False
        try:
            return _identity(os.stat(self.path)) == self._snapshot
        except OSError:
            return False

    def _append(self, record: bytes, durable: bool) -> bool:
        """False, writing nothing, when the caller must write the index whole instead: the record would take
        the log past its bound, the log is not as this process read or wrote it (another runner's no-op
        appended to the stat cache's, or a log of another snapshot lies there), or it cannot be written."""
        assert self._snapshot is not None
        if self._log_size + len(record) + 64 > max(self._snapshot[1] // 2, self.LOG_AT_LEAST):
            return False
        self._looked = None
        try:
            return self._append_to_log(record, durable)
        except OSError:
            return False

    def _append_to_log(self, record: bytes, durable: bool) -> bool:
        with open(self.log_path, "ab") as f:
            if f.tell() != self._log_size:
                return False
            data = b""
            if self._log_size == 0:
                head = marshal.dumps(self._snapshot)
                data = len(head).to_bytes(8, "little") + head
            data += len(record).to_bytes(8, "little") + record
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        self._log_size += len(data)
        return True

    def replaced(self) -> None:
        """The snapshot was written by someone else (an apply's journal holds the state's whole bytes): the
        log no longer extends it, and the next write is whole."""
        self._snapshot = None


def _apply(entries: MutableMapping[str, bytes], record: dict[str, bytes | None]) -> None:
    for key, value in record.items():
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value


_MISSING = object()


# An index snapshot: this mark, the CRC-32 of what follows it, the length of its keys' part, that part (the
# marshal of the keys, sorted, and where each value ends) and the values, one after another. The CRC: a value is
# decoded only when asked for, so damage among the values (a cut file, a bad copy) must be found as the file is
# read, as a damaged marshal dict was (7 ms at 16 MB).
_SORTED = b"RIX2"


def snapshot_parts(entries: Mapping[str, bytes]) -> list[bytes]:
    """An index snapshot's bytes, in pieces written one after another (IndexFile.read gives the Entries back):
    joined, they would be one more copy of the values at the end of a clean build, when its memory peaks.
    Loading a 100,000-entry snapshot makes 100,000 key strings, not 100,000 more bytes objects and a dict: ~50
    ms instead of ~110 ms, which an edit of one file paid twice (the state index, the stat cache)."""
    keys = sorted(entries)
    values = [entries[key] for key in keys]
    keys_part = marshal.dumps((tuple(keys), array("Q", accumulate(map(len, values))).tobytes()))
    crc = zlib.crc32(keys_part)
    for value in values:
        crc = zlib.crc32(value, crc)
    return [_SORTED + crc.to_bytes(4, "little") + len(keys_part).to_bytes(8, "little"), keys_part, *values]


def map_file(f):
    """The bytes of the open file `f`, mapped read-only: an edit reads a few hundred of a 100,000-step snapshot's
    values (or compiled spec's records), and copying its 16 MB was most of the snapshot's load. Both files are
    only ever replaced by a rename, never rewritten in place, so a mapping keeps the bytes it was read with."""
    import mmap  # not on the no-op path, which reads no snapshot

    return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def snapshot_bytes(entries: Mapping[str, bytes]) -> bytes:
    """A whole snapshot (an apply's journal writes it with the change it belongs to)."""
    return b"".join(snapshot_parts(entries))


def _sorted_entries(data: bytes) -> Entries:
    """The Entries of a snapshot's bytes, its values left in them; ValueError when they are not whole."""
    body = memoryview(data)[16:]
    if len(data) < 16 or zlib.crc32(body) != int.from_bytes(data[4:8], "little"):
        raise ValueError("the index snapshot is damaged (its CRC differs)")
    size = int.from_bytes(data[8:16], "little")
    keys, ends = marshal.loads(body[:size])
    values = body[size:]
    if len(ends) != 8 * len(keys) or int.from_bytes(ends[-8:] or bytes(8), "little") != len(values):
        raise ValueError("the index snapshot is damaged (its parts disagree)")
    return Entries(keys, ends, values)


class PackedTable(Mapping):
    """key -> value, the values packed as marshal bytes in one blob and each decoded the first time it is
    asked for: loading a 10,000-entry table costs one copy of the blob, not 10,000 objects. A key is found by
    bisection (the keys sorted, `sorted_keys`, or their positions in sorted order, `by_key`): an edit of one
    file in a 100,000-step project asks for a few hundred keys, and a dict of all of them cost 36 ms; after
    4,096 lookups the keys get that dict (a clean build asks for every key)."""

    _INDEXED_AFTER = 4096
    # decoded values kept at most (then all dropped): a clean build decodes every step's record, and holding
    # them all was ~1.5 KB a step (~140 MB at 100,000); one dropped and asked for again is decoded again (~20 us)
    _KEPT_AT_MOST = 16384

    def __init__(
        self,
        keys: Sequence[str],
        blob,
        ends: bytes,
        decode=marshal.loads,
        by_key: bytes = b"",
        sorted_keys=False,
        release=None,  # called as the decoded values are dropped: a mapped blob's pages handed back
    ):
        self._keys = keys
        self._blob = blob  # bytes, or a memoryview of the mapped file
        self._ends = array("Q", ends)  # where each key's bytes end in the blob
        self._decode = decode
        self._by_key = array("I", by_key)  # sorted_positions(keys)
        self._sorted = sorted_keys
        self._release = release
        self._lookups = 0
        self._index: dict[str, int] | None = None
        self._values: dict = {}

    @staticmethod
    def sorted_positions(keys: list[str]) -> bytes:
        """What `by_key` takes: the keys' positions, in the order of the keys they hold."""
        return array("I", sorted(range(len(keys)), key=keys.__getitem__)).tobytes()

    @staticmethod
    def pack(values: Callable[[], Iterable]) -> tuple[Iterator[bytes], bytes]:
        """(the pieces of the blob, ends) of the values that `values()` gives, in their keys' order: what
        PackedTable(keys, b"".join(pieces), ends, decode) reads back. Each value is encoded twice, once for
        its length and once as it is written, and never held: at 100,000 steps the encoded records, then
        their joined copy, were 45 MB each at the peak of a clean build."""
        ends = array("Q", accumulate(len(marshal.dumps(value)) for value in values())).tobytes()
        return (marshal.dumps(value) for value in values()), ends

    def raw(self) -> tuple[object, bytes]:
        """(the blob, ends): what `pack` made of these values, for writing them out again as they are."""
        return self._blob, self._ends.tobytes()

    def replaced(self, values: Mapping[str, tuple]) -> PackedTable:
        """This table with the values of some keys replaced (`values`, each key in the table), every other
        value's bytes copied as they are, not decoded and encoded again."""
        blob, old_ends = self._blob, self._ends
        at = sorted((self._position(key), marshal.dumps(value)) for key, value in values.items())
        if at and at[0][0] < 0:
            raise KeyError("a replaced value's key is not in the table")
        pieces: list = []
        lengths, start = array("Q", old_ends), 0
        for i in range(len(lengths) - 1, 0, -1):
            lengths[i] -= lengths[i - 1]
        for i, encoded in at:
            pieces += (blob[start : old_ends[i - 1] if i else 0], encoded)
            lengths[i] = len(encoded)
            start = old_ends[i]
        pieces.append(blob[start : old_ends[-1] if old_ends else 0])
        ends = array("Q", accumulate(lengths)).tobytes()
        return PackedTable(self._keys, b"".join(pieces), ends, self._decode, self._by_key.tobytes(), self._sorted)

    def _position(self, key: str) -> int:
        """Where key's value is, or -1."""
        if self._index is None:
            keys = self._keys
            if self._lookups < self._INDEXED_AFTER and (self._sorted or len(self._by_key) == len(keys)):
                self._lookups += 1
                if self._sorted:
                    i = bisect_left(keys, key)
                    return i if i < len(keys) and keys[i] == key else -1
                j = bisect_left(self._by_key, key, key=keys.__getitem__)
                return self._by_key[j] if j < len(keys) and keys[self._by_key[j]] == key else -1
            self._index = dict(zip(keys, range(len(keys)), strict=True))  # 1.3x a comprehension's speed
        return self._index.get(key, -1)

    def find(self, key: str, default=None):
        """The value of key, or `default` (no KeyError raised and caught: a clean build asks for every missing
        key of an empty index)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            i = self._position(key)
            if i < 0:
                return default
            if len(self._values) >= self._KEPT_AT_MOST:
                self._values.clear()
                if self._release is not None:
                    self._release()
            value = self._values[key] = self._decode(self._blob[self._ends[i - 1] if i else 0 : self._ends[i]])
        return value

    def __getitem__(self, key: str):
        value = self.find(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        return key in self._values or self._position(key) >= 0

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class Entries(MutableMapping):
    """An index's entries (key -> marshal bytes) as its snapshot holds them, sorted keys and their values one
    after another (a PackedTable: found by bisection, sliced when asked for), with what changed since in a dict
    beside them. An edit of one file in a 100,000-step project asks for a few hundred."""

    SET_AFTER = 64  # changes replayed past which the snapshot's keys are asked as a set (~10 ms at 100,000)

    def __init__(self, keys: tuple[str, ...] = (), ends: bytes = b"", values: bytes | memoryview = b""):
        # the snapshot's values, sliced out of its bytes when asked for (the same object when asked again)
        self._snapshot = PackedTable(keys, values, ends, decode=bytes, sorted_keys=True)
        self._changes: dict[str, bytes | None] = {}  # None: removed
        self._len = len(keys)

    @classmethod
    def holding(cls, entries: dict[str, bytes]) -> Entries:
        """Entries over a dict of them (a snapshot in the earlier layout), taken as they are."""
        made = cls()
        made._changes, made._len = dict(entries), len(entries)
        return made

    def get(self, key, default=None):
        value = self._changes.get(key, _MISSING)
        if value is _MISSING:
            value = self._snapshot.find(key)
        return default if value is None else value

    def __getitem__(self, key: str) -> bytes:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: str, value: bytes) -> None:
        if key not in self:
            self._len += 1
        self._changes[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._changes[key] = None
        self._len -= 1

    def pop(self, key, default=None):  # the one form the indexes use: no KeyError
        value = self.get(key)
        if value is None:
            return default
        self._changes[key] = None
        self._len -= 1
        return value

    def __iter__(self) -> Iterator[str]:
        changes = self._changes
        for key in self._snapshot:
            if changes.get(key, _MISSING) is not None:
                yield key
        for key, value in changes.items():
            if value is not None and self._snapshot.find(key) is None:
                yield key

    def __len__(self) -> int:
        return self._len

    def replay(self, records: list[dict[str, bytes | None]]) -> None:
        """Lay a log's records over these entries, in order (None: removed). A 100,000-step project's stat
        cache log holds tens of thousands of changes before it is folded in: applied one by one, each asked
        the snapshot whether it held the key (a bisection), which cost more than reading the snapshot."""
        changes = self._changes
        before = dict(changes)  # what each key was before the records, where not the snapshot's
        for record in records:
            changes.update(record)
        snapshot = self._snapshot
        held = set(snapshot) if len(changes) - len(before) > self.SET_AFTER else None
        for key, value in changes.items():
            was = before.get(key, _MISSING)
            if was is _MISSING:
                was_there = (key in held) if held is not None else snapshot.find(key) is not None
            else:
                was_there = was is not None
            self._len += (value is not None) - was_there

    def key_set(self) -> set[str]:
        """Every key, as a set (`in` without a Python call): ~10 ms at 100,000."""
        keys = set(self._snapshot)
        for key, value in self._changes.items():
            if value is None:
                keys.discard(key)
            else:
                keys.add(key)
        return keys


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def write_marshal(path: str, value, durable: bool = False, trim: bool = False) -> None:
    """Replace `path` with the marshal of `value` atomically (write_atomic)."""
    write_atomic(path, marshal.dumps(value), durable, trim)  # ~16 MB for a 100,000-step proof


def write_atomic(path: str, data: bytes | Iterable[bytes], durable: bool = False, trim: bool = False) -> None:
    """Replace `path` with `data` (or its pieces, one after another) atomically (a reader sees the old file or
    the new one, never half). `trim`: a file of megabytes hands its bytes' pages back (give_back_memory; not on
    the no-op path, which imports nothing it need not)."""
    with replacing(path, durable) as f:
        if isinstance(data, bytes):
            f.write(data)
        else:
            f.writelines(data)
        size = f.tell()
    if trim and size > _BIG:
        give_back_memory()  # else the state, the proof and the stat cache, written in turn, each take new pages


@contextmanager
def replacing(path: str, durable: bool = False) -> Iterator[BinaryIO]:
    """A file to write that replaces `path` whole once the block ends; if it ends with an exception (a full disk,
    an interrupt), `path` is as it was and no half-written copy is left beside it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        try:
            os.replace(tmp, path)
        except IsADirectoryError:  # a folder stands where the runner's file goes (a bad copy): it is no file of ours
            from .damaged import clear

            clear(path)
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_BIG = 1 << 22
TRIM_STEPS = 2000  # a spec's steps from which its parsed and compiled forms leave megabytes to give back


def give_back_memory(steps: int | None = None) -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim). Freed memory stays in a process
    that read a big spec or wrote a big index: rtoml's own allocations, the compiled spec's packed pieces, a
    marshal file's bytes, scattered among what the run keeps, are never at the top of the heap for free() to
    return, and the next big allocation takes new pages beside them. At 100,000 steps: ~35 MB after the
    spec is read, ~70 MB after it is saved. Elsewhere than glibc, nothing happens. `steps`: the spec's, when
    a spec is what was let go; below TRIM_STEPS there is little to give back, and ctypes' import costs ~3 ms."""
    if steps is not None and steps < TRIM_STEPS:
        return
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its own allocator keeps what it keeps
        pass
