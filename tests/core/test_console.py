"""What `runner make` shows on a pipe, as a user or a CI log sees it: `-v` streams each step's lines as it prints
them, after the step's name; without it a failed step's log still prints; `[N/M]` counts the steps shown; an
aggregate is not counted as cached. (The same under a real terminal: test_terminal.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import racy

WAITS = """
[intent.slow]
run = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"
inputs = ["x"]
timeout = 60
"""


def test_verbose_streams_a_steps_lines_while_it_runs(project):
    """The step prints a line and then waits for a file that the test makes only once it has read that line
    from runner's stdout: the line came while the step ran, not from its log afterwards."""
    project.spec(WAITS)
    project.write("x", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "-v"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = [proc.stdout.readline()]  # "run slow: no cache entry"
    seen.append(proc.stdout.readline())
    assert seen == ["run slow: no cache entry\n", "slow | first\n"], proc.stderr.read()
    assert proc.poll() is None, "the step still runs: it waits for go"
    project.write("go", "")
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert rest.splitlines()[0] == "slow | second"
    assert re.fullmatch(r"\[1/1\] ran slow \(\d+\.\d\ds\)", rest.splitlines()[1])


PRINTERS = """
[intent.left]
run = "python3 -c \\"import sys; [sys.stdout.write('left-%06d-' % i + 'L' * 300 + chr(10)) for i in range(N)]\\""
inputs = ["x"]

[intent.right]
run = "python3 -c \\"import sys; [sys.stdout.write('right-%06d-' % i + 'R' * 300 + chr(10)) for i in range(N)]\\""
inputs = ["x"]
"""


def test_two_steps_printing_at_once_keep_every_line_whole_and_a_flood_does_not_stall(project):
    """Two steps write 30,000 lines of 300 bytes each (9 MB apiece) at the same time: the pipe's chunks cut
    lines anywhere, and every streamed line is still one of theirs, whole, in its order."""
    n = 30_000
    project.spec(PRINTERS.replace("range(N)", f"range({n})"))
    project.write("x", "1")
    result = project.run("make", "-v", "-j", "2", timeout=180)
    assert result.code == 0, result.err[-2000:]
    streamed: dict[str, list[str]] = {"left": [], "right": []}
    for line in result.out.splitlines():
        name, bar, text = line.partition(" | ")
        if bar:
            streamed[name].append(text)
    for name, fill in (("left", "L"), ("right", "R")):
        assert streamed[name] == [f"{name}-{i:06d}-" + fill * 300 for i in range(n)]
    # the log holds the same lines, after the command line
    for name in ("left", "right"):
        log = next(project.root.glob(f".runner/runs/*/logs/{name}.log")).read_text().splitlines()
        assert log[0].startswith("$ python3 -c") and log[1:] == streamed[name]


def test_the_last_line_without_a_newline_and_a_secret_stream_as_the_log_has_them(project):
    secret = "s3cr3t-" + uuid.uuid4().hex
    project.spec("""
        [intent.say]
        run = "echo \\"key=$MY_SERVICE_TOKEN\\"; printf 'no newline at the end'"
        inputs = ["x"]
    """)
    project.write("x", "1")
    result = project.run("make", "-v", env={"MY_SERVICE_TOKEN": secret})
    assert result.code == 0, result.err
    assert secret not in result.out + result.err
    assert [line for line in result.out.splitlines() if line.startswith("say | ")] == [
        "say | key=[REDACTED:MY_SERVICE_TOKEN]",
        "say | no newline at the end",
    ]


FAILS = """
[intent.chatty]
run = "echo chatty says hello"
inputs = ["x"]

[intent.bad]
run = "echo why it broke; exit 3"
inputs = ["x"]
deps = ["chatty"]
"""


def test_without_verbose_nothing_streams_and_a_failed_steps_log_still_prints(project):
    project.spec(FAILS)
    project.write("x", "1")
    result = project.run("make")
    assert result.code == 1
    assert " | " not in result.out and "chatty says hello" not in result.out + result.err
    assert "why it broke" in result.err  # the failed step's log
    assert re.fullmatch(r"\[1/2\] ran chatty \(\d+\.\d\ds\)\n", result.out)


def test_with_json_verbose_streams_nothing_and_every_line_is_an_event(project):
    project.spec(FAILS)
    project.write("x", "1")
    result = project.run("make", "-v", "--json")
    assert result.code == 1
    assert all("event" in json.loads(line) for line in result.out.splitlines())
    assert "chatty says hello" not in result.out


CHAIN_PLUS = """
[intent.a]
run = "cat src/x.txt > out/a.txt"
inputs = ["src/x.txt"]
outputs = ["out/a.txt"]

[intent.b]
run = "cat out/a.txt out/a.txt > out/b.txt"
inputs = ["out/a.txt"]
outputs = ["out/b.txt"]
deps = ["a"]

[intent.c]
run = "cat src/y.txt > out/c.txt"
inputs = ["src/y.txt"]
outputs = ["out/c.txt"]

[intent.all]
deps = ["b", "c"]
"""


def _chain(project):
    project.spec(CHAIN_PLUS)
    project.write("src/x.txt", "x\n")
    project.write("src/y.txt", "y\n")
    (project.root / "out").mkdir()


def _numbers(out: str) -> list[str]:
    """The numbered lines, "[N/M] status name", in the order shown (M last: the names' order is the schedule's)."""
    return [line.split(" (")[0].split(":")[0] for line in out.splitlines() if line.startswith("[")]


def _counted(out: str, status: str, names: set[str]) -> None:
    shown = _numbers(out)
    m = len(names)
    assert [line.split("] ")[0] + "]" for line in shown] == [f"[{n}/{m}]" for n in range(1, m + 1)], shown
    assert {line.split("] ")[1] for line in shown} == {f"{status} {name}" for name in names}, shown


def test_step_numbers_count_the_steps_shown_and_an_aggregate_is_never_cached(project):
    _chain(project)
    first = project.run("make", "-j", "1")
    assert first.code == 0, first.err
    _counted(first.out, "ran", {"a", "b", "c"})
    assert re.fullmatch(r"runner: 3 ran in \d+\.\d\ds \(run [0-9a-f-]+\)", first.out.splitlines()[-1])
    project.write("src/x.txt", "x2\n")
    edit = project.run("make", "-j", "1")  # c is up to date: not shown, so not counted
    _counted(edit.out, "ran", {"a", "b"})
    assert edit.out.splitlines()[-1].startswith("runner: 2 ran, 1 cached in ")
    verbose = project.run("make", "-j", "1", "-v")  # shown with -v, so counted
    _counted(verbose.out, "cached", {"a", "b", "c"})
    assert verbose.out.splitlines()[-1].startswith("runner: nothing to do: 3 cached in ")
    racy.wait_out()  # past the racy window: the next plain make proves the no-op from stats alone
    project.run("make")
    fast = project.run("make", "--json")
    events = [json.loads(line) for line in fast.out.splitlines()]
    assert events[0].get("fast") is True and events[0]["steps"] == 3
    assert [e["intent"] for e in events if e["event"] == "step_finished"] == ["a", "b", "c"]
    assert events[-1]["cached"] == 3
    assert project.run("make").out.startswith("runner: nothing to do: 3 cached in ")


def test_an_aggregate_whose_dependency_failed_is_neither_skipped_nor_left(project):
    project.spec(FAILS + '\n[intent.all]\ndeps = ["bad"]\n')
    project.write("x", "1")
    result = project.make()
    assert result.code == 1
    assert result.statuses() == {"chatty": "ran", "bad": "failed"}
    finished = result.finished()
    assert (finished["skipped"], finished["left"]) == (0, ["bad"])
    assert result.events()[0]["steps"] == 2


def test_the_fast_no_op_imports_neither_typing_nor_rich(project):
    """The no-op prints its summary with report.summary_line: importing report.py must stay as cheap as the
    no-op's other modules (typing alone costs it ~2 ms of its ~60 ms at 10,000 steps). The runner modules it
    imports are the fast path's and those it shares (runner/noop.py says which, and why each is cheap)."""
    _chain(project)
    project.run("make")
    racy.wait_out()  # past the racy window
    project.run("make")
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "runner", "make"], cwd=project.root, capture_output=True, text=True
    )
    assert timed.stdout.startswith("runner: nothing to do: 3 cached in "), timed.stdout
    names = {line.rsplit("|", 1)[-1].strip() for line in timed.stderr.splitlines() if "|" in line}
    imported = {name.split(".")[0] for name in names}
    assert "runner" in imported and not imported & {"typing", "rich", "click"}
    # the fast path (runner/noop.py) and what it shares with the pipeline: nothing else of runner
    assert {name for name in names if name.startswith("runner")} == {
        "runner",
        "runner.entry",
        "runner.noop",
        "runner.proof",
        "runner.stat_cache",
        "runner.project_root",
        "runner.names",
        "runner.keys",
        "runner.index_file",
        "runner.forked",
        "runner.record",
        "runner.nospace",
        "runner.report",
        "runner.summary",
        "runner.events",
    }


def test_a_failure_early_in_a_big_build_names_ten_steps_not_done_and_counts_the_rest(project):
    """A step that fails before 12 others could run: the summary names the first ten steps left and counts the
    others (a stop early in a 100,000-step build printed one line of 700 KB); --json keeps every name."""
    steps = "".join(f'\n[intent.d{i:02}]\nrun = "true"\ndeps = ["broken"]\n' for i in range(12))
    project.spec('[intent.broken]\nrun = "false"\ninputs = ["x"]\n' + steps)
    project.write("x", "1")
    result = project.run("make")
    assert result.code == 1
    named = ", ".join(f"d{i:02}" for i in range(9))
    assert f"\nnot done: broken, {named} and 3 more (`runner status` lists them)\n" in result.err + result.out
    finished = project.run("make", "--json").events()[-1]
    assert finished["left"] == ["broken", *(f"d{i:02}" for i in range(12))]
