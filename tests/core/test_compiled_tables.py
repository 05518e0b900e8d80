"""The compiled spec's packed tables (runner.compiled.PackedTable) find a key by bisection into its sorted
positions, then, after many lookups, by a dict of every key: both answer as the dict the table was packed from."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.compiled import PackedTable

NAMES = st.text(alphabet="ab/._-09é", min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    table=st.dictionaries(NAMES, st.integers(), max_size=30),
    asked=st.lists(NAMES, max_size=40),
    indexed_after=st.sampled_from([0, 3, 4096]),
)
def test_a_packed_table_answers_as_the_dict_it_was_packed_from(table, asked, indexed_after):
    keys = list(table)  # in the table's own order (a compiled spec's: the steps' run order), not sorted
    pieces, ends = PackedTable.pack(lambda: map(table.__getitem__, keys))
    packed = PackedTable(keys, b"".join(pieces), ends, by_key=PackedTable.sorted_positions(keys))
    packed._INDEXED_AFTER = indexed_after
    for key in asked + keys:
        assert (key in packed) == (key in table)
        if key in table:
            assert packed[key] == table[key]
        else:
            with pytest.raises(KeyError):
                packed[key]
    assert list(packed) == keys and len(packed) == len(table)
