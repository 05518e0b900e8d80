"""Targets as make, just and Snakemake users name them: several at once, an output path for the intent that
declares it, another intents file with -f, `runner list`, `runner clean` and shell completion.

Each way of running `runner make` is driven: the plain path (a subprocess, no terminal: no click), the click
path (an option the plain parser leaves to click, `-v`), and the warm no-op (a second plain run after a good
one, which answers from the proof before any spec is read).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_event_contract import conforming, recorded


def _ran(result) -> list[str]:
    return sorted(name for name, status in result.statuses().items() if status == "ran")


# ---- several targets ----------------------------------------------------------------------------------------


def test_several_targets_build_each_with_its_dependencies_on_every_path(chain):
    plain = chain.make("b", "c")
    assert plain.code == 0, plain.err
    events = recorded(chain.root, plain.out)
    assert _ran(plain) == ["a", "b", "c"]  # all (the default) is not among them
    assert events[-1]["target"] == ["b", "c"]
    fast = chain.make("b", "c")
    fast_events = recorded(chain.root, fast.out)
    assert fast_events[0].get("fast") is True, "the warm no-op answers for the same targets"
    assert fast_events[-1]["target"] == ["b", "c"] and fast_events[-1]["cached"] == 3
    clicked = chain.make("b", "c", "-v")  # not a plain `runner make`: click's path decides the same
    assert clicked.code == 0 and "fast" not in conforming(clicked.out)[0]
    assert conforming(clicked.out)[-1]["target"] == ["b", "c"]
    assert set(clicked.statuses().values()) == {"cached"}


def test_the_proof_of_two_targets_is_not_the_proof_of_one(chain):
    assert chain.make("b", "c").code == 0
    (chain.root / "src/x.txt").write_text("changed\n")
    one = chain.make("c")  # never built alone: no proof, the rule decides c as up to date
    assert one.code == 0 and "fast" not in one.events()[0]
    assert _ran(one) == []
    both = chain.make("b", "c")
    assert _ran(both) == ["a", "b"]


def test_an_unknown_one_among_several_targets_is_a_usage_error(chain):
    result = chain.make("b", "zz")
    assert result.code == 2 and [e["event"] for e in result.events()] == ["error"]  # nothing ran
    assert result.err.strip() == (
        "error: unknown target 'zz': no intent has that name and none declares it among its outputs; "
        "`runner list` lists the targets"
    )


# ---- a target by its output path ---------------------------------------------------------------------------


def test_an_output_path_names_the_intent_that_declares_it_on_every_path(chain):
    plain = chain.make("out/b.txt")
    assert plain.code == 0, plain.err
    assert _ran(plain) == ["a", "b"]
    assert recorded(chain.root, plain.out)[-1]["target"] == "out/b.txt"  # as named on the command line
    fast = chain.make("./out/b.txt")
    assert fast.code == 0 and _ran(fast) == []
    fast = chain.make("out/b.txt")
    assert recorded(chain.root, fast.out)[0].get("fast") is True
    clicked = chain.cli("make", "--json", "out/c.txt")
    assert clicked.code == 0 and _ran(clicked) == ["c"]
    status = chain.cli("status", "--json", "out/b.txt")
    assert json.loads(status.out)["target"] == "b"  # status shows what the path resolved to
    explained = chain.cli("explain", "--json", "out/c.txt")
    assert json.loads(explained.out)["intent"] == "c"


def test_an_output_glob_names_its_intent_too(project):
    project.spec(
        """
        [intent.pages]
        run = "mkdir -p site && echo a > site/a.html && echo b > site/b.html"
        inputs = ["intents.toml"]
        outputs = ["site/*.html"]
        """
    )
    result = project.make("site/a.html")
    assert result.code == 0, result.err
    assert _ran(result) == ["pages"]


def test_an_unknown_output_path_suggests_a_declared_one(chain):
    result = chain.make("out/bb.txt")
    assert result.code == 2
    assert result.err.strip() == (
        "error: unknown target 'out/bb.txt' (did you mean 'out/b.txt'?): no intent has that name and none "
        "declares it among its outputs; `runner list` lists the targets"
    )


# ---- -f FILE -----------------------------------------------------------------------------------------------


CI_SPEC = """
[project]
name = "ci"
default = "check"

