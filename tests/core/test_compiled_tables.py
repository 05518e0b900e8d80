"""Packed tables (runner.index_file.PackedTable: the compiled spec's, an index snapshot's) find a key by bisection, into
the keys' sorted positions or the keys themselves when sorted, then, after many lookups, by a dict of every key:
each answers as the dict the table was packed from, whatever it keeps decoded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.index_file import PackedTable

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


@settings(max_examples=200, deadline=None)
@given(
    table=st.dictionaries(NAMES, st.integers() | st.text(max_size=40), min_size=1, max_size=30),
    data=st.data(),
    sorted_keys=st.booleans(),
)
def test_a_packed_table_with_values_replaced_answers_as_the_dict_with_them(table, data, sorted_keys):
    """PackedTable.replaced (an edit of some intents, compiled._recompiled): the others' bytes copied, the new
    values encoded, each key answering with its value, whatever the lengths of the old and new bytes."""
    keys = sorted(table) if sorted_keys else list(table)
    pieces, ends = PackedTable.pack(lambda: map(table.__getitem__, keys))
    by_key = b"" if sorted_keys else PackedTable.sorted_positions(keys)
    packed = PackedTable(keys, b"".join(pieces), ends, by_key=by_key, sorted_keys=sorted_keys)
    new = data.draw(st.dictionaries(st.sampled_from(keys), st.integers() | st.text(max_size=40)))
    replaced = packed.replaced(new)
    assert {key: replaced[key] for key in keys} == table | new
    assert list(replaced) == keys
    blob, ends = replaced.raw()
    assert blob == b"".join(PackedTable.pack(lambda: map((table | new).__getitem__, keys))[0])


@st.composite
def _graphs(draw) -> list[tuple[str, list[str], list[str], list[str]]]:
    """Steps (name, deps among the earlier ones, inputs, outputs), paths shared between steps."""
    steps = []
    paths = st.sampled_from([f"f{i}.txt" for i in range(12)])
    for i in range(draw(st.integers(1, 14))):
        earlier = [name for name, *_ in steps]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        inputs = draw(st.lists(paths, unique=True, max_size=3))
        steps.append((f"s{i:02d}", deps, inputs, [f"out/s{i:02d}.txt"]))
    return steps


def _reference_order(compiled, targets) -> list[str]:
    """A target's closure as the records say, walked over every step's record."""
    keep = set(targets)
    for name in reversed(compiled.order):
        if name in keep:
            keep.update(compiled.deps[name])
    return [name for name in compiled.order if name in keep]


@settings(max_examples=60, deadline=None)
@given(steps=_graphs(), data=st.data())
def test_the_graphs_positions_walk_as_the_records_do(tmp_path_factory, steps, data):
    """Compiled.graph (the positions of each step's dependencies and declared paths) answers a target's closure
    and its declared paths as the steps' records do, in the compiled spec as made and as read back from its file."""
    import json

    from runner.compiled import load_compiled
    from runner.graph import selected_order

    root = tmp_path_factory.mktemp("graph")
    (root / ".runner").mkdir()
    text = "".join(
        f'[intent.{name}]\nrun = "true"\ninputs = {json.dumps(inputs)}\noutputs = {json.dumps(outputs)}\n'
        f"deps = {json.dumps(deps)}\n\n"
        for name, deps, inputs, outputs in steps
    )
    (root / "intents.toml").write_text(text)
    names = [name for name, *_ in steps]
    targets = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=9))
    made = load_compiled(root, use_cache=False)
    again = load_compiled(root)  # read back from .runner/spec.pickle
    for compiled in (made, again):
        for wanted in (targets, targets[0], None):
            want = (
                list(compiled.order)
                if wanted is None
                else _reference_order(compiled, [wanted] if isinstance(wanted, str) else wanted)
            )
            assert selected_order(compiled, wanted) == want
        for order in (compiled.order, _reference_order(compiled, targets)):
            declared = [path for name in order for path in compiled.declared[name]]
            assert compiled.declared_paths(order) == list(dict.fromkeys(declared))
