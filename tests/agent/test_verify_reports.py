"""An agent step's verify command that writes a JUnit XML report (its adapter command's `reports`): a retry's
feedback names the failing test from the report, with its location and message, even when the command prints
nothing a family could read."""

from __future__ import annotations

import sys

from agent_helpers import FAILING_TEST, PASSING_TEST


def test_a_silent_verify_commands_report_names_the_failing_test_in_the_feedback(agent):
    # pytest with its output sent away: only the report it writes tells which test failed and why
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider --junitxml=build/junit.xml tests > /dev/null 2>&1"
    (agent.root / "adapters/local.toml").write_text(
        f'name = "local"\n[commands.test]\nrun = "{check}"\nreports = ["build/junit.xml"]\n'
    )
    scenario = {
        "by_prompt": [
            {"match": "Failing tests:", "files": {"tests/test_calc.py": PASSING_TEST}},
            {"files": {"tests/test_calc.py": FAILING_TEST}},
        ]
    }
    agent.spec(agent.fake_codex_worker(scenario))
    result = agent.make()
    assert result.code == 0, result.err
    first, second = agent.prompts()
    assert "Failing tests:\n- tests/test_calc.py::test_mean: assert 1.5 == 2" in second
