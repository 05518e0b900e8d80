"""The remote cache as the core sees it (cache.Remote): read-through on a local miss, uploads in the background,
every hit, miss, refusal and failed upload counted; a remote that fails is noted once and left alone."""

from __future__ import annotations

import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from ..cache import StepRecord
from .remote import RemoteError, RemoteStore

READ, WRITE, READWRITE = "read", "write", "readwrite"
MODES = (READ, WRITE, READWRITE)
READERS = 16  # reads in flight at once when the scheduler asks for many (fetch_records, fetch_blobs)
UPLOAD_BATCH = 64 << 20  # bytes of blobs sent in one round of concurrent writes, at most (one blob may be more)


class Mirror:
    """One run's use of a RemoteStore. `mode`: read (never writes), write (never reads), readwrite.

    The first failure to reach the store (down, slow past its timeout, refusing) is said once on stderr and
    turns the remote off for the rest of the run: the build goes on with the local cache, and no request is
    retried. Uploads go through one background thread, so the scheduler never waits on the network; `finish`
    waits for them, at most `drain` seconds, and counts what did not make it.
    """

    def __init__(self, store: RemoteStore, mode: str = READWRITE, drain: float = 60.0, say=None):
        self.store = store
        self.url = store.url
        self.mode = mode
        self.reads = mode in (READ, READWRITE)
        self.writes = mode in (WRITE, READWRITE)
        self.drain = drain
        self.down: str | None = None
        self.hits = self.misses = self.blobs = 0
        self.uploaded = self.upload_failed = 0
        self.saved_seconds = 0.0
        self.saved_attempts = 0
        self._why: dict[str, str] = {}
        self._served: dict[str, tuple[float, int]] = {}  # key -> (duration, attempts) of each hit, until refused
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._sent: set[str] = set()
        self._readers: ThreadPoolExecutor | None = None
        self._say = say or _stderr

    # going down once
    def _gone(self, exc: RemoteError) -> None:
        with self._lock:
            if self.down is not None:
                return
            self.down = str(exc)
        self._say(f"runner: the remote cache {self.url} failed ({exc}); going on with the local cache only")

    # reading
    def fetch_record(self, key: str) -> StepRecord | None:
        if not self.reads:
            return None
        if self.down is not None:
            self._why[key] = f"remote cache {self.url} not asked: it failed earlier in this run"
            return None
        try:
            record = self.store.get_record(key)
        except RemoteError as exc:
            self._gone(exc)
            self._why[key] = f"remote cache {self.url} failed: {exc}"
            return None
        with self._lock:  # fetch_records asks from several threads
            if record is None:
                self.misses += 1
                refusal = self.store.refusals.get(key)
                self._why[key] = f"{refusal}: ignored" if refusal else f"no entry in the remote cache {self.url} either"
                return None
            self.hits += 1
            self._served[key] = (float(record.duration or 0.0), int(record.attempts or 0))
            self.saved_seconds += self._served[key][0]
            self.saved_attempts += self._served[key][1]
            self._why[key] = f"inputs match a run in the remote cache {self.url}"
        return record

    def refuse(self, key: str, why: str) -> None:
        """A record it gave names what its step may not write (the core's check, runner/confine.py): a refusal,
        no longer a hit, and what it would have saved is not saved."""
        with self._lock:
            served = self._served.pop(key, None)
            if served is None:
                return
            self.hits -= 1
            self.misses += 1
            self.saved_seconds -= served[0]
            self.saved_attempts -= served[1]
            self._why[key] = f"{why}: ignored"
        self.store.refuse(key, why)

    def fetch_blob(self, digest: str) -> bytes | None:
        if not self.reads or self.down is not None:
            return None
        try:
            data = self.store.get_blob(digest)
        except RemoteError as exc:
            self._gone(exc)
            return None
        if data is not None:
            with self._lock:
                self.blobs += 1
        return data

    def fetch_records(self, keys: list[str]) -> dict[str, StepRecord | None]:
        """fetch_record for each key, READERS at a time: one latency for many steps, not one each."""
        return dict(zip(keys, self._each(self.fetch_record, keys), strict=True))

    def fetch_blobs(self, digests: list[str]) -> dict[str, bytes | None]:
        return dict(zip(digests, self._each(self.fetch_blob, digests), strict=True))

    def _each(self, fetch, names: list[str]) -> list:
        if len(names) <= 1 or not self.reads or self.down is not None:
            return [fetch(name) for name in names]
        if self._readers is None:
            self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="runner-remote-read")
        return list(self._readers.map(fetch, names))

    def why(self, key: str) -> str | None:
        """Why the remote had, or had not, the record for `key` (None: it was not asked)."""
        return self._why.get(key)

    # writing
    def upload(self, blobs: dict[str, bytes], records: list[StepRecord]) -> None:
        """Queue a committed batch for the store: blobs first, then the records that name them."""
        if not self.writes or not (blobs or records):
            return  # (an agent step's blobs are stored before its record, in their own batch)
        if self.down is not None:
            self.upload_failed += len(records)
            return
        self._queue.put((dict(blobs), list(records)))
        if self._thread is None:
            self._thread = threading.Thread(target=self._uploads, name="runner-remote-upload", daemon=True)
            self._thread.start()

    def _uploads(self) -> None:
        while True:
            batches, last = self._gather()
            blobs: dict[str, bytes] = {}
            records: list[StepRecord] = []
            for more_blobs, more_records in batches:
                blobs.update(more_blobs)
                records += more_records
            done = 0
            try:
                if self.down is not None:
                    raise RemoteError(self.down)
                new = {d: data for d, data in blobs.items() if d not in self._sent}  # one upload a digest
                self.store.put_many(new, records)
                self._sent.update(new)
                done = len(records)
            except RemoteError as exc:
                self._gone(exc)
            except Exception as exc:  # noqa: BLE001 - an upload never fails the build; it is counted
                self._gone(RemoteError(f"{type(exc).__name__}: {exc}"))
            finally:
                self.uploaded += done
                self.upload_failed += len(records) - done
            for _ in range(len(batches) + last):
                self._queue.task_done()
            if last:
                return

    def _gather(self) -> tuple[list[tuple[dict, list]], bool]:
        """The next batches to upload as one (whatever was queued meanwhile, up to UPLOAD_BATCH bytes): one
        round of concurrent writes for many steps' objects rather than a round trip per step; and whether the
        end came (finish's None)."""
        batches: list[tuple[dict, list]] = []
        size = 0
        item = self._queue.get()
        while item is not None:
            batches.append(item)
            size += sum(len(data) for data in item[0].values())
            if size >= UPLOAD_BATCH:
                return batches, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batches, False
        return batches, True

    def finish(self) -> dict:
        """Wait for the queued uploads (at most `drain` seconds), then what the remote did in this run."""
        if self._readers is not None:
            self._readers.shutdown(wait=False, cancel_futures=True)
            self._readers = None
        left = 0
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(self.drain)
            if self._thread.is_alive():  # still stuck after the drain: what is queued is counted as failed
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        left += len(item[1])
                self._say(f"runner: the remote cache {self.url} took over {self.drain:g} s to take the uploads")
            self._thread = None
        return {
            "url": self.url,
            "mode": self.mode,
            "hits": self.hits,
            "misses": self.misses,
            "blobs_fetched": self.blobs,
            "refused": self.store.refused,
            "uploaded": self.uploaded,
            "upload_failed": self.upload_failed + left,
            "saved_seconds": round(self.saved_seconds, 3),
            "saved_attempts": self.saved_attempts,
            "down": self.down,
        }


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
