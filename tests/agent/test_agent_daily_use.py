"""An agent step in daily use, through the CLI with the openai worker against the scripted Responses server: an
answer that still holds is a success at the cost of one attempt (a change of nothing is a failure only when
there is nothing yet or verify fails); the endpoint is not in the key."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_helpers import CALC as CALC_TEXT
from agent_helpers import FAILING_TEST, PASSING_TEST


def answer(text: str) -> str:
    summary = json.dumps({"summary": "tests"})
    return f"<<MIS:START>>\n<<MIS:FILE path=tests/test_calc.py>>\n{text}<<MIS:JSON>>\n{summary}\n<<MIS:END>>\n"


def same_answer(text: str = PASSING_TEST) -> list[dict]:
    return [{"steps": [{"message": answer(text), "usage": {"input_tokens": 30, "output_tokens": 7}}]}]


def openai_worker(base_url: str, extra: str = "") -> str:
    return textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        {extra}
        """)


def touch_input(agent) -> None:
    with open(agent.root / "src/calc.py", "a") as f:
        f.write("# a comment\n")


def test_an_answer_that_still_holds_is_done_at_the_cost_of_one_attempt(agent, server):
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url))
    assert agent.make().code == 0
    touch_input(agent)
    again = agent.make()
    assert again.code == 0, again.err
    step = again.step("tests")
    assert (step["status"], step["attempts"]) == ("ran", 1)
    attempts = [(e["attempt"], e["ok"], e["kind"]) for e in again.events() if e["event"] == "attempt_finished"]
    assert attempts == [(1, True, None)]
    assert len(srv.requests()) == 2
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["version"] for v in versions] == [1]  # no file changed: no new version
    # recorded under its new key: the next make is up to date, with no call
    third = agent.make()
    assert third.step("tests")["status"] == "cached"
    assert json.loads(agent.run("status", "--json").out)["steps"][0]["reasons"] == ["up to date"]
    assert len(srv.requests()) == 2


def test_a_test_file_the_agent_created_where_its_inputs_look_is_not_paid_for_again(agent, server):
    # `runner init`'s write-tests shape: inputs `**/*.py`, outputs `tests/**/*.py`. The new test file is an input of
    # the step that wrote it; counted as absent, as it was, the next make is up to date and calls no model
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url), outputs='["tests/**/*.py"]')
    spec = agent.root / "intents.toml"
    spec.write_text(spec.read_text().replace('inputs = ["src/calc.py"]', 'inputs = ["**/*.py"]'))
    first = agent.make()
    assert (first.code, first.step("tests")["status"]) == (0, "ran"), first.err
    assert agent.make().step("tests")["status"] == "cached"
    assert json.loads(agent.run("status", "--json").out)["steps"][0]["reasons"] == ["up to date"]
    assert len(srv.requests()) == 1
    (agent.root / "tests/test_calc.py").write_text(PASSING_TEST + "\n# mine\n")  # a person's edit: theirs
    assert agent.make().step("tests")["status"] == "kept"
    assert len(srv.requests()) == 1


def test_symlinks_the_project_holds_are_not_the_agents_change(agent, server):
    # npm install leaves node_modules/.bin full of links; here one committed and one git does not ignore: an
    # attempt whose own change is one test file was refused for "its" symlinks, and nothing was ever applied
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url))
    (agent.root / "tools/.bin").mkdir(parents=True)
    os.symlink("../../src/calc.py", agent.root / "tools/.bin/calc")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
    ):
        subprocess.run(["git", *args], cwd=agent.root, check=True, capture_output=True)
    os.symlink("calc.py", agent.root / "src/alias.py")  # untracked, not ignored
    result = agent.make()
    assert (result.code, result.step("tests")["status"]) == (0, "ran"), result.err + result.out
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert os.readlink(agent.root / "src/alias.py") == "calc.py"


