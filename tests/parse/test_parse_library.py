"""Loading, validating and overriding the regex library; findings assembly."""

import textwrap

import pytest
import re2

from runner.errors import SpecError, UserError
from runner.findings import clean_log, parse_findings, render_findings
from runner.parse import Family, Pattern, builtin_dir, check_examples, load_library
from runner.redos import check_redos

LIB = load_library([builtin_dir()])
SHIPPED = [
    "protocol",
    "pytest",
    "gotest",
    "cargo",
    "jest",
    "vitest",
    "tap",
    "surefire",
    "gradle",
    "codex",
    "diagnostics",
    "causes",
]


def write(dir_, name, body):
    dir_.mkdir(parents=True, exist_ok=True)
    (dir_ / f"{name}.toml").write_text(textwrap.dedent(body), "utf-8")
    return dir_


def test_every_issue_family_ships():
    assert set(SHIPPED) <= set(LIB.families)


def test_every_shipped_example_matches_and_every_counterexample_does_not():
    assert [p.render() for p in check_examples(LIB)] == []


def test_every_shipped_pattern_compiles_under_re2_and_has_examples():
    options = re2.Options()
    options.log_errors = False
    for fam in LIB.families.values():
        for p in fam.patterns:
            re2.compile(p.full_regex, options)
            assert check_redos(p.regex) is None, (fam.name, p.name)
            assert p.examples, f"{fam.name}/{p.name} has no example"


def test_catastrophic_pattern_is_refused_with_file_pattern_and_reason(tmp_path):
    d = write(
        tmp_path / "regexes",
        "mine",
        """\
        family = "mine"
        [[pattern]]
        name = "words-then-colon"
        regex = '^(\\w+\\s?)+:'
        kind = "event"
        """,
    )
    with pytest.raises(SpecError) as err:
        load_library([d])
    [problem] = err.value.problems
    assert problem.path == "pattern[0].regex" and problem.line == 4
    assert problem.file.endswith("mine.toml")
    assert problem.message == (
        "pattern 'words-then-colon' refused: the group '(\\\\w+\\\\s?)+' repeats without bound a part that itself "
        "repeats without bound (star height 2); that backtracks catastrophically in any backtracking engine "
        "(exponential time on a line that almost matches). Rewrite it without nested repetition, "
        "e.g. (\\w+\\s?)+ as [\\w\\s]+"
    )
    assert "mine.toml:4: pattern[0].regex: pattern 'words-then-colon' refused" in str(err.value)


@pytest.mark.parametrize(
    "regex", ["(a+)+$", "^(\\s*\\S+\\s*)+ERROR$", "(x+x+)+y", "(?:a*b?)*c", "((ab)+c)+", "(a+){2,}"]
)
def test_nested_unbounded_repetition_is_detected(regex):
    assert check_redos(regex)


@pytest.mark.parametrize(
    "regex",
    [
        "(\\d|\\d\\d)+x",
        "(?:\\d{1,3}\\.){3}\\d{1,3}",
        "[a+]+",
        '(?:[^"\\\\]|\\\\.)*',
        "\\(a+\\)+",
        "(?P<n>\\w+) (?i:x)+",
        "a{2}+",
    ],
)
def test_linear_or_bounded_patterns_are_allowed(regex):
    assert check_redos(regex) is None


def test_re2_rejections_carry_re2s_error_and_a_hint(tmp_path):
    d = write(
        tmp_path / "r",
        "bad",
        """\
        family = "bad"
        [[pattern]]
        name = "lookahead"
        regex = 'foo(?=bar)'
        kind = "event"
        [[pattern]]
        name = "backref"
        regex = '(a)\\1'
        kind = "event"
        """,
    )
    with pytest.raises(SpecError) as err:
        load_library([d])
    msgs = [p.message for p in err.value.problems]
    assert "invalid perl operator: (?=" in msgs[0] and "no lookahead" in msgs[0]
    assert "invalid escape sequence: \\1" in msgs[1] and "no backreferences" in msgs[1]


def test_schema_errors_and_field_mismatches_are_all_reported(tmp_path):
    d = write(
        tmp_path / "r",
        "x",
        """\
        family = "x"
        [[pattern]]
        name = "a"
        regex = '(?P<n>\\d+)'
        fields = ["count"]
        kind = "summary"
        stage = "live"
        """,
    )
    with pytest.raises(SpecError) as err:
        load_library([d])
    assert any("'live' is not one of" in p.message and p.path == "pattern[0].stage" for p in err.value.problems)


