"""`runner learn`, the pass: misses mined from recorded runs become scored candidates in shadow; where induction
cannot read a line and a model is configured, the model is asked (the fake Responses server here) and what it
proposes is scored like the rest: a pattern RE2 refuses, or one that could backtrack, never reaches shadow."""

from __future__ import annotations

import json
import textwrap

import pytest
from gate_helpers import FAMILY


def test_a_pass_mines_the_misses_and_puts_scored_candidates_in_shadow(tally):
    assert tally.make("ok", "expected-ParseError", "ok").returncode == 1
    tally.make("ok", "broken")
    report = tally.learn()
    assert report["mined"] > 0 and report["projected_model_calls"] == 0
    kinds = {p["kind"]: p for p in report["proposed"]}
    assert {"summary", "failed_test", "diagnostic"} <= set(kinds)
    assert all(p["verdict"] == "shadow" for p in report["proposed"]), report["proposed"]
    assert kinds["summary"]["regex"].startswith("^TALLY: (?P<passed>")
    text = tally.family()
    assert text.startswith(FAMILY)  # the user's comment and header, byte for byte
    assert {c["stage"] for c in tally.status().values()} == {"shadow"}
    # a second pass proposes nothing new for what the candidates read (they are in the library now)
    again = tally.learn()
    assert [p for p in again["proposed"] if p["verdict"] == "shadow"] == []


def test_a_dry_run_writes_nothing(tally):
    tally.make("ok", "broken")
    before = tally.family()
    done = tally.run("learn", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "(dry run: nothing written)" in done.stdout and "-> shadow" in done.stdout
    assert tally.family() == before


WEIRD_TOOL = """\
import sys
print("weird 1.0")
print("  [lexer tokens] broke: failure")
print("  \\u2713 parser holds")
print("weird: 1 broke")
sys.exit(1)
"""


def test_what_induction_cannot_read_is_asked_of_the_model_and_scored_like_the_rest(tally, server):
    (tally.root / "tally.py").write_text(WEIRD_TOOL)
    good = {
        "name": "weird-broke",
        "regex": "^\\s*\\[(?P<name>.+)\\] broke: failure$",
        "kind": "failed_test",
        "fields": ["name"],
    }
    lookaround = {"name": "weird-ahead", "regex": "^(?=.*broke).*$", "kind": "failed_test", "fields": []}
    backtracks = {"name": "weird-nested", "regex": "^(\\s*\\S+\\s*)+broke$", "kind": "failed_test", "fields": []}
    # regresses on the recorded logs: reads the summary line an active summary pattern reads already
    claims = {
        "name": "weird-total",
        "regex": "^weird: (?P<failed>\\d+) broke$",
        "kind": "summary",
        "fields": ["failed"],
    }
    # imprecise: reads the summary line too, as a failing test
    greedy = {"name": "weird-any", "regex": "^\\s*(?P<name>.+) broke.*$", "kind": "failed_test", "fields": ["name"]}
    answer = json.dumps({"patterns": [good, lookaround, backtracks, claims, greedy]})
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + "\n[[pattern]]\nname = \"summary\"\nregex = '^weird: (?P<failed>\\d+) broke$'\n"
        + 'kind = "summary"\nfields = ["failed"]\n'
    )
    message = f"<<MIS:START>>\n<<MIS:FILE path=patterns.json>>\n{answer}\n<<MIS:END>>"
    srv = server([{"steps": [{"message": message}]}])
    base_url, requests = srv.base_url, srv.log
    intents = (tally.root / "intents.toml").read_text()
    intents = intents.replace("[learn]\n", "[learn]\nmodel_calls = 3\n")
    intents += textwrap.dedent(
        f"""
        [worker]
        kind = "openai"
        model = "gpt-test"
        base_url = "{base_url}"
        """
    )
    (tally.root / "intents.toml").write_text(intents)
    assert tally.make("ok").returncode == 1

    done = tally.run("learn")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "projected model calls: 1 ([learn] model_calls caps them)"
    report = json.loads(tally.run("learn", "--json", "--dry-run").stdout)  # what the first pass wrote stands
    status = tally.status()
    assert "tally/tally-weird-broke" in status and status["tally/tally-weird-broke"]["stage"] == "shadow"
    for dropped in ("weird-ahead", "weird-nested", "weird-total", "weird-any"):
        assert f"tally/tally-{dropped}" not in status
    asked = [r for r in map(json.loads, requests.read_text().splitlines()) if r.get("path") == "/v1/responses"]
    assert len(asked) == 1
    prompt = json.dumps(asked[0])
    assert "[lexer tokens] broke: failure" in prompt
    assert report["projected_model_calls"] == 0  # everything it asked about is read now
    lines = done.stdout
    assert "weird-ahead" in lines and "RE2 refuses it" in lines
    assert "weird-nested" in lines and "backtrack catastrophically" in lines
    # the same regex as the active summary pattern: one regex lives in one pattern, so it is not even scored
    assert "not proposed again: tally/tally-weird-total is tally/summary's regex (active)" in lines
    assert "weird-any" in lines and "precision 0.50 < 0.95 (it also reads 'weird: 1 broke')" in lines