def test_a_kept_edit_that_still_verifies_is_done_at_the_cost_of_one_attempt(agent, server):
    edited = PASSING_TEST + "\n\ndef test_mine():\n    assert mean([2]) == 2\n"
    keeps = {"match": "# a comment", "steps": [{"message": answer(edited)}]}  # the model leaves the edit as it is
    srv = server([keeps, *same_answer()])
    agent.spec(openai_worker(srv.base_url))
    assert agent.make().code == 0  # version 1
    (agent.root / "tests/test_calc.py").write_text(edited)  # a person's edit
    assert agent.make().step("tests")["status"] == "kept"  # version 2, no call
    touch_input(agent)
    result = agent.make()
    assert result.code == 0, result.err
    assert (result.step("tests")["status"], result.step("tests")["attempts"]) == ("ran", 1)
    assert len(srv.requests()) == 2
    assert (agent.root / "tests/test_calc.py").read_text() == edited
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [(v["version"], v["kind"]) for v in versions] == [(1, "make"), (2, "edit")]
    assert agent.make().step("tests")["status"] == "cached"


def test_changing_nothing_where_verify_fails_is_retried_with_the_failure_then_fails(agent, server):
    srv = server(same_answer(FAILING_TEST))
    agent.spec(openai_worker(srv.base_url))
    (agent.root / "tests").mkdir()
    (agent.root / "tests/test_calc.py").write_text(FAILING_TEST)
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    errors = [e["error"] for e in result.events() if e["event"] == "attempt_finished"]
    assert len(errors) == 3
    assert all(e.startswith("the attempt changed nothing, and verification `test` (") for e in errors)
    assert "failed (exit 1)" in errors[0]
    assert "the attempt changed nothing, and verification `test`" in json.dumps(srv.requests()[1]["body"]["input"])
    assert agent.files() == before
    assert agent.make().step("tests")["status"] == "failed"  # nothing recorded


def test_moving_the_endpoint_or_the_key_s_variable_reruns_nothing(agent, server):
    first, moved = server(same_answer()), server(same_answer())
    agent.spec(openai_worker(first.base_url, 'extra = { reasoning_effort = "low" }'))
    assert agent.make().code == 0
    spec = (agent.root / "intents.toml").read_text()
    spec = spec.replace(first.base_url, moved.base_url).replace('"FAKE_KEY"', '"OTHER_KEY"')
    (agent.root / "intents.toml").write_text(spec.replace("timeout = 30", "timeout = 40\nidle_timeout = 20"))
    env = dict(agent.env(), OTHER_KEY=agent.key)
    status = json.loads(agent.run("status", "--json", env=env).out)["steps"]
    assert [(s["intent"], s["action"], s["reasons"]) for s in status] == [("tests", "skip", ["up to date"])]
    again = agent.make(env=env)
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    assert (len(first.requests()), len(moved.requests())) == (1, 0)
    # what decides the answer is in the key: the reasoning effort
    (agent.root / "intents.toml").write_text(spec.replace('reasoning_effort = "low"', 'reasoning_effort = "high"'))
    status = json.loads(agent.run("status", "--json", env=env).out)["steps"]
    assert status[0]["action"] == "run"
    assert agent.make(env=env).step("tests")["status"] == "ran"
    assert len(moved.requests()) == 1


ASK = '[policy.default]\nwrite_files = "ask"\n'


def answer_saying(text: str, summary: str) -> list[dict]:
    said = json.dumps({"summary": summary})
    message = f"<<MIS:START>>\n<<MIS:FILE path=tests/test_calc.py>>\n{text}<<MIS:JSON>>\n{said}\n<<MIS:END>>\n"
    return [{"steps": [{"message": message}]}]


