"""Every recorded tool log parses to exactly its hand-checked expected findings."""

import json
from pathlib import Path

import pytest

from runner.findings import decode_log, parse_findings
from runner.parse import builtin_dir, load_library

LOGS = Path(__file__).parent / "logs"
LIB = load_library([builtin_dir()])
CASES = sorted(LOGS.glob("*/*.log"))
RUNNERS = ("pytest", "gotest", "cargo", "jest", "vitest", "tap", "surefire", "gradle")


def families_for(log: Path):
    return [LIB.family(n) for n in (log.parent.name, "diagnostics", "causes")]


def read(log: Path) -> str:
    return decode_log(log.read_bytes())


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


# each UTF-16 log is its plain sibling as Windows PowerShell's `>` writes it (a BOM, CRLF): same findings
UTF16 = {"pytest": "fail_verbose", "gotest": "fail_verbose", "cargo": "fail", "surefire": "fail", "gradle": "fail"}


@pytest.mark.parametrize("runner", sorted(UTF16))
def test_a_utf16_log_reads_as_its_utf8_original(runner):
    wide = LOGS / runner / ("utf16_fail_verbose.log" if runner in ("pytest", "gotest") else "utf16_fail.log")
    assert wide.read_bytes()[:2] == b"\xff\xfe" and b"\r\x00\n\x00" in wide.read_bytes()
    plain = LOGS / runner / f"{UTF16[runner]}.log"
    assert read(wide).splitlines() == read(plain).splitlines()
    found = parse_findings(read(wide), families_for(wide)).to_json()
    assert found == parse_findings(read(plain), families_for(plain)).to_json()
    assert found["failed_tests"]


def test_a_complete_summary_gives_zero_for_what_it_leaves_out_and_a_cut_off_run_keeps_null():
    def summary(name: str) -> dict:
        return json.loads((LOGS / f"{name}.expected.json").read_text())["summary"]

    # "1 failed, 7 deselected in": pytest names no passed, skipped or errors
    assert summary("pytest/only_failed") | {"deselected": 7} == {
        "passed": 0,
        "failed": 1,
        "skipped": 0,
        "errors": 0,
        "deselected": 7,
    }
    assert summary("gotest/verbose_fail_only") == {"passed": 0, "failed": 1, "skipped": 0, "errors": None}
    assert summary("gotest/fail")["passed"] is None  # without -v, go test prints no line for a passing test
    # `1 tests completed, 1 failed`: the total and every other count printed (Gradle has no errors), passed derived
    assert summary("gradle/only_failed")["skipped"] == 0 and summary("gradle/only_failed")["passed"] == 0
    assert summary("jest/only_failed")["passed"] == 0 and summary("vitest/only_failed")["passed"] == 0
    # cut off: the results it printed, and null for what it cannot tell
    assert summary("pytest/killed_verbose") == {"passed": 3, "failed": 3, "skipped": 1, "errors": 1}
    # Surefire prints the total and every other count: passed is derived (1), even from the class lines of a cut-off run
    assert summary("surefire/killed") == {"passed": 1, "failed": 2, "skipped": 1, "errors": 1, "total": 5}
    assert summary("gotest/timeout")["failed"] is None  # the test binary died: no count is taken for 0
    assert summary("pytest/killed_quiet") == {"passed": None, "failed": None, "skipped": None, "errors": None}
    killed_json = json.loads((LOGS / "gotest/json_killed.expected.json").read_text())
    assert killed_json["complete"] is False and killed_json["summary"]["passed"] == 3


@pytest.mark.parametrize("name", ["fail_color", "fail_color_tty", "quiet_color", "killed_color"])
def test_surefire_colour_inside_counters_and_headers_still_names_the_failing_tests(name):
    log = LOGS / "surefire" / f"{name}.log"
    assert b"\x1b[" in log.read_bytes()
    found = parse_findings(read(log), families_for(log))
    assert found.failed_tests == [
        "com.example.FailingTest.addsTable(int, int, int)[2]",
        "com.example.FailingTest.addsWrong",
        "com.example.FailingTest.dividesByZero",
    ]
    assert (found.summary["failed"], found.summary["errors"], found.summary["skipped"]) == (2, 1, 1)


def test_colour_and_plain_runs_of_the_same_tests_agree():
    plain = parse_findings(read(LOGS / "pytest/fail_default.log"), families_for(LOGS / "pytest/x.log")).to_json()
    colour = parse_findings(read(LOGS / "pytest/fail_color.log"), families_for(LOGS / "pytest/x.log")).to_json()
    assert plain == colour
