"""Step records and content-addressed output blobs (diskcache), the per-intent state index, atomic restore."""

from __future__ import annotations

import marshal
import os
import time
from collections.abc import Mapping

from .keys import read_encoded, write_marshal
from .redact import Mask


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
    ):
        self.intent = intent
        self.key = key
        self.outputs = outputs
        self.ingredients = {} if ingredients is None else ingredients  # what went into the key, for reasons
        self.created = created
        self.duration = duration
        self.run_id = run_id

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class State:
    """intent -> (key, outputs, pre-run digests of in-place inputs): the last good result of each intent.

    A small marshal file, so a no-op answers from it without opening the cache database. Each entry is kept
    as its own marshal bytes and decoded when asked for: an edit in a 10,000-step project reads a few
    hundred entries, and building 20,000 small dicts it never reads would cost more than its steps' spawns.
    """

    def __init__(self, path: str):
        self.path = path
        self._encoded = read_encoded(path)
        self._decoded: dict[str, tuple] = {}
        self.dirty = False

    def intents(self):
        """The intents with a last good result (a set-like view: `in` costs no Python call)."""
        return self._encoded.keys()

    def keys(self) -> set[str]:
        """The key of every intent's last good result (what `runner cache gc` keeps)."""
        return {entry[0] for intent in self._encoded if (entry := self.get(intent)) is not None}

    def get(self, intent: str) -> tuple | None:
        entry = self._decoded.get(intent)
        if entry is None:
            encoded = self._encoded.get(intent)
            if encoded is None:
                return None
            entry = self._decoded[intent] = marshal.loads(encoded)
        return entry

    def set(self, intent: str, key: str, outputs: dict, inplace: dict | None = None) -> None:
        entry = self._decoded[intent] = (key, outputs, inplace or {})
        self._encoded[intent] = marshal.dumps(entry)
        self.dirty = True

    def save(self) -> None:
        if self.dirty:
            write_marshal(self.path, self._encoded, durable=True)
            self.dirty = False


class Cache:
    """The diskcache database under .runner/cache, opened only when something needs it. Step records are
    masked (`mask`); output blobs are the user's own bytes and are stored as they are."""

    def __init__(self, directory: str, mask: Mask | None = None):
        self.directory = directory
        self.mask = Mask() if mask is None else mask
        self._db = None
        # A first build asks for thousands of keys that cannot be there: when the database held nothing at
        # the first question, a key this process did not write is known absent without a query. (The
        # project lock keeps any other process from writing meanwhile.)
        self._started_empty: bool | None = None
        self._written: set[str] = set()

    @property
    def db(self):
        if self._db is None:
            import diskcache  # the only importer of diskcache

            self._db = diskcache.Cache(self.directory, size_limit=2**34, eviction_policy="none")
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _absent(self, key: str) -> bool:
        if self._started_empty is None:
            self._started_empty = len(self.db) == 0
        return self._started_empty and key not in self._written

    # records
    def get_record(self, key: str) -> StepRecord | None:
        if self._absent("step:" + key):
            return None
        value = self.db.get("step:" + key)
        return StepRecord(**value) if value else None

    def put_record(self, record: StepRecord) -> None:
        value = record.to_dict()
        self.db.set("step:" + record.key, self.mask.obj(value) if self.mask else value)
        self._written.add("step:" + record.key)

    # blobs
    def has_blob(self, digest: str) -> bool:
        return not self._absent("blob:" + digest) and "blob:" + digest in self.db

    def put_blob(self, digest: str, data: bytes) -> None:
        key = "blob:" + digest
        if self._absent(key) or key not in self.db:
            self.db.set(key, data)
            self._written.add(key)

    def restore(self, digest: str, dest: str) -> bool:
        """Write blob `digest` to dest atomically (temp file + rename); False if the blob is gone."""
        data = self.db.get("blob:" + digest)
        if data is None:
            return False
        atomic_write(dest, data)
        return True

    # maintenance
    def stats(self) -> dict:
        steps = blobs = blob_bytes = 0
        for key in self.db.iterkeys():
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
        return self.db.clear()


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
