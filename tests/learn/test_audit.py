"""`runner audit` through the CLI: on the quickstart after a few runs (served offline by the replay worker), every
figure against counts the test makes from the runs' events.jsonl themselves; --since and the trend against the
previous window; approvals asked, approved, rejected, pending and dropped; parse success judged with today's
library; the JSON against runner/schemas/audit.json; a snapshot of the human table."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest
from agent_helpers import PASSING_TEST
from jsonschema import Draft7Validator
from learn_helpers import FINDING_A, teach_tidyq, tidyq_project

from runner.learn.induce import template_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quickstart"
SCHEMA = json.loads(files("runner.schemas").joinpath("audit.json").read_text(encoding="utf-8"))
VALIDATOR = Draft7Validator(SCHEMA)
AGENT_STEPS = ("tests", "docs")  # the quickstart's agent steps; "all" is its aggregate


def conforming(out: str) -> dict:
    """`runner audit --json`'s one object, checked against its schema."""
    report = json.loads(out)
    problems = [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in VALIDATOR.iter_errors(report)]
    assert not problems, "\n".join(problems)
    return report


def test_the_schema_is_a_valid_schema_ships_in_the_wheel_and_is_documented():
    import fnmatch
    import tomllib

    Draft7Validator.check_schema(SCHEMA)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatch("schemas/audit.json", glob) for glob in package_data["runner"])
    assert "runner/schemas/audit.json" in (ROOT / "README.md").read_text()


# ---- the quickstart ------------------------------------------------------------------------------------------


def _runner(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}  # no key anywhere: nothing can call a model
    return subprocess.run(
        [sys.executable, "-m", "runner", *args], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )


