"""What an agent run costs, after the fact: each agent step's step_finished and the run's run_finished give the
attempts and tokens (input, cached input, output), as does the plain summary; and an attempt that changed
nothing where there is nothing yet (or only files its policy does not let it write) is no success: it is retried
with that reason, then the step fails, never recorded as done (test_agent_daily_use.py: where the outputs exist and
verify, it is). Driven through the CLI with the fake codex (10 input tokens, 2 of them
cached, 3 output tokens a call)."""

from __future__ import annotations

import json
from importlib.resources import files

from agent_helpers import FAILING_TEST, PASSING_TEST
from jsonschema import Draft7Validator

EVENTS = Draft7Validator(json.loads(files("runner.schemas").joinpath("events.json").read_text(encoding="utf-8")))
FEEDBACK = "What the last attempt got wrong"
RETRY = {
    "by_prompt": [
        {"match": FEEDBACK, "files": {"tests/test_calc.py": PASSING_TEST}},
        {"files": {"tests/test_calc.py": FAILING_TEST}},
    ]
}


def usage(attempts: int) -> dict:
    return {"input_tokens": 10 * attempts, "cached_input_tokens": 2 * attempts, "output_tokens": 3 * attempts}


def test_each_agent_step_and_the_run_give_the_attempts_and_tokens_spent(agent):
    docs = '\n[intent.docs]\ngoal = "Write docs/calc.md"\ninputs = ["src/calc.py"]\noutputs = ["docs/calc.md"]\n'
    scenario = {
        "by_prompt": [
            {"match": "docs/calc.md", "files": {"docs/calc.md": "# calc\n"}},
            *RETRY["by_prompt"],
        ]
    }
    agent.spec(agent.fake_codex_worker(scenario), intent_extra=docs)
    result = agent.make()
    assert result.code == 0, result.err
    events = result.events()
    assert all(not list(EVENTS.iter_errors(e)) for e in events)
    assert (result.step("tests")["attempts"], result.step("tests")["usage"]) == (2, usage(2))
    assert (result.step("docs")["attempts"], result.step("docs")["usage"]) == (1, usage(1))
    finished = events[-1]
    assert (finished["attempts"], finished["usage"]) == (3, usage(3))

    again = agent.make()  # cached: nothing spent (the fast no-op says it in the same words: test_event_contract)
    assert (again.events()[-1]["attempts"], again.events()[-1]["usage"]) == (0, usage(0))


def test_the_plain_summary_gives_them_per_step_and_in_all(agent):
    agent.spec(agent.fake_codex_worker(RETRY), intent_extra="candidates = 2")
    result = agent.run("make")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("[1/1] ran tests (")
    assert lines[0].endswith("s; 4 attempts, 40 input tokens (8 cached), 12 output tokens)")
    assert lines[-1] == "agent steps spent 4 attempts, 40 input tokens (8 cached), 12 output tokens"


def test_an_attempt_that_changes_nothing_where_there_is_nothing_yet_is_retried_then_fails_uncached(agent):
    agent.spec(agent.fake_codex_worker({}))  # the output does not exist, and the agent writes nothing
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    reason = (
        "the attempt changed nothing: an agent step must change its outputs tests/test_calc.py "
        "(the outputs tests/test_calc.py do not exist)"
    )
    assert result.step("tests")["error"] == reason
    attempts = [(e["attempt"], e["kind"], e["error"]) for e in result.events() if e["event"] == "attempt_finished"]
    assert attempts == [(1, "policy", reason), (2, "policy", reason), (3, "policy", reason)]
    first, second, _third = agent.prompts()
    assert FEEDBACK not in first and reason in second  # retried with that reason as the feedback
    assert agent.files() == before
    assert agent.make().step("tests")["status"] == "failed"  # nothing recorded as done: it runs again
    assert len(agent.prompts()) == 6


def test_an_attempt_that_writes_only_outside_its_policy_is_retried_and_that_write_never_applied(agent):
    scenario = {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"tests/test_calc.py": PASSING_TEST}},
            {"files": {"src/notes.txt": "where the tests would go\n"}},
        ]
    }
    agent.spec(agent.fake_codex_worker(scenario))
    result = agent.make()
    assert result.code == 0, result.err
    first = next(e for e in result.events() if e["event"] == "attempt_finished")
    assert (first["kind"], first["error"]) == (
        "policy",
        "the attempt changed only files its policy does not let it write (src/notes.txt), so it changed nothing: "
        "an agent step must change its outputs tests/test_calc.py",
    )
    assert result.step("tests")["attempts"] == 2
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert not (agent.root / "src/notes.txt").exists()  # the second attempt started without it
