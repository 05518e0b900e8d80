"""Step records and content-addressed output blobs (diskcache), the per-intent state index, atomic restore."""

from __future__ import annotations

import marshal
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple, Protocol

from .index_file import IndexFile, snapshot_bytes
from .keys import digest_bytes
from .redact import Mask

PULLED_BATCH = 64 << 20  # bytes of blobs from the remote held before they are written to the local cache


class StepRecord:
    """What a finished step produced, stored under its key."""

    def __init__(
        self,
        intent: str,
        key: str,
        outputs: Mapping[str, str | None],
        ingredients: dict | None = None,
        created: float = 0.0,
        duration: float = 0.0,
        run_id: str = "",
        drift: list | None = None,
        attempts: int | None = None,
    ):
        self.intent = intent
        self.key = key
        self.outputs = outputs
        self.ingredients = {} if ingredients is None else ingredients  # what went into the key, for reasons
        self.created = created
        self.duration = duration
        self.run_id = run_id
        self.drift = drift  # an agent step's change that drifted beyond its intent (runner/drift.py); else None
        self.attempts = attempts  # an agent step's model calls: what a remote hit on it spared; else None

    def to_dict(self) -> dict:
        value = dict(self.__dict__)
        for optional in ("drift", "attempts"):
            if value[optional] is None:
                del value[optional]  # a record without them keeps the shape records had before them
        return value


class Remote(Protocol):
    """A shared cache behind the local one (runner/stores builds it; the core only calls it): asked on a local
    miss, handed each committed batch of successes to upload in the background."""

    reads: bool  # whether it is asked at all (its mode is not write-only)

    def fetch_record(self, key: str) -> StepRecord | None: ...

    def fetch_blob(self, digest: str) -> bytes | None: ...

    def upload(self, blobs: dict[str, bytes], records: list[StepRecord]) -> None: ...

    def why(self, key: str) -> str | None: ...

    def fetch_records(self, keys: list[str]) -> dict[str, StepRecord | None]: ...

    def fetch_blobs(self, digests: list[str]) -> dict[str, bytes | None]: ...

    def refuse(self, key: str, why: str) -> None: ...


class LastResult(NamedTuple):
    """A step's last good result, as the state index keeps it (marshal stores a plain 3-tuple)."""

    key: str
    outputs: dict[str, str | None]  # output path -> digest
    inplace: dict[str, str | None]  # input the step edits in place -> its digest before the step ran


class State:
    """intent -> LastResult: the last good result of each intent.

    A small marshal file, so a no-op answers from it without opening the cache database. Each entry is kept
    as its own marshal bytes and decoded when asked for: an edit in a 10,000-step project reads a few
    hundred entries, and building 20,000 small dicts it never reads would cost more than its steps' spawns.
    """

    def __init__(self, path: str):
        self.path = path
        self._file = IndexFile(path)
        self._encoded = self._file.read()
        self._decoded: dict[str, LastResult] = {}
        self._changed: set[str] = set()  # since read or saved: what an edit's save appends

    def intents(self) -> set[str]:
        """The intents with a last good result, as a set (`in` costs no Python call)."""
        return self._encoded.key_set()

    def keys(self) -> set[str]:
        """The key of every intent's last good result (what `runner cache gc` keeps)."""
        return {entry.key for intent in self._encoded if (entry := self.get(intent)) is not None}

    def get(self, intent: str) -> LastResult | None:
        entry = self._decoded.get(intent)
        if entry is None:
            encoded = self._encoded.get(intent)
            if encoded is None:
                return None
            entry = self._decoded[intent] = LastResult._make(marshal.loads(encoded))
        return entry

    def set(self, intent: str, key: str, outputs: dict, inplace: dict | None = None) -> None:
        # only the encoded entry is kept: a clean build sets every step's, and holding each one twice cost
        # ~280 B a step; a later get() decodes it again
        self._encoded[intent] = marshal.dumps((key, outputs, inplace or {}))
        self._decoded.pop(intent, None)
        self._changed.add(intent)

    def save(self) -> None:
        if self._changed:
            self._file.write(self._encoded, self._changed, durable=True, trim=True)
            self._changed.clear()

    def file_bytes(self) -> bytes:
        """The whole index, for a journal that replaces the file along with the change it belongs to; once
        that is written, `saved_with_journal()`."""
        return snapshot_bytes(self._encoded)

    def saved_with_journal(self) -> None:
        """The journal wrote file_bytes() as the whole file: nothing is left to save, and the log beside the
        old file no longer extends the new one."""
        self._changed.clear()
        self._file.replaced()


