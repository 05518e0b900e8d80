"""An agent intent's memory and drift, through the real CLI: the memory section in the prompt the model receives
(the real Codex CLI against the fake Responses server) and in the key (a changed fact re-runs the step, with
its reason); drift flagged, never refused, on stdout, in the --json events, the run record, the step record,
`runner log` and `runner explain`; no flag for a clean change."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest
from agent_helpers import PASSING_TEST, AgentProject
from jsonschema import Draft7Validator

MEMORY = """\
anchor = "Tests that pin down calc.mean"
facts = ["mean raises ValueError on an empty list", '''calc has no
  third-party dependencies''']
non_goals = ["changing the public API"]
constraints = ["tests run in under a second"]
open_questions = ["should mean accept generators?"]
"""
# the same fields in another order, one item re-wrapped: the same section, the same key
REORDERED = """\
open_questions = ["should mean accept generators?"]
constraints = ["tests run in under a second"]
non_goals = ["changing the public API"]
facts = ["mean raises ValueError   on an empty list", "calc has no third-party dependencies"]
anchor = "Tests that pin down calc.mean"
"""
SCOPE_DRIFT = (
    "notes/why.md: changed, but neither the intent's outputs nor its scope name it (policy 'default' allowed it)"
)
EVENTS = Draft7Validator(json.loads(files("runner.schemas").joinpath("events.json").read_text(encoding="utf-8")))


def _said(message: str, files_: dict[str, str] | None = None) -> dict:
    """A fake codex scenario: these files written, then `message` as the agent's final message."""
    return {
        "files": files_ or {"tests/test_calc.py": PASSING_TEST},
        "lines": [
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": message}},
            {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}},
        ],
    }


def _valid(events: list[dict]) -> list[dict]:
    for event in events:
        problems = [e.message for e in EVENTS.iter_errors(event)]
        assert not problems, (event, problems)
    return events


def _recorded(agent: AgentProject, events: list[dict]) -> list[dict]:
    run_id = next(e["run_id"] for e in events if e["event"] == "run_started")
    text = (agent.root / ".runner/runs" / run_id / "events.jsonl").read_text(encoding="utf-8")
    return _valid([json.loads(line) for line in text.splitlines()])


def _memory_section(prompt: str) -> str:
    start = prompt.index("## Intent memory")
    return prompt[start : prompt.index("## Acceptance criteria", start)]


# ---- the memory in the prompt and the key ----------------------------------------------------------------


@pytest.mark.codex_cli
def test_the_prompt_the_model_receives_holds_the_memory_section(agent, server, codex_binary, snapshot):
    patch = (
        "*** Begin Patch\n*** Add File: tests/test_calc.py\n"
        + "".join(f"+{line}\n" for line in PASSING_TEST.splitlines())
        + "*** End Patch\n"
    )
    srv = server([{"steps": [{"patch": patch}, {"message": "Wrote tests."}]}])
    worker = f"""[worker]
kind = "codex"
model = "gpt-5.5"
binary = "{codex_binary}"
base_url = "{srv.base_url}"
env_key = "FAKE_KEY"
timeout = 90
extra = {{ request_max_retries = 1, stream_max_retries = 1, codex_home = "{agent.home}/codex-home" }}
"""
    agent.spec(worker, intent_extra=MEMORY)
    result = agent.make()
    assert result.code == 0, result.err + result.out
    assert "drift" not in result.step("tests")
    texts = [request["prompt"] for request in srv.requests() if "## Intent memory" in request["prompt"]]
    assert texts, "the model received the memory"
    assert _memory_section(texts[0]) == snapshot
    # right after the goal, before the acceptance criteria, in a template without a {{memory}} slot
    assert "Write pytest tests for src/calc.py\n\n## Intent memory\n\n" in texts[0]


