"""The cache stores a batch of blobs and step records as diskcache's own `set` would, in a few statements a
batch: diskcache reads every value back, its count and size settings stay right and no file is left behind
(diskcache's own `check`), and a record stored again under its key replaces the old one, its file too."""

from __future__ import annotations

from pathlib import Path

from runner.cache import Cache, StepRecord
from runner.keys import digest_bytes

BIG = 40_000  # bytes: past diskcache's min_file_size (32 KiB), so the value is kept in a file of its own


def _record(i: int, outputs: dict, note: str = "") -> StepRecord:
    return StepRecord(f"s{i}", f"k{i}", outputs, ingredients={"note": note}, duration=0.5, run_id="r")


def test_a_batch_reads_back_and_keeps_diskcaches_books(tmp_path: Path):
    cache = Cache(str(tmp_path / "cache"), owner=True)
    try:
        blobs = {}
        for i in range(300):
            data = (f"output {i}\n" * (BIG // 10 if i % 7 == 0 else 1)).encode()
            blobs[digest_bytes(data)] = data
        digests = list(blobs)
        # batches of 32 steps, as the scheduler stores them; every 7th blob is kept in a file
        for at in range(0, 300, 32):
            part = {d: blobs[d] for d in digests[at : at + 32]}
            cache.put_many(part, [_record(i, {f"out/{i}": digests[i]}) for i in range(at, min(at + 32, 300))])
        # stored again: the same blobs (kept once) and the records of steps 0-99 with new values, some of them
        # now big enough for a file, and a big one now small
        cache.put_many(
            {d: blobs[d] for d in digests[:10]},
            [_record(i, {f"out/{i}": digests[i]}, note="x" * (BIG if i % 3 == 0 else 1)) for i in range(100)],
        )
        cache.put_many({}, [_record(i, {f"out/{i}": digests[i]}, note="small again") for i in range(0, 100, 6)])

        for i in range(300):
            record = cache.get_record(f"k{i}")
            assert record is not None and record.outputs == {f"out/{i}": digests[i]}
            if i < 100:
                assert record.ingredients["note"] == ("small again" if i % 6 == 0 else "x" * (BIG if i % 3 == 0 else 1))
            assert cache.get_blob(digests[i]) == blobs[digests[i]]
        assert len(cache.db) == 600  # 300 blobs, 300 records: diskcache's count, kept by its triggers
        assert cache.db.check() == []  # no file missing, none left over, sizes and counts as the rows say
        files = [p for p in (tmp_path / "cache").rglob("*.val")]
        big_records = [i for i in range(100) if i % 3 == 0 and i % 6 != 0]
        assert len(files) == len(range(0, 300, 7)) + len(big_records)
    finally:
        cache.close()
