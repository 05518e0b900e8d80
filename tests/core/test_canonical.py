"""Step keys digest canonical JSON: its bytes are what json.dumps(sort_keys, compact, ensure_ascii=False)
writes, whatever encoder makes them, or every cached result in every project would stop matching its key."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.keys import canonical

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20
)


def _dumps(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=500, deadline=None)
@given(VALUES)
def test_canonical_writes_the_bytes_json_dumps_writes(value):
    assert canonical(value) == _dumps(value)
    assert canonical([value, (value,)]) == _dumps([value, [value]])


def test_a_value_json_cannot_write_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        canonical({"a": object()})
    with pytest.raises(TypeError):
        canonical({1: "a", "b": 2})  # keys of two kinds cannot be sorted
    assert canonical([float("nan"), float("inf")]) == b"[NaN,Infinity]"
