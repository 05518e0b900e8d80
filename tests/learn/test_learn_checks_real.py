"""The gate's checks of being right (issue 38, point 2) on a real tool's output, through the CLI: `node --test` with
its spec reporter on the terminal and its JUnit reporter into a file, a plain `run` line whose family
(regexes/node-test.toml) holds a hand-written candidate that reads the wrong count, as an induced or a model's
pattern can. The checks that the other tests leave alive when broken on purpose: failures reported by a summary
on a run that passed, and a count that differs from the step's JUnit report."""

from __future__ import annotations

import json

from ci import need_tools

RUN = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination=report.xml"
)

SPEC = f"""\
[project]
name = "maths"

[intent.test]
run = "{RUN}"
inputs = ["math.test.js"]
reports = ["report.xml"]
"""

# in a `describe`: node's JUnit reporter writes top-level tests straight under <testsuites>, which the report
# reader does not count (left to the log-reading work); a suite's tests it does
TESTS = """\
const {{ describe, test }} = require('node:test');
const assert = require('node:assert');
describe('maths', () => {{
  test('adds', () => {{ assert.strictEqual(1 + 1, 2); }});
  test('subtracts', () => {{ assert.strictEqual(3 - 1, 2); }});
  test('multiplies', () => {{ assert.strictEqual(2 * 2, {product}); }});
}});
"""

# node's spec reporter closes with `ℹ tests 3`, `ℹ pass 2`, `ℹ fail 1`, ...: the candidate takes the pass count
# for the failed one
FAMILY = """\
family = "node-test"

[[pattern]]
name = "pass-read-as-failed"
regex = '^ℹ pass (?P<failed>\\d+)$'
kind = "summary"
fields = ["failed"]
stage = "shadow"
"""


def _maths(project, product: int):
    need_tools("node", how="install Node.js 20 or later")
    project.spec(SPEC)
    project.write("math.test.js", TESTS.format(product=product))
    project.write("regexes/node-test.toml", FAMILY)
    assert project.run("validate").code == 0
    return project


def _observed(project) -> dict:
    (run,) = sorted((project.root / ".runner" / "runs").iterdir())[-1:]
    (seen,) = [json.loads(line) for line in (run / "gate.jsonl").read_text().splitlines()]
    assert seen["pattern"] == "node-test/pass-read-as-failed" and seen["step"] == "test"
    return seen


def test_a_summary_that_reports_failures_on_a_passing_node_run_fails_its_check(project):
    _maths(project, product=4)  # every test passes: `ℹ pass 3`, read as 3 failed
    made = project.make()
    assert made.code == 0, made.err
    seen = _observed(project)
    assert (seen["check"], seen["why"]) == ("fail", "reports failures in the summary of a run that passed")


def test_a_count_the_steps_junit_report_contradicts_fails_its_check(project):
    _maths(project, product=5)  # `multiplies` fails: `ℹ pass 2`, read as 2 failed; report.xml holds 1 failure
    made = project.make()
    assert made.code == 1, made.err
    assert project.read("report.xml").count("<failure") == 1
    seen = _observed(project)
    assert (seen["check"], seen["why"]) == ("fail", "gives 2 failed where the step's JUnit report gives 1")
