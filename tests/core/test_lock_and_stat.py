"""The project lock (a second runner waits or says who holds it) and the stat cache (a no-op reads no file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from runner.cache import Cache, State
from runner.compiled import load_compiled
from runner.plan import Planner, make_plan
from runner.stat_cache import StatCache
from runner.workspace import Layout

SLOW = """
[intent.slow]
run = "sleep 2; echo done > slow.txt"
inputs = ["x"]
outputs = ["slow.txt"]
"""


def _start_slow(project) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert '"run_started"' in proc.stdout.readline()  # it holds the lock from before this line
    return proc


def test_second_runner_with_no_wait_says_who_holds_the_lock(project):
    project.spec(SLOW)
    project.write("x", "1")
    first = _start_slow(project)
    second = project.run("make", "--no-wait")
    assert second.code == 3
    assert f"is locked by pid {first.pid} (runner make --json, since " in second.err
    assert second.err.rstrip().endswith("wait for it, or run again without --no-wait to queue behind it")
    first.communicate(timeout=30)
    assert first.returncode == 0


def test_second_runner_waits_then_finds_everything_cached(project):
    project.spec(SLOW)
    project.write("x", "1")
    first = _start_slow(project)
    second = project.make()
    first.communicate(timeout=30)
    assert second.code == 0
    assert f"runner: waiting for the lock held by pid {first.pid}" in second.err
    assert second.statuses() == {"slow": "cached"}
    assert project.read("slow.txt") == "done\n"


def _plan(project):
    root = project.root
    layout = Layout(root)
    layout.ensure()
    stat = StatCache(layout.stat_file)
    planner = Planner(load_compiled(root), stat, State(layout.state_file), Cache(layout.cache_dir))
    decisions = make_plan(planner, planner.compiled.order)
    stat.save()
    planner.cache.close()
    return decisions, stat


def test_no_op_reads_no_file_contents(chain):
    chain.age_all()
    assert chain.make().code == 0
    chain.age_all()  # as if the build were long ago: past the racy window
    _decisions, warm = _plan(chain)  # hashes what the build left racy, once
    decisions, stat = _plan(chain)
    assert [d.action for d in decisions] == ["skip"] * 4
    assert stat.reads == 0


def test_touch_rehashes_one_file_and_changes_nothing(chain):
    chain.age_all()
    chain.make()
    chain.age_all()
    _plan(chain)
    t = time.time() - 3
    os.utime(chain.root / "src/x.txt", (t, t))
    decisions, stat = _plan(chain)
    assert stat.reads == 1
    assert [d.action for d in decisions] == ["skip"] * 4


def test_same_size_same_mtime_edit_is_caught_by_the_racy_rule(chain):
    """A file rewritten within the mtime granularity keeps size and mtime: git's racy-clean case."""
    chain.make()
    path = chain.root / "src/x.txt"
    st = os.stat(path)
    path.write_text("HELLO\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    decisions, _ = _plan(chain)
    assert decisions[0].intent == "a" and decisions[0].action == "run"


def test_fast_no_op_is_taken_and_then_invalidated_by_an_edit(chain):
    chain.make()
    chain.age_all()
    chain.make()  # full path: no racy file now, so it leaves the no-op proof
    fast = chain.make()
    assert fast.events()[0].get("fast") is True
    assert fast.finished()["cached"] == 3  # a, b and c: the aggregate `all` is no step
    chain.write("src/y.txt", "edited\n", age=5)
    slow = chain.make()
    assert "fast" not in slow.events()[0]
    assert slow.statuses()["c"] == "ran"


def test_fast_no_op_never_used_for_globs_or_forced(project):
    project.spec("""
        [intent.count]
        run = "cat src/*.txt > all.txt"
        inputs = ["src/*.txt"]
        outputs = ["all.txt"]
    """)
    project.write("src/a.txt", "a\n")
    project.make()
    project.age_all()
    project.make()
    project.write("src/b.txt", "b\n", age=5)  # a new file changes no stat the proof could list
    result = project.make()
    assert result.statuses() == {"count": "ran"}
    assert json.loads(project.run("status", "--json").out)["steps"][0]["action"] == "skip"
    assert project.make("-B").finished()["ran"] == 1


def test_the_first_no_op_right_after_a_build_is_fast_yet_sees_a_same_stat_edit(chain):
    assert chain.make().finished()["ran"] == 3
    fast = chain.make()  # outputs are seconds old: their bytes are checked instead of trusting mtimes
    assert fast.events()[0].get("fast") is True and fast.finished()["cached"] == 3
    path = chain.root / "out/c.txt"
    st = os.stat(path)
    path.write_text("9\n")  # same size ...
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and same mtime as the build left it
    caught = chain.make()
    assert "fast" not in caught.events()[0]
    assert caught.statuses()["c"] == "restored"
    assert chain.read("out/c.txt").strip() == "6"


def test_an_edit_made_while_the_run_goes_on_is_built_by_the_next_run(project):
    """The no-op proof holds the stats each file had when the run read it, not when the run ended: a
    source edited after its step ran (as a user saves a file during a long build) is not taken as built."""
    project.spec("""
        [project]
        name = "race"
        default = "slow"

        [intent.copy]
        run = "cp src/a.txt out.txt"
        inputs = ["src/a.txt"]
        outputs = ["out.txt"]

        [intent.slow]
        run = "sleep 2"
        deps = ["copy"]
    """)
    project.write("src/a.txt", "one\n", age=5)
    run = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", "-j1"], cwd=project.root, stdout=subprocess.PIPE, text=True
    )
    for line in run.stdout:  # copy has run: slow is sleeping
        if '"step_started"' in line and '"slow"' in line:
            break
    project.write("src/a.txt", "two\n", age=5)  # another size, an mtime outside the racy window
    assert run.wait(30) == 0
    after = project.make()
    assert after.statuses()["copy"] == "ran"
    assert project.read("out.txt") == "two\n"
