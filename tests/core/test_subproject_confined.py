"""A sub-project's step stays in its own folder at run time (issue 41), through the real CLI: a link made inside
services/api/ after the spec was checked (between two runs, or by a step while the run goes on) that leads into
another sub-project or the root fails the step before it starts when one of its outputs or its cwd goes through
it, and an output read after the step that resolves out of its folder is refused, never read nor deleted
(runner/confine.py's Folders.fence); a link that stays in its folder is a folder like any other. And the
next start after a killed run removes what its steps may have half-written without following such a link, nor
one out of the project (workspace.recover_inflight)."""

from __future__ import annotations

import json
import os

import pytest

ROOT = """
[project]
name = "mono"
include = ["services/*", "libs/*"]

[intent.swap]
run = "if [ -e swap.flag ]; then rm -rf services/api/gen && ln -s ../../libs/core services/api/gen; fi"
"""
API = """
[intent.gen]
run = "cp in.txt gen/core.txt"
inputs = ["in.txt"]
outputs = ["gen/core.txt"]

[intent.copy]
run = "cp in.txt copy.txt"
inputs = ["in.txt"]
outputs = ["copy.txt"]

[intent.work]
run = "pwd > /dev/null"
inputs = ["in.txt"]
cwd = "work"

[intent.many]
run = "mkdir -p many && cp in.txt many/in.txt && if [ -e ../../link.flag ]; then ln -s ../../../libs/core many/ext; fi"
inputs = ["in.txt"]
outputs = ["many/**"]
"""
CORE = """
[intent.noop]
run = "true"
"""


def _finished(result, name: str) -> dict:
    return next(e for e in result.events() if e.get("event") == "step_finished" and e["intent"] == name)


@pytest.fixture
def mono(project):
    project.spec(ROOT)
    project.write("services/api/intents.toml", API)
    project.write("services/api/in.txt", "one\n")
    project.write("libs/core/intents.toml", CORE)
    project.write("libs/core/core.txt", "the core's own\n")
    project.write("copy.txt", "the root's own\n")
    for folder in ("gen", "work"):
        (project.root / "services/api" / folder).mkdir()
    project.age_all()  # the spec compiled long ago: only the run's own checks see a link made since
    assert project.make().code == 0
    return project


def _relink(path, target: str) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    else:
        path.unlink()
    os.symlink(target, path)


@pytest.mark.parametrize(
    ("step", "link", "target", "reached"),
    [
        ("gen", "gen", "../../libs/core", "libs/core"),  # a folder into another sub-project
        ("copy", "copy.txt", "../../copy.txt", "copy.txt"),  # a file of the root's
        ("copy", "copy.txt", "../../libs/core/core.txt", "libs/core/core.txt"),
    ],
)
def test_a_link_out_of_its_folder_made_between_runs_fails_the_step_before_it_starts(mono, step, link, target, reached):
    api = mono.root / "services/api"
    _relink(api / link, target)
    before = {p: (mono.root / p).read_text() for p in ("copy.txt", "libs/core/core.txt")}
    mono.write("services/api/in.txt", "two\n")
    result = mono.make("-k")
    assert result.code == 1
    failed = _finished(result, f"services/api:{step}")
    output = "gen/core.txt" if step == "gen" else "copy.txt"
    real = os.path.realpath(mono.root / reached)
    assert failed["status"] == "failed"
    assert failed["error"] == (
        f"output 'services/api/{output}' leads outside services/api/ once links are followed (to {real}): a step "
        "of services/api/ writes only inside its folder (remove the link, or declare another output)"
    )
    assert {p: (mono.root / p).read_text() for p in before} == before  # nothing written through it
    assert sorted(p.name for p in (mono.root / "libs/core").iterdir()) == ["core.txt", "intents.toml"]
    assert os.path.islink(api / link)  # left as it was


def test_a_cwd_linked_out_of_its_folder_fails_the_step_before_it_starts(mono):
    _relink(mono.root / "services/api/work", "../../libs/core")
    mono.write("services/api/in.txt", "two\n")
    result = mono.make("services/api:work")
    assert result.code == 1
    assert _finished(result, "services/api:work")["error"] == (
        f"its folder (cwd) 'services/api/work' leads outside services/api/ once links are followed (to "
        f"{os.path.realpath(mono.root / 'libs/core')}): a step of services/api/ runs only inside its folder "
        "(remove the link)"
    )


def test_a_link_made_by_an_earlier_step_of_the_same_run_fails_the_step_before_it_starts(mono):
    mono.write("services/api/intents.toml", API.replace("[intent.gen]\n", '[intent.gen]\ndeps = [":swap"]\n'))
    mono.write("swap.flag", "")
    mono.write("services/api/in.txt", "two\n")
    result = mono.make("-j1", "services/api:gen")
    assert result.code == 1
    assert _finished(result, "swap")["status"] == "ran"
    assert _finished(result, "services/api:gen")["error"].startswith(
        "output 'services/api/gen/core.txt' leads outside services/api/ once links are followed"
    )
    assert sorted(p.name for p in (mono.root / "libs/core").iterdir()) == ["core.txt", "intents.toml"]


