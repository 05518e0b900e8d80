"""An agent step of a sub-project (issue 41): its verify command's output is read with the sub-project's own
regexes/ first, so its retry prompt says what a family only that folder has found (steps/verify_feedback.py)."""

from __future__ import annotations

from agent_helpers import PASSING_TEST

FEEDBACK = "What the last attempt got wrong"
WIDGETS = """
family = "widgets"

[[pattern]]
name = "widget"
regex = 'WIDGET-FAIL: (?P<what>.+)'
fields = ["what"]
kind = "cause"
cause = "the widget failed: {what}"
"""


def test_the_retry_prompt_says_what_the_sub_projects_own_family_found(agent):
    svc = agent.root / "svc"
    (svc / "adapters").mkdir(parents=True)
    (svc / "regexes").mkdir()
    (svc / "src").mkdir()
    (svc / "src/calc.py").write_text((agent.root / "src/calc.py").read_text())
    (svc / "regexes/widgets.toml").write_text(WIDGETS)  # the root has no `widgets` family
    # the check fails while the test file still says BAD (the first attempt), and passes once it does not
    (svc / "adapters/local.toml").write_text(
        'name = "local"\n[commands.check]\n'
        "run = \"if grep -q BAD tests/test_calc.py; then echo 'WIDGET-FAIL: gear stuck'; exit 1; fi\"\n"
        'parse = ["widgets"]\n'
    )
    scenario = {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"svc/tests/test_calc.py": PASSING_TEST}},
            {"files": {"svc/tests/test_calc.py": "# BAD\n" + PASSING_TEST}},
        ]
    }
    agent.spec(agent.fake_codex_worker(scenario), intent_extra="")
    spec = (agent.root / "intents.toml").read_text()
    head, intent = spec.split("[intent.tests]")
    (agent.root / "intents.toml").write_text(head.replace("[project]\n", '[project]\ninclude = ["svc"]\n'))
    (svc / "intents.toml").write_text("[intent.tests]" + intent.replace('verify = ["test"]', 'verify = ["check"]'))
    result = agent.make()
    assert result.code == 0, result.err
    assert result.step("svc:tests")["status"] == "ran"
    assert (svc / "tests/test_calc.py").read_text() == PASSING_TEST
    _first, second = agent.prompts()
    assert "Cause: the widget failed: gear stuck" in second