def _make(root: Path) -> str:
    """One `runner make`; its run id."""
    result = _runner(root, "make", "--json")
    return json.loads(result.stdout.splitlines()[0])["run_id"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> tuple[Path, list[str]]:
    """The quickstart made five times: a clean build (tests needs a retry), the no-op, a deleted output restored,
    an edit no recording answers (both agent steps fail), and the edit undone (all from the cache)."""
    root = tmp_path_factory.mktemp("audit") / "quickstart"
    shutil.copytree(
        EXAMPLE,
        root,
        ignore=lambda folder, names: (
            {".runner", "build", "tests", "docs"} & set(names) if Path(folder) == EXAMPLE else set()
        ),
    )
    runs = [_make(root), _make(root)]
    (root / "docs/calc.md").unlink()
    runs.append(_make(root))
    source = root / "src/calc/__init__.py"
    original = source.read_text()
    source.write_text(original + "\n# edited\n")
    runs.append(_make(root))
    source.write_text(original)
    runs.append(_make(root))
    return root, runs


def _events(root: Path, run_id: str) -> list[dict]:
    text = (root / ".runner" / "runs" / run_id / "events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _expected(root: Path, runs: list[str], window: list[str]) -> dict:
    """The figures of `window`, counted here from the events alone (runs: every run, in order, for what the
    cache saved: the cost of each agent step's latest result before)."""
    statuses: Counter = Counter()
    calls = tokens = saved_calls = saved_tokens = saved_steps = first = first_passed = 0
    latest: dict[str, tuple[int, int]] = {}
    for run_id in runs:
        counting = run_id in window
        for e in _events(root, run_id):
            if e["event"] == "attempt_finished" and counting:
                calls += 1
                tokens += e["tokens"]
                if e["attempt"] == 1 and (e["ok"] or (e["error"] or "").startswith("verification `")):
                    first += 1
                    first_passed += e["ok"]
            if e["event"] != "step_finished" or e["intent"] == "all":
                continue
            if counting:
                statuses[e["status"]] += 1
            if e["intent"] in AGENT_STEPS:
                if e["status"] in ("cached", "restored") and counting:
                    saved_steps += 1
                    saved_calls += latest[e["intent"]][0]
                    saved_tokens += latest[e["intent"]][1]
                if e["status"] == "ran":
                    latest[e["intent"]] = (e["agent"]["attempts"], e["agent"]["tokens"])
    hits = statuses["cached"] + statuses["restored"]
    decided = sum(statuses[s] for s in ("ran", "cached", "restored", "failed", "blocked"))
    return {
        "cache_hit_rate": (round(hits / decided, 4), hits, decided),
        "model_calls": calls,
        "tokens": tokens,
        "saved_model_calls": (saved_calls, saved_steps),
        "saved_tokens": saved_tokens,
        "verify_first_pass_rate": (round(first_passed / first, 4) if first else None, first_passed, first),
    }


def _figures(report: dict) -> dict:
    f = report["figures"]
    return {
        "cache_hit_rate": (f["cache_hit_rate"]["value"], f["cache_hit_rate"]["hits"], f["cache_hit_rate"]["of"]),
        "model_calls": f["model_calls"]["value"],
        "tokens": f["tokens"]["value"],
        "saved_model_calls": (f["saved_model_calls"]["value"], f["saved_model_calls"]["steps"]),
        "saved_tokens": f["saved_tokens"]["value"],
        "verify_first_pass_rate": (
            f["verify_first_pass_rate"]["value"],
            f["verify_first_pass_rate"]["passed"],
            f["verify_first_pass_rate"]["of"],
        ),
    }


def test_the_quickstarts_figures_are_what_its_events_say(quickstart):
    root, runs = quickstart
    result = _runner(root, "audit", "--json")
    assert result.returncode == 0, result.stderr
    report = conforming(result.stdout)
    assert report["runs"] == {"count": 5, "first": runs[0], "last": runs[-1]}
    assert report["previous"] is None
    assert _figures(report) == _expected(root, runs, runs)
    # and what those counts are, so a wrong reading of the events cannot agree with itself
    # tests: a failing attempt and its fix, docs: one; then one each that no recording answered
    assert _figures(report)["model_calls"] == 5
    # agent steps from the cache: both in the no-op, the restore (docs restored, tests cached) and the undo, each
    # at its clean build's attempts (tests 2, docs 1)
    assert _figures(report)["saved_model_calls"] == (9, 6)
    assert _figures(report)["verify_first_pass_rate"] == (0.5, 1, 2)
    for figure in report["figures"].values():
        assert (figure["previous"], figure["trend"]) == (None, None)
    f = report["figures"]
    assert f["parse_success_rate"] == {"value": None, "explained": 0, "of": 0, "previous": None, "trend": None}
    assert [f[f"approvals_{a}"]["value"] for a in ("asked", "approved", "rejected", "pending")] == [0, 0, 0, 0]


def test_the_quickstarts_failure_signatures(quickstart):
    root, runs = quickstart
    report = conforming(_runner(root, "audit", "--json").stdout)
    signatures = {s["template"]: s for s in report["signatures"]}
    # the first attempt's failing test, as the unittest family its log shows reads it (mining reads a log with the
    # families its lines identify, as a failed step's findings do)
    verify = signatures["FAIL: test_mean (test_calc.CalcTest.test_mean)"]
    assert (verify["count"], verify["steps"]) == (1, ["tests"])
    assert verify["example"] == "FAIL: test_mean (test_calc.CalcTest.test_mean)"
    # the edit no recording answers: one failed attempt per agent step, each failure counted once
    errors = [e["error"] for e in _events(root, runs[3]) if e["event"] == "attempt_finished"]
    assert len(errors) == 2
    for error in errors:
        sig = signatures[template_of(error.splitlines()[0])]
        assert sig["count"] == 1 and sig["example"] == error.splitlines()[0]
    assert sorted(s for sig in report["signatures"] for s in sig["steps"]) == ["docs", "tests", "tests"]
    assert len(conforming(_runner(root, "audit", "--json", "--top", "1").stdout)["signatures"]) == 1


def test_since_and_the_trend_against_the_previous_window(quickstart):
    root, runs = quickstart
    result = _runner(root, "audit", "--json", "--since", runs[3])
    report = conforming(result.stdout)
    assert report["runs"] == {"count": 2, "first": runs[3], "last": runs[4]}
    assert report["previous"] == {"count": 2, "first": runs[1], "last": runs[2]}
    now, before = _expected(root, runs, runs[3:]), _expected(root, runs, runs[1:3])
    assert _figures(report) == now
    f = report["figures"]
    assert f["cache_hit_rate"]["previous"] == before["cache_hit_rate"][0]
    assert f["cache_hit_rate"]["trend"] == round(now["cache_hit_rate"][0] - before["cache_hit_rate"][0], 4)
    assert f["model_calls"]["previous"] == before["model_calls"] == 0
    assert f["model_calls"]["trend"] == now["model_calls"] == 2  # the two attempts no recording answered
    assert f["saved_model_calls"]["previous"] == before["saved_model_calls"][0] == 6
    assert f["saved_model_calls"]["trend"] == now["saved_model_calls"][0] - 6 == -3
    assert (f["verify_first_pass_rate"]["value"], f["verify_first_pass_rate"]["previous"]) == (None, None)
    # the signatures of the window, each beside its count in the previous one (none there: new)
    assert report["signatures"] and all(s["previous"] == 0 and s["trend"] == s["count"] for s in report["signatures"])
    # a prefix names the first run it starts (a day, say); one nothing starts with is the user's mistake
    assert conforming(_runner(root, "audit", "--json", "--since", runs[0][:8]).stdout)["runs"]["count"] == 5
    wrong = _runner(root, "audit", "--since", "1999")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr == (
        f"error: no recorded run starts with '1999' (the runs recorded go from {runs[0]} to {runs[-1]}; "
        "see `runner log --list`)\n"
    )


def _stable(text: str, runs: list[str]) -> str:
    for n, run_id in enumerate(runs, 1):
        text = text.replace(run_id, f"RUN-{n}")
    return re.sub(r"/tmp/\S+", "<tmp>", text)


def test_the_human_table(quickstart, snapshot):
    root, runs = quickstart
    result = _runner(root, "audit", "--since", runs[3])
    assert result.returncode == 0, result.stderr
    assert _stable(result.stdout, runs) == snapshot
    everything = _runner(root, "audit")
    assert "previous window: none (no earlier window)" in everything.stdout


def test_no_runs_yet(project):
    tidyq_project(project)
    assert project.run("audit").out == "no runs recorded yet in .runner/runs: run `runner make` first\n"
    report = conforming(project.run("audit", "--json").out)
    assert report["runs"] == {"count": 0, "first": None, "last": None} and report["signatures"] == []


# ---- parse success, judged with today's library ----------------------------------------------------------------


def test_parse_success_is_judged_with_todays_library(project):
    tidyq_project(project)
    assert project.make("-k").code == 1  # check (the tidyq adapter) and plain (a shell line) both fail
    before = conforming(project.run("audit", "--json").out)
    assert before["figures"]["parse_success_rate"] | {"previous": None} == {
        "value": 0.0,
        "explained": 0,
        "of": 2,
        "previous": None,
        "trend": None,
    }
    (sig,) = [s for s in before["signatures"] if s["example"] == FINDING_A]
    assert (sig["count"], sig["steps"]) == (2, ["check", "plain"])  # one template, two steps
    teach_tidyq(project)
    after = conforming(project.run("audit", "--json").out)
    rate = after["figures"]["parse_success_rate"]
    # the same logs, read by tidyq's family: check's through its adapter, plain's as its tool's own family
    assert (rate["value"], rate["explained"], rate["of"]) == (1.0, 2, 2)
    # each failure is now what the family read: both findings
    templates = {s["template"]: s["steps"] for s in after["signatures"]}
    assert templates[template_of(FINDING_A)] == ["check", "plain"]
    assert templates[template_of("notes/b.txt:3: error TQ40 tab at the start of a line")] == ["check", "plain"]


# ---- approvals -------------------------------------------------------------------------------------------------


def _approvals(agent) -> tuple:
    report = conforming(agent.run("audit", "--json").out)
    f = report["figures"]
    names = ("asked", "approved", "rejected", "pending")
    return tuple(f[f"approvals_{n}"]["value"] for n in names) + (f["approvals_pending"]["dropped"],)


def test_approvals_asked_approved_rejected_pending_and_dropped(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}),
        policy='[policy.default]\nwrite_files = "ask"',
    )
    first = agent.make()
    assert first.code == 3  # no terminal to ask: the verified change waits
    assert _approvals(agent) == (1, 0, 0, 1, 0)
    assert agent.make().code == 3  # still waiting: not asked again
    assert _approvals(agent) == (1, 0, 0, 1, 0)
    assert agent.run("approve", "tests").code == 0
    assert _approvals(agent) == (1, 1, 0, 0, 0)
    run_id = first.events()[0]["run_id"]
    answers = (agent.root / ".runner/runs" / run_id / "approvals.jsonl").read_text().splitlines()
    assert [(a["answer"], a["by"]) for a in map(json.loads, answers)] == [
        ("pending", None),
        ("approved", "runner approve"),
    ]
    # served from the cache: the model call the approved change cost is saved
    cached = agent.make()
    assert cached.step("tests")["status"] == "cached"
    saved = conforming(agent.run("audit", "--json").out)["figures"]["saved_model_calls"]
    assert (saved["value"], saved["steps"]) == (1, 1)

    # the agent writes the same file each time: without it in the project, each attempt changes something (an
    # attempt that changed nothing fails before any approval is asked)
    (agent.root / "tests/test_calc.py").unlink()
    (agent.root / "src/calc.py").write_text((agent.root / "src/calc.py").read_text() + "# two\n")
    assert agent.make().code == 3
    assert agent.run("approve", "tests", "--reject").code == 0
    assert _approvals(agent) == (2, 1, 1, 0, 0)
    (agent.root / "src/calc.py").write_text((agent.root / "src/calc.py").read_text() + "# three\n")
    assert agent.make().code == 3
    (agent.root / "src/calc.py").write_text((agent.root / "src/calc.py").read_text() + "# four\n")
    assert agent.make().code == 3  # a newer change replaces the one nobody answered
    assert _approvals(agent) == (4, 1, 1, 1, 1)
