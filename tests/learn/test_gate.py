"""The gate, end to end through the CLI: a tool no built-in family knows; patterns induced from its log into
shadow; observed beside the active patterns over real `runner make` runs; moved to canary, stepped up,
promoted; the family file's comments and order kept; rolled back by hand and by failed checks."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from gate_helpers import FAMILY, Tally


def _log_of_last_run(tally: Tally) -> Path:
    runs = sorted((tally.root / ".runner" / "runs").iterdir())
    return runs[-1] / "logs" / "test.log"


def test_mined_patterns_go_from_shadow_through_canary_to_active_and_back(tally, server, snapshot):
    # a model is there (the fake Responses server), and allowed one call a pass: deterministic induction first
    srv = server([{"steps": [{"message": "<<MIS:START>>\n<<MIS:END>>"}]}])
    intents = (tally.root / "intents.toml").read_text().replace("[learn]\n", "[learn]\nmodel_calls = 1\n")
    worker = f'\n[worker]\nkind = "openai"\nmodel = "gpt-test"\nbase_url = "{srv.base_url}"\n'
    (tally.root / "intents.toml").write_text(intents + worker)
    # a failing run of the tool; nothing reads its output
    assert tally.make("ok", "expected-ParseError", "ok").returncode == 1
    before = tally.findings("CHECK parse_x ..... FAILED (5ms)\nTALLY: 1 ok, 1 failed, 0 skipped\n")
    assert before["failed_tests"] == [] and before["summary"]["failed"] is None

    # the pass mines the misses, proposes, scores and writes the survivors in shadow
    report = tally.learn()
    kinds = {p["name"]: p["kind"] for p in report["proposed"] if p["verdict"] == "shadow"}
    assert sorted(kinds.values()) == ["diagnostic", "failed_test", "summary"]
    assert report["projected_model_calls"] == 0 and srv.requests() == []  # induction read it all: no model paid
    assert tally.run("validate").returncode == 0
    status = tally.status()
    assert {c["stage"] for c in status.values()} == {"shadow"}
    failing = next(n for n, k in kinds.items() if k == "failed_test")
    summary = next(n for n, k in kinds.items() if k == "summary")

    # in shadow nothing is used: the findings are as they were, the runs record what the candidates saw
    assert tally.findings("CHECK a_1 ..... FAILED (5ms)\n")["failed_tests"] == []
    for _ in range(2):
        tally.make("ok", "broken")
    observed = [
        json.loads(line)
        for run in sorted((tally.root / ".runner" / "runs").iterdir())
        if (run / "gate.jsonl").exists()
        for line in (run / "gate.jsonl").read_text().splitlines()
    ]
    mine = [o for o in observed if o["pattern"] == f"tally/{failing}"]
    assert len(mine) == 2 and all(o["check"] == "pass" and o["gained"] and not o["used"] for o in mine)

    moved = {m["pattern"]: m for m in tally.learn()["moved"]}
    assert moved[f"tally/{failing}"]["to"] == "canary" and moved[f"tally/{failing}"]["weight"] == 50
    # each canary step waits for a run that used it: the step's key decides the slice
    for step in ("canary", "active"):  # 50% -> 99% -> promoted
        for _ in range(30):
            tally.make("ok", "broken")
            if any(o["used"] for o in _observations(tally, f"tally/{failing}")):
                break
        moved = {m["pattern"]: m for m in tally.learn()["moved"]}
        assert moved[f"tally/{failing}"]["to"] == step, moved[f"tally/{failing}"]
    assert tally.status()[f"tally/{failing}"]["stage"] == "active"
    assert tally.status()[f"tally/{summary}"]["stage"] == "active"

    # promoted: the findings carry what the new patterns read; the file kept our comment and order
    after = tally.findings("CHECK parse_x ..... FAILED (5ms)\nTALLY: 1 ok, 1 failed, 0 skipped\n")
    assert after["failed_tests"] == ["parse_x"] and after["summary"]["failed"] == 1
    text = tally.family()
    assert text.startswith(FAMILY)
    assert snapshot == _normalised(text)

    rolled = tally.run("learn", "rollback", f"tally/{failing}")
    assert rolled.returncode == 0, rolled.stderr
    assert rolled.stdout.splitlines() == [f"tally/{failing}: active -> retired"]
    assert tally.findings("CHECK parse_x ..... FAILED (5ms)\n")["failed_tests"] == []


def _observations(tally: Tally, pattern: str) -> list[dict]:
    """What the last run recorded for one candidate."""
    last = sorted((tally.root / ".runner" / "runs").iterdir())[-1]
    path = last / "gate.jsonl"
    if not path.exists():
        return []
    return [o for o in map(json.loads, path.read_text().splitlines()) if o["pattern"] == pattern]


def _normalised(text: str) -> str:
    """The family file with its run ids and dates made stable for a snapshot."""
    import re

    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "RUN", text)
    return re.sub(r"\d{4}-\d{2}-\d{2}", "DATE", text)


def test_a_candidate_that_reports_failures_on_passing_runs_is_rolled_back_without_a_human(tally):
    # a hand-written candidate, in canary at 99%: it reads every CHECK line as a failing test
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + textwrap.dedent(
            """
            [[pattern]]
            name = "every-check-fails"
            regex = '^CHECK (?P<name>\\S+) .*$'
            kind = "failed_test"
            fields = ["name"]
            stage = "canary"
            [pattern.gate]
            weight = 99
            """
        )
    )
    assert tally.run("validate").returncode == 0
    first = tally.make("ok", "ok")
    assert first.returncode == 0, first.stderr
    seen = _observations(tally, "tally/every-check-fails")
    assert seen and seen[0]["check"] == "fail" and "run that passed" in seen[0]["why"]
    moved = tally.learn()["moved"][0]
    assert moved["to"] == "canary" and "halted" in moved["why"]
    tally.make("ok", "ok")
    moved = tally.learn()["moved"][0]
    assert moved["to"] == "retired" and moved["why"].startswith("rolled back after 2 failed checks")
    assert 'stage = "retired"' in tally.family()
    # retired: used nowhere, observed no more
    tally.make("ok", "ok")
    assert _observations(tally, "tally/every-check-fails") == []


def test_a_canary_no_run_used_since_its_last_move_stays_where_it_is(tally):
    """Waiting is not a failed check (issue 38): passes with no run in between leave a canary where it is."""
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + textwrap.dedent(
            """
            [[pattern]]
            name = "summary"
            regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
            kind = "summary"
            fields = ["passed", "failed", "skipped"]
            stage = "canary"
            [pattern.gate]
            weight = 10
            """
        )
    )
    for _ in range(3):
        moved = tally.learn()["moved"][0]
        assert (moved["to"], moved["why"]) == (
            "canary",
            "stays in canary at 10%: waits for 1 run that uses it (0 of 1 so far)",
        )
    assert tally.status()["tally/summary"]["failed_checks"] == 0
    assert tally.run("learn", "status").stdout.splitlines()[0] == (
        "tally/summary: canary 10%; 0 runs at 10%, 0 failed checks, 0 logs read otherwise than by the active patterns"
    )


def test_shadow_and_canary_candidates_change_no_key_outside_their_slice(tally):
    """Adding a candidate in shadow, or moving it, leaves every step cached: it is used nowhere."""
    tally.checks("ok")
    assert tally.run("make").returncode == 0
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + textwrap.dedent(
            """
            # a candidate, by hand
            [[pattern]]
            name = "summary"
            regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
            kind = "summary"
            fields = ["passed", "failed", "skipped"]
            stage = "shadow"
            """
        )
    )
    again = tally.run("make", "--json")
    finished = [json.loads(line) for line in again.stdout.splitlines()][-1]
    assert finished["ran"] == 0 and finished["cached"] == 1, again.stdout


def test_a_pass_over_runs_that_observed_nothing_leaves_the_family_file_as_it_was(tally):
    """A candidate no run observed since its last record stays where it is, and its file is not rewritten (not
    even `since`): a scheduled pass in CI that brings nothing new proposes no change (examples/ci/learn.yml)."""
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + textwrap.dedent(
            """
            [[pattern]]
            name = "summary"
            regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
            kind = "summary"
            fields = ["passed", "failed", "skipped"]
            stage = "shadow"
            """
        )
    )
    assert tally.make("ok", "ok").returncode == 0  # the step runs: the candidate observes it
    stays = "stays in shadow (1 of 2 runs): will move to canary at 50% after 1 more run that observes it"
    assert tally.learn()["moved"][0]["why"] == stays
    observed = tally.family()
    assert "runs = 1" in observed
    assert tally.run("make").returncode == 0  # cached: a run in which no candidate observed anything
    assert tally.learn()["moved"][0]["why"] == stays
    assert tally.family() == observed


def test_learn_induce_prints_the_patterns_and_an_assignment_per_line_and_adds_them_in_shadow(tally):
    assert tally.make("ok", "expected-ParseError").returncode == 1
    log = _log_of_last_run(tally)
    dry = tally.run("learn", "induce", str(log), "--family", "tally", "--json", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    found = json.loads(dry.stdout)
    lines = log.read_text().splitlines()
    assert len(found["assignments"]) == len(lines)
    by_name = {p["name"]: p for p in found["patterns"]}
    for line, name in zip(lines, found["assignments"], strict=True):
        assert name is None or name in by_name, (line, name)
    summary = next(p for p in found["patterns"] if p["kind"] == "summary")
    assert summary["template"] == "TALLY: <*> ok, <*> failed, <*> skipped"
    assert tally.family() == FAMILY  # --dry-run wrote nothing
    assert tally.run("learn", "induce", str(log), "--family", "tally").returncode == 0
    assert {c["stage"] for c in tally.status().values()} == {"shadow"}
    assert tally.family().startswith(FAMILY)


def test_with_approve_patterns_a_promotion_waits_for_a_human(tally):
    """[learn] approve_patterns: the policy marks a pattern's promotion risky, so it waits for runner approve."""
    intents = (tally.root / "intents.toml").read_text().replace("[learn]\n", "[learn]\napprove_patterns = true\n")
    (tally.root / "intents.toml").write_text(intents)
    (tally.root / "regexes" / "tally.toml").write_text(
        FAMILY
        + textwrap.dedent(
            """
            [[pattern]]
            name = "summary"
            regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
            kind = "summary"
            fields = ["passed", "failed", "skipped"]
            stage = "canary"
            [pattern.gate]
            weight = 99
            """
        )
    )
    for _ in range(30):
        tally.make("ok")
        if any(o["used"] for o in _observations(tally, "tally/summary")):
            break
    moved = tally.learn()["moved"][0]
    assert moved["to"] == "canary" and moved["why"].startswith(
        "ready: waits for `runner approve --pattern tally/summary`"
    )
    assert tally.findings("TALLY: 1 ok, 0 failed, 0 skipped\n")["summary"]["passed"] is None  # not active yet
    done = tally.run("approve", "--pattern", "tally/summary")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tally/summary: canary -> active"
    assert tally.findings("TALLY: 1 ok, 0 failed, 0 skipped\n")["summary"]["passed"] == 1
    assert tally.status()["tally/summary"]["stage"] == "active"
