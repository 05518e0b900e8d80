"""Packed tables (runner.keys.PackedTable: the compiled spec's, an index snapshot's) find a key by bisection, into
the keys' sorted positions or the keys themselves when sorted, then, after many lookups, by a dict of every key:
each answers as the dict the table was packed from, whatever it keeps decoded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.keys import PackedTable

NAMES = st.text(alphabet="ab/._-09é", min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    table=st.dictionaries(NAMES, st.integers(), max_size=30),
    asked=st.lists(NAMES, max_size=40),
    indexed_after=st.sampled_from([0, 3, 4096]),
    sorted_keys=st.booleans(),
    kept=st.sampled_from([1, 2, 16384]),
)
def test_a_packed_table_answers_as_the_dict_it_was_packed_from(table, asked, indexed_after, sorted_keys, kept):
    # in the table's own order (a compiled spec's: the steps' run order), or sorted (an index snapshot's)
    keys = sorted(table) if sorted_keys else list(table)
    pieces, ends = PackedTable.pack(lambda: map(table.__getitem__, keys))
    by_key = b"" if sorted_keys else PackedTable.sorted_positions(keys)
    packed = PackedTable(keys, b"".join(pieces), ends, by_key=by_key, sorted_keys=sorted_keys)
    packed._INDEXED_AFTER = indexed_after
    packed._KEPT_AT_MOST = kept  # decoded values dropped and decoded again when asked for, taken too
    for key in asked + keys:
        assert (key in packed) == (key in table)
        assert packed.find(key, "none") == table.get(key, "none")
        if key in table:
            assert packed[key] == table[key]
        else:
            with pytest.raises(KeyError):
                packed[key]
    assert list(packed) == keys and len(packed) == len(table)