class _Written:
    """The keys this process wrote, as one bit per hash() of a key (a Bloom filter of one hash): 2 MiB
    whatever the size, where a set of the keys held ~450 B a step of a clean build. A key that was not written
    may share a bit with one that was (about 1% of them at 100,000 steps): that only sends its question to
    the database, which answers it rightly."""

    BITS = 1 << 24

    def __init__(self) -> None:
        self._bits = bytearray()  # made at the first add: a run that writes nothing does not fill 2 MiB with zeros

    def add(self, key: str) -> None:
        if not self._bits:
            self._bits = bytearray(self.BITS >> 3)
        bit = hash(key) & (self.BITS - 1)
        self._bits[bit >> 3] |= 1 << (bit & 7)

    def __contains__(self, key: str) -> bool:
        if not self._bits:
            return False
        bit = hash(key) & (self.BITS - 1)
        return bool(self._bits[bit >> 3] & (1 << (bit & 7)))


_DB_CACHE_PAGES = 1024  # sqlite's page cache, in pages (4 MiB; diskcache's default is 8,192)


class Cache:
    """The diskcache database under .runner/cache, opened only when something needs it.

    A cache is only a cache: a database found damaged (a full disk or a bad copy leaves one cut short or
    overwritten) is set aside, kept for a report, and the run goes on as if the cache were cold, rather
    than every `runner make` ending in an internal error. Only the holder of the project lock (`owner`) moves
    it; a reader without the lock (`runner status`) reads it as empty and leaves it for the next make.
    Step records are masked (`mask`); output blobs are the user's own bytes and are stored as they are.
    `remote`: a shared cache read on a local miss (what it gives is kept here too, when this process holds
    the lock) and given every committed record, masked as stored here, with its blobs.
    """

    def __init__(self, directory: str, mask: Mask | None = None, owner: bool = False, remote: Remote | None = None):
        self.directory = directory
        self.remote = remote
        # what the remote gave, written here in batches of PULLED_BATCH bytes and at close()
        self._pulled_blobs: dict[str, bytes] = {}
        self._pulled_records: dict[str, StepRecord] = {}
        self._pulled_size = 0
        self._from_remote: set[str] = set()  # the keys whose record the remote gave (the step line says so)
        self._asked: set[str] = set()  # record keys the remote was asked for in this run: asked once
        # blobs it had not, or had damaged, in this run: has_blob asks once; get_blob asks again (a hermetic
        # step's worker may have put it there since)
        self._no_blob: set[str] = set()
        self._noting: tuple[set[str], set[str]] | None = None  # (keys, digests) while noting (prefetch)
        self.mask = Mask() if mask is None else mask
        self.owner = owner
        self.set_aside: str | None = None  # where a damaged database was moved to
        self._db = None
        # A first build asks for thousands of keys that cannot be there: when the database held nothing at
        # the first question, a key this process did not write is known absent without a query. (The
        # project lock keeps any other process from writing meanwhile.)
        self._started_empty: bool | None = None
        self._written = _Written()
        self._unreadable = False  # damaged, and not ours to set aside: read as empty
        self.refused: dict[str, tuple[str, str]] = {}  # key -> (intent, why its record may not be restored)

    @property
    def db(self):
        if self._db is None:
            import diskcache  # the only importer of diskcache

            # no memory-mapped reads and a small page cache: both count in the process's resident memory, which
            # at 100,000 steps grew by ~90 MB for lookups that the OS's page cache serves as well
            try:
                self._db = diskcache.Cache(
                    self.directory,
                    size_limit=2**34,
                    eviction_policy="none",
                    # nothing expires and nothing is evicted (`runner cache gc` trims): no culling query per write
                    cull_limit=0,
                    sqlite_mmap_size=0,
                    sqlite_cache_size=_DB_CACHE_PAGES,
                    disk=_disk_class(diskcache.Disk),
                )
            except OSError as exc:  # the folder could not be made: named, so the error can say what stands there
                raise OSError(exc.errno, os.strerror(exc.errno or 0), self.directory) from None
        return self._db

    def close(self) -> None:
        self._keep_pulled()
        if self._db is not None:
            self._db.close()
            self._db = None

    def _absent(self, key: str) -> bool:
        if self._started_empty is None:
            self._started_empty = len(self.db) == 0
        return self._started_empty and key not in self._written

    # a damaged database
    def _recover(self, exc: Exception) -> bool:
        """If `exc` says the database is damaged, set it aside (or, without the lock, stop reading it) and
        say so in one line: from then on the cache is empty. False for any other error (a locked database,
        a full disk), which the caller raises."""
        if not _damage(exc, self.directory) or self._unreadable or self.set_aside:
            return False  # not damage; or the fresh database failed too, which is no longer the cache's fault
        self.close()
        self._started_empty, self._written = True, _Written()
        dot_runner, cache = _shown(self.directory)
        if _read_only(self.directory):
            what = "is on a read-only file system"
        else:
            what = "is another user's" if _not_ours(self.directory) else "is damaged"
        if self.owner:
            self.set_aside = _aside(self.directory)
            _say(
                f"runner: the cache database {dot_runner}/{cache}/cache.db {what} ({exc}); moved it to "
                f"{dot_runner}/{os.path.basename(self.set_aside)} and going on without it"
            )
        else:
            self._unreadable = True
            until = "" if what == "is on a read-only file system" else " until `runner make` sets it aside"
            _say(f"runner: the cache database {dot_runner}/{cache}/cache.db {what} ({exc}); read as empty{until}")
        return True

    # records
    def get_record(self, key: str) -> StepRecord | None:
        try:
            value = None if self._absent("step:" + key) else self.db.get("step:" + key)
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc):
                raise
            value = None
        if value:
            return StepRecord(**value)
        return self._pull_record(key)

    def _pull_record(self, key: str) -> StepRecord | None:
        if self.remote is None:
            return None
        if key in self._pulled_records or key in self._asked:
            return self._pulled_records.get(key)
        if self._noting is not None:
            self._noting[0].add(key)
            return None
        self._asked.add(key)
        return self._keep_record(key, self.remote.fetch_record(key))

    def refuse(self, key: str, intent: str, why: str) -> None:
        """The record under `key` names what its step, `intent`, may not write (runner/confine.py): counted once,
        and one from the remote is counted there too and never kept here (_keep_pulled)."""
        if key in self.refused:
            return
        self.refused[key] = (intent, why)
        if key in self._from_remote and self.remote is not None:
            self.remote.refuse(key, why)  # (held on to, so that each decision says the same: _keep_pulled drops it)

    def _keep_record(self, key: str, record: StepRecord | None) -> StepRecord | None:
        if record is not None:
            self._pulled_records[key] = record
            self._from_remote.add(key)
        return record

    def prefetch(self, decide: Callable[[], object]) -> None:
        """Ask the remote at once for what `decide` (deciding the next ready steps) would ask it one by one:
        the records of its local misses, then the blobs those name, READERS-wide (runner/stores/mirror.py).
        Each read is a round trip, and one a step, in turn, made the remote slower than building: 300 cached
        steps over S3 took 16 s. `decide` is called with the remote's answers noted rather than asked for,
        and its decisions are dropped (the scheduler decides again, served from what came)."""
        if self.remote is None:
            return
        for _round in range(2):  # records; then the blobs of the records that came
            keys: set[str] = set()
            digests: set[str] = set()
            self._noting = (keys, digests)
            try:
                decide()
            finally:
                self._noting = None
            if not keys and not digests:
                return
            self._asked.update(keys)
            for key, record in self.remote.fetch_records(sorted(keys)).items():
                self._keep_record(key, record)
            for digest, data in self.remote.fetch_blobs(sorted(digests)).items():
                self._keep_blob(digest, data)

    @property
    def reads_remote(self) -> bool:
        return self.remote is not None and self.remote.reads

    def from_remote(self, key: str) -> bool:
        """Whether the record for `key` came from the remote in this run."""
        return key in self._from_remote

    def _keep_pulled(self) -> None:
        """Write what the remote gave into the local cache (the holder of the lock only), and let it go: a
        second clone restoring gigabytes never holds them all in memory."""
        blobs = self._pulled_blobs
        records = [record for key, record in self._pulled_records.items() if key not in self.refused]
        self._pulled_blobs, self._pulled_records, self._pulled_size = {}, {}, 0
        self._asked.difference_update(r.key for r in records)  # asked again if wanted and not written here
        if self.owner and (blobs or records):
            try:
                self._put_many_local(blobs, records)
            except Exception:  # noqa: BLE001 - a copy of the remote's entries kept here is only a cache
                pass

    def _pull_blob(self, digest: str) -> bytes | None:
        """The remote's copy of a blob, verified by its digest there (runner/stores/remote.py) and here."""
        if self.remote is None:
            return None
        if digest in self._pulled_blobs:
            return self._pulled_blobs[digest]
        if self._noting is not None:
            self._noting[1].add(digest)
            return b""  # as if there: the rest of the step's outputs are noted too
        return self._keep_blob(digest, self.remote.fetch_blob(digest))

    def _keep_blob(self, digest: str, data: bytes | None) -> bytes | None:
        if data is None or digest_bytes(data) != digest:
            self._no_blob.add(digest)
            return None
        if self._pulled_size + len(data) > PULLED_BATCH:
            self._keep_pulled()
        self._pulled_blobs[digest] = data
        self._pulled_size += len(data)
        return data

    def remote_why(self, key: str) -> str | None:
        """Why the remote had, or had not, the record for `key`; None with no remote or when it was not asked."""
        return None if self.remote is None else self.remote.why(key)

    def put_record(self, record: StepRecord) -> None:
        self.put_many({}, [record])

    # blobs
    def has_blob(self, digest: str) -> bool:
        try:
            if not self._absent("blob:" + digest) and "blob:" + digest in self.db:
                return True
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc):
                raise
        # fetched now rather than at restore: a damaged remote copy makes the step run, said by the plan
        return digest not in self._no_blob and self._pull_blob(digest) is not None

    def get_blob(self, digest: str) -> bytes | None:
        """The blob's bytes, or None if it is gone or is not what its digest says (a damaged copy)."""
        try:
            data = None if self._absent("blob:" + digest) else self.db.get("blob:" + digest)
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc):
                raise
            return None
        if data is not None and digest_bytes(data) == digest:
            return data
        return self._pull_blob(digest)

    def put_blob(self, digest: str, data: bytes) -> None:
        self.put_many({digest: data}, [])

    def put_many(self, blobs: dict[str, bytes], records: list[StepRecord], share: bool = True) -> None:
        """Blobs and step records in one transaction (a commit per step costs more than the step's own
        process). On a damaged database, set aside, they go into a fresh one. `share`: given to the remote too."""
        stored = self._put_many_local(blobs, records)
        if self.remote is not None and share:
            self.remote.upload(blobs, stored)

    def _put_many_local(self, blobs: dict[str, bytes], records: list[StepRecord]) -> list[StepRecord]:
        try:
            return self._put_many(blobs, records)
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc) or not self.owner:
                raise
            return self._put_many(blobs, records)

    def _put_many(self, blobs: dict[str, bytes], records: list[StepRecord]) -> list[StepRecord]:
        """Store them; the records as stored (masked), which is also what a remote is given."""
        mask = self.mask
        stored = []
        db = self.db
        items: dict[str, object] = {}
        with db.transact():
            for digest, data in blobs.items():
                key = "blob:" + digest
                if self._absent(key) or key not in db:
                    items[key] = data
            for record in records:
                value = record.to_dict()
                if mask and mask.holds(value):  # the outputs map stays: it says where the user's bytes go back to
                    value = mask.obj(value) | {"outputs": record.outputs}
                items["step:" + record.key] = value
                if self.remote is not None:
                    stored.append(StepRecord(**value))
            replaced = _set_many(db, items, [key for key in items if not self._absent(key)])
        for filename in replaced:  # after the commit, as diskcache's own set removes a replaced value's file
            db.disk.remove(filename)
        for key in items:
            self._written.add(key)
        return stored

    def restore(self, digest: str, root: str, rel: str, folder: str = "") -> bool:
        """Write blob `digest` to project path `rel` atomically (temp file + rename), through folders opened without
        following a link out of the project, or out of `folder` for a sub-project's step's output (confine.write
        raises Refused); False if the blob is gone or damaged."""
        data = self.get_blob(digest)
        if data is None:
            return False
        from .confine import write  # a restore's alone: the no-op path never loads it

        write(root, rel, data, folder)  # a sub-project's output walked from its folder: no link takes it out of there
        return True

    # maintenance
    def stats(self) -> dict:
        steps = blobs = blob_bytes = 0
        try:
            keys = [] if self._unreadable else list(self.db.iterkeys())
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc):
                raise
            keys = []
        for key in keys:
            if key.startswith("step:"):
                steps += 1
            elif key.startswith("blob:"):
                blobs += 1
        for root, _dirs, files in os.walk(self.directory):
            for name in files:
                blob_bytes += os.path.getsize(os.path.join(root, name))
        return {"directory": self.directory, "records": steps, "blobs": blobs, "bytes_on_disk": blob_bytes}

    def gc(self, live_keys: set[str]) -> dict:
        """Keep the records named by `live_keys` and the blobs they reference; drop the rest."""
        try:
            return self._gc(live_keys)
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc) or not self.owner:
                raise
            return self._gc(live_keys)

    def _gc(self, live_keys: set[str]) -> dict:
        keep_blobs: set[str] = set()
        dropped_records = dropped_blobs = 0
        for key in list(self.db.iterkeys()):
            if key.startswith("step:"):
                if key[5:] in live_keys:
                    record = self.db.get(key)
                    keep_blobs.update(d for d in (record or {}).get("outputs", {}).values() if d)
                else:
                    self.db.delete(key)
                    dropped_records += 1
        for key in list(self.db.iterkeys()):
            if key.startswith("blob:") and key[5:] not in keep_blobs:
                self.db.delete(key)
                dropped_blobs += 1
        self.db.expire()
        return {"records_removed": dropped_records, "blobs_removed": dropped_blobs}

    def clear(self) -> int:
        try:
            return self.db.clear()
        except Exception as exc:  # noqa: BLE001 - _recover tells damage from anything else, raised
            if not self._recover(exc) or not self.owner:
                raise
            return self.db.clear()