[intent.check]
run = "cat src/x.txt > out/check.txt"
inputs = ["src/x.txt"]
outputs = ["out/check.txt"]
"""


def test_another_intents_file_with_f_on_every_path(chain):
    chain.write("ci.toml", CI_SPEC)
    plain = chain.make("-f", "ci.toml")
    assert plain.code == 0, plain.err
    assert _ran(plain) == ["check"]
    assert chain.read("out/check.txt") == "hello\n"
    fast = chain.make("--file", "ci.toml")
    assert recorded(chain.root, fast.out)[0].get("fast") is True
    # the same target name in intents.toml is another target: its proof is not this one's
    default = chain.make()
    assert default.code == 0 and _ran(default) == ["a", "b", "c"]
    assert "fast" not in default.events()[0]
    clicked = chain.make("-f", "ci.toml", "-v", "check")
    assert clicked.code == 0 and set(clicked.statuses().values()) == {"cached"}
    assert json.loads(chain.cli("list", "--json", "-f", "ci.toml").out)["default"] == "check"
    assert chain.cli("validate", "-f", "ci.toml").out.strip() == "ok: 1 intent, no problems"


def test_the_folder_of_the_f_file_is_the_project_root(chain):
    chain.write("sub/src/x.txt", "below\n")
    chain.write("sub/out/.keep", "")
    chain.write("sub/other.toml", CI_SPEC)
    result = chain.make("-f", "sub/other.toml")
    assert result.code == 0, result.err
    assert chain.read("sub/out/check.txt") == "below\n"
    assert (chain.root / "sub" / ".runner").is_dir()


def test_a_missing_f_file_is_a_usage_error_on_every_path(chain):
    for result in (chain.make("-f", "nope.toml"), chain.make("-f", "nope.toml", "-v")):
        assert result.code == 2
        assert result.err.strip() == (
            "error: 1 problem in the spec\n"
            f"  nope.toml: no such intents file: {chain.root / 'nope.toml'}; check the path given to -f"
        )


# ---- runner list -------------------------------------------------------------------------------------------


LISTED = """
[project]
name = "listed"
default = "all"

[intent.lint]
description = "Check the style"
run = "true"
inputs = ["intents.toml"]

[intent.report]
description = "Write the report"
run = "echo r > build/report.md"
inputs = ["intents.toml"]
outputs = ["build/report.md"]

