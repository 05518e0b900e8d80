"""Every recorded tool log parses to exactly its hand-checked expected findings."""

import json
from pathlib import Path

import pytest

from runner.parse import builtin_dir, load_library, parse_findings

LOGS = Path(__file__).parent / "logs"
LIB = load_library([builtin_dir()])
CASES = sorted(LOGS.glob("*/*.log"))
RUNNERS = ("pytest", "gotest", "cargo", "jest", "vitest", "tap", "surefire", "gradle")


def families_for(log: Path):
    return [LIB.family(n) for n in (log.parent.name, "diagnostics", "causes")]


def read(log: Path) -> str:
    return log.read_bytes().decode("utf-8", errors="replace")


@pytest.mark.parametrize("log", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_log_parses_to_its_expected_findings(log):
    expected = json.loads(log.with_name(log.stem + ".expected.json").read_text("utf-8"))
    assert parse_findings(read(log), families_for(log)).to_json() == expected


@pytest.mark.parametrize("log", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_set_candidates_agree_with_a_naive_per_pattern_loop(log):
    text = read(log)
    fast = parse_findings(text, families_for(log))
    slow = parse_findings(text, families_for(log), naive=True)
    assert fast.matches == slow.matches
    assert fast.to_json() == slow.to_json()


def test_corpus_covers_the_six_runners_with_at_least_forty_logs():
    per_runner = {r: len(list((LOGS / r).glob("*.log"))) for r in RUNNERS}
    assert sum(per_runner.values()) >= 40
    assert all(n >= 4 for n in per_runner.values()), per_runner
    assert all(p.with_name(p.stem + ".expected.json").exists() for p in CASES)


def test_every_folder_is_named_in_sources():
    sources = (LOGS / "SOURCES.md").read_text("utf-8")
    for folder in {p.parent.name for p in CASES}:
        assert f"`{folder}/`" in sources


def test_interrupted_runs_are_not_complete_and_finished_ones_are():
    done = json.loads((LOGS / "pytest" / "fail_default.expected.json").read_text())
    assert done["complete"] is True
    for name in ("pytest/killed", "gotest/killed", "cargo/killed", "gradle/interrupted"):
        assert json.loads((LOGS / f"{name}.expected.json").read_text())["complete"] is False


def test_colour_and_plain_runs_of_the_same_tests_agree():
    plain = parse_findings(read(LOGS / "pytest/fail_default.log"), families_for(LOGS / "pytest/x.log")).to_json()
    colour = parse_findings(read(LOGS / "pytest/fail_color.log"), families_for(LOGS / "pytest/x.log")).to_json()
    assert plain == colour
