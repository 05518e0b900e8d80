"""The tables runner import appends as text read back as the values they were made from, whatever the text."""

from __future__ import annotations

import tomllib

from hypothesis import given
from hypothesis import strategies as st

from runner.toml_write import table_text

texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # any text a roadmap item can hold


@given(name=texts.filter(bool), goal=texts, outputs=st.lists(texts, max_size=3), line=st.integers(1, 10**6))
def test_a_table_reads_back_as_the_values_it_was_made_from(name, goal, outputs, line):
    fields = {"goal": goal, "outputs": outputs, "roadmap": {"file": "ROADMAP.md", "line": line, "item": goal}}
    assert tomllib.loads(table_text(["intent", name], fields)) == {"intent": {name: fields}}


def test_the_layout_is_the_one_a_person_writes():
    text = table_text(["intent", "write-docs"], {"goal": 'Say "hi"\\', "deps": ["a", "b c"], "x": {"line": 3}})
    assert text == '[intent.write-docs]\ngoal = "Say \\"hi\\"\\\\"\ndeps = ["a", "b c"]\nx = {line = 3}\n'