def test_the_same_fields_in_another_order_give_the_same_prompt_and_key(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=MEMORY)
    assert agent.make().code == 0
    first = agent.prompts()[-1]
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=REORDERED)
    assert agent.make().step("tests")["status"] == "cached"  # the same key: nothing to re-run
    (agent.root / "tests/test_calc.py").unlink()
    assert agent.make("-B").code == 0
    assert agent.prompts()[-1] == first  # byte for byte


def test_an_intent_without_memory_keeps_its_prompt(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    assert agent.make().code == 0
    prompt = agent.prompts()[-1]
    assert "Intent memory" not in prompt
    assert "Write pytest tests for src/calc.py\n\n## Acceptance criteria" in prompt


def test_editing_a_fact_makes_the_step_out_of_date_with_its_reason(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=MEMORY)
    assert agent.make().code == 0
    assert agent.make().step("tests")["status"] == "cached"
    edited = MEMORY.replace("mean raises ValueError", "mean raises ZeroDivisionError")
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=edited)
    status = json.loads(agent.run("status", "--json").out)
    assert status["steps"] == [{"intent": "tests", "action": "run", "reasons": ["intent memory changed: facts"]}]
    explained = agent.run("explain", "tests")
    assert "  would run: intent memory changed: facts\n" in explained.out
    assert "    memory.facts          " in explained.out
    calls = len(agent.prompts())
    (agent.root / "tests/test_calc.py").unlink()  # so the re-run has something to change
    rerun = agent.make()
    assert rerun.step("tests")["status"] == "ran"
    assert rerun.step("tests")["reasons"] == ["intent memory changed: facts"]
    assert len(agent.prompts()) == calls + 1
    assert "- mean raises ZeroDivisionError on an empty list\n" in agent.prompts()[-1]


def test_dropping_and_adding_fields_are_reasons_too(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=MEMORY)
    assert agent.make().code == 0
    fewer = MEMORY.replace('non_goals = ["changing the public API"]\n', "") + 'scope = ["docs/**"]\n'
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra=fewer)
    status = json.loads(agent.run("status", "--json").out)
    assert status["steps"][0]["reasons"] == ["intent memory changed: non_goals, scope"]


# ---- drift --------------------------------------------------------------------------------------------------


def test_a_change_outside_the_intents_scope_is_applied_and_flagged_everywhere(agent):
    scenario = _said("Wrote the tests and a note.", {"tests/test_calc.py": PASSING_TEST, "notes/why.md": "because\n"})
    agent.spec(agent.fake_codex_worker(scenario), policy="[policy.default]\nscope = ['notes/**']")
    plain = agent.run("make")  # what a terminal user reads (stdout: the results)
    assert plain.code == 0, plain.err
    assert (agent.root / "notes/why.md").read_text() == "because\n"  # applied: a flag, not a refusal
    lines = plain.out.splitlines()
    ran = next(i for i, line in enumerate(lines) if line.startswith("[1/1] ran tests"))
    assert lines[ran + 1] == f"  DRIFT tests: {SCOPE_DRIFT}"
    assert "drift flagged: tests (`runner log STEP` shows what)" in lines

    logged = agent.run("log", "tests")
    assert f"drift: {SCOPE_DRIFT}" in logged.out.splitlines()
    run_view = agent.run("log")
    assert f"           drift: {SCOPE_DRIFT}" in run_view.out.splitlines()
    as_json = json.loads(agent.run("log", "tests", "--json").out)
    assert as_json["drift"] == [{"kind": "scope", "path": "notes/why.md", "message": SCOPE_DRIFT}]
    explained = agent.run("explain", "tests")  # from the step record
    assert f"    drift        {SCOPE_DRIFT}" in explained.out.splitlines()
    assert json.loads(agent.run("explain", "tests", "--json").out)["last_run"]["drift"] == as_json["drift"]

    (agent.root / "notes/why.md").unlink()
    (agent.root / "tests/test_calc.py").unlink()
    events = _valid(agent.make("-B").events())
    step = next(e for e in events if e["event"] == "step_finished")
    assert step["status"] == "ran"
    assert step["drift"] == [{"kind": "scope", "path": "notes/why.md", "message": SCOPE_DRIFT}]
    assert "drift" not in step["agent"]
    assert events[-1]["event"] == "run_finished" and events[-1]["drift"] == ["tests"]
    assert _recorded(agent, events) == events


