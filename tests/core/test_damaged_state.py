"""Damaged state under .runner/ (a full disk, a bad copy) costs a rebuild, never a failed `runner make`: each
file is damaged for real in turn, the cache database in several ways, before the run, and during it."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import pytest

GARBAGE = bytes((i * 151 + 7) % 256 for i in range(512))
SET_ASIDE = re.compile(
    r"^runner: the cache database \.runner/cache/cache\.db is damaged \((?P<why>[^)]*)\); "
    r"moved it to \.runner/(?P<aside>cache\.damaged-\d{8}-\d{6}(-\d+)?) and going on without it$",
    re.MULTILINE,
)
# files the loop below must meet; it damages whatever else .runner/ holds too, as the freshness files change
KNOWN = {"cache/cache.db", "state", "stat", "noop", "spec.pickle"}


def _half_then_garbage(path: Path) -> bytes:
    """Cut to half its size, then garbage over part of what is left; the bytes written."""
    data = path.read_bytes()
    half = data[: len(data) // 2]
    at = len(half) // 2
    damaged = half[:at] + GARBAGE + half[at + len(GARBAGE) :]
    path.write_bytes(damaged)
    return damaged


def _expected(chain) -> dict[str, str]:
    x, y = chain.read("src/x.txt"), chain.read("src/y.txt")
    return {"out/a.txt": x + y, "out/b.txt": (x + y).upper(), "out/c.txt": f"{len(y.encode())}\n"}


def _outputs(chain) -> dict[str, str]:
    return {rel: chain.read(rel) for rel in ("out/a.txt", "out/b.txt", "out/c.txt")}


def test_each_state_file_damaged_in_turn_costs_a_rebuild_never_a_failure(chain):
    chain.age_all()  # spec files edited long ago, so the compiled spec is kept (spec.pickle)
    assert chain.make().code == 0
    state = chain.root / ".runner"
    files = sorted(
        str(p.relative_to(state)) for p in state.rglob("*") if p.is_file() and p.relative_to(state).parts[0] != "runs"
    )
    assert set(files) >= KNOWN, files
    for i, rel in enumerate(files):
        damaged = _half_then_garbage(state / rel)
        chain.write("src/x.txt", f"edit {i}\n")  # so the run needs the cache, not only the no-op proof
        result = chain.make()
        assert result.code == 0, (rel, result.err)
        assert _outputs(chain) == _expected(chain), rel
        assert result.statuses()["a"] == "ran" and result.statuses()["b"] == "ran", rel
        aside = SET_ASIDE.search(result.err)
        if rel == "cache/cache.db":
            assert aside, result.err
            assert (state / aside["aside"] / "cache.db").read_bytes() == damaged  # kept for a report
        else:
            assert aside is None, (rel, result.err)
        again = chain.make()
        assert again.code == 0 and again.finished()["ran"] == 0, (rel, again.err)


@pytest.mark.parametrize("form", ["half", "header", "empty", "directory"])
def test_a_damaged_cache_database_is_set_aside_and_the_build_goes_on_cold(chain, form):
    assert chain.make().code == 0
    db = chain.root / ".runner/cache/cache.db"
    if form == "half":
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    elif form == "header":
        db.write_bytes(GARBAGE[:100] + db.read_bytes()[100:])
    elif form == "empty":
        db.write_bytes(b"")
    else:
        db.unlink()
        db.mkdir()
    chain.write("src/x.txt", "edited\n")
    result = chain.make()
    assert result.code == 0, result.err
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "cached"}
    assert _outputs(chain) == _expected(chain)
    aside = SET_ASIDE.search(result.err)
    if form == "empty":  # an empty file is an empty database: nothing is damaged
        assert aside is None and result.err == ""
    else:
        why = {
            "half": "database disk image is malformed",
            "header": "file is not a database",
            "directory": "unable to open database file",
        }[form]
        assert aside and aside["why"] == why, result.err
        assert result.err.count("\n") == 1  # one line
    (chain.root / "out/a.txt").unlink()  # the fresh database holds what this run stored
    restored = chain.make()
    assert restored.code == 0 and restored.statuses()["a"] == "restored", restored.err
    assert chain.make().finished()["ran"] == 0


def test_a_database_found_damaged_mid_run_is_set_aside_and_the_steps_stored_in_a_fresh_one(chain):
    """The database opens and answers its first question (how many entries: none, it says), and only storing
    the records of the steps that ran meets the damaged pages."""
    assert chain.make().code == 0
    db = chain.root / ".runner/cache/cache.db"
    with sqlite3.connect(db) as con:
        con.execute("UPDATE Settings SET value = 0 WHERE key = 'count'")
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in con.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'Cache'") if r[0]]
    con.close()
    data = bytearray(db.read_bytes())
    for page in pages:
        data[(page - 1) * page_size : page * page_size] = (GARBAGE * (page_size // len(GARBAGE) + 1))[:page_size]
    db.write_bytes(bytes(data))
    chain.write("src/x.txt", "edited\n")
    result = chain.make()
    assert result.code == 0, result.err
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "cached"}
    assert SET_ASIDE.search(result.err), result.err
    (chain.root / "out/b.txt").unlink()
    restored = chain.make()
    assert restored.code == 0 and restored.statuses()["b"] == "restored", restored.err
    assert _outputs(chain) == _expected(chain)


def test_a_cached_copy_whose_bytes_were_overwritten_is_never_restored(chain):
    """sqlite checks its pages, not what a value holds: a blob whose bytes changed is told by its digest."""
    assert chain.make().code == 0
    digest = hashlib.sha256(chain.read("out/a.txt").encode()).hexdigest()
    with sqlite3.connect(chain.root / ".runner/cache/cache.db") as con:
        changed = con.execute("UPDATE Cache SET value = ? WHERE key = ?", (b"garbage\n", "blob:" + digest)).rowcount
    con.close()
    assert changed == 1
    (chain.root / "out/a.txt").unlink()
    result = chain.make()
    assert result.code == 0, result.err
    assert result.statuses()["a"] == "ran"
    ran = next(e for e in result.events() if e["event"] == "step_started" and e["intent"] == "a")
    assert ran["reasons"] == ["the cached copy of out/a.txt is gone or damaged"]
    assert _outputs(chain) == _expected(chain)


def test_without_the_lock_a_damaged_database_is_read_as_empty_and_left_for_make(chain):
    assert chain.make().code == 0
    db = chain.root / ".runner/cache/cache.db"
    damaged = _half_then_garbage(db)
    chain.write("src/x.txt", "edited\n")
    status = chain.run("status")
    assert status.code == 0, status.err
    assert status.err == (
        "runner: the cache database .runner/cache/cache.db is damaged (database disk image is malformed); "
        "read as empty until `runner make` sets it aside\n"
    )
    assert db.read_bytes() == damaged  # untouched: another runner may hold it open
    cleared = chain.run("cache", "clear")
    assert cleared.code == 0 and SET_ASIDE.search(cleared.err), cleared.err
    assert chain.make().code == 0
    assert _outputs(chain) == _expected(chain)
