"""Real logs of the corpus's tuning part (tests/parse/real/) read through `runner parse`, one test per defect of
issue 37: a failing test is a test id the tool printed for a failure, a count is the tool's, a run whose summary
says nothing failed names no failing test, a multi-line diagnostic keeps its file, and a log names its test runner
by what it printed (`npm test`, a plain run line, a saved file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REAL = Path(__file__).parent / "real"


def parse(log: str, *flags: str, cwd: Path = REAL) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "runner", "parse", str(REAL / log), "--json", *flags],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def plain(log: str, *flags: str, cwd: Path = REAL) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "runner", "parse", str(REAL / log), *flags],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_surefire_3_0_0_m_names_its_failing_test_by_class_and_method_and_passed_is_derived(tmp_path):
    # `[ERROR] com.x.T.test_UUID  Time elapsed: 0.006 s  <<< FAILURE!`, in a GitHub Actions log (timestamped lines)
    found = parse("surefire/bs__fastjson2_m6.log", "--adapter", "maven", "--command", "test", cwd=tmp_path)
    assert found["failed_tests"] == ["com.alibaba.fastjson2.JSONReaderStrTest.test_UUID"]
    # Surefire prints `Tests run: 2731, Failures: 1, Errors: 0, Skipped: 0`: passed is what is left
    assert found["summary"] == {"passed": 2730, "failed": 1, "skipped": 0, "errors": 0, "total": 2731}


def test_a_passing_jest_run_names_no_failing_test_for_its_console_blocks(tmp_path):
    found = parse("jest/bs__ncc_console.log", "--adapter", "node", "--command", "test", "--variant", "jest-script")
    assert found["failed_tests"] == []  # `● Console` heads console.log output, `●  process.exit called` too
    assert (found["summary"]["passed"], found["summary"]["failed"]) == (118, 0)


def test_pytest_ra_skip_lines_are_no_failure_locations():
    found = parse("pytest/rec__moreit_pytest_ra.log", "--adapter", "python", "--command", "test")
    assert not [d for d in found["diagnostics"] if "SKIPPED" in str(d["file"])]
    assert found["failed_tests"] == []


def test_pytest_collection_errors_are_reported_under_their_module_paths():
    found = parse("pytest/rec__packaging_pytest_ra.log", "--adapter", "python", "--command", "test")
    assert found["failed_tests"][:2] == ["tests/test_elffile.py", "tests/test_manylinux.py"]
    assert len(found["failed_tests"]) == found["summary"]["errors"] == 8


def test_tape_names_the_failing_test_above_its_assertions_read_with_no_flags():
    # no --adapter, no --family: the TAP lines say it is tape's output
    found = parse("tape/rec__minimist_tape_fail.log")
    assert found["failed_tests"] == ["flag boolean default false", "boolean groups"]  # not "should be deeply ..."
    assert (found["summary"]["passed"], found["summary"]["failed"]) == (151, 2)
    assert plain("tape/rec__minimist_tape_fail.log").splitlines()[0] == (
        "parsed with tap, diagnostics, causes (generic: no --adapter/--command or --family)"
    )


def test_eslint_stylish_findings_keep_the_file_named_on_the_line_above_them():
    found = parse("eslint/rec__minimist_eslint_stylish.log", "--adapter", "node", "--command", "lint")
    errors = [d for d in found["diagnostics"] if d.get("severity") == "error"]
    assert errors == [
        {
            "file": "/tmp/mm/package/index.js",
            "line": 14,
            "column": 6,
            "message": "'spare' is defined but never used",
            "severity": "error",
            "code": "no-unused-vars",
        }
    ]
    assert found["diagnostics"][0]["file"] == "/tmp/mm/package/example/parse.js"  # each under its own file


def test_jest_through_npm_test_is_read_as_jest_without_a_variant(tmp_path):
    # `npm test` in a folder with no package.json: the node adapter's base test command names no test runner
    log = "jest/dgm__javascript__binary.log"
    found = parse(log, "--adapter", "node", "--command", "test", cwd=tmp_path)
    assert found["failed_tests"] == ["binary › invalid inputs are null"]
    assert (found["summary"]["passed"], found["summary"]["failed"]) == (9, 1)
    head = plain(log, "--adapter", "node", "--command", "test", cwd=tmp_path).splitlines()[0]
    assert head == "parsed with jest, diagnostics, causes (adapter node, command test: npm test)"


def test_a_go_build_failure_counts_no_test_as_failed():
    found = parse("gotest/gjr__102-broken.log", "--adapter", "go", "--command", "test")
    assert found["summary"]["failed"] is None and found["summary"]["passed"] is None
    assert found["failed_tests"] == []


def test_a_test_binary_that_overflowed_its_stack_names_that_test_and_keeps_the_counts_it_printed():
    found = parse("cargo/dgm__rust__forth.log", "--adapter", "rust", "--command", "test")
    assert found["failed_tests"][-1] == "user_defined_words::can_define_word_that_uses_word_with_the_same_name"
    # the first binaries' `test result:` lines, then the crashed one's own result lines
    assert (found["summary"]["passed"], found["summary"]["failed"]) == (44, 5)


def test_a_family_given_by_name_is_the_users_whole_choice():
    found = parse("tape/rec__minimist_tape_fail.log", "--family", "diagnostics")
    assert found["failed_tests"] == [] and found["summary"]["failed"] is None


def shown(found: dict) -> set[int]:
    return {k for a, b in found["excerpt"] for k in range(a, b + 1)}


def test_the_excerpt_shows_what_the_tail_shows_of_the_failure():
    # go's race detector prints `WARNING: DATA RACE` and both writes' frames, with no error word: the test's
    # `--- FAIL` line leads the excerpt, and the budget left goes to the log's end, where the race is
    found = parse("gotest/gjr__017-race.log", "--adapter", "go", "--command", "test")
    assert {4, 5, 6, 7, 9, 10, 11, 40, 45} <= shown(found)
    # rubocop: no family; the closing count, with no error word, is the log's last line
    found = parse("rubocop/am__rubocop.log")
    assert 20 in shown(found)


def test_a_go_json_run_whose_last_package_has_no_test_files_is_complete():
    # `go test -json container/list unsafe`: unsafe's closing event is a package `skip`
    found = parse("gotest/rec__golist_unsafe_json.log", "--adapter", "go", "--command", "test")
    assert found["complete"] is True
    assert found["summary"] == {"passed": 11, "failed": 0, "skipped": 0, "errors": None}


def test_a_go_test_binary_that_a_panic_cut_off_counts_the_results_it_printed():
    # TestRemove panics: go prints its `--- FAIL`, the trace and the package's FAIL; no later test ran
    for log in ("gotest/rec__golist_panic_json.log", "gotest/rec__golist_panic_v.log"):
        found = parse(log, "--adapter", "go", "--command", "test")
        assert found["failed_tests"] == ["TestRemove"]
        assert found["summary"] == {"passed": 2, "failed": 1, "skipped": 0, "errors": None}, log
    # a panic before any test ran (in the package's init) says nothing of the counts
    found = parse("gotest/gjr__105-panic.log", "--adapter", "go", "--command", "test")
    assert found["summary"] == {"passed": None, "failed": None, "skipped": None, "errors": None}


def test_minitest_names_each_failure_and_error_by_class_and_test_and_passed_is_derived():
    # minitest's own suite on Ruby 3.1, read with no flags: `82 runs, ..., 2 failures, 0 errors, 10 skips`
    found = parse("minitest/rec__minitest_mock.log")
    assert found["failed_tests"] == [
        "TestMinitestStub#test_stub_value_block_args_5__break_if_not_passed",  # under `1) Failure:`, with [file:line]
        "TestMinitestMock#test_no_method_error_on_unexpected_methods",
    ]
    assert found["summary"] == {"passed": 70, "failed": 2, "skipped": 10, "errors": 0, "total": 82}
    found = parse("minitest/rec__minitest_error.log")
    assert found["failed_tests"] == ["TestMinitestBenchmark#test_cls_bench_linear"]  # under `1) Error:`
    assert found["summary"] == {"passed": 173, "failed": 0, "skipped": 0, "errors": 1, "total": 174}
    assert plain("minitest/rec__minitest_error.log").splitlines()[0] == (
        "parsed with minitest, diagnostics, causes (generic: no --adapter/--command or --family)"
    )


def test_rspec_names_each_failing_example_by_its_description_and_passed_is_derived():
    found = parse("rspec/rec__ttycolor_rspec_ids.log")
    assert found["failed_tests"] == [
        "TTY::Color integratation defaults verbose mode to false",
        "TTY::Color integratation checks unknown command without raising errors and returns false",
        # its rerun line names it by id (mode_spec.rb[1:4:25]): one line of the spec made many examples
        'TTY::Color::Mode detecting mode #from_term infers "dummy" to have 1 colors',
    ]
    # `60 examples, 3 failures`: no pending printed, none pending; RSpec has no errors apart from its failures
    assert found["summary"] == {"passed": 57, "failed": 3, "skipped": 0, "errors": None, "total": 60}


def test_playwright_names_the_tests_listed_under_its_failed_count():
    # the project `npm init playwright` makes, run by CI before `npx playwright install`: every launch fails
    found = parse("playwright/rec__pwinit_list.log")
    assert found["failed_tests"] == [
        "[chromium] › tests/example.spec.ts:3:1 › has title",
        "[chromium] › tests/example.spec.ts:10:1 › get started link",
    ]
    assert found["summary"] == {"passed": 0, "failed": 2, "skipped": 0, "errors": None, "total": 2}


def test_a_go_json_package_whose_test_binary_did_not_build_ran_no_test():
    # Go 1.27: `build-output` and `build-fail` events, then the package's fail event with `FailedBuild`
    for log in ("gotest/rec__go127list_build_json.log", "gotest/rec__go127list_setup_json.log"):
        found = parse(log, "--adapter", "go", "--command", "test")
        assert found["summary"] == {"passed": None, "failed": None, "skipped": None, "errors": None}, log
        assert found["failed_tests"] == []


def test_minitest_reporters_unnumbered_headers_and_tests_wording_are_read():
    # minitest-reporters' default reporter: `Error:` unnumbered, `14 tests, 35 assertions, ...`
    found = parse("minitest/rec__minitest_reporters.log")
    assert found["failed_tests"] == ["Minitest::Result#test_cls_bench_linear"]  # as this reporter names it
    assert found["summary"] == {"passed": 13, "failed": 0, "skipped": 0, "errors": 1, "total": 14}


def test_a_test_whose_goroutine_panicked_is_the_failing_test_though_go_printed_no_result_for_it():
    # a panic in a goroutine TestRemove started kills the binary: no `--- FAIL` line, no fail event, only the
    # package's FAIL; the test go announced last (`=== RUN`, a run event) is the one the crash cut off
    for log in (
        "gotest/rec__golist_goroutine_json.log",  # Go 1.19
        "gotest/rec__go127list_goroutine_json.log",  # Go 1.27
        "gotest/rec__go127list_goroutine_v.log",
    ):
        found = parse(log, "--adapter", "go", "--command", "test")
        assert found["failed_tests"] == ["TestRemove"], log
        assert found["summary"] == {"passed": 2, "failed": 1, "skipped": 0, "errors": None}, log
    # a panic testing caught names its test as it always did, once: the fail event comes after the trace
    found = parse("gotest/rec__golist_panic_json.log", "--adapter", "go", "--command", "test")
    assert found["failed_tests"] == ["TestRemove"]


def test_an_rspec_example_that_failed_more_than_once_is_named_by_its_header():
    # aggregate_failures: RSpec prints `Got 1 failure and 1 other error:` under the header, not `Failure/Error:`
    found = parse("rspec/rec__ttycolor_rspec_aggregate.log")
    assert found["failed_tests"] == [
        "TTY::Color integratation defaults verbose mode to false",
        "TTY::Color integratation accesses disabled support",
    ]
    assert found["summary"] == {"passed": 58, "failed": 2, "skipped": 0, "errors": None, "total": 60}


def test_catch2s_automake_reporter_names_each_failing_test_case_and_counts_its_lines():
    # `--reporter automake`: a `:test-result: PASS|FAIL name` line per test case and nothing else, read with no flags
    found = parse("catch2/rec__roman_automake.log")
    assert found["failed_tests"] == [
        "4_is_iv",
        "9_is_ix",
        "49_is_xlix",
        "59_is_lix",
        "1024_is_mxxiv",
        "3999_is_mmmcmxcix",
    ]
    assert found["summary"] == {"passed": 21, "failed": 6, "skipped": 0, "errors": None}
    found = parse("catch2/rec__roman_automake_pass.log")
    assert (found["failed_tests"], found["summary"]["passed"], found["summary"]["failed"]) == ([], 27, 0)


def test_unittest_names_the_test_of_each_failing_subtest_once_and_counts_every_subtest():
    # `FAIL: test_basic (test_recipes.GrouperTests.test_basic) (n=4)`, three times for test_basic, three for test_fill
    found = parse("unittest/rec__moreit_unittest_subtests.log")
    assert found["failed_tests"] == [
        "test_basic (test_recipes.GrouperTests.test_basic)",
        "test_fill (test_recipes.GrouperTests.test_fill)",
        "grouper (more_itertools.recipes)",  # a doctest
    ]
    # `Ran 774 tests` / `FAILED (failures=7, skipped=1)`: unittest counts each failing subtest as a failure
    assert found["summary"] == {"passed": 766, "failed": 7, "skipped": 1, "errors": 0, "total": 774}


def test_ruffs_and_mypys_closing_counts_are_lint_and_type_check_findings_not_compile_errors():
    # ruff: `Found 96 errors.` (then `[*] 32 fixable with --fix ...`); mypy: `Found 17 errors in 5 files (checked ...)`
    assert parse("ruff/rec__toolz_ruff.log")["cause"] == "lint findings: 96 errors"
    assert parse("mypy/rec__toolz_mypy.log")["cause"] == "type-check findings: 17 errors in 5 files"
    assert "cause: type-check findings: 17 errors in 5 files" in plain("mypy/rec__toolz_mypy.log").splitlines()


def test_ruffs_full_output_names_each_finding_by_the_arrow_line_under_its_code():
    # ruff's default output: `F401 `functools.partial` imported but unused`, then `  --> toolz/__init__.py:9:23`
    found = parse("ruff/rec__toolz_ruff.log")
    assert len(found["diagnostics"]) == 96  # `Found 96 errors.`
    assert found["diagnostics"][1] == {
        "file": "toolz/__init__.py",
        "line": 9,
        "column": 23,
        "message": "`functools.partial` imported but unused",
        "code": "F401",
    }


def test_buildkites_timestamp_on_each_line_is_read_past(tmp_path):
    # Buildkite's agent writes each line after an APC escape, `ESC _bk;t=<epoch ms> BEL` (its log format, as the
    # buildkite-logs parsers read it); a log stamped so reads as the same log without the stamps
    bare = (REAL / "playwright/rec__pwinit_list.log").read_text()
    stamped = tmp_path / "buildkite.log"
    stamped.write_text(
        "".join(f"\x1b_bk;t={1745322209921 + n}\x07{line}" for n, line in enumerate(bare.splitlines(True)))
    )
    found = parse(str(stamped))
    assert found["failed_tests"] == parse("playwright/rec__pwinit_list.log")["failed_tests"] != []
    assert found["summary"] == {"passed": 0, "failed": 2, "skipped": 0, "errors": None, "total": 2}


def test_a_passing_tests_line_leads_no_excerpt_whatever_its_docstring_says():
    # unittest -v prints a test's docstring as its result line: "Test that a negative ``n`` raises a clear
    # ``ValueError``, matching ... ok" holds error words, and once led the excerpt an agent's retry prompt quotes
    found = parse("unittest/rec__moreit_unittest_v_fail.log")
    log = (REAL / "unittest/rec__moreit_unittest_v_fail.log").read_text().splitlines()
    tail = set(range(min(b for _a, b in found["excerpt"][-1:]) - 59, len(log) + 1))
    leads = [log[k - 1] for k in sorted(shown(found) - tail)]
    assert leads == [
        "test_bad_size (tests.test_agent_chunked.ChunkedEdgeTests.test_bad_size) ... FAIL",
        "test_empty (tests.test_agent_chunked.ChunkedEdgeTests.test_empty) ... FAIL",
    ]
    assert {1225, 1230, 1233, 1239, 1242, 1244} <= shown(found)  # both FAIL blocks with their assertions, the counts


def test_catch2s_automake_lines_are_read_after_the_tests_own_output_on_the_same_line():
    # the code under test printed `lengths differ: 0 vs 1` with no newline: the reporter's line follows it
    found = parse("catch2/rec__hamming_automake_stdout.log")
    assert found["failed_tests"] == ["disallow empty first strand"]
    assert found["summary"] == {"passed": 8, "failed": 1, "skipped": 0, "errors": None}
    assert found["complete"] is True


def test_a_test_binary_that_died_before_any_test_printed_a_result_names_the_test_and_no_count():
    # TestList, the first test, starts a goroutine that panics: the binary dies before any result is printed, so
    # the log gives no count; the test go announced is the one the crash cut off
    for log in ("gotest/rec__golist_first_goroutine_json.log", "gotest/rec__golist_first_goroutine_v.log"):
        found = parse(log, "--adapter", "go", "--command", "test")
        assert found["failed_tests"] == ["TestList"], log
        assert found["summary"] == {"passed": None, "failed": None, "skipped": None, "errors": None}, log


def test_a_go_1_13_json_run_that_a_panic_ended_is_finished_when_the_tests_fail_event_closes_it():
    # before Go 1.14, test2json gave the go command's `FAIL pkg 0.071s` line and the package's fail event to the
    # test that panicked: the log ends with that test's fail event, no package event after it
    found = parse("gotest/tsgtp__single_panic.log", "--adapter", "go", "--command", "test")
    assert found["complete"] is True
    assert found["failed_tests"] == ["TestAccAzureRMResourceGroup_basic"]
    assert found["summary"] == {"passed": 0, "failed": 1, "skipped": 0, "errors": None}
