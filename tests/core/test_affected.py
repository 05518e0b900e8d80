"""`--affected BASE` (issue 41): what a pull request's CI builds. Only the intents a change since the git commit
BASE affects (an input, its table, its adapter's file, or a dependency affected), each said with why, in a real
git repository; content keys still decide what runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

SPEC = """
[project]
name = "mono"
default = "all"

[intent.lib]
run = "cat src/lib/*.txt > out/lib.txt"
inputs = ["src/lib/*.txt"]
outputs = ["out/lib.txt"]

[intent.app]
run = "cat out/lib.txt src/app.txt > out/app.txt"
inputs = ["out/lib.txt", "src/app.txt"]
outputs = ["out/app.txt"]
deps = ["lib"]

[intent.docs]
run = "cat docs/*.md > out/docs.txt"
inputs = ["docs/*.md"]
outputs = ["out/docs.txt"]

[intent.all]
deps = ["app", "docs"]
"""
EVENTS = json.loads((Path(__file__).parents[2] / "runner/schemas/events.json").read_text())


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repo(root: Path) -> str:
    """A git repository at `root`, every file committed on `main`; the commit's id."""
    _git(root, "init", "-q", "-b", "main")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def mono(project) -> tuple:
    project.spec(SPEC)
    project.write("src/lib/a.txt", "a\n")
    project.write("src/app.txt", "app\n")
    project.write("docs/guide.md", "guide\n")
    project.write(".gitignore", ".runner/\nout/\nscratch/\n")
    (project.root / "out").mkdir()
    return project, _repo(project.root)


def _said(project, *args: str) -> list[str]:
    result = project.run("status", "--affected", *args)
    assert (result.code, result.err) == (0, ""), result.err
    return result.out.splitlines()


def test_an_input_edited_affects_its_intent_and_its_dependants_only(mono):
    project, base = mono
    project.write("src/lib/a.txt", "a, edited\n")
    # in dependency order, as `runner status` lists steps
    assert _said(project, "main") == [
        "out   docs  nothing it reads changed since main",
        "in    lib  input changed: src/lib/a.txt",
        "in    app  depends on lib, affected",
        "in    all  depends on app, affected",
        f"3 affected, 1 not, since main ({base[:12]})",
    ]
    made = project.run("make", "--affected", "main")
    assert made.code == 0, made.err
    assert made.err.splitlines()[0] == f"runner: 3 of 4 affected since main ({base[:12]}): lib, app, all"
    assert [line.split()[1:3] for line in made.out.splitlines() if line.startswith("[")] == [
        ["ran", "lib"],
        ["ran", "app"],
    ]  # docs is not built at all
    assert project.read("out/app.txt") == "a, edited\napp\n" and not project.exists("out/docs.txt")
    again = project.make("--affected", "main")  # still affected: the content keys say nothing is left to do
    assert again.statuses() == {"lib": "cached", "app": "cached"}


def test_nothing_changed_builds_nothing(mono):
    project, base = mono
    assert _said(project, "main")[-1] == f"0 affected, 4 not, since main ({base[:12]})"
    made = project.run("make", "--affected", "main")
    assert (made.code, made.out, made.err) == (0, "", f"runner: 0 of 4 affected since main ({base[:12]})\n")
    assert not (project.root / ".runner/runs").exists()


def test_a_new_file_a_deleted_one_and_an_ignored_one(mono):
    project, _base = mono
    project.write("src/lib/b.txt", "b\n")  # untracked: part of the working tree
    project.write("scratch/notes.txt", "ignored by git\n")
    (project.root / "docs/guide.md").unlink()
    lines = _said(project, "main")
    assert lines[:2] == ["in    docs  input changed: docs/guide.md", "in    lib  input changed: src/lib/b.txt"]


