"""`runner log`: a run's steps with their logs' paths, `runner log STEP` the step's last log, through the real
CLI. (Agent attempts and their tokens: tests/agent/test_quickstart.py.)"""

from __future__ import annotations

import json
import re

SPEC = """
[intent.chatty]
run = "cat words.txt"
inputs = ["words.txt"]

[intent.bad]
run = "echo why it broke; exit 3"
inputs = ["x"]
deps = ["chatty"]

[intent.quiet]
run = "true"
inputs = ["x"]

[intent.all]
deps = ["bad", "quiet"]
"""


def _project(project):
    project.spec(SPEC)
    project.write("x", "1")
    project.write("words.txt", "chatty says hello\n")
    return project


def _run_id(result) -> str:
    return result.events()[0]["run_id"]


def test_the_run_view_lists_what_ran_with_each_logs_path(project):
    run_id = _run_id(_project(project).make("-j", "1"))
    view = project.run("log")
    assert view.code == 0, view.err
    logs = project.root / ".runner" / "runs" / run_id / "logs"
    assert [re.sub(r"\d+\.\d\ds", "<t>s", line) for line in view.out.splitlines()] == [
        f"run {run_id}",
        "  ran      chatty (<t>s)",
        f"           log: {logs / 'chatty.log'}",
        "  ran      quiet (<t>s)",
        "  failed   bad (<t>s): command exited with code 3",
        f"           log: {logs / 'bad.log'}",
        "failed: ran 2, cached 0, restored 0, failed 1, skipped 0",
    ]
    as_json = json.loads(project.run("log", "--json").out)
    assert [(s["intent"], s["status"], s["log"]) for s in as_json["steps"]] == [
        ("chatty", "ran", str(logs / "chatty.log")),
        ("quiet", "ran", None),
        ("bad", "failed", str(logs / "bad.log")),
    ]
    assert as_json["run_id"] == run_id and as_json["events"][-1]["event"] == "run_finished"


def test_log_step_prints_its_last_log_even_from_an_older_run(project):
    first = _run_id(_project(project).make())
    shown = project.run("log", "chatty")
    assert (shown.code, shown.out) == (0, "$ cat words.txt\nchatty says hello\n")
    log = project.root / ".runner" / "runs" / first / "logs" / "chatty.log"
    assert shown.err == f"runner: chatty ran in run {first}; its log is {log}\n"
    second = _run_id(project.make())  # chatty is up to date: its last log is still the first run's
    assert second != first
    again = project.run("log", "chatty")
    assert (again.out, again.err) == (shown.out, shown.err)
    failed = project.run("log", "bad")  # it failed in both: the second run's log
    assert failed.out == "$ echo why it broke; exit 3\nwhy it broke\n" and second in failed.err
    as_json = json.loads(project.run("log", "bad", "--json").out)
    assert as_json == {
        "intent": "bad",
        "run_id": second,
        "status": "failed",
        "log": str(project.root / ".runner" / "runs" / second / "logs" / "bad.log"),
        "text": failed.out,
    }


def test_a_step_that_last_printed_nothing_says_so_rather_than_showing_an_older_log(project):
    _project(project).make()
    project.write("words.txt", "")
    last = _run_id(project.make())
    shown = project.run("log", "chatty")
    assert (shown.code, shown.out) == (0, "")
    assert shown.err == f"runner: chatty ran in run {last} and printed nothing\n"


def test_what_log_says_of_an_aggregate_an_unknown_name_and_no_runs(project):
    _project(project)
    none = project.run("log", "chatty")
    assert (none.code, none.err) == (2, "error: no runs recorded yet in .runner/runs: run `runner make` first\n")
    project.make()
    aggregate = project.run("log", "all")
    assert aggregate.code == 2
    assert aggregate.err == (
        "error: all is an aggregate (only deps): it runs nothing itself and has no log; "
        "`runner log STEP` shows one of its steps (bad, quiet)\n"
    )
    unknown = project.run("log", "nosuch")
    assert (unknown.code, unknown.err) == (
        2,
        "error: no run or step 'nosuch' (`runner log --list` lists the runs, `runner graph` the steps)\n",
    )
    run_id = project.run("log", "--list", "--json")
    prefix = json.loads(run_id.out)["runs"][-1]["run_id"][:18]
    assert project.run("log", prefix).out.startswith("run ")  # a run id's unique beginning names the run