def test_project_overrides_a_builtin_pattern_in_place_and_adds_its_own_first(tmp_path):
    project = write(
        tmp_path / "regexes",
        "pytest",
        """\
        family = "pytest"
        [[pattern]]
        name = "failed-summary-line"
        regex = '^FLAKY (?P<name>\\S+)$'
        fields = ["name"]
        kind = "failed_test"
        [[pattern.example]]
        text = "FLAKY tests/a.py::t"
        expect = { name = "tests/a.py::t" }
        [[pattern]]
        name = "our-summary"
        regex = '^TOTAL (?P<total>\\d+)$'
        fields = ["total"]
        kind = "summary"
        """,
    )
    lib = load_library([builtin_dir(), project])
    names = [p.name for p in lib.family("pytest").patterns]
    builtin_names = [p.name for p in LIB.family("pytest").patterns]
    assert names == ["our-summary"] + builtin_names
    assert lib.family("pytest").pattern("failed-summary-line").regex == "^FLAKY (?P<name>\\S+)$"
    found = parse_findings("FLAKY tests/a.py::t\nFAILED tests/a.py::u - x\nTOTAL 2\n", [lib.family("pytest")])
    assert found.failed_tests == ["tests/a.py::t"] and found.summary["total"] == 2
    assert lib.digest(["pytest"]) != LIB.digest(["pytest"])
    assert lib.digest(["causes"]) == LIB.digest(["causes"])


def test_replace_true_drops_the_builtin_family(tmp_path):
    project = write(
        tmp_path / "regexes",
        "jest",
        """\
        family = "jest"
        replace = true
        [[pattern]]
        name = "only"
        regex = '^ok$'
        kind = "complete"
        """,
    )
    assert [p.name for p in load_library([builtin_dir(), project]).family("jest").patterns] == ["only"]


def test_unknown_family_suggests_the_close_name():
    with pytest.raises(UserError, match=r"unknown regex family 'pytset' \(did you mean 'pytest'\?\)"):
        LIB.family("pytset")


def test_digest_is_stable_and_order_free():
    assert LIB.digest(["pytest", "causes"]) == LIB.digest(["causes", "pytest", "pytest"])
    assert len(LIB.digest(["pytest"])) == 64


def test_stages_shadow_runs_only_when_asked_and_replaces_its_target():
    pats = [
        Pattern("f", "cur", r"^x (?P<n>\d+)$", "summary", fields=("n",)),
        Pattern("f", "cand", r"^x (?P<n>\d+)", "summary", fields=("n",), stage="shadow", replaces="cur"),
        Pattern("f", "old", r"^x", "summary", count="old", stage="retired"),
    ]
    fam = Family("f", pats)
    assert [m.pattern for m in fam.finditer("x 1 \n")] == []
    assert [m.pattern for m in fam.finditer("x 1 \n", stages=("active", "shadow"))] == ["cand"]
    assert [m.pattern for m in fam.finditer("x 1\n", stages=("active", "shadow"))] == ["cand"]


def test_clean_log_strips_colour_and_keeps_the_last_progress_frame():
    raw = "\x1b[32mok\x1b[0m\r\n 10%\r 50%\r100% done\nline\x1b(B\r\n"
    assert clean_log(raw) == "ok\n100% done\nline\n"


def test_counts_are_null_unless_the_log_says_them_and_summaries_sum_across_binaries():
    cargo = [LIB.family("cargo")]
    text = (
        "test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.1s\n"
    )
    assert parse_findings(text, cargo).summary["passed"] == 3
    assert parse_findings("running 2 tests\n", cargo).summary == {
        "passed": None,
        "failed": None,
        "skipped": None,
        "errors": None,
    }


def test_render_findings_for_humans():
    text = "FAILED t.py::a - boom\nt.py:3: AssertionError\n==== 1 failed in 0.1s ====\n"
    out = render_findings(parse_findings(text, [LIB.family("pytest")]))
    assert out.splitlines() == [
        "summary: 0 passed, 1 failed, 0 skipped, 0 errors",  # a complete run: what pytest left out is 0
        "failed tests (1):",
        "  t.py::a",
        "diagnostics (1):",
        "  t.py:3: AssertionError",
    ]


def test_first_cause_pattern_wins_regardless_of_position():
    text = "no tests ran in 0.01s\nERROR: file or directory not found: tests/x.py\n"
    assert parse_findings(text, [LIB.family("causes")]).cause == "wrong working directory: tests/x.py not found"


def test_codex_events():
    events = (
        '{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.started"}\n'
        '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done."}}\n'
        '{"type":"turn.completed","usage":{"input_tokens":1}}\n'
    )
    ms = list(LIB.family("codex").finditer(events))
    assert [(m.pattern, m.fields) for m in ms] == [
        ("event", {"type": "thread.started"}),
        ("event", {"type": "turn.started"}),
        ("item", {"type": "item.completed", "item_type": "agent_message"}),
        ("agent-message", {"message": "Done."}),
        ("event", {"type": "turn.completed"}),
        ("turn-completed", {}),
    ]
    assert parse_findings(events, [LIB.family("codex")]).complete is True


def test_a_test_playwright_lists_under_its_flaky_count_is_no_failing_test():
    log = (
        "Running 3 tests using 1 worker\n"
        "  1 failed\n"
        "    [chromium] › tests/a.spec.ts:3:1 › breaks ──────────\n"
        "  1 flaky\n"
        "    [chromium] › tests/a.spec.ts:9:1 › wobbles ──────────\n"
        "  1 passed (2.1s)\n"
    )
    found = parse_findings(log, [LIB.family("playwright")])
    assert found.failed_tests == ["[chromium] › tests/a.spec.ts:3:1 › breaks"]
    assert (found.summary["failed"], found.summary["passed"]) == (1, 1)