def test_the_intents_own_scope_names_what_it_may_also_change(agent):
    scenario = _said("Wrote the tests and a note.", {"tests/test_calc.py": PASSING_TEST, "notes/why.md": "because\n"})
    agent.spec(
        agent.fake_codex_worker(scenario),
        policy="[policy.default]\nscope = ['notes/**']",
        intent_extra='scope = ["notes/*.md"]',
    )
    result = agent.make()
    assert result.code == 0, result.err
    assert "drift" not in result.step("tests") and "drift" not in result.events()[-1]
    assert "- notes/*.md" in agent.prompts()[-1]  # the agent is told, under "Also in scope"


def test_the_intents_scope_never_widens_the_policy(agent):
    scenario = _said("Done.", {"tests/test_calc.py": PASSING_TEST, "src/other.py": "x = 1\n"})
    agent.spec(agent.fake_codex_worker(scenario), intent_extra='scope = ["src/**"]')
    result = agent.make()
    assert result.code == 1
    assert result.step("tests")["error"] == (
        "refused: src/other.py: outside the scope of policy 'default' and the intent's outputs (tests/test_calc.py)"
    )
    assert not (agent.root / "src/other.py").exists()


def test_a_summary_contradicting_a_non_goal_is_flagged(agent):
    said = "Wrote the tests. I also changed the public API of mean to take *values."
    agent.spec(agent.fake_codex_worker(_said(said)), intent_extra=MEMORY)
    plain = agent.run("make")
    assert plain.code == 0, plain.err
    message = (
        'the agent\'s summary says "I also changed the public API of mean to take *values.", which matches '
        'non-goal "changing the public API" (every key word: changing, public, api)'
    )
    assert f"  DRIFT tests: {message}" in plain.out.splitlines()
    (agent.root / "tests/test_calc.py").unlink()
    step = agent.make("-B").step("tests")
    assert step["drift"] == [
        {
            "kind": "non_goal",
            "non_goal": "changing the public API",
            "sentence": "I also changed the public API of mean to take *values.",
            "words": ["changing", "public", "api"],
            "message": message,
        }
    ]
    _valid([step])


@pytest.mark.parametrize(
    "said",
    [
        "Wrote the tests.",
        "Wrote the tests; I did not change the public API.",  # a negated sentence is skipped
        "Wrote the tests. The public API is documented in the README.",  # not every key word
    ],
    ids=["clean", "negated", "partial"],
)
def test_no_flag_for_a_clean_change(agent, said):
    agent.spec(agent.fake_codex_worker(_said(said)), intent_extra=MEMORY)
    result = agent.make()
    assert result.code == 0, result.err
    assert "drift" not in result.step("tests")
    assert "drift" not in result.events()[-1]
    assert "DRIFT" not in agent.run("log").out + agent.run("explain", "tests").out


def test_a_change_waiting_for_approval_keeps_its_drift_into_the_step_record(agent):
    scenario = _said("Done.", {"tests/test_calc.py": PASSING_TEST, "notes/why.md": "because\n"})
    agent.spec(agent.fake_codex_worker(scenario), policy="[policy.default]\nscope = ['notes/**']\nwrite_files = 'ask'")
    blocked = agent.make()
    assert blocked.code == 3
    assert blocked.step("tests")["status"] == "blocked"
    assert blocked.step("tests")["drift"][0]["message"] == SCOPE_DRIFT
    _valid(blocked.events())
    assert agent.run("approve", "tests").code == 0
    assert (agent.root / "notes/why.md").exists()
    assert json.loads(agent.run("explain", "tests", "--json").out)["last_run"]["drift"][0]["path"] == "notes/why.md"