def test_status_says_a_change_waits_and_approve_show_prints_it_without_approving(agent, server):
    srv = server(answer_saying(PASSING_TEST, "Wrote the tests. Renamed the mean helper."))
    agent.spec(openai_worker(srv.base_url), policy=ASK, intent_extra='non_goals = ["rename the mean helper"]')
    assert agent.make().code == 3  # no terminal: the verified change waits
    status = agent.run("status")
    assert status.code == 0, status.err
    lines = status.out.splitlines()
    assert lines[0] == (
        "wait  tests  waiting for approval: `runner approve tests --show` shows the change, `runner approve tests` "
        "applies it (no model call), `runner approve tests --reject` drops it"
    )
    assert lines[1] == "0 to run, 1 waiting for approval, 0 up to date"
    assert not any(line.startswith("agent steps:") for line in lines)  # no model call would be made
    steps = json.loads(agent.run("status", "--json").out)["steps"]
    assert steps[0]["reasons"][0].startswith("waiting for approval: ")
    assert agent.run("make", "-n").out.splitlines()[:2] == lines[:2]  # make's dry run says what status says

    shown = agent.run("approve", "tests", "--show")
    assert shown.code == 0, shown.err
    out = shown.out.splitlines()
    assert out[0].startswith("tests: a verified change to 1 file(s) waits for approval (run ")
    assert out[0].endswith("; policy 'default')")
    assert out[1] == "verify: passed (test)"
    assert out[2].startswith("  log: .runner/runs/") and out[2].endswith("/attempts/tests/c1-a1/verify.log")
    assert out[3] == "drift: 1 flag(s)"
    assert out[4].startswith("  DRIFT tests: ") and "rename the mean helper" in out[4]
    assert "+++ b/tests/test_calc.py" in out and "+def test_mean():" in out
    assert out[-1] == "`runner approve tests` applies it, `runner approve tests --reject` drops it"
    assert not (agent.root / "tests/test_calc.py").exists()  # shown, not approved
    as_json = json.loads(agent.run("approve", "tests", "--show", "--json").out)["waiting"]
    assert [(w["intent"], w["files"], w["verify"]["passed"], w["verify"]["commands"]) for w in as_json] == [
        ("tests", ["tests/test_calc.py"], True, ["test"])
    ]
    assert as_json[0]["drift"][0]["message"] == out[4].removeprefix("  DRIFT tests: ")
    assert "+def test_mean():" in as_json[0]["diff"]
    assert agent.run("approve", "--show").out.splitlines()[0] == out[0]  # every waiting change

    calc = (agent.root / "src/calc.py").read_text()
    (agent.root / "src/calc.py").write_text(calc + "# changed since the change was drafted\n")
    assert agent.run("status").out.splitlines()[0] == "run   tests  no cache entry"  # another key: not waiting
    (agent.root / "src/calc.py").write_text(calc)
    assert agent.run("status").out.splitlines()[0].startswith("wait  tests  waiting for approval: ")

    assert agent.run("approve", "tests").code == 0
    assert agent.run("approve", "tests", "--show").out == "nothing waits for approval for tests\n"
    assert agent.run("status").out.splitlines()[0] == "skip  tests  up to date"
    assert len(srv.requests()) == 1


def test_rollback_to_0_puts_the_files_back_as_before_the_first_version(agent, server):
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url), policy='[policy.default]\nscope = ["src/**"]\n')
    (agent.root / "tests").mkdir()
    assert agent.make().code == 0
    assert agent.run("rollback", "tests").err == (
        "error: agent intent 'tests' has only version 1: there is no earlier version "
        "(`runner rollback tests --to 0` puts the files back as they were before it)\n"
    )
    (agent.root / "tests/test_calc.py").write_text(PASSING_TEST + "# mine\n")  # kept as version 2 by the next make
    assert agent.make().step("tests")["status"] == "kept"
    rolled = agent.run("rollback", "tests", "--to", "0")
    assert rolled.code == 0, rolled.err
    assert rolled.out == "rolled tests back to version 0 as version 3: tests/test_calc.py\n"  # no dependants
    assert not (agent.root / "tests/test_calc.py").exists()  # the first version created it
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [(v["version"], v["kind"], v.get("restores")) for v in versions] == [
        (1, "make", None),
        (2, "edit", None),
        (3, "rollback", 0),
    ]
    assert agent.run("history", "tests").out.splitlines()[3].endswith("no: as before version 1")
    # up to date as it now stands, as after any rollback: no model call, nothing restored over it
    assert agent.run("status").out.splitlines()[0] == "skip  tests  up to date"
    assert agent.make().step("tests")["status"] == "cached"
    assert not (agent.root / "tests/test_calc.py").exists() and len(srv.requests()) == 1
    assert agent.run("rollback", "tests", "--to", "2").code == 0  # and back again
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST + "# mine\n"


