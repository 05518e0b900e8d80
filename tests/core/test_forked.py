"""A loop split with a forked child (runner.forked.halves) gives what the loop gives alone, in order, whatever
the child does: fails, dies, or outlives an interrupted parent; and the proof's stats taken that way are the
stats taken one by one. Real forks, nothing mocked: each scenario runs in a fresh interpreter, since halves
rightly refuses to fork a process with threads, and a test process has them (xdist's, servers' of other tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from runner import forked

PRELUDE = """
import json, os, signal, sys, threading, time
from runner import forked, freshness
here = os.getpid()
def doubled(part):
    return [x * 2 for x in part]
def pids(part):
    return [os.getpid()] * len(part)
"""


def fresh(scenario: str, *args: str) -> object:
    """What `scenario` prints (JSON), run in a new interpreter with PRELUDE."""
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(scenario), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("n", [2, 3, 7, 1000, 20_001])
def test_the_two_halves_give_the_loops_result_in_order(n):
    scenario = """
        items = list(range(int(sys.argv[1])))
        print(json.dumps(forked.halves(doubled, items, at_least=2) == doubled(items)))
    """
    assert fresh(scenario, str(n)) is True


def test_the_second_half_runs_in_another_process():
    scenario = """
        got = forked.halves(pids, list(range(10)), at_least=2)
        print(json.dumps([p == here for p in got] + [len(set(got[5:]))]))
    """
    assert fresh(scenario) == [True] * 5 + [False] * 5 + [1]


def test_few_items_stay_in_this_process():
    assert fresh("print(json.dumps(set(forked.halves(pids, list(range(10)))) == {here}))") is True


def test_a_process_with_threads_does_not_fork():
    scenario = """
        stop = threading.Event()
        waiting = threading.Thread(target=stop.wait)
        waiting.start()
        print(json.dumps(set(forked.halves(pids, list(range(10)), at_least=2)) == {here}))
        stop.set()
    """
    assert fresh(scenario) is True


@pytest.mark.parametrize(
    "childs_half",
    [
        "raise RuntimeError('the child fails')",
        "os.kill(os.getpid(), signal.SIGKILL)",
        "return [1]",  # the wrong count
        "return {}",  # not a list
    ],
)
def test_a_child_that_fails_leaves_its_half_to_this_process(childs_half):
    scenario = f"""
        def work(part):
            if os.getpid() != here:
                {childs_half}
            return doubled(part)
        print(json.dumps(forked.halves(work, list(range(10)), at_least=2) == doubled(list(range(10)))))
    """
    assert fresh(scenario) is True


def test_an_interrupted_parent_ends_its_child_and_reaps_it(tmp_path):
    scenario = """
        folder = sys.argv[1]
        def work(part):
            if os.getpid() != here:
                with open(folder + "/pid", "w") as f:
                    f.write(str(os.getpid()))
                os.replace(folder + "/pid", folder + "/started")  # whole when seen
                time.sleep(5)  # a long half: the interrupted parent must end it, not wait for it
                open(folder + "/finished", "w").close()
            else:
                while not os.path.exists(folder + "/started"):
                    pass
                raise KeyboardInterrupt
            return part
        try:
            forked.halves(work, list(range(10)), at_least=2)
        except KeyboardInterrupt:
            pass
        with open(folder + "/started") as f:
            child = f.read()
        print(json.dumps([os.path.exists("/proc/" + child), os.path.exists(folder + "/finished")]))
    """
    assert fresh(scenario, str(tmp_path)) == [False, False]  # no zombie, and ended, not waited for


def test_the_proofs_stats_split_across_two_processes_are_the_stats_one_by_one(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i}").write_text("x" * i)
    (tmp_path / "sub").mkdir()
    scenario = """
        root = sys.argv[1]
        names = [f"f{i}" for i in range(40)] + ["sub", "missing", "sub/missing"]
        paths = [names[i % len(names)] for i in range(forked.AT_LEAST + 11)]
        taken = freshness._each_stat(root, paths)
        print(json.dumps([taken == freshness._stats_here(root, paths), taken.count(None)]))
    """
    missing = sum(1 for i in range(forked.AT_LEAST + 11) if i % 43 >= 41)
    assert fresh(scenario, str(tmp_path)) == [True, missing]
