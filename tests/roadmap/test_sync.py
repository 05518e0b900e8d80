"""`runner make --sync-roadmap`: after a run of intents imported from a roadmap, exactly the items of the intents
that completed are marked done, each in its file's dialect, and every other byte of the roadmap is as it was
(compared byte for byte against the expected edit)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema

import runner

EVENTS = json.loads((Path(runner.__file__).parent / "schemas" / "events.json").read_text(encoding="utf-8"))


def give_recipes(project, only: tuple[str, ...] | None = None) -> None:
    """What a user does after importing: each open task (or those named) gets a recipe that succeeds; here
    `run = "true"` stands for the agent step or command the team would write."""
    text = project.read("intents.toml")

    def recipe(table: re.Match) -> str:
        name, body = table.group(1), table.group(2)
        if only is not None and name not in only:
            return table.group(0)
        body = re.sub(r'^run = "echo .*exit 1"$', 'run = "true"', body, flags=re.M)
        body = re.sub(r'^goal = ".*"\noutputs = \[.*\]$', 'run = "true"', body, flags=re.M)
        return f"[intent.{name}]\n{body}"

    project.write("intents.toml", re.sub(r"^\[intent\.([^\]]+)\]\n((?:.+\n)*)", recipe, text, flags=re.M))


def ticked(original: bytes, edits: dict[int, tuple[str, str]]) -> bytes:
    """The roadmap with line N's `old` replaced by `new` once: what the sync must write, and nothing else."""
    lines = original.split(b"\n")
    for number, (old, new) in edits.items():
        assert old.encode() in lines[number - 1], (number, lines[number - 1])
        lines[number - 1] = lines[number - 1].replace(old.encode(), new.encode(), 1)
    return b"\n".join(lines)


def test_checkboxes_of_the_completed_intents_are_ticked_and_nothing_else(project):
    project.roadmap("own-checkboxes.md")
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project, only=("handle-string-escapes", "nested-under-a-numbered-one"))
    # lines added above the items after the import: the items are found by their text, not their old lines
    project.write("ROADMAP.md", b"A new intro line\n\n" + project.bytes("ROADMAP.md"))
    before = project.bytes("ROADMAP.md")
    targets = ("handle-string-escapes", "nested-under-a-numbered-one", "half-done-item-still-open")
    result = project.run("make", "-k", "--sync-roadmap", *targets)
    assert result.code == 1, result.err  # half-done-item-still-open has no recipe: it fails, and stays open
    expected = ticked(before, {11: ("[ ]", "[x]"), 20: ("[ ]", "[x]")})
    assert project.bytes("ROADMAP.md") == expected
    assert result.out.splitlines()[-2:] == [
        "roadmap: ticked ROADMAP.md:11 (handle-string-escapes)",
        "roadmap: ticked ROADMAP.md:20 (nested-under-a-numbered-one)",
    ]
    again = project.run("make", "--sync-roadmap", "handle-string-escapes")
    assert again.code == 0 and project.bytes("ROADMAP.md") == expected, "an item already done is left as it is"


def test_emoji_items_are_marked_in_their_own_dialect(project):
    project.roadmap("own-emoji.md")
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project)
    before = project.bytes("ROADMAP.md")
    result = project.run("make", "--sync-roadmap", "--json")
    assert result.code == 0, result.err
    expected = ticked(
        before,
        {9: ("🚧", "✅"), 11: ("🚧", "✅"), 12: ("⏳", "✅"), 13: ("❌", "✅"), 15: ("🔜", "✅"), 20: ("🟡", "✅")},
    )
    assert project.bytes("ROADMAP.md") == expected
    event = json.loads(result.out.splitlines()[-1])
    jsonschema.validate(event, EVENTS)
    assert event["event"] == "roadmap_synced" and len(event["ticked"]) == 6 and event["missing"] == []
    assert event["unmarked"] == [  # a plain item and headings that say nothing are left alone
        {"intent": "q3-reports", "file": "ROADMAP.md", "line": 17},
        {"intent": "roadmap-2026", "file": "ROADMAP.md", "line": 1},
        {"intent": "usage-report-no-status-yet-in-reports-usage-py", "file": "ROADMAP.md", "line": 19},
    ]


def test_prose_markers_are_turned_to_their_done_words(project):
    project.roadmap("own-prose.md")
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project)
    before = project.bytes("ROADMAP.md")
    result = project.run("make", "--sync-roadmap")
    assert result.code == 0, result.err
    expected = ticked(
        before,
        {
            7: ("TODO:", "DONE:"),
            8: ("WIP:", "DONE:"),
            10: ("(planned)", "(done)"),
            11: ("(in progress)", "(done)"),
            17: ("(not started)", "(done)"),
        },
    )
    assert project.bytes("ROADMAP.md") == expected
    assert "roadmap: ROADMAP.md:18 (indexer-written-in-search-index-py) has no status marker to tick" in result.out


def test_line_endings_and_a_byte_order_mark_are_kept(project):
    original = "\ufeff# Plan\r\n\r\n- [ ] First\r\n- [ ] Second\r\n".encode()
    project.write("ROADMAP.md", original)
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project, only=("first",))
    result = project.run("make", "--sync-roadmap", "first")
    assert result.code == 0, result.err
    assert project.bytes("ROADMAP.md") == "\ufeff# Plan\r\n\r\n- [x] First\r\n- [ ] Second\r\n".encode()


def test_an_item_whose_text_changed_is_reported_not_guessed(project):
    project.write("ROADMAP.md", "- [ ] First\n- [ ] Second\n")
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project)
    project.write("ROADMAP.md", "- [ ] First, reworded\n- [ ] Second\n")
    result = project.run("make", "--sync-roadmap")
    assert result.code == 0, result.err
    assert project.read("ROADMAP.md") == "- [ ] First, reworded\n- [x] Second\n"
    assert "roadmap: ROADMAP.md: no item reads 'First' any more (first)" in result.out


def test_without_the_flag_the_roadmap_is_not_touched(project):
    project.roadmap("own-checkboxes.md")
    assert project.run("import", "ROADMAP.md").code == 0
    give_recipes(project, only=("handle-string-escapes",))
    before = project.bytes("ROADMAP.md")
    assert project.run("make", "handle-string-escapes").code == 0
    assert project.bytes("ROADMAP.md") == before
