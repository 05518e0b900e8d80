"""A failed step, as `runner make` shows it: what the runner understood (failing tests, file:line locations, the
cause), then the excerpt of its log, then the log's path on a line of its own; in --json the same as fields
of the step's event. The excerpt weighs the lines that are new since the same step last passed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

NOISE = "".join(f"echo 'unit {i} compiled'; " for i in range(30))
# what a build goes on printing after its error: more than the excerpt's 60 lines, whose budget left after the
# error's block goes to the log's last lines (what a plain tail shows is never lost)
AFTER = "".join(f"echo 'unit {i} linked'; " for i in range(70))


def test_a_failure_leads_with_findings_then_the_excerpt_then_the_whole_log_path(project):
    # a deep project folder: the log's path is long, and must still be printed whole, on one line
    project.root = project.root / ("a-rather-long-folder-name-" * 4).rstrip("-") / "and-deeper-still"
    project.spec(f"""
        [intent.build]
        run = "{NOISE} echo 'main.c:3:5: error: expected semicolon before return' >&2; {AFTER} exit 2"
        inputs = ["x"]
    """)
    project.write("x", "1")
    plain = project.run("make", "build")
    assert plain.code == 1
    err = plain.err.splitlines()
    start = err.index("FAILED build: command exited with code 2")
    block = err[start:]
    assert block[1:3] == ["  errors (1):", "    main.c:3:5: expected semicolon before return"]
    assert block[3] == "  the log's lines that explain it (60 of 102):"
    assert block[4:7] == [
        "     32  main.c:3:5: error: expected semicolon before return",
        "    ...",
        "     44  unit 11 linked",
    ]
    assert block[64] == "    102  unit 69 linked"  # the log's last line, as the tail shows it
    log = project.root / ".runner" / "runs"
    (run_dir,) = log.iterdir()
    path = run_dir / "logs" / "build.log"
    assert block[65] == f"  log: {path}"  # whole, after the excerpt, never wrapped
    assert len(block[65]) > 120
    assert "unit 29 compiled" not in plain.err  # the noise before the error is not shown
    assert "unit 10 linked" not in plain.err  # nor that after it, beyond the budget

    as_json = project.make("build")
    failed = next(e for e in as_json.events() if e.get("status") == "failed")
    assert failed["excerpt"] == [[32, 32], [44, 102]]
    assert failed["findings"]["diagnostics"][0]["file"] == "main.c"
    assert failed["findings"]["diagnostics"][0]["line"] == 3


def test_an_adapter_command_is_read_with_its_families(project):
    project.write("adapters/local.toml", 'name = "local"\n[commands.test]\nrun = "sh tests.sh"\nparse = ["pytest"]\n')
    project.spec("""
        [intent.tests]
        adapter = "local"
        run = "test"
        inputs = ["tests.sh"]
    """)
    project.write(
        "tests.sh",
        "echo 'FAILED tests/test_a.py::test_one - assert 1 == 2'\n"
        "echo '==== 1 failed, 3 passed in 0.10s ===='\n"
        "exit 1\n",
    )
    plain = project.run("make", "tests")
    assert plain.code == 1, plain.err
    assert "  failing tests (1):\n    tests/test_a.py::test_one\n" in plain.err
    failed = next(e for e in project.make("tests").events() if e.get("status") == "failed")
    assert failed["findings"]["summary"] == {"passed": 3, "failed": 1, "skipped": 0, "errors": 0}
    assert failed["findings"]["complete"] is True


def test_lines_new_since_the_step_last_passed_are_the_excerpt(project):
    # no error word anywhere: only the diff against the last passing log of the same step can tell
    check = 'for i in $(seq 1 40); do echo "row $i checked"; done; ' + "echo 'total: 41 rows'; " + NOISE
    project.spec("""
        [intent.report]
        run = "sh -c \\"$(cat cmd)\\""
        inputs = ["cmd"]
    """)
    project.write("cmd", check + "exit 0")
    assert project.make("report").code == 0
    project.write("cmd", check.replace("total: 41 rows", "total: 40 rows (row 17 was dropped)") + "exit 1")
    failed = next(e for e in project.make("report").events() if e.get("status") == "failed")
    lines = (project.root / failed["log"]).read_text().splitlines()
    shown = [lines[k - 1] for a, b in failed["excerpt"] for k in range(a, b + 1)]
    assert shown == ["total: 40 rows (row 17 was dropped)"]


def test_without_a_passing_run_the_same_failure_falls_back_to_the_end_of_the_log(project):
    project.spec("""
        [intent.report]
        run = "for i in $(seq 1 40); do echo \\"row $i checked\\"; done; echo 'total: 40 rows'; exit 1"
        inputs = ["x"]
    """)
    project.write("x", "1")
    failed = next(e for e in project.make("report").events() if e.get("status") == "failed")
    # no error word: the window at the log's end, as much as the budget holds (the first line is the command)
    assert failed["excerpt"] == [[2, 42]]
    assert json.dumps(failed)  # and the event stays plain JSON


def test_a_plain_run_line_is_read_by_the_test_runner_its_log_shows(project):
    # adapter = "python" with a run line of its own (not one of the adapter's commands): no family is named, and
    # pytest's banner and closing line say whose output it is
    project.spec(f"""
        [intent.tests]
        adapter = "python"
        run = "{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
        inputs = ["test_calc.py"]
    """)
    project.write("test_calc.py", "def test_adds():\n    assert 1 + 1 == 3\n\n\ndef test_subtracts():\n    pass\n")
    shown = project.run("make", "tests")
    assert shown.code == 1, shown.err
    assert "  failing tests (1):\n    test_calc.py::test_adds\n" in shown.err
    failed = next(e for e in project.make("tests").events() if e.get("status") == "failed")
    assert failed["findings"]["summary"] == {"passed": 1, "failed": 1, "skipped": 0, "errors": 0}
    assert failed["findings"]["failed_tests"] == ["test_calc.py::test_adds"]


def test_a_linters_warnings_before_failing_tests_are_counted_not_listed(project, tmp_path):
    # npm test runs the project's lint first (pretest): its warnings say nothing of why the tests failed
    stylish = Path(__file__).parents[1] / "parse" / "real" / "eslint" / "rec__minimist_eslint_stylish.log"
    warnings = "".join(line for line in stylish.read_text().splitlines(keepends=True) if "error" not in line)
    project.write("lint.log", warnings)
    project.spec("""
        [intent.tests]
        run = "cat lint.log; echo 'FAILED tests/test_a.py::test_one - assert 1 == 2'; echo '1 failed in 0.10s'; exit 1"
        inputs = ["lint.log"]
    """)
    shown = project.run("make", "tests")
    assert shown.code == 1, shown.err
    block = shown.err[shown.err.index("FAILED tests") :].splitlines()
    assert block[1:4] == ["  failing tests (1):", "    tests/test_a.py::test_one", "  (53 warnings besides)"]


def _export_tests(passing: int) -> str:
    """A module of tests that log a caught exception on their way to passing (an exporter's retry), one of which
    then fails: pytest's live logs print each traceback above the test's result."""
    body = [
        "import logging\n\nlog = logging.getLogger('app.export')\n\n\ndef _export(why):\n    raise RuntimeError(why)\n"
    ]
    for k in range(passing):
        body.append(
            f"\n\ndef test_export_{k}():\n    try:\n        _export('Export failed')\n    except RuntimeError:\n"
            "        log.exception('Exception while exporting logs.')\n"
        )
        if k == passing // 2:
            body.append(
                "\n\ndef test_retry_gives_up():\n    attempts = 2\n    try:\n        _export('Retry budget spent')\n"
                "    except RuntimeError:\n        log.exception('Exception while retrying.')\n"
                "    assert attempts == 3\n"
            )
    return "".join(body)


def test_pytest_live_logs_of_tests_that_passed_are_not_the_excerpt(project):
    # log_cli = true, as a project's pytest config sets it: every passing test's caught and logged traceback is in
    # the log, above its PASSED; what explains the run is the test that failed (its live log included)
    project.write("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-rs -v"\nlog_cli = true\n')
    project.write("test_export.py", _export_tests(12))
    project.spec(f"""
        [intent.tests]
        run = "{sys.executable} -m pytest -p no:cacheprovider test_export.py"
        inputs = ["test_export.py", "pyproject.toml"]
    """)
    failed = next(e for e in project.make("tests").events() if e.get("status") == "failed")
    assert failed["findings"]["failed_tests"] == ["test_export.py::test_retry_gives_up"]
    lines = (project.root / failed["log"]).read_text().splitlines()
    shown = [lines[k - 1] for a, b in failed["excerpt"] for k in range(a, b + 1)]
    assert len(lines) > 150  # the passing tests' tracebacks are far from the log's end
    assert "RuntimeError: Export failed" in lines
    assert [line for line in shown if "Export failed" in line or "exporting" in line] == []
    # the failing test's own live log and its result; its report's heading and E line; the closing line
    logged = "ERROR    app.export:test_export.py:64 Exception while retrying."
    assert shown[shown.index(logged) :][:8] == [
        logged,
        "Traceback (most recent call last):",
        '  File "' + str(project.root / "test_export.py") + '", line 62, in test_retry_gives_up',
        "    _export('Retry budget spent')",
        '  File "' + str(project.root / "test_export.py") + '", line 7, in _export',
        "    raise RuntimeError(why)",
        "RuntimeError: Retry budget spent",
        "FAILED                                                                   [ 61%]",
    ]
    assert lines.index(logged) < lines.index("test_export.py::test_export_11 ")  # the live log, not the report's
    assert "_____________________________ test_retry_gives_up ______________________________" in shown
    assert "E       assert 2 == 3" in shown
    assert shown[-1].startswith("========================= 1 failed, 12 passed in ")


def test_one_setup_error_every_test_of_a_module_hits_costs_a_few_lines(project):
    # pytest collected benchmarks without pytest-benchmark: each of their tests errors at setup with the same
    # message; the one test that failed is still shown, and the run's closing line
    project.write("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-rs -v"\n')
    project.write("test_bench.py", "".join(f"def test_bench_{k}(benchmark):\n    pass\n\n\n" for k in range(30)))
    project.write("test_total.py", "def test_total():\n    assert sum([1, 2]) == 4\n")
    project.spec(f"""
        [intent.tests]
        run = "{sys.executable} -m pytest -p no:cacheprovider test_bench.py test_total.py"
        inputs = ["test_bench.py", "test_total.py", "pyproject.toml"]
    """)
    failed = next(e for e in project.make("tests").events() if e.get("status") == "failed")
    assert len(failed["findings"]["failed_tests"]) == 31
    lines = (project.root / failed["log"]).read_text().splitlines()
    shown = [lines[k - 1] for a, b in failed["excerpt"] for k in range(a, b + 1)]
    assert len(lines) > 250
    assert lines.count("E       fixture 'benchmark' not found") == 30
    first = lines.index("________________________ ERROR at setup of test_bench_0 ________________________")
    assert shown[shown.index(lines[first]) :][:3] == [
        "________________________ ERROR at setup of test_bench_0 ________________________",
        "  def test_bench_0(benchmark):",  # the line above the E line ("file test_bench.py, line 1" is left out)
        "E       fixture 'benchmark' not found",
    ]
    assert sum(line.startswith("test_bench.py::test_bench_") for line in shown) == 2  # `... ERROR [ 3%]`
    assert "E       assert 3 == 4" in shown
    assert shown[-1].startswith("========================= 1 failed, 30 errors in ")
