"""runner.learn.mine on real runs through the CLI: a made-up tool's summary and diagnostics are misses until the
project's own regex family reads them; agent steps whose verify failed at the first attempt, whose retry did or
did not converge; the commands an agent ran in a recording; --since."""

from __future__ import annotations

import json
import os
import sys

import pytest
from agent_helpers import FAILING_TEST, PASSING_TEST
from learn_helpers import BANNER, COUNT, FINDING_A, FINDING_B, teach_tidyq, tidyq_project

from runner.errors import UsageError
from runner.learn.gather import mine
from runner.learn.induce import induce
from runner.learn.mine import (
    DIAGNOSTIC_UNEXTRACTED,
    FAILURE_UNEXPLAINED,
    RETRY_NOT_CONVERGED,
    SUMMARY_UNREAD,
    VERIFY_FAILED_FIRST,
    Line,
    looks_like,
)

FEEDBACK = "What the last attempt got wrong"  # in the prompt of a retry (prompts: the feedback section)


def _misses(mined, step: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for m in mined.misses:
        if m.step == step:
            out.setdefault(m.kind, []).append(m)
    return out


def test_an_unknown_tools_summary_and_diagnostics_are_misses_until_a_family_reads_them(project):
    tidyq_project(project)
    made = project.make("-k")
    assert made.code == 1, made.err
    run_id = made.events()[0]["run_id"]

    mined = mine(project.root)
    assert mined.runs == (run_id,)
    check = _misses(mined, "check")
    assert sorted(check) == [DIAGNOSTIC_UNEXTRACTED, FAILURE_UNEXPLAINED, SUMMARY_UNREAD]
    # the log's line 1 is the runner's `$ command`; the banner is no miss (it looks like nothing)
    assert check[FAILURE_UNEXPLAINED][0].lines == (Line(3, FINDING_A), Line(4, FINDING_B), Line(5, COUNT))
    assert check[DIAGNOSTIC_UNEXTRACTED][0].lines == (Line(3, FINDING_A), Line(4, FINDING_B))
    assert check[SUMMARY_UNREAD][0].lines == (Line(5, COUNT),)
    miss = check[FAILURE_UNEXPLAINED][0]
    assert (miss.run_id, miss.adapter, miss.command, miss.run) == (
        run_id,
        "tidyq",
        "test",
        "python3 tools/tidyq.py notes",
    )
    assert miss.families == ("diagnostics", "causes")
    assert miss.log == f".runner/runs/{run_id}/logs/check.log"
    assert (project.root / miss.log).read_text().splitlines()[2] == FINDING_A
    assert miss.error == "command exited with code 1"

    # the same output from a plain shell line: the same misses, no adapter, read by the generic families; its
    # tool (python3 tools/tidyq.py) names the family a pattern for them goes in
    plain = _misses(mined, "plain")
    assert sorted(plain) == sorted(check)
    assert {(m.adapter, m.command, m.families, m.own) for ms in plain.values() for m in ms} == {
        (None, None, ("diagnostics", "causes"), "tidyq")
    }

    # ready for induction: each command's unread lines, once each, in order, its families in the command's order
    groups = mined.lines_for_induction()
    assert [(g.adapter, g.command, g.families, g.own, g.lines) for g in groups] == [
        (None, None, ("diagnostics", "causes"), "tidyq", (FINDING_A, FINDING_B, COUNT)),
        ("tidyq", "test", ("diagnostics", "causes"), "tidyq", (FINDING_A, FINDING_B, COUNT)),
    ]
    induced = induce(list(groups[0].lines), "tidyq")
    assert {p.template for p in induced.patterns} >= {"tidyq: <*> passed, <*> failed"}

    # the project learns to read tidyq: the same recorded logs are judged again, and nothing is missed, of the
    # plain line either: its tool's own family, regexes/tidyq.toml, reads it
    teach_tidyq(project)
    again = mine(project.root)
    assert _misses(again, "check") == {}
    assert _misses(again, "plain") == {}
    assert again.lines_for_induction() == ()


def test_a_passing_tools_unread_summary_is_a_miss_but_no_failure(project):
    tidyq_project(project)
    project.write("notes/a.txt", "fine\n")
    project.write("notes/b.txt", "fine\n")
    assert project.make("check").code == 0
    check = _misses(mine(project.root), "check")
    assert sorted(check) == [SUMMARY_UNREAD]
    assert check[SUMMARY_UNREAD][0].lines == (Line(3, "tidyq: 3 passed, 0 failed"),)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("tidyq: 1 passed, 2 failed", "summary"),
        ("Tests run: 4, Failures: 1, Errors: 0, Skipped: 0", "summary"),
        ("Ran 3 tests in 0.004s", "summary"),
        ("ok  \texample.com/calc\t0.012s", "summary"),
        ("FAIL\texample.com/calc\t0.020s", "summary"),
        ("src/app.ts(3,7): something odd", "diagnostic"),
        ('  File "src/x.py", line 12, in f', "diagnostic"),
        ("lib/a.rb:12: warning: shadowed", "diagnostic"),
        ("thread 'main' panicked at src/main.rs", "diagnostic"),
        ("java.lang.IllegalStateException: closed", "diagnostic"),
        ("Traceback (most recent call last):", "diagnostic"),
        ("compiling 3 files", None),
        ("error-free build of 4 modules", "diagnostic"),
        ("", None),
    ],
)
def test_what_looks_like_a_summary_or_a_diagnostic(line, kind):
    assert looks_like(line) == kind


