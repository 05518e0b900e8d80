"""rtoml reads the specs for speed, tomli words the errors: the two must agree, and read what tomllib reads."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli

from runner import toml_read

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    p for p in ROOT.rglob("*.toml") if not {".venv", "bench", ".git", "node_modules"} & set(p.relative_to(ROOT).parts)
)

# documents tomllib refuses for reasons rtoml might overlook: each must still be an error
INVALID = [
    "a = 1\na = 2\n",
    "[t]\nx = 1\n[t]\ny = 2\n",
    'a = "unterminated\n',
    'a = "\\q"\n',
    "a = 1979-05-27T25:00:00\n",
    "a = 0x\n",
    "a = [1, 2,,]\n",
    "a.b = 1\na = 2\n",
]

# TOML 1.1 (tomli >= 2.5, rtoml, and the stdlib's tomllib from Python 3.15): read alike by both
TOML_1_1 = {
    "a = { b = 1, }\n": {"a": {"b": 1}},
    "a = {\n  b = 1,\n  c = 2\n}\n": {"a": {"b": 1, "c": 2}},
    'a = "\\x41\\e"\n': {"a": "A\x1b"},
}


def _parsed(parse, text):
    try:
        return _comparable(parse(text))
    except Exception as exc:  # either parser's error type
        return type(exc).__name__ == "TOMLDecodeError" or "error"


def _comparable(value):
    """The document with each nan as a marker: nan is unequal to itself (tests/specs/82 holds some)."""
    if isinstance(value, float) and value != value:
        return "<nan>"
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_documents_read_the_same_as_tomllib(path):
    text = path.read_bytes().decode("utf-8", "replace")
    expected = _parsed(tomllib.loads, text)
    got = _parsed(toml_read.loads, text)
    assert got == expected


@pytest.mark.parametrize("text", INVALID)
def test_invalid_documents_stay_errors_with_tomllibs_position(text):
    with pytest.raises(toml_read.TOMLDecodeError) as info:
        toml_read.loads(text)
    assert "line" in str(info.value)


def test_at_least_the_corpus_and_the_adapters_are_covered():
    names = {str(p.relative_to(ROOT)) for p in DOCUMENTS}
    assert "intents.toml" in names and "adapters/python.toml" in names
    assert sum(n.startswith("tests/specs/") for n in names) >= 25


@pytest.mark.parametrize("text", sorted(TOML_1_1))
def test_toml_1_1_documents_read_alike(text):
    assert toml_read.loads(text) == tomli.loads(text) == TOML_1_1[text]


def test_an_integer_rtoml_cannot_hold_is_read_by_tomli():
    assert toml_read.loads("x = 9223372036854775808\n") == {"x": 9223372036854775808}


# a big spec is read in pieces (toml_read._in_pieces: rtoml's own tree of a 100,000-step spec is ~475 MB);
# a piece of 64 characters cuts these small documents at nearly every [intent.NAME] header
def document_digest(doc: dict) -> str | None:
    """A parsed document's digest, as the compiled spec keeps it (Spec.parsed)."""
    digests = toml_read.document_digests(doc)
    return digests[0] if digests is not None else None


MANY = "".join(f'[intent.s{i}]\nrun = "echo {i} > out/{i}"\noutputs = ["out/{i}"]\n\n' for i in range(40))
PIECES_READ_WHOLE = {
    "an intent defined twice": MANY + '[intent.s3]\nrun = "again"\n',
    "a sub-table of an earlier piece's intent": MANY + "[intent.s1.env]\nA = '1'\n",
    "an explicit [intent] table": "[intent]\n" + MANY,
    "intent as a dotted key": 'intent.s99.run = "x"\n' + MANY,
    "an array of tables": MANY + '[[intent]]\nrun = "x"\n',
    "a header-like line in a multi-line string": '[intent.a]\nrun = """\n' + MANY + '"""\n' + MANY,
    "a header-like line in a multi-line array": "[intent.a]\noutputs = [\n" + MANY + "]\n",
    "a table of another name in two pieces": "[policy.a]\nscope = []\n" + MANY + "[policy.b]\nscope = []\n",
}


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_documents_read_in_pieces_read_the_same_as_tomllib(path):
    text = path.read_bytes().decode("utf-8", "replace")
    assert _parsed(lambda t: toml_read.loads(t, piece=64), text) == _parsed(tomllib.loads, text)


