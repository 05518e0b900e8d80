"""An agent step in daily use, through the CLI with the openai worker against the scripted Responses server: an
answer that still holds is a success at the cost of one attempt (a change of nothing is a failure only when
there is nothing yet or verify fails); the endpoint is not in the key."""

from __future__ import annotations

import json
import textwrap

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