def test_an_output_read_through_a_link_out_of_its_folder_is_refused_never_read_nor_deleted(mono):
    mono.write("link.flag", "")
    mono.write("services/api/in.txt", "two\n")
    result = mono.make("services/api:many")
    assert result.code == 1
    failed = _finished(result, "services/api:many")
    assert failed["error"] == (
        "declared output services/api/many/ext/core.txt leads outside services/api/ once links are followed (to "
        f"{os.path.realpath(mono.root / 'libs/core/core.txt')})"
    )
    assert (mono.root / "libs/core/core.txt").read_text() == "the core's own\n"  # its outputs went, never this
    assert not (mono.root / "services/api/many/in.txt").exists()


def test_a_link_that_stays_in_its_folder_is_a_folder_like_any_other(mono):
    api = mono.root / "services/api"
    (api / "real-gen").mkdir()
    _relink(api / "gen", "real-gen")
    mono.write("services/api/in.txt", "two\n")
    result = mono.make("services/api:gen")
    assert result.code == 0, result.err
    assert (api / "real-gen/core.txt").read_text() == "two\n"


def test_clean_never_removes_a_file_out_of_its_sub_projects_folder(mono):
    os.symlink("../../../libs/core", mono.root / "services/api/many/ext")  # made after the build
    result = mono.run("clean", "--json", "services/api:many")
    assert result.code == 0, result.err
    assert json.loads(result.out) == {
        "dry_run": False,
        "removed": ["services/api/many/in.txt"],
        "kept": [
            {
                "path": f"services/api/many/ext/{name}",
                "reason": f"its folder leads outside services/api/ (to {os.path.realpath(mono.root / 'libs/core')})",
            }
            for name in ("core.txt", "intents.toml")
        ],
    }
    assert (mono.root / "libs/core/core.txt").read_text() == "the core's own\n"


def test_a_restore_never_writes_through_a_link_out_of_its_folder(mono):
    """The step's inputs as they were: its cached copy would be restored, through the link, over libs/core's own
    file of the same name; the walk from its folder refuses the link, and the step's start refuses it too."""
    _relink(mono.root / "services/api/gen", "../../libs/core")
    result = mono.make("services/api:gen")
    assert result.code == 1
    failed = _finished(result, "services/api:gen")
    assert failed["reasons"] == [
        "output services/api/gen/core.txt not restored: it leads outside services/api/ once links are followed "
        "(gen -> ../../libs/core)"
    ]
    assert failed["error"].startswith("output 'services/api/gen/core.txt' leads outside services/api/")
    assert (mono.root / "libs/core/core.txt").read_text() == "the core's own\n"
    assert sorted(p.name for p in (mono.root / "libs/core").iterdir()) == ["core.txt", "intents.toml"]


@pytest.mark.parametrize("whose", ["sub-project", "root"])
def test_a_killed_runs_outputs_are_never_removed_through_a_link_made_since(mono, tmp_path, whose):
    """The next start removes the outputs a killed run's steps may have half-written: through folders opened as a
    run's own removal walks them, so a link made since the crash (into libs/core, or out of the project) takes no
    file with it."""
    from test_orphans import _journal, _kill, _marker, _start, _wait, _with

    marker = _marker()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "core.txt").write_text("someone else's\n")
    if whose == "root":
        mono.spec(ROOT + f'\n[intent.slow]\nrun = "sleep {marker}"\noutputs = ["gen/core.txt"]\n')
        step, folder, target, kept = "slow", mono.root / "gen", str(outside), outside / "core.txt"
        folder.mkdir()
    else:
        api = API.replace('outputs = ["gen/core.txt"]', 'outputs = ["gen/api.txt"]')  # `slow` declares it here
        mono.write(
            "services/api/intents.toml", api + f'\n[intent.slow]\nrun = "sleep {marker}"\noutputs = ["gen/core.txt"]\n'
        )
        step, folder = "services/api:slow", mono.root / "services/api/gen"
        target, kept = "../../libs/core", mono.root / "libs/core/core.txt"
    before = kept.read_text()
    proc = _start(mono, step)
    try:
        _wait(lambda: _with(marker), "the sleep")
        _wait(lambda: any(e.get("start") == step for e in _journal(mono)), "the step journaled")
        proc.kill()
        proc.wait(10)
        _relink(folder, target)
        result = mono.make("services/api:copy")
        assert result.code == 0, result.err
        assert _with(marker) == []  # recovered: the killed run's step was stopped
        assert kept.read_text() == before
        assert mono.read(".runner/inflight") == ""
    finally:
        proc.kill()
        _kill([marker])