def _answer(checks: str) -> str:
    return f"<<MIS:START>>\n<<MIS:FILE path=src/checks.txt>>\n{checks}\n<<MIS:END>>"


FAILED_TEST_PATTERN = """
[[pattern]]
name = "tally-check-failed"
regex = '^\\s*CHECK\\s+(?P<name>[^\\s()\\[\\]{}:,;]+).*?FAILED.*$'
kind = "failed_test"
fields = ["name"]
stage = "STAGE"
"""


@pytest.mark.parametrize("stage", ["shadow", "active"])
def test_a_promoted_pattern_names_the_failing_tests_in_an_agent_steps_retry(tally, server, stage):
    """The gate governs use: a shadow pattern's failing tests never reach an agent's prompt; once it is active,
    the retry of an agent step whose verify runs that tool says which tests failed, not the log's tail."""
    (tally.root / "regexes" / "tally.toml").write_text(FAMILY + FAILED_TEST_PATTERN.replace("STAGE", stage))
    srv = server(
        [
            {"match": "What the last attempt got wrong", "steps": [{"message": _answer("good_one=ok")}]},
            {"steps": [{"message": _answer("good_one=ok check_widget_spin=wobbles")}]},
        ]
    )
    base_url, requests = srv.base_url, srv.log
    (tally.root / "src" / "checks.txt").write_text("start=ok\n")
    (tally.root / "intents.toml").write_text(
        textwrap.dedent(
            f"""\
            [project]
            name = "tally-demo"
            default = "fix"

            [worker]
            kind = "openai"
            model = "gpt-test"
            base_url = "{base_url}"

            [policy.default]
            write_files = "auto"

            [intent.fix]
            goal = "Make every tally check pass"
            inputs = ["tally.py"]
            outputs = ["src/checks.txt"]
            adapter = "tally"
            verify = ["test"]
            """
        )
    )
    done = tally.run("make")
    assert done.returncode == 0, done.stderr
    prompts = [r["prompt"] for r in map(json.loads, requests.read_text().splitlines()) if r["path"] == "/v1/responses"]
    assert len(prompts) == 2
    retry = prompts[1]
    if stage == "active":
        assert "Failing tests:\n- check_widget_spin" in retry
    else:
        assert "Failing tests:" not in retry
        # in shadow it was observed on the agent's verify output, each attempt's: a hit on the failing one,
        # nothing to read on the passing one, no failed check
        (run,) = (tally.root / ".runner" / "runs").iterdir()
        seen = [json.loads(line) for line in (run / "gate.jsonl").read_text().splitlines()]
        assert [(o["pattern"], o["step"], o["hits"], o["check"]) for o in seen] == [
            ("tally/tally-check-failed", "fix", 1, "pass"),
            ("tally/tally-check-failed", "fix", 0, "pass"),
        ]
    assert (tally.root / "src" / "checks.txt").read_text().strip() == "good_one=ok"