def test_rollback_to_0_restores_a_file_the_first_version_changed_and_refuses_over_an_edit(agent, server):
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url))
    (agent.root / "tests").mkdir()
    (agent.root / "tests/test_calc.py").write_text(FAILING_TEST)  # a person's start, which the agent rewrites
    assert agent.make().code == 0
    (agent.root / "tests/test_calc.py").write_text(PASSING_TEST + "# edited, not yet kept\n")
    refused = agent.run("rollback", "tests", "--to", "0")
    assert (refused.code, refused.err) == (
        2,
        "error: tests/test_calc.py changed since version 1 of 'tests' was applied; a rollback would lose that "
        "change: keep it elsewhere, or pass --force\n",
    )
    (agent.root / "tests/test_calc.py").write_text(PASSING_TEST)
    assert agent.run("rollback", "tests", "--to", "0").code == 0
    assert (agent.root / "tests/test_calc.py").read_text() == FAILING_TEST


CODEX_TURN = [
    {"type": "thread.started", "thread_id": "t"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "Look at calc first."}},
    {
        "type": "item.completed",
        "item": {
            "id": "i1",
            "type": "command_execution",
            "command": "python3 -m pytest -q",
            "aggregated_output": "1 passed in 0.01s\n",
            "exit_code": 0,
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "i2",
            "type": "file_change",
            "changes": [{"path": "tests/test_calc.py", "kind": "add"}],
        },
    },
    {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "Wrote the tests.\nAll pass."}},
    {"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 30}},
]


def test_show_prints_a_codex_transcript_as_a_conversation_and_raw_on_request(agent):
    scenario = {"files": {"tests/test_calc.py": PASSING_TEST}, "lines": CODEX_TURN}
    agent.spec(agent.fake_codex_worker(scenario))
    assert agent.make().code == 0
    lines = agent.run("show", "tests").out.splitlines()
    start = lines.index("transcript (`--raw` for its JSON lines):")
    assert lines[start + 1 :] == [
        "(thinking) Look at calc first.",
        "$ python3 -m pytest -q",
        "  1 passed in 0.01s",
        "  exit 0",
        "changed tests/test_calc.py (add)",
        "agent:",
        "  Wrote the tests.",
        "  All pass.",
        "tokens: 1,200 input (200 cached), 30 output",
    ]
    raw = agent.run("show", "tests", "--raw").out.splitlines()
    assert [json.loads(line) for line in raw[raw.index("transcript (raw JSON lines):") + 1 :]] == CODEX_TURN


def slow_verify(agent, seconds: float) -> None:
    (agent.root / "adapters/local.toml").write_text(
        f'name = "local"\n[commands.test]\nrun = "sleep {seconds}; {sys.executable} -m pytest -q -p no:cacheprovider"'
        '\nparse = ["pytest"]\n'
    )