# sqlite's result codes for a file that is not a sound database (an extended code keeps its primary code in
# its low byte); SQLITE_CANTOPEN counts only when something other than a folder and a file stands there
_READONLY, _CORRUPT, _CANTOPEN, _NOTADB = 8, 11, 14, 26


_SET_MANY_CHUNK = 500  # keys a statement names (sqlite allows 32,766 parameters; older builds 999)
_INSERT_ROW = (
    "INSERT INTO Cache(key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, filename, value)"
    " VALUES (?, 1, ?, NULL, ?, 0, NULL, ?, ?, ?, ?)"
)


def _set_many(db, items: Mapping[str, object], present: list[str]) -> list[str]:
    """diskcache's `set` of each str key to its value, inside the caller's transaction: the rows the keys that
    may be `present` had are deleted (their triggers keep the cache's count and size, as diskcache's update
    does) and the new ones inserted, a few statements for a batch where `set` spends a transaction's set-up, a
    SELECT and an INSERT on each key (~80 us in a build; a clean build stores two a step). Values are encoded by the
    cache's own Disk, so any diskcache reader reads them back. Returns the files of the replaced values, to
    remove once committed."""
    sql, disk, now = db._sql, db.disk, time.time()  # diskcache's connection: it has no call for many keys
    replaced: list[str] = []
    for at in range(0, len(present), _SET_MANY_CHUNK):
        chunk = present[at : at + _SET_MANY_CHUNK]
        marks = ",".join("?" * len(chunk))
        old = sql(f"SELECT rowid, filename FROM Cache WHERE raw = 1 AND key IN ({marks})", chunk).fetchall()
        if old:
            sql(f"DELETE FROM Cache WHERE rowid IN ({','.join('?' * len(old))})", [rowid for rowid, _f in old])
            replaced.extend(filename for _rowid, filename in old if filename)
    rows, files = [], []
    try:
        for key, value in items.items():
            size, mode, filename, db_value = disk.store(value, False, key=key)
            rows.append((key, now, now, size, mode, filename, db_value))
            if filename:
                files.append(filename)
        db._con.executemany(_INSERT_ROW, rows)
    except BaseException:  # the transaction rolls back: no row names the files written for it (diskcache's set too)
        for filename in files:
            disk.remove(filename)
        raise
    return replaced


