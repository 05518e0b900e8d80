"""`-C DIR` and `-f FILE` before the command, as git, make and just take them (`runner -C proj status`, `runner -f
other.toml list`): the same as after it, on the fast no-op too; two `-C`s compose as git composes them."""

from __future__ import annotations

import json
import os

import racy
import runner_cli

SPEC = """
[intent.hello]
run = "cat in.txt > out.txt"
inputs = ["in.txt"]
outputs = ["out.txt"]
"""

OTHER = """
[intent.other]
run = "cat in.txt > other.txt"
inputs = ["in.txt"]
outputs = ["other.txt"]
"""


def _run(cwd, *args: str) -> runner_cli.subprocess.CompletedProcess:
    return runner_cli.run(list(args), cwd, dict(os.environ), 120)


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_dash_c_before_the_command_runs_it_in_that_folder(project):
    project.spec(SPEC)
    project.write("in.txt", "hi\n")
    outside = project.root.parent
    made = _run(outside, "-C", "proj", "make", "--json")
    assert made.returncode == 0, made.stderr
    assert (project.root / "out.txt").read_text() == "hi\n"
    status = _run(outside, "-C", "proj", "status")
    assert (status.returncode, status.stdout) == (0, "skip  hello  up to date\n0 to run, 1 up to date\n")
    assert not (outside / ".runner").exists()  # nothing of the project's was written where the command started


def test_the_warm_no_op_takes_dash_c_before_the_command(project):
    project.spec(SPEC)
    project.write("in.txt", "hi\n")
    assert _run(project.root.parent, "-C", "proj", "make").returncode == 0
    project.age_all()
    _run(project.root.parent, "--directory", "proj", "make")  # the proof of a run past the racy window
    racy.wait_out()
    again = _run(project.root.parent, "--directory=proj", "make", "--json")
    assert again.returncode == 0, again.stderr
    events = _events(again.stdout)
    assert events[0]["fast"] is True and events[-1]["cached"] == 1


def test_two_dash_cs_compose_as_git_composes_them(project):
    project.spec(SPEC)
    project.write("in.txt", "hi\n")
    top = project.root.parent.parent
    base = project.root.parent.name
    before = _run(top, "-C", base, "-C", "proj", "make", "--json")
    assert before.returncode == 0, before.stderr
    both = _run(top, "-C", base, "status", "-C", "proj")
    assert (both.returncode, both.stdout) == (0, "skip  hello  up to date\n0 to run, 1 up to date\n")
    absolute = _run(top, "-C", "nowhere", "status", "-C", str(project.root))  # an absolute -C stands alone
    assert absolute.returncode == 0, absolute.stderr


def test_dash_f_before_the_command_reads_that_intents_file(project):
    project.spec(SPEC)
    project.write("other.toml", OTHER)
    project.write("in.txt", "hi\n")
    listed = _run(project.root, "-f", "other.toml", "list")
    assert listed.returncode == 0, listed.stderr
    assert "other" in listed.stdout.split() and "hello" not in listed.stdout.split()
    made = _run(project.root, "-f", "other.toml", "make", "--json")
    assert made.returncode == 0, made.stderr
    assert {e["intent"] for e in _events(made.stdout) if e["event"] == "step_finished"} == {"other"}
    assert project.exists("other.txt") and not project.exists("out.txt")


def test_the_warm_no_op_finds_the_proof_of_dash_f_before_the_command(project):
    project.spec(SPEC)
    project.write("other.toml", OTHER)
    project.write("in.txt", "hi\n")
    assert _run(project.root, "-f", "other.toml", "make").returncode == 0
    project.age_all()
    _run(project.root, "make", "-f", "other.toml")  # the same proof, -f after the command
    racy.wait_out()
    again = _run(project.root, "--file=other.toml", "make", "--json")
    events = _events(again.stdout)
    assert events[0]["fast"] is True
    assert [e["intent"] for e in events if e["event"] == "step_finished"] == ["other"]


def test_dash_f_before_a_command_that_reads_no_intents_is_refused(project):
    project.spec(SPEC)
    refused = _run(project.root, "-f", "other.toml", "log")
    assert refused.returncode == 2
    assert refused.stderr == "error: -f other.toml: `runner log` reads no intents file; leave -f out\n"


def test_dash_c_before_the_command_without_a_folder_is_a_usage_error(project):
    project.spec(SPEC)
    refused = _run(project.root, "-C")
    assert refused.returncode == 2
    assert "Option '-C' requires an argument." in refused.stderr