def test_explain_and_the_attempts_give_the_time_the_verify_took(agent, server):
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url))
    slow_verify(agent, 0.6)
    result = agent.make()
    assert result.code == 0, result.err
    (attempt,) = [e for e in result.events() if e["event"] == "attempt_finished"]
    assert attempt["seconds"] >= 0.6
    assert result.step("tests")["duration"] >= attempt["seconds"]
    explained = agent.run("explain", "tests").out
    seconds = float(re.search(r"last run: \S+ \(key \w+, ([\d.]+)s\)", explained).group(1))
    assert 0.6 <= seconds <= result.step("tests")["duration"] + 0.005  # explain rounds to 0.01 s
    log = agent.run("log").out
    assert re.search(r"attempt 1 of candidate 1: verified, 37 tokens, (\d+\.\d)s", log).group(1) != "0.0"
    assert float(re.search(r"verified, 37 tokens, ([\d.]+)s", log).group(1)) >= 0.6


def test_a_failed_agent_step_s_block_ends_with_its_verify_log_as_a_shell_step_s_does(agent, server):
    srv = server(same_answer(FAILING_TEST))
    agent.spec(openai_worker(srv.base_url), intent_extra="max_attempts = 1")
    result = agent.run("make")
    assert result.code == 1
    block = result.err[result.err.index("FAILED tests: ") :].splitlines()
    assert block[0] == (
        f"FAILED tests: verification `test` ({sys.executable} -m pytest -q -p no:cacheprovider) failed (exit 1)."
    )
    assert block[1:3] == ["  failing tests (1):", "    tests/test_calc.py::test_mean"]
    assert sum("tests/test_calc.py::test_mean" in line for line in block) == 2  # the list, the log's summary line
    (log_line,) = [line for line in block if line.startswith("  log: ")]
    log = Path(log_line.removeprefix("  log: "))
    assert log.name == "verify.log" and log.parent.name == "c1-a1" and "assert 1.5 == 2" in log.read_text()


def test_the_one_call_prompt_shows_named_files_first_lists_what_it_left_out_and_asks_no_test_run(agent, server):
    srv = server(same_answer())
    agent.spec(openai_worker(srv.base_url))
    spec = (agent.root / "intents.toml").read_text()
    spec = spec.replace('inputs = ["src/calc.py"]', 'inputs = ["data/*.txt", "src/big.py", "src/calc.py"]')
    (agent.root / "intents.toml").write_text(spec)
    (agent.root / "src/big.py").write_text("# big\n" + "x = 1\n" * 5_000)  # 30,006 characters: whole, being named
    (agent.root / "data").mkdir()
    sizes = {"a": 50_000, "b": 10_000, "c": 45_000, "d": 55_000, "e": 58_000, "f": 59_000}
    for name, size in sizes.items():
        (agent.root / f"data/{name}.txt").write_text(name * size)
    assert agent.make().code == 0
    prompt = srv.requests()[0]["body"]["input"]
    shown = re.findall(r"^### (\S+)$", prompt, re.MULTILINE)
    named = ["src/big.py", "src/calc.py"]  # in the intent's order
    assert shown == [*named, "data/b.txt", "data/c.txt", "data/a.txt", "data/d.txt", "data/e.txt"]
    assert "x = 1\n" * 5_000 in prompt  # over the 20,000 of a file its globs matched: named, so whole
    left = prompt[prompt.index("### Left out") :]
    assert left.splitlines()[4:10] == [
        "- data/c.txt: cut after 20,000 of 45,000 characters",
        "- data/a.txt: cut after 20,000 of 50,000 characters",
        "- data/d.txt: cut after 20,000 of 55,000 characters",
        f"- data/e.txt: cut after {120_000 - 30_006 - len(CALC_TEXT) - 10_000 - 60_000:,} of 58,000 characters",
        "- data/f.txt: not shown (59,000 characters)",
        "",
    ]
    assert "answer with <<MIS:ERR>> naming it: the intent can then name it in full in its inputs" in left
    assert "Run the tests before you" not in prompt
    assert "You cannot run commands here: once you answer, runner runs the verify commands (test) on your change" in (
        prompt
    )
