"""The state index and the stat cache written as a snapshot and a log of later changes (index_file.IndexFile): an
edit writes what it changed, and what is read back is what was written, whatever a crash or another writer
left beside the snapshot."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.index_file import Entries, IndexFile, PackedTable, snapshot_bytes


def _entries(n: int, tag: str = "") -> dict[str, bytes]:
    return {f"k{i:04d}": marshal.dumps((f"key{i}{tag}", {f"out/{i}": "d"}, {})) for i in range(n)}


def _written(path: Path, entries: dict[str, bytes], changed) -> IndexFile:
    index = IndexFile(str(path))
    index.read()
    index.write(entries, changed)
    return index


def test_a_small_change_is_appended_and_read_back_over_the_snapshot(tmp_path):
    path = tmp_path / "state"
    entries = _entries(400)
    _written(path, entries, entries)  # no snapshot yet: written whole
    snapshot = path.read_bytes()
    assert not Path(f"{path}.log").exists()

    index = IndexFile(str(path))
    entries = index.read()
    entries["k0007"] = b"new"
    del entries["k0009"]
    entries["k9999"] = b"added"
    index.write(entries, {"k0007", "k0009", "k9999"})
    assert path.read_bytes() == snapshot  # the snapshot is untouched: the change went to the log
    assert Path(f"{path}.log").stat().st_size < 200

    index.write(entries, set())  # a second record, empty, appended to the same log
    assert IndexFile(str(path)).read() == entries


def test_a_log_beside_another_snapshot_is_never_laid_over_it(tmp_path):
    """A compaction (or an apply's journal, or an older runner) rewrote the snapshot and was cut off before the
    old log went: that log says older things than the new snapshot holds."""
    path = tmp_path / "state"
    entries = _entries(400)
    _written(path, entries, entries)
    index = IndexFile(str(path))
    entries = index.read()
    entries["k0001"] = b"older"
    index.write(entries, {"k0001"})
    stale_log = Path(f"{path}.log").read_bytes()

    entries["k0001"] = b"newer"
    rewritten = IndexFile(str(path))
    rewritten.read()
    rewritten.replaced()  # as after a journal: the next write is whole
    rewritten.write(entries, {"k0001"})
    assert not Path(f"{path}.log").exists()
    Path(f"{path}.log").write_bytes(stale_log)  # the crash between the new snapshot and the old log's removal

    assert IndexFile(str(path)).read()["k0001"] == b"newer"


def test_a_log_cut_short_by_a_crash_ends_where_it_was_cut_and_the_next_write_is_whole(tmp_path):
    path = tmp_path / "stat"
    entries = _entries(400)
    _written(path, entries, entries)
    index = IndexFile(str(path))
    entries = index.read()
    entries["k0001"] = b"first"
    index.write(entries, {"k0001"})
    original = entries["k0002"]
    entries["k0002"] = b"second"
    index.write(entries, {"k0002"})
    log = Path(f"{path}.log")
    log.write_bytes(log.read_bytes()[:-3])  # the second record, torn

    index = IndexFile(str(path))
    read = index.read()
    assert read["k0001"] == b"first" and read["k0002"] == original
    before = path.stat().st_ino
    read["k0003"] = b"third"
    index.write(read, {"k0003"})
    assert path.stat().st_ino != before and not log.exists()  # whole: nothing appended after a torn record
    assert IndexFile(str(path)).read() == read


def test_the_log_is_folded_into_the_snapshot_before_it_outgrows_it(tmp_path):
    path = tmp_path / "state"
    entries = _entries(400)
    _written(path, entries, entries)
    size = path.stat().st_size
    index = IndexFile(str(path))
    entries = index.read()
    log = Path(f"{path}.log")
    for i in range(400):
        entries[f"k{i:04d}"] = os.urandom(200)
        index.write(entries, {f"k{i:04d}"})
        assert not log.exists() or log.stat().st_size <= max(size // 2, IndexFile.LOG_AT_LEAST)
    assert IndexFile(str(path)).read() == entries


def test_an_edit_in_a_big_project_leaves_the_snapshots_as_they_were(project):
    """The user-visible promise: an edit of one file in a 300-step project writes the two changed steps'
    entries and the edited file's stat, not the whole state index and stat cache again; every later run
    reads them back (the no-op proof removed, so the full rule runs on what the files say)."""
    steps = "".join(
        f'[intent.s{i}]\nrun = "cp src/{i}.txt out/{i}.txt"\ninputs = ["src/{i}.txt"]\noutputs = ["out/{i}.txt"]\n\n'
        f'[intent.t{i}]\nrun = "cp out/{i}.txt out/t{i}.txt"\ninputs = ["out/{i}.txt"]\noutputs = ["out/t{i}.txt"]\n'
        f'deps = ["s{i}"]\n\n'
        for i in range(150)
    )
    project.spec('[project]\nname = "wide"\n\n' + steps)
    for i in range(150):
        project.write(f"src/{i}.txt", f"{i}\n")
    (project.root / "out").mkdir()
    project.age_all()
    assert project.make().code == 0
    state_dir = project.root / ".runner"
    snapshots = {name: (state_dir / name).read_bytes() for name in ("state", "stat")}

    project.write("src/7.txt", "edited\n")
    result = project.make()
    assert result.code == 0, result.err
    assert {n for n, s in result.statuses().items() if s == "ran"} == {"s7", "t7"}
    assert {name: (state_dir / name).read_bytes() for name in snapshots} == snapshots
    assert (state_dir / "state.log").exists() and (state_dir / "stat.log").exists()

    (state_dir / "noop").unlink()
    again = project.make()
    assert again.code == 0, again.err
    assert set(again.statuses().values()) == {"cached"}
    assert project.read("out/t7.txt") == "edited\n"


def test_one_entry_is_looked_up_and_updated_as_the_whole_index_would_say(tmp_path):
    """The touch shortcut's way in: one path's entry, the log's latest record first; an update appended."""
    path = tmp_path / "stat"
    entries = _entries(400)
    _written(path, entries, entries)
    first = IndexFile(str(path))
    assert first.lookup("k0003") == entries["k0003"]  # from the snapshot
    first.update({"k0003": b"touched", "k0004": None})
    second = IndexFile(str(path))
    assert second.lookup("k0003") == b"touched" and second.lookup("k0004") is None
    assert second.lookup("k0005") == entries["k0005"]
    second.update({"k0003": b"again"})
    whole = IndexFile(str(path)).read()
    assert whole["k0003"] == b"again" and "k0004" not in whole and len(whole) == 399

    stale_log = Path(f"{path}.log").read_bytes()
    IndexFile(str(path)).write(whole, whole)  # every entry changed: the snapshot is written whole, the log goes
    Path(f"{path}.log").write_bytes(stale_log)
    whole["k0003"] = b"newest"
    rewritten = IndexFile(str(path))
    rewritten.read()
    rewritten.write(whole, whole)
    Path(f"{path}.log").write_bytes(stale_log)  # a log naming an older snapshot
    assert IndexFile(str(path)).lookup("k0003") == b"newest"


def test_an_update_before_any_read_appends_to_the_log_and_leaves_the_snapshot(tmp_path):
    """The no-op after an edit vouches for the outputs it hashed without reading the 16 MB stat cache: only its
    log, to know it extends the snapshot there now. Beside another snapshot's log, the update is written whole."""
    path = tmp_path / "stat"
    entries = _entries(400)
    _written(path, entries, entries)
    _written(path, entries, {"k0001"})  # a log exists
    before = path.stat()
    IndexFile(str(path)).update({"k0002": b"vouched", "k0003": None})
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # appended, not rewritten
    read = IndexFile(str(path)).read()
    assert read["k0002"] == b"vouched" and "k0003" not in read and len(read) == 399

    stale_log = Path(f"{path}.log").read_bytes()
    IndexFile(str(path)).write(dict(read.items()), set(read))  # a whole snapshot: the log goes
    Path(f"{path}.log").write_bytes(stale_log)  # a log naming the snapshot before
    IndexFile(str(path)).update({"k0004": b"kept"})
    read = IndexFile(str(path)).read()
    assert read["k0004"] == b"kept" and read["k0002"] == b"vouched" and len(read) == 399


def test_a_log_another_writer_appended_to_is_not_cut_short_under_this_one(tmp_path):
    """Another runner's no-op may append to the stat cache's log between two saves of a run: the run's next save
    does not cut the log back to what it knew (losing its own earlier records); it writes the index whole."""
    path = tmp_path / "stat"
    entries = _entries(400)
    _written(path, entries, entries)
    run = IndexFile(str(path))
    mine = run.read()
    mine["k0001"] = b"mine, first"
    run.write(mine, {"k0001"})
    IndexFile(str(path)).update({"k0002": b"the other's"})
    mine["k0003"] = b"mine, second"
    run.write(mine, {"k0003"})
    read = IndexFile(str(path)).read()
    assert read["k0001"] == b"mine, first" and read["k0003"] == b"mine, second"


def test_a_change_saved_beside_a_stale_log_is_kept(tmp_path):
    """After an apply's journal (or a recovery replaying one) put a whole state file in place, the log beside it
    names the old snapshot: a save must not append after that log, under which a reader ignores everything."""
    path = tmp_path / "state"
    entries = _entries(400)
    _written(path, entries, entries)
    index = IndexFile(str(path))
    entries = index.read()
    entries["k0001"] = b"old"
    index.write(entries, {"k0001"})
    stale_log = Path(f"{path}.log").read_bytes()
    path.write_bytes(snapshot_bytes(entries))  # a whole file from a journal: another snapshot
    Path(f"{path}.log").write_bytes(stale_log)

    run = IndexFile(str(path))
    mine = run.read()
    mine["k0002"] = b"saved after"
    run.write(mine, {"k0002"})
    assert IndexFile(str(path)).read()["k0002"] == b"saved after"


# ---- the snapshot's layout: sorted keys, one blob of values, a CRC ---------------------------------------------


KEYS = [f"s{i:02d}" for i in range(12)]


@settings(max_examples=200, deadline=None)
@given(
    start=st.dictionaries(st.sampled_from(KEYS), st.binary(max_size=20)),
    ops=st.lists(
        st.tuples(st.sampled_from(["set", "pop", "del", "get", "in", "roundtrip"]), st.sampled_from(KEYS), st.binary()),
        max_size=40,
    ),
    mapped=st.booleans(),
)
def test_the_entries_read_from_a_snapshot_behave_as_the_dict_written(tmp_path_factory, start, ops, mapped):
    """Entries (bisection into the snapshot's sorted keys, changes in a dict beside them) answer every question a
    dict holding the same entries answers, and what is written of them reads back the same, the snapshot read
    or mapped (as a big one is)."""
    path = tmp_path_factory.mktemp("index") / "state"
    index = IndexFile(str(path))
    index.write(start, start)
    IndexFile.MAP_AT_LEAST = 1 if mapped else 1 << 20
    entries, expected = IndexFile(str(path)).read(), dict(start)
    PackedTable._INDEXED_AFTER = 5  # the dict the keys get after many lookups, taken too
    try:
        for op, key, value in ops:
            if op == "set":
                entries[key] = expected[key] = value
            elif op == "pop":
                assert entries.pop(key) == expected.pop(key, None)
            elif op == "del" and key in expected:
                del entries[key], expected[key]
            elif op == "get":
                assert entries.get(key) == expected.get(key)
            elif op == "in":
                assert (key in entries) == (key in expected)
            else:
                write = IndexFile(str(path))
                write.read()
                write.replaced()
                write.write(entries, set(expected))
                entries = IndexFile(str(path)).read()
            assert len(entries) == len(expected)
            assert sorted(entries) == sorted(expected) and entries.key_set() == set(expected)
            assert dict(entries.items()) == expected
    finally:
        PackedTable._INDEXED_AFTER = 4096
        IndexFile.MAP_AT_LEAST = 1 << 20


@pytest.mark.parametrize("map_at_least", [1, 1 << 20], ids=["mapped", "read"])
def test_a_damaged_snapshot_reads_as_no_entries(tmp_path, monkeypatch, map_at_least):
    """A cut or overwritten snapshot is found as it is read (its CRC), never decoded entry by entry later."""
    monkeypatch.setattr(IndexFile, "MAP_AT_LEAST", map_at_least)
    path = tmp_path / "state"
    entries = _entries(400)
    _written(path, entries, entries)
    data = path.read_bytes()
    assert data[:4] == b"RIX2"
    path.write_bytes(data[: len(data) // 2])
    assert IndexFile(str(path)).read() == {}
    path.write_bytes(data[:-100] + bytes(100))
    assert IndexFile(str(path)).read() == {}
    path.write_bytes(data)
    assert IndexFile(str(path)).read() == entries


@pytest.mark.parametrize("map_at_least", [1, 1 << 20], ids=["mapped", "read"])
def test_a_snapshot_of_the_earlier_layout_is_read(tmp_path, monkeypatch, map_at_least):
    """A state index or stat cache written by the runner before the sorted layout (one marshal dict) is read as
    it is, and the next whole write is in the new layout."""
    monkeypatch.setattr(IndexFile, "MAP_AT_LEAST", map_at_least)
    path = tmp_path / "stat"
    entries = _entries(400)
    path.write_bytes(marshal.dumps(entries))
    index = IndexFile(str(path))
    read = index.read()
    assert read == entries
    index.replaced()
    index.write(read, set())
    assert path.read_bytes()[:4] == b"RIX2" and IndexFile(str(path)).read() == entries


@settings(max_examples=200, deadline=None)
@given(
    start=st.dictionaries(st.sampled_from(KEYS), st.binary(max_size=8)),
    records=st.lists(
        st.dictionaries(st.sampled_from(KEYS), st.none() | st.binary(max_size=8), min_size=1, max_size=5), max_size=8
    ),
    set_after=st.sampled_from([0, 64]),
    mapped=st.booleans(),
)
def test_a_log_laid_over_a_snapshot_reads_as_the_entries_its_writes_left(
    tmp_path_factory, start, records, set_after, mapped
):
    """Each record appended by a small update (None: removed), read back over the snapshot in one replay, gives
    the entries, their number and their keys that applying the records in order to a dict gives, whether the
    snapshot's keys are asked one by one or as a set."""
    path = tmp_path_factory.mktemp("index") / "stat"
    IndexFile(str(path)).write(start, start)
    expected = dict(start)
    for record in records:
        IndexFile(str(path)).update(record)
        for key, value in record.items():
            if value is None:
                expected.pop(key, None)
            else:
                expected[key] = value
    assert not records or path.with_name("stat.log").exists()  # each was appended, not folded in
    Entries.SET_AFTER, IndexFile.MAP_AT_LEAST = set_after, 1 if mapped else 1 << 20
    try:
        read = IndexFile(str(path)).read()
    finally:
        Entries.SET_AFTER, IndexFile.MAP_AT_LEAST = 64, 1 << 20
    assert len(read) == len(expected)
    assert dict(read.items()) == expected and read.key_set() == set(expected) and sorted(read) == sorted(expected)