def _disk_class(base: type) -> type:
    """diskcache's Disk (`base`), but a value's file that a full disk cut short is removed, not left unnamed."""

    class Disk(base):
        def _write(self, full_path, iterator, mode, encoding=None):
            try:
                return super()._write(full_path, iterator, mode, encoding)
            except FileExistsError:  # another value's file: not ours to remove
                raise
            except BaseException:
                try:
                    os.unlink(full_path)
                except OSError:
                    pass
                raise

    return Disk


def _damage(exc: Exception, directory: str) -> bool:
    """Whether `exc`, raised by the database, says the database is damaged."""
    # loaded already when the database raised: importing them at the top would cost a run that never opens it
    import pickle
    import sqlite3

    if isinstance(exc, (pickle.UnpicklingError, EOFError)):  # a record's bytes overwritten, its page intact
        return True
    if not isinstance(exc, sqlite3.Error):
        return False
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_CANTOPEN, _READONLY) and _not_ours(directory):
        return True
    if code == _CANTOPEN:
        return not os.path.isdir(directory) or os.path.isdir(os.path.join(directory, "cache.db"))
    return code in (_CORRUPT, _NOTADB)


def _read_only(directory: str) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _not_ours(directory: str) -> bool:
    """The cache folder or its database is another user's that this one may not read or write (a `sudo runner
    make` made it): a cache this user cannot use, set aside as a damaged one is."""
    db = os.path.join(directory, "cache.db")
    return not os.access(directory, os.R_OK | os.W_OK | os.X_OK) or (
        os.path.exists(db) and not os.access(db, os.R_OK | os.W_OK)
    )


def _shown(directory: str) -> tuple[str, str]:
    """(.runner, cache): the cache folder as the user knows it, from the project root."""
    return os.path.basename(os.path.dirname(directory)), os.path.basename(directory)


def _aside(directory: str) -> str:
    """Move the damaged cache folder to cache.damaged-<time> beside it (kept for a report); its new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = f"{directory}.damaged-{stamp}"
    n = 1
    while os.path.lexists(dest):
        n += 1
        dest = f"{directory}.damaged-{stamp}-{n}"
    os.rename(directory, dest)
    return dest


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def atomic_write(dest: str, data: bytes, mode: int | None = None) -> None:
    """Never leave a half-written file: write beside it, fsync, then rename over it."""
    folder = os.path.dirname(dest) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(dest)}.runner-{os.getpid()}-{time.monotonic_ns()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, dest)
