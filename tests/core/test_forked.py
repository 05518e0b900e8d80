"""Work done by a forked child (runner.forked.Child) comes back as the work's result, or as None whatever else the
child does (fails, dies, sends what is not marshal), and a parent that fails first leaves no child behind; the
proof's stats taken half by such a child are the stats taken one by one. Real forks, nothing mocked: each
scenario runs in a fresh interpreter, since forked.worth_it rightly refuses a process with threads, and a test
process has them (xdist's, servers' of other tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from runner import forked

PRELUDE = """
import json, os, signal, sys, threading, time
from runner import forked, proof
here = os.getpid()
def child_result(work):
    with forked.Child(work) as child:
        return child.result()
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


def test_the_childs_result_comes_back_from_another_process():
    scenario = """
        got = child_result(lambda: [os.getpid(), list(range(int(sys.argv[1])))])
        print(json.dumps([got[0] != here, got[1] == list(range(int(sys.argv[1])))]))
    """
    assert fresh(scenario, "100000") == [True, True]


@pytest.mark.parametrize(
    "work",
    [
        "raise RuntimeError('the child fails')",
        "os.kill(os.getpid(), signal.SIGKILL)",
        "return object()",  # not marshallable
    ],
)
def test_a_child_that_fails_gives_none(work):
    scenario = f"""
        def work():
            {work}
        print(json.dumps(child_result(work)))
    """
    assert fresh(scenario) is None


def test_forking_is_refused_for_few_items_and_in_a_process_with_threads():
    scenario = """
        few, many = forked.worth_it(forked.AT_LEAST - 1), forked.worth_it(forked.AT_LEAST)
        stop = threading.Event()
        waiting = threading.Thread(target=stop.wait)
        waiting.start()
        print(json.dumps([few, many, forked.worth_it(forked.AT_LEAST)]))
        stop.set()
    """
    assert fresh(scenario) == [False, True, False]


def test_a_parent_that_fails_first_ends_its_child_and_reaps_it(tmp_path):
    scenario = """
        folder = sys.argv[1]
        def work():
            with open(folder + "/pid", "w") as f:
                f.write(str(os.getpid()))
            os.replace(folder + "/pid", folder + "/started")  # whole when seen
            time.sleep(5)  # long work: the parent that failed must end it, not wait for it
            open(folder + "/finished", "w").close()
        try:
            with forked.Child(work):
                while not os.path.exists(folder + "/started"):
                    pass
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            pass
        with open(folder + "/started") as f:
            child = f.read()
        print(json.dumps([os.path.exists("/proc/" + child), os.path.exists(folder + "/finished")]))
    """
    assert fresh(scenario, str(tmp_path)) == [False, False]  # no zombie, and ended, not waited for


def test_the_proofs_stats_taken_half_by_a_child_are_the_stats_one_by_one(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i}").write_text("x" * i)
    (tmp_path / "sub").mkdir()
    scenario = """
        root = sys.argv[1]
        names = [f"f{i}" for i in range(40)] + ["sub", "missing", "sub/missing"]
        paths = [names[i % len(names)] for i in range(forked.AT_LEAST + 11)]
        alone = proof.stats_here(root, paths)
        taken = proof.take_stats(root, paths)
        pieces_first = taken.pieces == proof.stat_pieces(alone)
        print(json.dumps([pieces_first, taken.stats == alone, alone.count(None)]))
    """
    missing = sum(1 for i in range(forked.AT_LEAST + 11) if i % 43 >= 41)
    assert fresh(scenario, str(tmp_path)) == [True, True, missing]


def test_the_proofs_stats_are_all_taken_here_when_the_child_fails(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i}").write_text("x" * i)
    scenario = """
        root = sys.argv[1]
        paths = [f"f{i % 41}" for i in range(forked.AT_LEAST + 11)]
        alone = proof.stats_here(root, paths)
        stats_here = proof.stats_here
        def failing_in_the_child(root, part):
            if os.getpid() != here:
                raise MemoryError  # a fault injected in the child only
            return stats_here(root, part)
        proof.stats_here = failing_in_the_child
        taken = proof.take_stats(root, paths)
        print(json.dumps([taken.pieces == proof.stat_pieces(alone), taken.stats == alone]))
    """
    assert fresh(scenario, str(tmp_path)) == [True, True]