def _retry_scenario() -> dict:
    return {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"tests/test_calc.py": PASSING_TEST}},
            {"files": {"tests/test_calc.py": FAILING_TEST}},
        ]
    }


def test_verify_failed_at_the_first_attempt_and_the_retry_converged(agent):
    agent.spec(agent.fake_codex_worker(_retry_scenario()))
    made = agent.make()
    assert made.code == 0, made.err
    run_id = made.events()[0]["run_id"]
    mined = mine(agent.root)
    tests = _misses(mined, "tests")
    assert RETRY_NOT_CONVERGED not in tests
    (first,) = tests[VERIFY_FAILED_FIRST]
    assert (first.run_id, first.part, first.adapter, first.command) == (run_id, "c1-a1", "local", "test")
    assert first.log == f".runner/runs/{run_id}/attempts/tests/c1-a1/verify.log"
    assert first.families == ("pytest",)
    assert first.error.startswith("verification `test` (")
    # the lines that say why: what the pytest family read as the failing test, numbered as in the verify log
    log = (agent.root / first.log).read_text().splitlines()
    assert first.lines and all(log[line.number - 1] == line.text for line in first.lines)
    assert any("tests/test_calc.py::test_mean" in line.text for line in first.lines)
    assert FAILURE_UNEXPLAINED not in tests  # pytest's own family explains the failure


def test_a_retry_that_did_not_converge(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": FAILING_TEST}}),
        policy="[policy.default]\nbudget = { attempts = 2 }",
    )
    made = agent.make()
    assert made.code == 1
    tests = _misses(mine(agent.root), "tests")
    assert [m.part for m in tests[VERIFY_FAILED_FIRST]] == ["c1-a1"]
    (last,) = tests[RETRY_NOT_CONVERGED]
    assert last.part == "c1-a2"
    assert last.log.endswith("/attempts/tests/c1-a2/verify.log")
    assert any("tests/test_calc.py::test_mean" in line.text for line in last.lines)
    assert last.error.startswith("verification `test` (")


def test_what_an_agent_ran_in_a_recording_is_read_by_its_adapter_command(agent):
    """`runner make --record` keeps the agent's transcript: a command it ran that is the step's adapter command is
    read by that command's families, and the transcript itself by the codex family."""
    test_line = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    output = "collected 1 item\nWARNING calc.py line 2: trailing whitespace\n"
    lines = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": f"/bin/bash -lc '{test_line} tests'",
                "aggregated_output": output,
                "exit_code": 0,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_2",
                "type": "command_execution",
                "command": "/bin/bash -lc 'cat x.py'",
                "aggregated_output": "x.py:1: error in a file the agent read\n",
                "exit_code": 0,
            },
        },
        {"type": "stream.notice", "message": "error: reconnecting"},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}},
    ]
    compact = [json.dumps(line, separators=(",", ":")) for line in lines]  # as Codex prints them
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}, "lines": compact}))
    made = agent.make("--record")
    assert made.code == 0, made.err
    (recording,) = (agent.root / "replays" / "tests").glob("*.json")
    mined = mine(agent.root)
    assert mined.recordings == (f"replays/tests/{recording.name}",)
    found = [m for m in mined.misses if m.run_id is None]
    by_part = {(m.part, m.kind): m for m in found}
    item = by_part[("item_1", DIAGNOSTIC_UNEXTRACTED)]
    assert (item.adapter, item.command, item.families, item.run) == ("local", "test", ("pytest",), f"{test_line} tests")
    assert item.lines == (Line(2, "WARNING calc.py line 2: trailing whitespace"),)
    assert item.log == f"replays/tests/{recording.name}"
    assert not any(part == "item_2" for part, _kind in by_part)  # the agent's own `cat`: no family reads it
    notice = by_part[("attempt 1", DIAGNOSTIC_UNEXTRACTED)]
    assert notice.families == ("codex",)
    transcript = json.loads(recording.read_text())["transcript"]
    assert [line.text for line in notice.lines] == [t for t in transcript if "stream.notice" in t]


def test_since_reads_the_runs_from_that_one_on(project):
    tidyq_project(project)
    first = project.make("check").events()[0]["run_id"]
    project.write("notes/c.txt", "changed\n")
    second = project.make("check").events()[0]["run_id"]
    assert mine(project.root).runs == (first, second)
    later = mine(project.root, since=second)
    assert later.runs == (second,)
    assert {m.run_id for m in later.misses} == {second}
    with pytest.raises(UsageError) as caught:
        mine(project.root, since="1999")
    assert str(caught.value) == (
        f"error: no recorded run starts with '1999' (the runs recorded go from {first} to {second}; "
        "see `runner log --list`)"
    )


def test_the_same_records_give_the_same_misses_in_the_same_order(project):
    tidyq_project(project)
    project.make("-k")
    project.write("notes/c.txt", 'a "quote\n')
    project.make("-k")
    once = [m.to_json() for m in mine(project.root).misses]
    env = dict(os.environ, PYTHONHASHSEED="123")
    code = (
        "import json, sys; from pathlib import Path; from runner.learn.gather import mine; "
        "print(json.dumps([m.to_json() for m in mine(Path(sys.argv[1])).misses]))"
    )
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", code, str(project.root)], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert json.loads(out) == once
    assert BANNER not in {line["text"] for m in once for line in m["lines"]}
