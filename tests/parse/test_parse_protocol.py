"""The delimited protocol family, as the openai worker uses it."""

from runner.parse import builtin_dir, load_library

LIB = load_library([builtin_dir()])


def blocks(text):
    return [
        (m.fields["kind"], m.fields.get("path"), m.fields.get("body")) for m in LIB.family("protocol").finditer(text)
    ]


def test_full_answer_gives_each_block_with_its_body():
    answer = (
        "Here is the change.\n"
        "<<MIS:START>>\n"
        "<<MIS:FILE path=src/app.py>>\n"
        "def f():\n"
        "    return '<<MIS:END>> is only a marker on its own line'\n"
        "\n"
        '<<MIS:FILE path="docs/read me.md">>\n'
        "# Title\n"
        "<<MIS:JSON>>\n"
        '{"tests": 3}\n'
        "<<MIS:ERR>>\n"
        "could not find parser.py\n"
        "<<MIS:END>>\n"
        "trailing chatter\n"
    )
    assert blocks(answer) == [
        ("START", None, None),
        ("FILE", "src/app.py", "def f():\n    return '<<MIS:END>> is only a marker on its own line'\n\n"),
        ("FILE", "docs/read me.md", "# Title\n"),
        ("JSON", None, '{"tests": 3}\n'),
        ("ERR", None, "could not find parser.py\n"),
        ("END", None, None),
    ]


def test_truncated_answer_has_no_end_and_the_last_body_runs_to_the_end():
    got = blocks("<<MIS:START>>\n<<MIS:FILE path=a.txt>>\nhalf a fi")
    assert got == [("START", None, None), ("FILE", "a.txt", "half a fi")]


def test_crlf_answer_and_offsets_point_into_the_given_text():
    text = "<<MIS:START>>\n<<MIS:FILE path=x.py>>\nx = 1\n<<MIS:END>>\n"
    ms = list(LIB.family("protocol").finditer(text))
    assert [text[m.start : m.start + 5] for m in ms] == ["<<MIS"] * 3
    assert ms[1].end == text.index("<<MIS:END>>")


def test_empty_body_and_marker_with_spaces():
    assert blocks("  <<MIS:START>>  \n<<MIS:JSON>>\n<<MIS:END>>") == [
        ("START", None, None),
        ("JSON", None, ""),
        ("END", None, None),
    ]


def test_prose_mentioning_markers_is_not_a_block():
    assert blocks("Answer with <<MIS:START>> then <<MIS:END>>.") == []