def test_a_changed_table_affects_its_intent_and_a_changed_project_table_every_intent(mono):
    project, _base = mono
    spec = SPEC.replace("cat docs/*.md > out/docs.txt", "cat docs/*.md | sort > out/docs.txt")
    project.spec(spec)
    assert [line for line in _said(project, "main") if line.startswith("in")] == [
        "in    docs  [intent.docs] changed",
        "in    all  depends on docs, affected",
    ]
    project.spec(spec.replace('name = "mono"', 'name = "mono2"'))
    lines = _said(project, "main")
    assert [line.split()[:2] for line in lines[:-1]] == [["in", "docs"], ["in", "lib"], ["in", "app"], ["in", "all"]]
    assert all("  intents.toml changed outside its intents: [project]" in line for line in lines[:-1])


def test_targets_narrow_the_selection_and_json_says_the_same(mono):
    project, base = mono
    project.write("docs/guide.md", "guide, edited\n")
    status = project.run("status", "--affected", "main", "app", "--json")
    assert json.loads(status.out) == {
        "base": "main",
        "commit": base,
        "intents": [
            {"intent": "lib", "affected": False, "reasons": []},
            {"intent": "app", "affected": False, "reasons": []},
        ],
    }
    made = project.make("--affected", "HEAD")
    first = made.events()[0]
    jsonschema.validate(first, EVENTS)
    assert first["event"] == "affected" and [i["intent"] for i in first["intents"] if i["affected"]] == ["docs", "all"]
    assert made.statuses() == {"docs": "ran"}
    for line in made.events():
        jsonschema.validate(line, EVENTS)


def test_a_project_in_a_folder_of_its_repository(project, tmp_path):
    repo = tmp_path / "repo"
    project = type(project)(repo / "services/api")
    project.spec(SPEC)
    project.write("src/lib/a.txt", "a\n")
    project.write("src/app.txt", "app\n")
    project.write("docs/guide.md", "guide\n")
    (repo / "README.md").write_text("the repository's own\n")
    base = _repo(repo)
    (repo / "README.md").write_text("edited outside the project\n")
    assert _said(project, "main")[-1] == f"0 affected, 4 not, since main ({base[:12]})"
    project.write("docs/guide.md", "edited\n")
    project.spec(SPEC.replace("cat src/lib", "cat  src/lib"))
    lines = _said(project, "main")
    assert lines[:3] == [
        "in    docs  input changed: docs/guide.md",
        "in    lib  [intent.lib] changed",
        "in    app  depends on lib, affected",
    ]


def test_a_base_git_does_not_know_or_no_repository_is_the_user_s_error(mono, tmp_path):
    project, _base = mono
    result = project.run("make", "--affected", "no-such-branch")
    assert (result.code, result.err) == (
        2,
        "error: --affected no-such-branch: git knows no commit 'no-such-branch' (a branch, a tag or a commit id; "
        "in a shallow CI clone, fetch it first: `git fetch --depth=1 origin no-such-branch`)\n",
    )
    outside = type(project)(tmp_path / "plain")
    outside.spec(SPEC)
    result = outside.run("status", "--affected", "main")
    assert (result.code, result.err) == (
        2,
        f"error: --affected main: {outside.root} is not in a git repository; it compares with a commit\n",
    )


def test_an_adapter_s_file_affects_the_intents_that_use_it(project):
    project.write("adapters/local.toml", 'name = "local"\n[commands.test]\nrun = "sh tests.sh"\n')
    project.write("tests.sh", "exit 0\n")
    project.spec(SPEC + '\n[intent.tests]\nadapter = "local"\nrun = "test"\ninputs = ["tests.sh"]\n')
    _repo(project.root)
    project.write("adapters/local.toml", 'name = "local"\n[commands.test]\nrun = "sh -e tests.sh"\n')
    project.write("prompts/other.md", "no intent uses it\n")
    assert _said(project, "main", "tests", "docs")[:2] == [
        "out   docs  nothing it reads changed since main",
        "in    tests  its file changed: adapters/local.toml",
    ]
