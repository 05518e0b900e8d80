"""The cache's first-build shortcut: a database that held nothing at the first question answers "absent" for
any key this process did not write, without a query; what it wrote meanwhile it must still find."""

from __future__ import annotations

from pathlib import Path

from runner.cache import Cache, StepRecord
from runner.keys import digest_bytes


def test_a_cache_that_started_empty_finds_everything_it_wrote_since(tmp_path: Path):
    cache = Cache(str(tmp_path / "cache"), owner=True)
    try:
        assert cache.get_record("k0") is None  # the first question: the database is empty
        written = {}
        for i in range(2000):
            data = f"output {i}\n".encode()
            digest = digest_bytes(data)
            cache.put_many({digest: data}, [StepRecord(f"s{i}", f"k{i}", {f"out/{i}.txt": digest})])
            written[f"k{i}"] = (digest, data)
        for key, (digest, data) in written.items():
            record = cache.get_record(key)
            assert record is not None and record.outputs == {f"out/{key[1:]}.txt": digest}, key
            assert cache.has_blob(digest) and cache.get_blob(digest) == data, key
        assert cache.get_record("never-written") is None
    finally:
        cache.close()
