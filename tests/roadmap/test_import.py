"""`runner import ROADMAP.md`: three real roadmaps of open-source projects (roadmaps/SOURCES.md) and three
written in the dialects a roadmap comes in (checkboxes, status emoji, prose markers), each imported through the
CLI: the phases and tasks `--json` reports and the intents.toml written, snapshotted (each real one's intents
were checked by hand once); the file written is a spec `runner validate` reads without a problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROADMAPS = Path(__file__).parent / "roadmaps"

REAL = ["datanav-TODO.md", "restrict_lang-ROADMAP.md", "cpp-remote-profiler-ROADMAP.md"]
OWN = ["own-checkboxes.md", "own-emoji.md", "own-prose.md"]


@pytest.mark.parametrize("name", REAL + OWN)
def test_a_roadmap_becomes_the_intents_it_describes(project, snapshot, name):
    project.roadmap(name)
    shown = project.run("import", "ROADMAP.md", "--json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out) == snapshot(name="json")
    assert not project.root.joinpath("intents.toml").exists(), "--json writes nothing"
    written = project.run("import", "ROADMAP.md")
    assert written.code == 0, written.err
    assert project.read("intents.toml") == snapshot(name="intents.toml")
    listed = project.run("list", "--json")  # the spec loads: every name, dep, output and link is valid
    assert listed.code == 0, listed.err
    names = {e["name"] for e in json.loads(shown.out)["intents"] if not e["done"]}
    assert {t["name"] for t in json.loads(listed.out)["targets"]} == names


def test_the_json_names_line_deps_and_done_of_each_phase_and_task(project):
    project.roadmap("own-checkboxes.md")
    found = {e["name"]: e for e in json.loads(project.run("import", "ROADMAP.md", "--json").out)["intents"]}
    assert found["phase-1-foundations"]["line"] == 5
    tokenizer = found["write-the-tokenizer-in-src-acme-tokenize-py"]
    assert tokenizer == {
        "name": "write-the-tokenizer-in-src-acme-tokenize-py",
        "goal": "Write the tokenizer in src/acme/tokenize.py",
        "deps": ["set-up-the-repository", "handle-string-escapes", "handle-comments"],  # order, then nesting
        "done": False,
        "line": 8,
    }
    assert found["handle-comments"]["done"] is True  # [X]
    assert found["write-the-tokenizer-in-src-acme-tokenize-py-2"]["line"] == 32  # the same text: de-duplicated
    assert not any("fenced" in e["goal"] or "comment" in e["goal"].split()[-1:] for e in found.values())


def test_a_phase_is_done_when_its_heading_or_every_task_under_it_says_so(project):
    project.roadmap("own-emoji.md")
    found = {e["name"]: e for e in json.loads(project.run("import", "ROADMAP.md", "--json").out)["intents"]}
    assert found["q1-core"]["done"] and not found["q2-accounts"]["done"]
    project.write("ROADMAP.md", "# R\n\n## Done by its items\n\n- [x] a\n- [x] b\n\n## Open\n\n- [ ] c\n")
    found = {e["name"]: e for e in json.loads(project.run("import", "ROADMAP.md", "--json").out)["intents"]}
    assert [found["done-by-its-items"]["done"], found["open"]["done"], found["r"]["done"]] == [True, False, False]


def test_an_existing_intents_file_is_shown_a_diff_and_written_only_with_yes(project):
    original = (
        '# the team\'s own comment\n[project]\nname = "acme"  # keep me\n\n'
        '[intent.lint]\nrun = "true"   # odd   spacing\n\n[policy.default]\nscope = ["docs/**"]\n'
    )
    project.write("intents.toml", original)
    project.write("ROADMAP.md", "## Docs\n\n- [ ] Write `docs/guide.md`\n- [x] Old task\n")
    shown = project.run("import", "ROADMAP.md")
    assert shown.code == 0, shown.err
    assert project.read("intents.toml") == original, "not written without --yes"
    assert shown.out.startswith("--- intents.toml\n+++ intents.toml\n")
    assert "+[intent.write-docs-guide-md]\n" in shown.out
    assert not [line for line in shown.out.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert shown.err.strip() == (
        "3 phases and tasks in ROADMAP.md (1 done, not written): 2 intents to add; intents.toml exists: not "
        "written (again with --yes to write it)"
    )
    written = project.run("import", "ROADMAP.md", "--yes")
    assert written.code == 0, written.err
    after = project.read("intents.toml")
    assert after.startswith(original + "\n[intent.docs]\n"), "every byte kept; the new tables follow at the end"
    assert "old-task" not in after, "a done task is not written"
    assert project.run("list").code == 0


def test_importing_again_adds_only_what_is_new_and_keeps_what_the_user_edited(project):
    project.write("ROADMAP.md", "- [ ] First task\n- [ ] Second task\n")
    assert project.run("import", "ROADMAP.md").code == 0
    edited = project.read("intents.toml").replace('run = "echo', 'run = "true" # was: echo', 1)
    project.write("intents.toml", edited)
    again = project.run("import", "ROADMAP.md", "--yes")
    assert again.code == 0 and again.out.startswith("intents.toml is up to date with ROADMAP.md")
    assert project.read("intents.toml") == edited
    project.write("ROADMAP.md", "Intro line\n\n- [ ] First task\n- [ ] Second task\n- [ ] Third task\n")
    assert project.run("import", "ROADMAP.md", "--yes").code == 0
    after = project.read("intents.toml")
    assert after.startswith(edited) and "[intent.third-task]" in after
    assert 'deps = ["second-task"]\nroadmap = {file = "ROADMAP.md", line = 5, item = "Third task"}' in after


def test_two_tasks_naming_one_file_leave_it_to_the_first(project):
    project.write("ROADMAP.md", "- [ ] Add a title to README.md\n- [ ] Add a badge to README.md\n")
    assert project.run("import", "ROADMAP.md").code == 0
    text = project.read("intents.toml")
    assert 'goal = "Add a title to README.md"\noutputs = ["README.md"]' in text
    assert "the files it names are outputs of intent add-a-title-to-readme-md (a file has one producer)" in text
    assert project.run("list").code == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["NOPE.md"], "error: NOPE.md: no such file; name the markdown roadmap to import"),
        (
            ["empty.md"],
            "error: empty.md: no task found (a checkbox item `- [ ] ...`, a bullet or numbered item, "
            "under a heading or not); nothing to import",
        ),
    ],
)
def test_a_wrong_roadmap_is_a_clear_error(project, args, message):
    project.write("empty.md", "# Just a title\n\nSome prose.\n")
    result = project.run("import", *args)
    assert result.code == 2
    assert result.err.strip() == message
    assert "Traceback" not in result.err


def test_a_broken_intents_file_is_named_not_overwritten(project):
    project.write("ROADMAP.md", "- [ ] A task\n")
    project.write("intents.toml", "[intent.a\n")
    result = project.run("import", "ROADMAP.md", "--yes")
    assert result.code == 2
    assert result.err.startswith("error: ") and "intents.toml: not valid TOML (" in result.err
    assert result.err.rstrip().endswith("; fix it, then import again")
    assert project.read("intents.toml") == "[intent.a\n"


def test_the_stored_roadmaps_are_the_ones_sources_names():
    sources = (ROADMAPS / "SOURCES.md").read_text(encoding="utf-8")
    for name in REAL:
        assert f"`{name}`" in sources
