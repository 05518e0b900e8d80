"""Pure key arithmetic: canonical JSON, digests of files through a stat cache, and step keys."""

from __future__ import annotations

import glob as _glob
import hashlib
import json
import marshal
import os
import time

GLOB_CHARS = frozenset("*?[")
# A file modified within this window of being hashed may share its mtime with the hashed version
# (coarse filesystem clocks), so its cached digest is not trusted: git's "racily clean" rule.
RACY_NS = 1_000_000_000


def canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_value(value) -> str:
    return digest_bytes(canonical(value))


def digest_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class StatCache:
    """path -> (size, mtime_ns, inode, hashed_at_ns, digest), as git's index: a no-op reads no file contents.

    Each entry is kept as its own marshal bytes and decoded when its path is asked for: a run that looks
    at a few hundred of a 10,000-file project's paths does not build 10,000 tuples to write them back.
    """

    def __init__(self, path: str):
        self.path = path
        self.dirty = False
        self.reads = 0  # how many files had to be hashed (for tests and the benchmark)
        # paths hashed by this process: the racy rule guards against an edit between two runs that keeps
        # size and mtime; within one run, a file just hashed and not re-stamped is not read again
        self.fresh: set[str] = set()
        self.seen: set[str] = set()  # paths whose digest this process asked for or was told
        self._encoded = read_encoded(path)

    def entry(self, rel: str) -> tuple | None:
        encoded = self._encoded.get(rel)
        return None if encoded is None else marshal.loads(encoded)

    def _set(self, rel: str, entry: tuple) -> None:
        self._encoded[rel] = marshal.dumps(entry)
        self.fresh.add(rel)
        self.dirty = True

    def digest(self, root: str, rel: str) -> str | None:
        """The content digest of root/rel, or None if it does not exist (or is not a regular file)."""
        full = root + "/" + rel
        self.seen.add(rel)
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            if self._encoded.pop(rel, None) is not None:
                self.dirty = True
            return None
        entry = self.entry(rel)
        if (
            entry is not None
            and entry[0] == st.st_size
            and entry[1] == st.st_mtime_ns
            and entry[2] == st.st_ino
            and (st.st_mtime_ns + RACY_NS < entry[3] or rel in self.fresh)
        ):
            return entry[4]
        if not os.path.isfile(full):
            return None
        now = time.time_ns()
        value = digest_file(full)
        self.reads += 1
        self._set(rel, (st.st_size, st.st_mtime_ns, st.st_ino, now, value))
        return value

    def remember(self, rel: str, st: os.stat_result, value: str) -> None:
        """Record a digest computed elsewhere (the executor hashes outputs as it stores them)."""
        self._set(rel, (st.st_size, st.st_mtime_ns, st.st_ino, time.time_ns(), value))
        self.seen.add(rel)

    def observed(self) -> dict[str, tuple]:
        """path -> (size, mtime_ns, inode, hashed_at_ns, digest) for each file this process read through the
        cache: the stats it had when its digest was taken or last confirmed."""
        encoded = self._encoded
        return {rel: marshal.loads(encoded[rel]) for rel in self.seen if rel in encoded}

    def save(self) -> None:
        if self.dirty:
            write_marshal(self.path, self._encoded)
            self.dirty = False


def read_encoded(path: str) -> dict[str, bytes]:
    """An index written as key -> the marshal bytes of its entry (a missing or unreadable file: empty). Entries
    stay encoded until asked for; a file in runner 0.1's first layout (plain values) is encoded on read."""
    try:
        with open(path, "rb") as f:
            entries = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(next(iter(entries.values()), b""), bytes):
        return {key: marshal.dumps(entry) for key, entry in entries.items()}
    return entries


def write_marshal(path: str, value, durable: bool = False) -> None:
    """Replace `path` with `value` atomically (a reader sees the old file or the new one, never half)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        marshal.dump(value, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def expand(root: str, patterns: tuple[str, ...]) -> list[str]:
    """Project-relative files matched by the patterns, sorted. Literal paths skip globbing entirely."""
    out: set[str] = set()
    for pattern in patterns:
        if GLOB_CHARS.isdisjoint(pattern):
            out.add(pattern)
            continue
        for match in _glob.glob(pattern, root_dir=root, recursive=True):
            if os.path.isfile(os.path.join(root, match)):
                out.add(match)
    return sorted(out)


def input_digests(stat: StatCache, root: str, patterns: tuple[str, ...]) -> dict[str, str | None]:
    return {rel: stat.digest(root, rel) for rel in expand(root, patterns)}


# The two functions below run once per step on every command, so they hash a joined string rather
# than canonical JSON (10x cheaper). Paths and intent names never contain NUL, so the join is unambiguous.


def outputs_digest(outputs: dict[str, str | None]) -> str:
    """One digest standing for all of a step's outputs: what its dependants' keys see (early cutoff)."""
    return hashlib.sha256("\0".join(f"{p}\0{d}" for p, d in sorted(outputs.items())).encode()).hexdigest()


def step_key(static_digest: str, inputs: dict[str, str | None], deps: dict[str, str | None]) -> str:
    parts = [static_digest]
    parts += [f"i\0{p}\0{d}" for p, d in inputs.items()]  # inputs come sorted from expand()
    parts += [f"d\0{n}\0{d}" for n, d in deps.items()]  # in declaration order: part of the definition
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
