"""Issue 38's defects, one test each, through the CLI: a plain shell step learns; a candidate fails a check on
evidence of being wrong; the gate's defaults reach active at a team's pace; induction reads tool output by its
structure; no churn; nothing lost when a pass stops part-way; what learning gained and what comes next, shown.

The tool logs under logs/ are real: `node --test --test-reporter=spec`, `shellcheck` (tty format) and
`python3 -m unittest -v`, recorded here (paths made neutral)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from gate_helpers import FAMILY, Tally
from learn_helpers import tidyq_project

LOGS = Path(__file__).parent / "logs"


def _induce(tally: Tally, log: str, family: str = "tool") -> dict[str, dict]:
    """`runner learn induce LOG --family F --json -n`: the candidates, by name, and nothing written."""
    done = tally.run("learn", "induce", str(LOGS / log), "--family", family, "--json", "--dry-run")
    assert done.returncode == 0, done.stderr
    return {p["name"]: p for p in json.loads(done.stdout)["patterns"] if p["kind"] != "event"}


# ---- 1. every step can learn ---------------------------------------------------------------------------------


def test_a_plain_run_line_gets_a_family_of_its_own_tool_with_its_first_patterns(project):
    tidyq_project(project)  # `plain` runs `python3 tools/tidyq.py notes`, no adapter
    project.spec(
        '[project]\nname = "notes"\n\n[intent.plain]\nrun = "python3 tools/tidyq.py notes"\ninputs = ["notes/*.txt"]\n'
    )
    assert project.make().code == 1
    learned = project.run("learn", "--json")
    assert learned.code == 0, learned.err
    report = json.loads(learned.out)
    assert {p["family"] for p in report["proposed"]} == {"tidyq"}  # named after the tool, not `causes`
    text = project.read("regexes/tidyq.toml")
    assert 'family = "tidyq"' in text and 'stage = "shadow"' in text
    # the next run reads the plain step's log with it: the gate observes it there
    project.write("notes/c.txt", "fine again\n")
    assert project.make().code == 1
    (run,) = [r for r in sorted((project.root / ".runner" / "runs").iterdir())][-1:]
    seen = [json.loads(line) for line in (run / "gate.jsonl").read_text().splitlines()]
    assert seen and {o["step"] for o in seen} == {"plain"} and all(o["pattern"].startswith("tidyq/") for o in seen)


def test_learn_says_which_misses_it_set_aside_and_what_to_do(project):
    project.spec('[project]\nname = "x"\n\n[intent.check]\nrun = "python3 check.py"\ninputs = ["check.py"]\n')
    project.write("check.py", 'import sys\nprint("Failure in the frobnicator, see above")\nsys.exit(1)\n')
    assert project.make().code == 1
    learned = project.run("learn")
    assert learned.code == 0, learned.err
    assert (
        "set aside 1 missed line of step check (check): induction made no pattern that scores for them, e.g. "
        "'Failure in the frobnicator, see above'; set [learn] model_calls and a [worker] for the model to propose "
        "one, or write one by hand in regexes/check.toml"
    ) in learned.out


def test_the_misses_set_aside_are_lines_about_failures_not_passing_tests_lines(project):
    """`python3 -m unittest -v` on tests with docstrings (logs/unittest-docstrings.log is its output): a passing
    test's line (`Test that adjacent() raises an error with negative distance ... ok`) holds count words and no
    count; it is no miss to write a pattern for. What is set aside is the failures' lines induction could not read
    (not WindowedTests' `ERROR: test_basic (...) (n=1)` subtest lines: the unittest family reads them)."""
    project.spec(
        '[project]\nname = "sample"\n\n[intent.tests]\nrun = "python3 -m unittest -v test_sample"\n'
        'inputs = ["test_sample.py"]\n'
    )
    project.write("test_sample.py", (LOGS / "unittest_docstrings_sample.py").read_text())
    assert project.make().code == 1
    learned = project.run("learn")
    assert learned.code == 0, learned.err
    assert (
        "set aside 5 missed lines of step tests (unittest): induction made no pattern that scores for them, e.g. "
        "'Test that the predicate is only called once per item. ... ERROR'; set [learn] model_calls and a [worker] "
        "for the model to propose one, or write one by hand in regexes/unittest.toml"
    ) in learned.out


def test_an_adapters_unknown_family_says_which_file_makes_it(tally):
    (tally.root / "adapters" / "tally.toml").write_text(
        (tally.root / "adapters" / "tally.toml").read_text().replace('parse = ["tally"]', 'parse = ["tally-own"]')
    )
    done = tally.run("validate")
    assert done.returncode != 0
    assert (
        'create regexes/tally-own.toml holding family = "tally-own" (`runner learn` adds its patterns)'
        in done.stdout + done.stderr
    )


# ---- 2. evidence of being right, not only of time --------------------------------------------------------------

UNITTEST_LIKE = """\
import sys
print("FAIL: test_mul (calc.TestCalc.test_mul)")
print("FAIL: test_sub (calc.TestCalc.test_sub)")
print("ERROR: test_div (calc.TestCalc.test_div)")
print("FAILED (failures=2, errors=1)")
sys.exit(1)
"""


def _candidates(tally: Tally, tables: str) -> None:
    (tally.root / "regexes" / "tally.toml").write_text(FAMILY + textwrap.dedent(tables))


def _observed(tally: Tally) -> dict[str, dict]:
    last = sorted((tally.root / ".runner" / "runs").iterdir())[-1]
    return {o["pattern"]: o for o in map(json.loads, (last / "gate.jsonl").read_text().splitlines())}


def test_a_count_the_named_failing_tests_contradict_fails_its_check(tally):
    """The unittest defect: `FAILED (failures=2, errors=1)` read with `errors` thrown away gives 2 failed where
    the log names 3 failing tests; the count is blamed, the failing tests it names are not."""
    (tally.root / "tally.py").write_text(UNITTEST_LIKE)
    _candidates(
        tally,
        """
        [[pattern]]
        name = "drops-errors"
        regex = '^FAILED \\(failures=(?P<failed>\\d+), errors=\\d+\\)$'
        kind = "summary"
        fields = ["failed"]
        stage = "shadow"

        [[pattern]]
        name = "failing"
        regex = '^(?:FAIL|ERROR): (?P<name>\\S+) \\('
        kind = "failed_test"
        fields = ["name"]
        stage = "shadow"
        """,
    )
    assert tally.make("ok").returncode == 1
    seen = _observed(tally)
    assert seen["tally/drops-errors"]["check"] == "fail"
    assert seen["tally/drops-errors"]["why"] == "gives 2 failed where the log names 3 failing tests"
    assert seen["tally/failing"]["check"] == "pass"


def test_a_summary_that_says_nothing_failed_on_a_failed_run_fails_its_check(tally):
    (tally.root / "tally.py").write_text('import sys\nprint("TALLY: 3 ok, 0 failed, 0 skipped")\nsys.exit(2)\n')
    _candidates(
        tally,
        """
        [[pattern]]
        name = "counts"
        regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
        kind = "summary"
        fields = ["passed", "failed", "skipped"]
        stage = "shadow"
        """,
    )
    assert tally.make("ok").returncode == 1
    seen = _observed(tally)["tally/counts"]
    assert (seen["check"], seen["why"]) == ("fail", "reads a summary that says nothing failed on a run that failed")


def test_a_failing_test_the_steps_junit_report_does_not_list_fails_its_check(tally):
    tool = '''\
import sys
print("CHECK parse_a FAILED")
print("CHECK parse_b FAILED")
open("report.xml", "w").write("""<testsuite name="t" tests="2" failures="1" errors="0">
<testcase classname="t" name="parse_a"><failure message="no">no</failure></testcase>
<testcase classname="t" name="parse_b"/></testsuite>""")
sys.exit(1)
'''
    (tally.root / "tally.py").write_text(tool)
    intents = (tally.root / "intents.toml").read_text()
    (tally.root / "intents.toml").write_text(
        intents.replace('inputs = ["src/checks.txt"]', 'inputs = ["src/checks.txt"]\nreports = ["report.xml"]')
    )
    _candidates(
        tally,
        """
        [[pattern]]
        name = "checks"
        regex = '^CHECK (?P<name>\\S+) FAILED$'
        kind = "failed_test"
        fields = ["name"]
        stage = "shadow"
        """,
    )
    assert tally.make("ok").returncode == 1
    seen = _observed(tally)["tally/checks"]
    assert (seen["check"], seen["why"]) == (
        "fail",
        "names 'parse_b' as failing, which the step's JUnit report does not",
    )


# ---- 3. the gate at a team's pace, with the defaults -----------------------------------------------------------


def test_a_correct_pattern_reaches_active_within_six_builds_with_the_defaults(tally):
    """One step per tool, `runner learn` after each build, [learn] left out: proposed after build 1, active after
    build 6 (three runs in shadow, one at each canary weight, the canary chosen by run)."""
    intents = (tally.root / "intents.toml").read_text()
    (tally.root / "intents.toml").write_text(
        intents[: intents.index("# the gate")] + intents[intents.index("[intent.test]") :]
    )
    stages = []
    for build in range(1, 7):
        tally.make("ok", "broken" if build % 2 else "ok")
        tally.learn()
        stages.append({name: c["stage"] for name, c in tally.status().items()})
    assert set(stages[0].values()) == {"shadow"}
    assert {name for name, stage in stages[-1].items() if stage == "active"} == set(stages[0])
    assert all(c["failed_checks"] == 0 for c in tally.status().values())


# ---- 4. induction for tool output ------------------------------------------------------------------------------


def test_unittests_counts_each_under_its_own_name_and_its_failing_tests_anchored(tally):
    found = _induce(tally, "unittest-verbose.log", "unittest-own")
    regexes = {p["regex"] for p in found.values()}
    assert r"^FAILED \(failures=(?P<failed>\d+), errors=(?P<errors>\d+)\)$" in regexes
    assert r"^\s*FAIL\:\s+(?P<name>[^\s:](?:.*?[^:\s])?)(?:\s+\([^()]*\)|\s+#\s.*)?\s*$" in regexes
    assert r"^\s*(?P<name>[^\s()\[\]{}:,;]+)\s+\([^\s()\[\]{}]+\)\s+\.+\s+FAIL\s*$" in regexes
    assert not any(".*FAIL.*" in r or ".*?FAIL" in r for r in regexes)
    # named after what they read, never after the test that happened to fail
    assert not any("test" in name.removeprefix("unittest-own-").replace("failed-test", "") for name in found)


def test_a_tests_description_before_its_failure_word_is_no_failing_tests_name(tally):
    """`unittest -v` prints a test's docstring before `... ERROR` (seen on more-itertools' suite): its last word
    (`item.`, `it.`, `...`, `groupby_transform()`) is no test, and a pattern spelling out one test's sentence
    reads only that test. Every failing-test candidate reads, on the whole log, only tests that failed."""
    failed = {"test_call_once", "test_grouping", "test_large_distance", "test_short", "test_typical", "test_basic"}
    found = _induce(tally, "unittest-docstrings.log", "unittest")
    lines = (LOGS / "unittest-docstrings.log").read_text().splitlines()
    read = {
        m.group("name").split()[0]
        for p in found.values()
        if p["kind"] == "failed_test"
        for line in lines
        if (m := re.fullmatch(p["regex"], line))
    }
    assert read == failed
    assert not any(r"Test\s+" in p["regex"] for p in found.values() if p["kind"] == "failed_test")
    # a traceback's place keeps its words apart from the place: `File "x.py", line 10, in test_call_once`
    (frame,) = [p for p in found.values() if p["kind"] == "diagnostic"]
    assert re.fullmatch(frame["regex"], lines[20]).group("message") == "in test_call_once", lines[20]


def test_a_tests_number_after_ok_is_no_count_and_an_exit_status_no_test(tally):
    log = LOGS.parent / "ok-and-tox.log"
    try:
        log.write_text("ok 1 - formats cents\nnot ok 2 - adds numbers\n  py311: FAIL code 1 (0.52 seconds)\n")
        done = tally.run("learn", "induce", str(log), "--family", "mixed", "--json", "--dry-run")
    finally:
        log.unlink()
    kinds = {p["template"]: p["kind"] for p in json.loads(done.stdout)["patterns"]}
    assert kinds == {
        "ok <*> - formats cents": "event",
        "not ok <*> - adds numbers": "failed_test",
        "py311: FAIL code <*> (<*> seconds)": "event",
    }


def test_marker_lines_are_mined_and_read(tally):
    node = _induce(tally, "node-test-spec.log", "node-test")
    failing = node["node-test-failed-test"]
    assert failing["regex"] == r"^\s*✖\s+(?P<name>[^\s:](?:.*?[^:\s])?)(?:\s+\([^()]*\)|\s+#\s.*)?\s*$"
    shell = _induce(tally, "shellcheck-tty.log", "shellcheck")
    assert shell["shellcheck-finding"]["fields"] == ["file", "line", "message"]


def test_a_node_spec_run_and_a_shellcheck_run_learn_through_plain_steps(project):
    """`✖ name` and `In FILE line N:` lines are mined (the issue: never mined), and their candidates read them."""
    project.spec(
        textwrap.dedent(
            """\
            [project]
            name = "x"
            [intent.spec]
            run = "cat spec.log; exit 1"
            inputs = ["spec.log"]
            [intent.lint]
            run = "cat lint.log; exit 1"
            inputs = ["lint.log"]
            """
        )
    )
    project.write("spec.log", (LOGS / "node-test-spec.log").read_text())
    project.write("lint.log", (LOGS / "shellcheck-tty.log").read_text())
    assert project.make("-k").code == 1
    report = json.loads(project.run("learn", "--json").out)
    kept = {(p["family"], p["kind"]) for p in report["proposed"] if p["verdict"] == "shadow"}
    assert ("cat", "failed_test") in kept and ("cat", "diagnostic") in kept


# ---- 5. no churn ---------------------------------------------------------------------------------------------


def test_candidates_go_to_the_commands_first_family_never_to_a_generic_one(project):
    tidyq_project(project, families='"diagnostics", "causes"')
    assert project.make("-k").code == 1
    report = json.loads(project.run("learn", "--json").out)
    families = {p["family"] for p in report["proposed"]}
    assert families == {"tidyq"}  # the tool's own (python3 tools/tidyq.py), not causes nor diagnostics
    assert not project.exists("regexes/causes.toml") and not project.exists("regexes/diagnostics.toml")
    # one regex lives in one pattern: the adapter step and the plain step show the same lines, written once
    text = project.read("regexes/tidyq.toml")
    regexes = [line for line in text.splitlines() if line.startswith("regex = ")]
    assert len(regexes) == len(set(regexes)) and regexes


def test_a_rejected_candidate_is_never_proposed_again_even_once_deleted(tally):
    tally.make("ok", "broken")
    first = tally.learn()
    failing = next(p for p in first["proposed"] if p["kind"] == "failed_test")
    done = tally.run("approve", "--pattern", f"tally/{failing['name']}", "--reject")
    assert done.returncode == 0, done.stderr
    text = tally.family()
    assert "rejected by hand" in text
    # the person deletes the retired pattern from the file: its regex stays remembered
    start = text.index(f'name = "{failing["name"]}"')
    start = text.rindex("[[pattern]]", 0, start)
    end = text.find("[[pattern]]", start + 1)
    end = text.find("[[rejected]]", start + 1) if end < 0 else end
    (tally.root / "regexes" / "tally.toml").write_text(text[:start] + text[end:])
    assert tally.run("validate").returncode == 0
    again = tally.learn()
    assert failing["regex"] not in {p["regex"] for p in again["proposed"]}
    assert any(n.startswith("not proposed again: tally/") and "was rejected on" in n for n in again["notes"])


# ---- 6. nothing lost on a failure --------------------------------------------------------------------------------


def _with_model(tally: Tally, server, answer: dict | None) -> object:
    message = (
        "<<MIS:START>>\n<<MIS:FILE path=patterns.json>>\n" + json.dumps(answer) + "\n<<MIS:END>>"
        if answer is not None
        else "<<MIS:START>>\n<<MIS:END>>"
    )
    srv = server([{"steps": [{"message": message}]}])
    intents = (tally.root / "intents.toml").read_text().replace("[learn]\n", "[learn]\nmodel_calls = 1\n")
    intents += f'\n[worker]\nkind = "openai"\nmodel = "gpt-test"\nbase_url = "{srv.base_url}"\n'
    (tally.root / "intents.toml").write_text(intents)
    return srv


WORDY = 'import sys\nprint("CHECK a_1 .... FAILED (5ms)")\nprint("Failure in the frobnicator")\nsys.exit(1)\n'


def test_a_model_pattern_that_matches_no_line_is_dropped_with_its_reason_and_nothing_is_lost(tally, server):
    (tally.root / "tally.py").write_text(WORDY)
    nowhere = {"name": "nowhere", "regex": "^never printed (?P<name>\\S+)$", "kind": "failed_test", "fields": ["name"]}
    srv = _with_model(tally, server, {"patterns": [nowhere]})
    assert tally.make("ok").returncode == 1
    done = tally.run("learn", "--json")
    assert done.returncode == 0, done.stderr  # no `internal error: IndexError`
    report = json.loads(done.stdout)
    dropped = next(p for p in report["proposed"] if p["name"] == "tally-nowhere")
    assert (dropped["verdict"], dropped["why"]) == ("dropped", "it reads none of the recorded lines")
    assert any(p["verdict"] == "shadow" and p["kind"] == "failed_test" for p in report["proposed"])  # induced, kept
    assert "tally-failed-test" in tally.family()
    # the same question again: the answer is read back from .runner/learn/answers/, not paid for twice
    again = json.loads(tally.run("learn", "--json").stdout)
    asked = [r for r in map(json.loads, srv.log.read_text().splitlines()) if r.get("path") == "/v1/responses"]
    assert len(asked) == 1
    assert (again["model_calls"], again.get("model_reused")) in ((0, 1), (0, 0))


def test_a_pass_whose_model_call_fails_keeps_its_moves_and_induced_candidates(tally, server):
    (tally.root / "tally.py").write_text(WORDY)
    _with_model(tally, server, None)  # an answer with no patterns file
    assert tally.make("ok").returncode == 1
    done = tally.run("learn", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert any("the model proposed nothing for tally" in n for n in report["notes"])
    assert "tally-failed-test" in tally.family() and 'stage = "shadow"' in tally.family()


# ---- 8. what it gained, shown --------------------------------------------------------------------------------


def test_audit_reads_the_window_with_the_library_at_its_start_beside_the_library_now(tally):
    intents = (tally.root / "intents.toml").read_text()
    (tally.root / "intents.toml").write_text(
        intents[: intents.index("# the gate")] + intents[intents.index("[intent.test]") :]
    )
    for _build in range(6):
        tally.make("ok", "broken")
        tally.learn()
    assert {c["stage"] for c in tally.status().values()} == {"active"}
    tally.make("ok", "broken")
    runs = sorted(p.name for p in (tally.root / ".runner" / "runs").iterdir())
    report = json.loads(tally.run("audit", "--json").stdout)
    now, then = report["figures"]["parse_success_rate"], report["figures"]["parse_success_rate_at_start"]
    assert (now["explained"], now["of"]) == (7, 7)  # today's library explains every failed run
    assert (then["explained"], then["of"]) == (0, 7)  # the library at the first run read none of them
    since = json.loads(tally.run("audit", "--json", "--since", runs[-1]).stdout)["figures"]
    assert since["parse_success_rate_at_start"]["explained"] == 1  # promoted before that run: in its library
    shown = tally.run("audit").stdout
    assert "  with the library at the window's start" in shown


def test_learn_status_says_what_will_happen_next(tally):
    _candidates(
        tally,
        """
        [[pattern]]
        name = "counts"
        regex = '^TALLY: (?P<passed>\\d+) ok, (?P<failed>\\d+) failed, (?P<skipped>\\d+) skipped$'
        kind = "summary"
        fields = ["passed", "failed", "skipped"]
        stage = "shadow"
        """,
    )
    tally.make("ok")
    shown = tally.run("learn", "status").stdout
    assert "stays in shadow (1 of 2 runs): will move to canary at 50% after 1 more run that observes it" in shown
    tally.make("ok", "ok")
    assert (
        "the next `runner learn` will move it to canary at 50%: 2 runs in shadow, no failed check"
        in tally.run("learn", "status").stdout
    )
