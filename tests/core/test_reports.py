"""A failed test step's JUnit XML reports (`reports = [...]`, runner/reports.py), read through `runner make`: the
counts and the failing tests (with the message the report gives) come from the reports written by the real tool,
ahead of the log's text; a report is read only where the step declares it, inside the project, and only when this
run wrote it; a damaged one is named with what is wrong with it, never a crash."""

from __future__ import annotations

import os
import sys
import time

TESTS = "def test_adds():\n    assert 1 + 1 == 3, 'one and one'\n\n\ndef test_subtracts():\n    pass\n"


def _pytest_step(project, run_extra: str = "", reports: str = '["build/junit.xml"]') -> None:
    project.spec(f"""
        [intent.tests]
        run = "{sys.executable} -m pytest -q -p no:cacheprovider --junitxml=build/junit.xml test_calc.py{run_extra}"
        inputs = ["test_calc.py"]
        reports = {reports}
    """)
    project.write("test_calc.py", TESTS)


def _failed(result) -> dict:
    return next(e for e in result.events() if e.get("status") == "failed")


def test_pytests_junit_report_gives_the_counts_and_the_failing_test_with_its_message(project):
    _pytest_step(project)
    shown = project.run("make", "tests")
    assert shown.code == 1, shown.err
    block = shown.err[shown.err.index("FAILED tests") :].splitlines()
    # pytest's own id, as its FAILED line prints it and `pytest ID` takes it (the report says `test_calc`)
    assert block[1:3] == ["  failing tests (1):", "    test_calc.py::test_adds: AssertionError: one and one"]
    assert "  counts and failing tests from 1 JUnit report(s): build/junit.xml" in block
    failed = _failed(project.make("tests"))
    found = failed["findings"]
    assert found["summary"] == {"passed": 1, "failed": 1, "skipped": 0, "errors": 0, "total": 2}
    assert found["failed_tests"] == ["test_calc.py::test_adds"]
    assert found["reports"]["files"] == ["build/junit.xml"]
    assert found["reports"]["failures"][0]["message"].startswith("AssertionError: one and one")


def test_a_report_left_by_an_earlier_run_is_not_read(project):
    _pytest_step(project)
    assert project.run("make", "tests").code == 1
    old = time.time() - 3600
    os.utime(project.root / "build" / "junit.xml", (old, old))
    # the step now fails before pytest writes anything: the report on disk is the earlier run's
    project.spec("""
        [intent.tests]
        run = "echo 'collecting...'; exit 3"
        inputs = ["test_calc.py"]
        reports = ["build/junit.xml"]
    """)
    failed = _failed(project.make("tests"))
    assert "reports" not in (failed.get("findings") or {}), failed
    assert (failed.get("findings") or {}).get("failed_tests", []) == []


def test_a_damaged_report_is_named_with_what_is_wrong_and_the_log_is_read_instead(project):
    project.spec("""
        [intent.tests]
        run = "mkdir -p build; printf '<testsuite><testcase name=' > build/junit.xml; echo '1 failed in 0.01s'; exit 1"
        reports = ["build/junit.xml"]
    """)
    shown = project.run("make", "tests")
    assert shown.code == 1, shown.err
    assert "Traceback" not in shown.err
    assert (
        "  report build/junit.xml: not well-formed XML (unclosed token: line 1, column 11); its counts are not used"
        in shown.err.splitlines()
    )
    found = _failed(project.make("tests"))["findings"]
    assert found["reports"]["problems"] and "files" in found["reports"] and not found["reports"]["files"]


def test_a_report_outside_the_project_is_not_read(project, tmp_path):
    outside = tmp_path / "elsewhere.xml"
    outside.write_text(
        '<testsuite><testcase classname="x" name="planted"><failure message="no"/></testcase></testsuite>'
    )
    project.spec(f"""
        [intent.tests]
        run = "mkdir -p build && ln -sf {outside} build/junit.xml && touch {outside} && echo failed && exit 1"
        reports = ["build/junit.xml"]
    """)
    found = _failed(project.make("tests"))["findings"]
    assert found["failed_tests"] == []
    assert found["reports"]["problems"] == [f"build/junit.xml: points outside the project ({outside}); not read"]


def test_reports_is_checked_as_a_path_of_the_project(project):
    project.spec("""
        [intent.tests]
        run = "true"
        reports = ["../elsewhere/*.xml"]
    """)
    shown = project.run("validate")
    assert shown.code == 2
    assert "intent.tests.reports[0]: path '../elsewhere/*.xml' must not leave the project root ('..')" in shown.err


def test_a_pytest_report_names_a_test_in_a_class_of_a_package_by_pytests_node_id(project):
    # the report's classname is `tests.unit.test_calc.TestCalc`: where the module ends is found on disk
    project.spec(f"""
        [intent.tests]
        run = "{sys.executable} -m pytest -q -p no:cacheprovider --junitxml=build/junit.xml tests"
        inputs = ["tests/unit/test_calc.py"]
        reports = ["build/junit.xml"]
    """)
    project.write("tests/__init__.py", "")
    project.write("tests/unit/__init__.py", "")
    project.write(
        "tests/unit/test_calc.py",
        "import pytest\n\n\nclass TestCalc:\n"
        "    @pytest.mark.parametrize('n', [1, 2])\n"
        "    def test_adds(self, n):\n        assert n == 1\n",
    )
    found = _failed(project.make("tests"))["findings"]
    assert found["failed_tests"] == ["tests/unit/test_calc.py::TestCalc::test_adds[2]"]
    assert found["summary"]["passed"] == 1


def test_a_step_that_prints_nothing_is_read_from_its_reports(project):
    # pytest with its output sent away: the report alone holds the failure
    _pytest_step(project, run_extra=" > /dev/null 2>&1")
    shown = project.run("make", "tests")
    assert shown.code == 1, shown.err
    block = shown.err[shown.err.index("FAILED tests") :].splitlines()
    assert block[1:3] == ["  failing tests (1):", "    test_calc.py::test_adds: AssertionError: one and one"]
    found = _failed(project.make("tests"))["findings"]
    assert found["summary"] == {"passed": 1, "failed": 1, "skipped": 0, "errors": 0, "total": 2}


def test_node_tests_junit_report_counts_a_top_level_test_and_one_inside_a_describe(project):
    """node's JUnit reporter writes a test outside any `describe` straight under <testsuites>, with no <testsuite>
    around it: each such test is counted and named as one inside a suite is (a failing one was read as 0 failed)."""
    project.spec("""
        [intent.tests]
        run = "mkdir -p build && node --test --test-reporter=junit --test-reporter-destination=build/junit.xml *.mjs"
        inputs = ["calc.test.mjs"]
        reports = ["build/junit.xml"]
    """)
    project.write(
        "calc.test.mjs",
        "import test, { describe } from 'node:test';\n"
        "import assert from 'node:assert';\n"
        "test('adds', () => { assert.strictEqual(1 + 1, 3); });\n"
        "test('subtracts', () => {});\n"
        "describe('calc', () => { test('multiplies', () => { assert.strictEqual(2 * 2, 5); }); });\n",
    )
    found = _failed(project.make("tests"))["findings"]
    assert found["summary"] == {"passed": 1, "failed": 2, "skipped": 0, "errors": 0, "total": 3}
    assert sorted(found["failed_tests"]) == ["test.adds", "test.multiplies"]  # node's classname is "test"
