"""A no-op proof records its paths' stats in pieces (runner.proof.stat_pieces), and an edit decodes only the
pieces whose bytes differ: the paths it finds changed are exactly those whose stats differ, at any piece size,
and a record in another layout (an older runner's one piece of bytes) or cut short is no record at all. Its
paths and order are stored NUL-joined, and the no-op's report is made from the joined order whole, the aggregates'
names taken out of it."""

from __future__ import annotations

import marshal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner import proof, stat_cache
from runner.events import cached_text
from runner.noop import _without

STAT = st.one_of(
    st.none(),  # no such path
    st.just(stat_cache.NEVER),
    st.tuples(
        st.integers(0, 2**40),
        st.integers(-(2**62), 2**62),  # an mtime before 1970 is a negative count of nanoseconds
        st.integers(0, 2**62),
        st.integers(0, 2**64 - 1),  # an inode number uses all 64 bits on some filesystems
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    before=st.lists(STAT, max_size=40),
    edits=st.lists(st.tuples(st.integers(0, 39), STAT), max_size=8),
    chunk=st.sampled_from([1, 2, 3, 7, 512]),
)
def test_the_changed_paths_are_those_whose_stats_differ(before, edits, chunk):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(proof, "CHUNK", chunk)
        _check_changed(before, edits)


def _check_changed(before: list, edits: list) -> None:
    recorded = marshal.loads(marshal.dumps(proof.stat_pieces(before)))  # as the proof file holds it
    now = list(before)
    for i, stat in edits:
        if i < len(now):
            now[i] = stat
    expected = [(i, was) for i, was in enumerate(before) if was != now[i]]
    assert proof.changed_stats(recorded, proof.stat_pieces(now)) == expected
    same = proof.pieces_digest(proof.stat_pieces(now)) == proof.pieces_digest(recorded)
    assert same == (now == before)
    # the stats one by one from the pieces, when a child took those after the first `cut` (proof.take_stats)
    for cut in range(0, len(now) + 1, proof.CHUNK):
        taken = proof.Taken(proof.stat_pieces(now), now[:cut], whole=False)
        assert [taken[i] for i in reversed(range(len(now)))] == now[::-1]  # one by one, any order
        assert taken.stats == now and [taken[i] for i in range(len(now))] == now


@pytest.mark.parametrize(
    "recorded",
    [
        marshal.dumps([(1, 2, 3, 4)] * 5, 2),  # the layout before the pieces: one marshal of the whole list
        [marshal.dumps([(1, 2, 3, 4)] * 5, 2)[:-3]],  # a piece cut short
        [marshal.dumps([(1, 2, 3, 4)] * 4, 2)],  # a piece of the wrong length
        [],  # fewer pieces than the paths need
    ],
)
def test_a_record_in_another_layout_or_damaged_is_no_record(recorded):
    assert proof.changed_stats(recorded, proof.stat_pieces([(1, 2, 3, 5)] * 5)) is None


NAME = st.text(alphabet="abz09_.-/é", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAME, max_size=20))
def test_names_stored_joined_read_back_as_they_were_and_report_as_line_by_line(names):
    stored = marshal.loads(marshal.dumps(proof.joined(names)))
    assert proof.names_of(stored) == names
    assert proof.names_of(names) == names  # the layout before: a list, taken as it is
    if names:
        line = '{"event": "step_finished", "intent": "%s", "status": "cached", "reasons": ["up to date"]}'
        assert cached_text(stored) == "\n".join(line % name for name in names)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAME, min_size=1, max_size=20), data=st.data())
def test_the_no_op_report_leaves_out_the_names_at_the_aggregates_positions(names, data):
    positions = sorted(data.draw(st.sets(st.integers(0, len(names) - 1))))
    if data.draw(st.booleans()):  # the usual aggregate: the last name (the target naming every step)
        positions = sorted({*positions, len(names) - 1})
    kept = "\0".join(name for i, name in enumerate(names) if i not in positions)
    assert _without(proof.joined(names), len(names), tuple(positions)) == kept
