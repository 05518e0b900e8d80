"""The failure excerpt (runner/excerpt.py) over the corpus of real failing logs in tests/parse/failing/: each log
has the lines a person points at (NAME.excerpt.json, read by hand), and the excerpt must show them in at most
60 lines, better than the plain last 60 lines do; and `runner parse LOG [--baseline PASSING_LOG] --json`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import runner_cli

from runner.adapters import resolve
from runner.excerpt import GENERIC_FAMILIES, MAX_LINES, excerpt, render_excerpt
from runner.findings import decode_log
from runner.load import load_project_adapters
from runner.parse import builtin_dir, load_library

CORPUS = Path(__file__).parent / "failing"
LIB = load_library([builtin_dir()])
ADAPTERS = load_project_adapters(CORPUS)
NAMES = sorted(p.name[: -len(".excerpt.json")] for p in CORPUS.glob("*.excerpt.json"))


def meta(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.excerpt.json").read_text("utf-8"))


def text(name: str) -> str:
    return decode_log((CORPUS / f"{name}.log").read_bytes())


def families(m: dict) -> list:
    a = m["adapter"]
    if not a:
        return [LIB.family(f) for f in GENERIC_FAMILIES]
    cmd = resolve(a["name"], CORPUS, ADAPTERS, variants=tuple(a["variants"])).command(a["command"])
    return [LIB.family(f) for f in cmd.parse]


def lines_in(ranges) -> set[int]:
    return {k for a, b in ranges for k in range(a, b + 1)}


# what a log goes on printing after its failure: the excerpt's budget left after its blocks goes to the log's
# last lines, so that a test of which blocks are chosen puts a full budget of these after the log
TRAILER = "".join(f"cleaning up unit {i}\n" for i in range(MAX_LINES))


def blocks(ranges, log: str) -> set[int]:
    """The lines an excerpt of `log + TRAILER` shows of `log` itself."""
    return {k for k in lines_in(ranges) if k <= len(log.splitlines())}


def test_the_corpus_holds_twenty_real_failing_logs_each_with_its_pointed_lines_and_source():
    assert len(NAMES) >= 20
    sources = (CORPUS / "SOURCES.md").read_text("utf-8")
    for name in NAMES:
        m = meta(name)
        total = len(text(name).splitlines())
        assert m["lines"] and all(1 <= a <= b <= total for a, b in m["lines"]), name
        assert f"`{name}`" in sources, f"{name} is not in failing/SOURCES.md"
        if m.get("baseline"):
            assert (CORPUS / m["baseline"]).is_file()


@pytest.mark.parametrize("name", NAMES)
def test_the_excerpt_is_at_most_sixty_lines_in_order_and_shows_a_pointed_line(name):
    m = meta(name)
    log = text(name)
    ranges = excerpt(log, families(m))
    assert sum(b - a + 1 for a, b in ranges) <= MAX_LINES
    flat = [k for a, b in ranges for k in (a, b)]
    assert flat == sorted(flat) and all(b + 1 < a for (_, b), (a, _) in zip(ranges, ranges[1:], strict=False))
    assert flat[0] >= 1 and flat[-1] <= len(log.splitlines())
    assert lines_in(ranges) & lines_in(m["lines"]), f"{name}: no pointed-at line shown"


def test_the_excerpt_finds_the_pointed_lines_better_than_the_last_sixty():
    found = last = want = 0
    for name in NAMES:
        m = meta(name)
        log = text(name)
        pointed = lines_in(m["lines"])
        total = len(log.splitlines())
        want += len(pointed)
        found += len(pointed & lines_in(excerpt(log, families(m))))
        last += len(pointed & set(range(max(1, total - 59), total + 1)))
    assert found / want >= 0.9
    assert found > last


def test_a_stack_trace_is_one_block_of_its_telling_lines():
    log = text("java_crash")
    shown = blocks(excerpt(log + TRAILER, families(meta("java_crash"))), log)
    assert {2, 3, 4, 5, 9} <= shown  # the exception, the app's frames, the cause, the app frame that threw
    assert not {7, 8} & shown  # the JDK's own frames of the cause
    log = text("python_crash")
    assert {9, 18} <= blocks(excerpt(log + TRAILER, []), log)  # both exceptions of the chained traceback


@pytest.mark.parametrize("against", [None, "c_compile_error.pass"])
def test_a_compilers_warnings_stay_out_and_its_error_is_in(against):
    m = meta("c_compile_error")
    log = text("c_compile_error")
    shown = blocks(excerpt(log + TRAILER, families(m), text(against) + TRAILER if against else None), log)
    assert {23, 24, 25, 32} <= shown  # the error, its source line and caret, make's failing target
    assert not [k for k in shown if "warning" in log.splitlines()[k - 1]]  # 26 files' warnings


def test_an_error_line_the_passing_run_printed_too_drops_out_against_its_log():
    noise = "".join(f"compiled unit {i}\n" for i in range(30))
    passing = "ERROR: cache server unreachable, building without it\n" + noise + "linked app\n"
    failing = "ERROR: cache server unreachable, building without it\n" + noise + "link: 2 unresolved symbols\n"
    assert excerpt(failing) == [[1, 32]]  # the error, and the log's end in the budget left
    # against the passing log: the error it printed too drops out, and so does the end it printed too
    assert excerpt(failing, baseline=passing) == [[32, 32]]


def test_lines_are_counted_as_splitlines_cuts_them_through_colour_and_carriage_returns():
    log = "compiling\r\nlinking \x1b[31merror: undefined symbol foo\x1b[0m\ndone\n" + TRAILER
    assert excerpt(log)[0] == [2, 2]
    log = "progress 10%\rprogress 100%\nerror: boom\nbye\n" + TRAILER
    assert excerpt(log)[0] == [3, 3]
    assert render_excerpt(log, [[3, 3]]) == ["3  error: boom"]
    assert excerpt("") == []


def test_a_log_with_no_evidence_shows_its_end():
    log = "".join(f"line {i}\n" for i in range(1, 31))
    assert excerpt(log) == [[1, 30]]  # the window at the end: all of a short log, as the last 60 lines show it
    log = "".join(f"line {i}\n" for i in range(1, 101)) + "\n\n"
    assert excerpt(log) == [[41, 100]]


def _parse(*args: str) -> subprocess.CompletedProcess:
    return runner_cli.run(["parse", *args], CORPUS, timeout=60)


def test_runner_parse_with_a_baseline_adds_the_excerpt_to_its_json():
    done = _parse("deploy_script.log", "--baseline", "deploy_script.pass.log", "--json")
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert obj["excerpt"] == [[24, 24]]
    assert set(obj) == {"summary", "failed_tests", "diagnostics", "cause", "complete", "excerpt"}
    plain = _parse("deploy_script.log")
    assert plain.stdout.splitlines()[0] == (
        "parsed with diagnostics, causes (generic: no --adapter/--command or --family)"
    )
    assert "  24  cp: cannot stat 'build/app.bundle.js': No such file or directory" in plain.stdout.splitlines()


def test_runner_parse_names_a_missing_baseline():
    done = _parse("deploy_script.log", "--baseline", "nope.log", "--json")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("no such log file: nope.log")


def test_a_huge_log_is_read_from_its_end_and_counted_from_its_start():
    from runner.excerpt import MAX_SCAN

    log = "error: an early one nobody reads\n" + "ok\n" * MAX_SCAN + "fatal: out of disk space\n"
    assert excerpt(log) == [[MAX_SCAN + 2 - MAX_LINES + 1, MAX_SCAN + 2]]  # the fatal line closes the log