def test_a_big_spec_is_read_in_pieces_as_the_whole_reads():
    pieces = toml_read._in_pieces(MANY + "[project]\nname = 'p'\n", 64)
    assert pieces is not None
    assert pieces == tomllib.loads(MANY + "[project]\nname = 'p'\n")
    assert list(pieces) == ["intent", "project"] and list(pieces["intent"]) == [f"s{i}" for i in range(40)]


@pytest.mark.parametrize("case", sorted(PIECES_READ_WHOLE))
def test_a_document_pieces_might_misread_is_read_whole(case):
    text = PIECES_READ_WHOLE[case]
    assert toml_read._in_pieces(text, 64) is None
    assert _parsed(lambda t: toml_read.loads(t, piece=64), text) == _parsed(tomllib.loads, text)


SPEC = '[project]\nname = "p"\n\n[intent.a]\nrun = "echo a > out/a"\noutputs = ["out/a"]\n'


@pytest.mark.parametrize(
    "same",
    [
        "# a comment first\n" + SPEC + "# and one last\n",
        SPEC.replace("\n\n", "\n\n\n\n"),  # blank lines
        SPEC.replace(" = ", "   =   ").replace('"p"', "'p'"),  # spacing, a literal string
        SPEC.replace('outputs = ["out/a"]', 'outputs = [\n  "out/a",  # where it goes\n]'),
        '[project]\nname = "p"\n[intent]\na = { run = "echo a > out/a", outputs = ["out/a"] }\n',
        '[project]\nname = "p"\n[intent.a]\nrun = "echo a > out/a"\noutputs = ["out/a"]\n',
    ],
)
def test_a_comment_or_spacing_keeps_the_documents_digest(same):
    """The compiled spec is kept for another text of the same document (compiled._unchanged)."""
    assert document_digest(toml_read.loads(same)) == document_digest(toml_read.loads(SPEC))


@pytest.mark.parametrize(
    "other",
    [
        SPEC.replace("echo a", "echo b"),  # a value
        SPEC.replace('name = "p"', 'name = "p"\ndescription = ""'),  # a key more
        SPEC.replace('"out/a"]', '"out/a", "out/b"]'),  # an item more
        SPEC.replace('outputs = ["out/a"]', 'outputs = "out/a"'),  # a list become a string
        '[intent.a]\nrun = "echo a > out/a"\noutputs = ["out/a"]\n[project]\nname = "p"\n',  # the order of tables
        '[project]\nname = "p"\n[intent.a]\noutputs = ["out/a"]\nrun = "echo a > out/a"\n',  # the order of keys
        SPEC.replace("[intent.a]", "[intent.b]"),  # a name
        SPEC + "timeout = 1\n",  # an integer, then a float and a boolean where it was
        SPEC + "timeout = 1.0\n",
        SPEC + "timeout = true\n",
    ],
)
def test_another_document_has_another_digest(other):
    digests = {document_digest(toml_read.loads(text)) for text in (SPEC, other)}
    assert len(digests) == 2


def test_intent_as_a_value_is_not_read_as_a_table_of_intents():
    """Each intent's table is hashed on its own after a count of them: `intent = 1` followed by a table named
    like an intent must not hash as a table of one intent."""
    tables = toml_read.loads('[intent.a]\nrun = "x"\n')
    value = {"intent": 1, "a": {"run": "x"}}
    assert document_digest(tables) != document_digest(value)


def test_a_date_leaves_the_document_to_be_compared_by_its_bytes():
    assert document_digest(toml_read.loads("a = 1979-05-27\n")) is None
