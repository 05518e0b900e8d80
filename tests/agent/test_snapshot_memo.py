"""A workspace's snapshot reuses the digests it took last time for files whose stats vouch for them
(runner.attempt.snapshot, git's racily-clean rule): on random sequences of writes (same size, other size,
mtime put back, replaced by a rename, chmod, deleted, created, in the private folders too), of waits past the
racy window and of snapshots, every snapshot equals the workspace's digests read afresh."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner import attempt, stat_cache

# a window short enough for a test to wait past it, longer than any filesystem clock's tick (a jiffy, <= 10 ms)
WINDOW_NS = 30_000_000

PATHS = ["a.txt", "src/b.py", "src/deep/c.py", ".runner/x", "new.txt"]
OPS = ["write_same_size", "write_other_size", "mtime_put_back", "replace", "chmod", "delete", "wait", "snapshot"]


def _truth(root: Path, private: bool) -> dict[str, str]:
    found = {}
    for folder, dirs, files in os.walk(root):
        if not private:
            dirs[:] = [d for d in dirs if not (folder == str(root) and d in attempt.PRIVATE)]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found[os.path.relpath(path, root)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return found


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture(autouse=True)
def short_window(monkeypatch):
    monkeypatch.setattr(stat_cache, "RACY_NS", WINDOW_NS)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(OPS), st.sampled_from(PATHS), st.booleans(), st.integers(0, 255)),
        min_size=1,
        max_size=30,
    )
)
def test_every_snapshot_equals_the_digests_read_afresh(steps):
    root = Path(tempfile.mkdtemp(prefix="memo-"))
    try:
        for rel in PATHS[:4]:
            _write(root / rel, b"start " + rel.encode())
        time.sleep(WINDOW_NS / 1e9 + 0.01)  # the first snapshot's digests vouched for at once
        assert attempt.snapshot(root, private=True) == _truth(root, True)
        for op, rel, private, byte in steps:
            path = root / rel
            if op == "wait":
                time.sleep(WINDOW_NS / 1e9 + 0.01)
            elif op == "snapshot":
                assert attempt.snapshot(root, private=private) == _truth(root, private), steps
            elif op == "delete":
                path.unlink(missing_ok=True)
            elif op == "chmod" and path.exists():
                path.chmod(path.stat().st_mode ^ 0o100)
            elif op == "write_same_size" and path.exists():
                old = path.read_bytes()
                new = bytes([byte]) * len(old)
                _write(path, new if new != old else bytes([byte ^ 1]) * len(old))
            elif op == "write_other_size":
                _write(path, bytes([byte]) * (byte + 1))
            elif op == "mtime_put_back" and path.exists():
                st_before = path.stat()
                _write(path, bytes(b ^ 0xFF for b in path.read_bytes()))  # the same size, other bytes
                os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
            elif op == "replace" and path.exists():  # a new inode under the old name, its bytes and mtime kept
                st_before = path.stat()
                tmp = root / "tmp.swap"
                _write(tmp, path.read_bytes()[:-1] + b"#")
                os.utime(tmp, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
                os.replace(tmp, path)
        assert attempt.snapshot(root, private=True) == _truth(root, True)
    finally:
        attempt.remove_workspace(root, root)
        shutil.rmtree(root, ignore_errors=True)


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_a_file_older_than_the_window_is_not_read_again(tmp_path):
    """The shortcut is taken: a second snapshot of an aged, unchanged workspace reads none of its 1 MB files,
    and after one is rewritten, only that one."""
    ws = tmp_path / "ws"
    for i in range(5):
        _write(ws / f"f{i}.bin", bytes([i]) * (1 << 20))
    time.sleep(WINDOW_NS / 1e9 + 0.01)
    first = attempt.snapshot(ws)
    start = _bytes_read()
    assert attempt.snapshot(ws) == first
    assert _bytes_read() - start < 1 << 20
    _write(ws / "f3.bin", b"y" * (1 << 20))
    start = _bytes_read()
    found = attempt.snapshot(ws)
    assert 1 << 20 <= _bytes_read() - start < 2 << 20
    assert found == _truth(ws, False)
