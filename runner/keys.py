"""Pure key arithmetic: canonical JSON, digests of bytes and files, step keys; the marshal index files' I/O."""

from __future__ import annotations

import hashlib
import json
import marshal
import os


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


def write_marshal(path: str, value, durable: bool = False, trim: bool = False) -> None:
    """Replace `path` with `value` atomically (a reader sees the old file or the new one, never half). `trim`:
    a file of megabytes hands its bytes' pages back (give_back_memory; not on the no-op path, which imports
    nothing it need not)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        marshal.dump(value, f)  # made whole in memory first: ~16 MB for a 100,000-step state or stat cache
        size = f.tell()
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if trim and size > _BIG:
        give_back_memory()  # else the state, the proof and the stat cache, written in turn, each take new pages


_BIG = 1 << 22


def give_back_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim). Freed memory stays in a process
    that read a big spec or wrote a big index: rtoml's own allocations, the compiled spec's packed pieces, a
    marshal file's bytes, scattered among what the run keeps, are never at the top of the heap for free() to
    return, and the next big allocation takes new pages beside them. At 100,000 steps: ~35 MB after the
    spec is read, ~70 MB after it is saved. Elsewhere than glibc, nothing happens."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its own allocator keeps what it keeps
        pass


# The two functions below run once per step on every command, so they hash a joined string rather
# than canonical JSON (10x cheaper). Paths and intent names never contain NUL, so the join is unambiguous.


def outputs_digest(outputs: dict[str, str | None]) -> str:
    """One digest standing for all of a step's outputs: what its dependants' keys see (early cutoff)."""
    return hashlib.sha256("\0".join(f"{p}\0{d}" for p, d in sorted(outputs.items())).encode()).hexdigest()


def step_key(static_digest: str, inputs: dict[str, str | None], deps: dict[str, str | None]) -> str:
    parts = [static_digest]
    parts += [f"i\0{p}\0{d}" for p, d in inputs.items()]  # inputs come sorted from globs.expand()
    parts += [f"d\0{n}\0{d}" for n, d in deps.items()]  # in declaration order: part of the definition
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def canary_slot(slice_key: str, candidate: str) -> int:
    """Where a step falls, 0-99, for a canary candidate ("family/pattern"): the candidate is used for the step
    while this is below its weight. A hash of the step's key (without any candidate in it), so the slice is
    deterministic, spread evenly, and moves with the step's inputs as Flagger's traffic does."""
    return int(hashlib.sha256(f"{slice_key}\0{candidate}".encode()).hexdigest()[:8], 16) % 100


def with_canaries(key: str, gates) -> str:
    """An agent step's key with the canary patterns it falls in the slice of (compiled gate entries: family,
    name, stage, weight, definition digest): a candidate is part of a key only where it is used."""
    used = [
        entry[4] for entry in gates if entry[2] == "canary" and canary_slot(key, f"{entry[0]}/{entry[1]}") < entry[3]
    ]
    return digest_value([key, used]) if used else key