[intent.all]
deps = ["lint", "report"]
"""


def test_list_shows_the_targets_with_their_descriptions(project, snapshot):
    project.spec(LISTED)
    text = project.run("list")
    assert text.code == 0 and text.err == ""
    assert text.out == snapshot
    data = project.run("list", "--json")
    assert json.loads(data.out) == snapshot


# ---- runner clean ------------------------------------------------------------------------------------------


def test_clean_removes_declared_outputs_and_nothing_else(chain):
    assert chain.make().code == 0
    chain.write("out/mine.txt", "not declared\n")
    listed = chain.run("clean", "-n")
    assert listed.code == 0
    assert listed.out.splitlines() == [
        "would remove out/a.txt",
        "would remove out/b.txt",
        "would remove out/c.txt",
        "would remove 3 files",
    ]
    assert chain.exists("out/a.txt"), "-n removes nothing"
    cleaned = chain.run("clean", "--json", "b")  # b and what it depends on
    assert json.loads(cleaned.out) == {"dry_run": False, "removed": ["out/a.txt", "out/b.txt"], "kept": []}
    assert not chain.exists("out/a.txt") and chain.exists("out/c.txt")
    assert chain.read("out/mine.txt") == "not declared\n" and chain.read("src/x.txt") == "hello\n"
    restored = chain.make()  # the cache still has them
    assert restored.code == 0 and restored.statuses()["b"] == "restored"


def test_clean_never_follows_a_link_out_of_the_project(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("someone else's\n")
    (outside / "target.txt").write_text("pointed at\n")
    project.spec(
        """
        [intent.gen]
        run = "mkdir -p out && echo made > out/link.txt"
        inputs = ["intents.toml"]
        outputs = ["linked/*.txt", "out/link.txt"]
        """
    )
    # the links come after a build compiled the spec (its check refuses a link out that is already there)
    assert project.run("make").code == 0
    os.symlink(outside, project.root / "linked")
    (project.root / "out" / "link.txt").unlink()
    os.symlink(outside / "target.txt", project.root / "out" / "link.txt")
    result = project.run("clean", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["removed"] == ["out/link.txt"]  # the link itself, inside the project
    assert sorted(k["path"] for k in report["kept"]) == ["linked/keep.txt", "linked/target.txt"]
    assert all(k["reason"].startswith("its folder leads outside the project") for k in report["kept"])
    assert (outside / "keep.txt").read_text() == "someone else's\n"
    assert (outside / "target.txt").read_text() == "pointed at\n"


def test_clean_keeps_sources_agent_outputs_and_runner_state(project):
    project.spec(
        """
        [intent.gen]
        run = "true"
        inputs = ["intents.toml"]
        outputs = ["data/*.csv"]

        [intent.use]
        run = "true"
        inputs = ["data/raw.csv"]

        [intent.chained]
        run = "true"
        inputs = ["data/made.csv"]
        deps = ["gen"]

        [intent.tests]
        goal = "write tests"
        inputs = ["src/a.py"]
        outputs = ["tests/test_a.py"]
        """
    )
    project.write("data/raw.csv", "a source: use reads it, and does not depend on gen\n")
    project.write("data/made.csv", "a product: chained reads it, after gen made it\n")
    project.write("src/a.py", "x = 1\n")
    project.write("tests/test_a.py", "def test(): pass\n")
    project.write(".git/config", "[core]\n")
    project.write(".runner/state", "x")
    report = json.loads(project.run("clean", "--json").out)
    assert report["removed"] == ["data/made.csv"]
    assert {k["path"]: k["reason"] for k in report["kept"]} == {
        "data/raw.csv": "an input of step use, which does not depend on gen",
        "tests/test_a.py": "an output of agent step tests: the project's own file, changed by a verified apply",
    }
    for kept in ("data/raw.csv", ".runner/state", ".git/config", "tests/test_a.py", "src/a.py"):
        assert project.exists(kept), kept


# ---- shell completion --------------------------------------------------------------------------------------


def test_completion_prints_a_script_for_each_shell(project):
    project.root.mkdir()
    for shell in ("bash", "zsh", "fish"):
        result = project.run("completion", shell)
        assert result.code == 0 and "_RUNNER_COMPLETE" in result.out, shell
    wrong = project.run("completion", "tcsh")
    assert wrong.code == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in wrong.err


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not on this machine")
def test_bash_completes_target_names_from_the_project(project, tmp_path):
    """The real thing: bash sources the script `runner completion bash` prints and runs its completion
    function for `runner make <TAB>`, which calls runner back."""
    project.spec(LISTED)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "runner").write_text(f'#!/bin/sh\nexec {sys.executable} -m runner "$@"\n')
    (bindir / "runner").chmod(0o755)
    script = project.run("completion", "bash").out
    probe = (
        script
        + '\nCOMP_WORDS=(runner make "$PREFIX"); COMP_CWORD=2; _runner_completion runner; '
        + 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")

    def complete(prefix: str) -> list[str]:
        proc = subprocess.run(
            ["bash", "-c", probe],
            cwd=project.root,
            env={**env, "PREFIX": prefix},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("") == ["all", "lint", "report"]
    assert complete("re") == ["report"]
    assert complete("build/") == ["build/report.md"]


def _completing(shell: str, line: str) -> dict:
    """What a shell's completion function sets before it calls `runner` back (click's protocol)."""
    return {"_RUNNER_COMPLETE": f"{shell}_complete", "COMP_WORDS": line, "COMP_CWORD": str(len(line.split()) - 1)}


def test_zsh_and_fish_get_the_descriptions_and_a_broken_spec_completes_nothing(project):
    project.spec(LISTED)
    zsh = project.run(env=_completing("zsh", "runner make l"))
    assert zsh.out.splitlines() == ["plain", "lint", "Check the style"]
    fish = project.run(env=_completing("fish", "runner status r") | {"COMP_CWORD": "r"})
    assert fish.out.splitlines() == ["plain,report\tWrite the report"]
    project.write("intents.toml", "[intent.x\n")
    nothing = project.run(env=_completing("bash", "runner make x"))
    assert nothing.code == 0 and nothing.out.strip() == "" and "Traceback" not in nothing.err


def test_a_plain_make_with_a_flag_it_does_not_know_goes_to_click(chain):
    """-B is no plain `runner make` option: click's path runs it, with several targets and -f."""
    chain.write("ci.toml", CI_SPEC.replace("[intent.check]", '[intent.other]\nrun = "true"\n\n[intent.check]'))
    result = chain.make("-B", "-f", "ci.toml", "check", "other")
    assert result.code == 0 and _ran(result) == ["check", "other"]
    assert result.finished()["target"] == ["check", "other"]
