"""Pure key arithmetic: canonical JSON, digests of bytes, files and folders, step keys and canary slots."""

from __future__ import annotations

import hashlib
import json
import os
from stat import S_ISDIR  # os imports stat: free


def _unencodable(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _canonical_encoder():
    """json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)'s own C encoder, made once: dumps
    makes it again at every call, 60 % of a small value's encoding (a compile encodes two values a step). Made
    without the check for cycles (a spec's values have none), which changes no byte of what it writes."""
    from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

    if c_make_encoder is None:  # pragma: no cover - CPython always has the C accelerator
        return None
    return c_make_encoder(None, _unencodable, encode_basestring, None, ":", ",", True, False, True)


_ENCODE = _canonical_encoder()


def canonical(value) -> bytes:
    if _ENCODE is not None and isinstance(value, (dict, list, tuple)):
        return "".join(_ENCODE(value, 0)).encode()
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_value(value) -> str:
    return digest_bytes(canonical(value))


def digest_file(path: str) -> str:
    """The file's digest, read through its descriptor: a Python file object adds an fstat, an ioctl and an
    lseek to each of a clean build's input files."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return digest_descriptor(fd)
    finally:
        os.close(fd)


def digest_or_none(path: str | os.PathLike) -> str | None:
    """The file's digest, or None when no file is there (gone, or a folder): what a person's edit is judged by."""
    try:
        return digest_file(os.fspath(path))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def digest_descriptor(fd: int) -> str:
    """The digest of what the open file `fd` holds from where it stands to its end."""
    h = hashlib.sha256()
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def content_digest(root: str, rel: str, folders: set[str] | None = None) -> str | None:
    """What a path holds: a file's bytes, a folder's names (an entry added within the same mtime tick).
    `folders`: where a path found to be a folder is added."""
    full = rel if rel[0] == "/" else root + "/" + rel
    # one open and one fstat (a folder opens read-only too): isdir's stat and a file object's fstat, ioctl and
    # lseek made it ~12 us a file, and the first no-op after a clean build checks every output's digest
    try:
        fd = os.open(full, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if S_ISDIR(os.fstat(fd).st_mode):
            if folders is not None:
                folders.add(rel)
            return hashlib.sha256("\0".join(sorted(os.listdir(full))).encode()).hexdigest()
        return digest_descriptor(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


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
