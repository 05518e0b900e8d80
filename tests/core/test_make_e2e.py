"""`runner make` end to end through the real CLI: what ran, what was cached, and why."""

from __future__ import annotations

import copyreg
import hashlib
import json
import marshal
import os
import pickle
import time
from pathlib import Path

import pytest
import racy

import runner
from runner.index_file import IndexFile
from runner.spec import MAX_TIMEOUT
from runner.stat_cache import stat_of


def test_first_make_runs_everything_then_nothing(chain):
    first = chain.make()
    assert first.code == 0, first.err
    assert first.statuses() == {"a": "ran", "b": "ran", "c": "ran"}
    assert chain.read("out/b.txt") == "HELLO\nWORLD\n"
    last = first.finished()
    assert last["event"] == "run_finished" and last["ran"] == 3 and last["failed"] == 0 and last["run_id"]

    second = chain.make()
    assert second.code == 0
    assert second.finished()["ran"] == 0
    assert set(second.statuses().values()) == {"cached"}


def test_editing_an_input_reruns_exactly_its_downstream(chain):
    chain.make()
    chain.write("src/x.txt", "HELLO again\n")
    result = chain.make()
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "cached"}


def test_touch_without_content_change_runs_nothing(chain):
    chain.make()
    os.utime(chain.root / "src/x.txt")
    result = chain.make()
    assert result.finished()["ran"] == 0


def test_early_cutoff_upstream_rewrites_same_bytes(chain):
    """a re-runs (its input changed) but writes the same bytes: b stays cached."""
    chain.spec(
        chain.read("intents.toml").replace(
            'run = "cat src/x.txt src/y.txt > out/a.txt"', 'run = "cat src/x.txt src/y.txt | head -c 100 > out/a.txt"'
        )
    )
    chain.make()
    chain.spec(chain.read("intents.toml").replace("head -c 100", "head -c 200"))  # a's definition changes
    result = chain.make()
    statuses = result.statuses()
    assert statuses["a"] == "ran"
    assert statuses["b"] == "cached"


def test_deleted_output_is_restored_from_cache_without_running(chain):
    chain.make()
    (chain.root / "out/b.txt").unlink()
    chain.write("out/c.txt", "tampered\n")
    result = chain.make()
    assert result.statuses() == {"a": "cached", "b": "restored", "c": "restored"}
    assert result.finished()["ran"] == 0
    assert chain.read("out/b.txt") == "HELLO\nWORLD\n"
    assert chain.read("out/c.txt").strip() == "6"


def test_reverting_an_input_is_served_from_cache(chain):
    chain.make()
    chain.write("src/y.txt", "there\n")
    chain.make()
    chain.write("src/y.txt", "world\n")  # back to the first version: every key was seen before
    result = chain.make()
    assert result.finished()["ran"] == 0
    assert chain.read("out/b.txt") == "HELLO\nWORLD\n"


def test_always_make_reruns_cached_steps(chain):
    chain.make()
    result = chain.make("-B")
    assert result.finished()["ran"] == 3


def test_target_selects_its_closure_only(chain):
    result = chain.make("b")
    assert set(result.statuses()) == {"a", "b"}
    assert not chain.exists("out/c.txt")


def test_failure_exit_1_with_log_tail_and_dependants_skipped(project):
    project.spec("""
        [intent.bad]
        run = "echo compiling; echo 'error: boom at line 3' >&2; exit 3"
        inputs = ["x"]
        [intent.after]
        run = "echo never"
        deps = ["bad"]
        [intent.other]
        run = "echo ok > other.txt"
        inputs = ["x"]
        outputs = ["other.txt"]
    """)
    project.write("x", "1")
    result = project.make("-j1")
    assert result.code == 1
    statuses = result.statuses()
    assert statuses["bad"] == "failed" and statuses["after"] == "skipped"
    failed = next(e for e in result.events() if e.get("status") == "failed")
    assert failed["error"] == "command exited with code 3"
    assert "error: boom at line 3" in failed["log_tail"]
    plain = project.run("make", "bad")
    assert plain.code == 1
    assert "FAILED bad: command exited with code 3" in plain.err
    assert "error: boom at line 3" in plain.err


def test_each_step_log_holds_what_it_printed_and_a_quiet_step_leaves_none(project):
    big = 200_000  # more than a pipe holds: the scheduler must keep reading while the step runs
    project.spec(f"""
        [intent.chatty]
        run = "echo to-stdout; echo to-stderr >&2; head -c {big} /dev/zero | tr '\\\\0' x; echo; echo done"
        inputs = ["x"]
        [intent.quiet]
        run = "cat x > quiet.txt"
        inputs = ["x"]
        outputs = ["quiet.txt"]
    """)
    project.write("x", "1")
    result = project.make("-j2")
    assert result.code == 0, result.err
    finished = {e["intent"]: e for e in result.events() if e["event"] == "step_finished"}
    log = finished["chatty"]["log"]
    lines = Path(log).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("$ echo to-stdout;")
    assert lines[1:3] == ["to-stdout", "to-stderr"] and lines[3] == "x" * big and lines[4:] == ["done"]
    assert "log" not in finished["quiet"]
    assert not (project.root / os.path.dirname(log) / "quiet.log").exists()


def test_a_step_that_failed_runs_again_until_it_succeeds(project):
    """After a good run, an edit makes a step fail: nothing changed since the failure must not make it look
    up to date (the last good run's record is of other inputs)."""
    project.spec("""
        [intent.check]
        run = "grep -q good x && cp x out.txt"
        inputs = ["x"]
        outputs = ["out.txt"]
        [intent.after]
        run = "cat out.txt > after.txt"
        inputs = ["out.txt"]
        outputs = ["after.txt"]
        deps = ["check"]
    """)
    project.write("x", "good 1\n")
    assert project.make().code == 0
    project.write("x", "bad\n")
    assert project.make().statuses() == {"check": "failed", "after": "skipped"}
    again = project.make()
    assert again.code == 1 and again.statuses() == {"check": "failed", "after": "skipped"}
    project.write("x", "good 2\n")
    fixed = project.make()
    assert fixed.statuses() == {"check": "ran", "after": "ran"}
    assert project.read("after.txt") == "good 2\n"
    project.write("x", "good 1\n")  # back to the first good version: served from the cache
    assert project.make().statuses() == {"check": "restored", "after": "restored"}


def test_keep_going_runs_independent_steps(project):
    project.spec("""
        [intent.bad]
        run = "exit 1"
        inputs = ["x"]
        [intent.good]
        run = "sleep 0.3; echo ok > good.txt"
        inputs = ["x"]
        outputs = ["good.txt"]
    """)
    project.write("x", "1")
    result = project.make("-j1", "-k")
    assert result.code == 1
    assert result.statuses() == {"bad": "failed", "good": "ran"}


def test_declared_output_not_produced_fails(project):
    project.spec("""
        [intent.liar]
        run = "true"
        inputs = ["x"]
        outputs = ["promised.txt"]
    """)
    project.write("x", "1")
    result = project.make()
    assert result.code == 1
    failed = result.events()[-2]
    assert failed["error"] == "declared output promised.txt was not produced"


def test_step_without_inputs_runs_every_time(project):
    project.spec("""
        [intent.stamp]
        run = "date +%s%N >> stamps.txt"
    """)
    project.make()
    result = project.make()
    assert result.finished()["ran"] == 1
    assert len(project.read("stamps.txt").splitlines()) == 2


def test_timeout_kills_the_whole_process_group(project):
    project.spec("""
        [intent.slow]
        run = "sh -c 'sleep 30; echo late > late.txt' & echo $! > child.pid; sleep 30"
        inputs = ["x"]
        timeout = 1
    """)
    project.write("x", "1")
    result = project.make()
    assert result.code == 1
    failed = result.events()[-2]
    assert failed["timed_out"] is True
    assert failed["error"] == "timed out after 1s; its process group was killed"
    child = int(project.read("child.pid"))
    assert not os.path.exists(f"/proc/{child}") or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"


def test_timeout_stops_a_command_started_without_the_shell(project):
    project.spec("""
        [intent.slow]
        run = "sleep 30"
        inputs = ["x"]
        timeout = 0.5
    """)
    project.write("x", "1")
    started = time.monotonic()
    result = project.make()
    assert time.monotonic() - started < 10
    failed = result.events()[-2]
    assert (failed["status"], failed["timed_out"], failed["exit_code"]) == ("failed", True, -15)
    assert failed["error"] == "timed out after 0.5s; its process group was killed"


def test_json_contract_event_shapes(chain):
    events = chain.make().events()
    assert events[0]["event"] == "run_started"
    for e in events:
        assert "event" in e
        json.dumps(e)
    finished = [e for e in events if e["event"] == "step_finished"]
    # the aggregate `all` is no step: never reported (b and c may finish in either order)
    assert sorted(e["intent"] for e in finished) == ["a", "b", "c"]
    assert all(e["status"] in {"ran", "cached", "restored", "failed", "skipped"} for e in finished)
    assert {"run_id", "ran", "cached", "failed"} <= set(events[-1])


def test_plain_output_is_lines_not_json(chain):
    result = chain.run("make")
    assert result.code == 0
    assert "ran a" in result.out
    assert result.out.strip().splitlines()[-1].startswith("runner: 3 ran in ")  # `all`, an aggregate, is not "cached"


def test_log_shows_last_run(chain):
    chain.make()
    result = chain.run("log")
    assert result.code == 0
    assert "ran      a" in result.out
    runs = json.loads(chain.run("log", "--list", "--json").out)["runs"]
    assert runs[-1]["ran"] == 3 and runs[-1]["status"] == "ok"
    as_json = json.loads(chain.run("log", "--json").out)
    assert as_json["events"][-1]["event"] == "run_finished"


def test_runs_are_listed_in_the_order_they_ran_within_one_second_too(chain):
    """A run's id sorts as it started, also beside a run that started in the same second: `log --list`, the
    newest run, and every reader of "the runs since RUN" (the learning gate) take that order from the ids."""
    made = []
    for i in range(8):  # a make takes a fraction of a second: several of them share a second
        chain.write("src/y.txt", f"world {i}\n")
        events = chain.make().events()
        made.append(next(e["run_id"] for e in events if e["event"] == "run_started"))
    assert [r["run_id"] for r in json.loads(chain.run("log", "--list", "--json").out)["runs"]] == made


def test_cache_stats_gc_clear(chain):
    chain.make()
    chain.write("src/x.txt", "changed\n")
    chain.make()
    stats = json.loads(chain.run("cache", "stats", "--json").out)
    assert stats["records"] == 5 and stats["blobs"] >= 4
    gc = json.loads(chain.run("cache", "gc", "--json").out)
    assert gc["records_removed"] == 2  # the first versions of a and b
    assert json.loads(chain.run("cache", "stats", "--json").out)["records"] == 3
    assert chain.make().finished()["ran"] == 0  # gc kept what the current state needs
    cleared = chain.run("cache", "clear")
    assert cleared.code == 0
    assert chain.make().finished()["ran"] == 3


def test_unknown_target_is_a_usage_error(chain):
    result = chain.run("make", "bb")
    assert result.code == 2
    assert result.err.strip() == (
        "error: unknown target 'bb' (did you mean 'b'?): no intent has that name and none declares it among its "
        "outputs; `runner list` lists the targets"
    )
    assert "Traceback" not in result.err


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "click"])
def test_a_timeout_past_a_week_is_a_usage_error_on_both_paths(chain, plain):
    """--timeout inf reached epoll as an infinite wait: an internal error (exit 4). -v goes through click."""
    result = chain.run("make", "--timeout", "inf", *([] if plain else ["-v"]))
    assert result.code == 2, result.err
    assert "Invalid value for '--timeout': inf is not in the range 0<x<=604800." in result.err
    assert not chain.exists(".runner")
    schema = json.loads((Path(runner.__file__).parent / "schemas" / "intents.json").read_text())
    assert schema["$defs"]["intent"]["properties"]["timeout"]["maximum"] == MAX_TIMEOUT  # one limit


def test_the_first_make_keeps_the_compiled_spec_for_the_next_full_run(chain):
    chain.age_all()  # spec files edited long ago: their stats vouch for what the compile read
    assert not chain.exists(".runner")
    assert chain.make().code == 0
    assert chain.exists(".runner/spec.pickle"), "the next edit would parse and compile the whole spec again"


def _fingerprint(chain) -> dict:
    """The compiled spec file's fingerprint, (format, version, root, spec files, their stats, the digests of
    their bytes as read), by spec file; and the compilation's token (each compile makes a new one)."""
    with open(chain.root / ".runner/spec.pickle", "rb") as f:
        fingerprint = pickle.load(f)
        token = pickle.load(f)[4]
    files = {path: (stats, read) for path, stats, read in zip(*fingerprint[3:6], strict=True)}
    return {"token": token, "files": files, "spec": files[str(chain.root.resolve() / "intents.toml")]}


UNUSABLE = (-1, -1, -1, -1)


def test_a_spec_compiled_within_a_second_of_its_edit_is_reused_only_by_its_bytes(chain, real_racy_window):
    """Within the racy window a second edit could leave every stat as it was: intents.toml's stats are saved as
    stats no file has, so the next run compares its bytes with those the compile read (their digest) before it
    reuses the compilation, as git does with a racily clean file; the other spec files keep their stats. (The
    fast no-op compares the same bytes with the same digest, kept in the proof, and leaves the compilation be.)"""
    assert chain.make().code == 0
    first = _fingerprint(chain)
    stats, read = first["spec"]
    assert stats == UNUSABLE and read == hashlib.sha256(chain.read("intents.toml").encode()).hexdigest()
    assert any(s not in (UNUSABLE, None) for s, _read in first["files"].values())  # the built-in adapters'
    chain.age_all()
    fast = chain.make()
    assert fast.events()[0].get("fast") is True and set(fast.statuses().values()) == {"cached"}
    assert _fingerprint(chain)["spec"][0] == UNUSABLE
    again = chain.make("-v")  # no plain `runner make`: the full pipeline loads the spec
    assert again.code == 0 and set(again.statuses().values()) == {"cached"}
    after = _fingerprint(chain)
    assert after["token"] == first["token"], "the same bytes were compiled again"
    assert after["spec"][0] == stat_of(os.stat(chain.root / "intents.toml")), "saved with the stats that vouch now"


def test_an_edit_of_the_spec_that_keeps_its_size_and_mtime_is_compiled(chain):
    """Only the ctime tells this edit: the stats differ, the bytes are read, and they differ too."""
    chain.age_all()
    assert chain.make().code == 0
    first = _fingerprint(chain)
    spec = chain.root / "intents.toml"
    before = os.stat(spec)
    text = chain.read("intents.toml").replace("wc -c < src/y.txt", "wc -l < src/y.txt")
    assert len(text) == before.st_size
    spec.write_text(text)
    os.utime(spec, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert stat_of(os.stat(spec))[:2] == stat_of(before)[:2]  # size and mtime as they were
    racy.wait_out()  # the new ctime old enough to vouch
    edited = chain.make()
    assert edited.code == 0, edited.err
    assert edited.statuses()["c"] == "ran" and chain.read("out/c.txt").strip() == "1"
    assert _fingerprint(chain)["token"] != first["token"]


class _CompiledOfTheFirstLayout:
    """Pickles as runner 0.1's first spec cache did: Compiled's whole __dict__ as its state."""

    def __reduce__(self):
        from runner.compiled import Compiled

        return (
            copyreg._reconstructor,
            (Compiled, object, None),
            {"order": ["a"], "deps": {"a": ()}, "static": {"a": "0"}},
        )


def test_a_spec_cache_in_an_older_layout_is_made_again(chain):
    assert chain.make().code == 0
    with open(chain.root / ".runner/spec.pickle", "wb") as f:
        pickle.dump(((5, "0.1.0", ()), _CompiledOfTheFirstLayout()), f)
    (chain.root / ".runner/noop").unlink()  # past the no-op proof, into the full pipeline
    result = chain.make()
    assert result.code == 0, result.err
    assert set(result.statuses().values()) == {"cached"}
    chain.write("src/x.txt", "edited\n")
    assert chain.make().statuses() == {"a": "ran", "b": "ran", "c": "cached"}


def test_a_state_index_and_stat_cache_in_the_first_layout_are_read(chain):
    """runner 0.1 first kept each entry (an intent's key and outputs, a file's stats and digest) as a plain
    marshal value, not as its own marshal bytes."""
    assert chain.make().code == 0
    for name, keys in (("state", {"a", "b", "c"}), ("stat", {"src/x.txt", "src/y.txt", "out/a.txt"})):
        index = chain.root / ".runner" / name
        entries = {key: marshal.loads(value) for key, value in IndexFile(str(index)).read().items()}
        assert keys <= set(entries)
        index.write_bytes(marshal.dumps(entries))
    (chain.root / ".runner/noop").unlink()
    result = chain.make()
    assert result.code == 0, result.err
    assert result.statuses() == {"a": "cached", "b": "cached", "c": "cached"}
    assert {e["intent"]: e["reasons"] for e in result.events() if e.get("status") == "cached"}["a"] == ["up to date"]


def test_a_step_sees_the_environment_plus_its_own_env(project):
    """`env` adds to what the run inherited, whether the line starts with or without the shell."""
    project.spec("""
        [intent.plain]
        run = "printenv GREETING RUNNER_TEST_INHERITED > plain.txt"
        env = { GREETING = "hello" }
        outputs = ["plain.txt"]

        [intent.shell]
        run = "echo \\"$GREETING $RUNNER_TEST_INHERITED\\" > shell.txt"
        env = { GREETING = "hi" }
        outputs = ["shell.txt"]
    """)
    result = project.make(env={"RUNNER_TEST_INHERITED": "from-the-caller"})
    assert result.code == 0, result.err
    assert project.read("plain.txt") == "hello\nfrom-the-caller\n"
    assert project.read("shell.txt") == "hi from-the-caller\n"


def test_json_events_reach_a_pipe_before_the_run_waits(project):
    """`runner make --json | consumer` sees a step start while it runs, however Python buffers a pipe."""
    import subprocess
    import sys

    project.spec("""
        [intent.slow]
        run = "sleep 3"
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    run = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"], cwd=project.root, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        events = []
        for line in run.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] == "step_started":
                break
        assert run.poll() is None, "the step_started line came only when the run had ended"
        assert [e["event"] for e in events] == ["run_started", "step_started"]
        assert [json.loads(line)["event"] for line in run.stdout] == ["step_finished", "run_finished"]
    finally:
        run.kill()
        run.wait()


def test_a_plain_make_runs_without_click_and_a_bad_option_still_gets_clicks_message(chain):
    """`runner make --json` (as scripts call it) starts without importing click; anything it does not take
    plainly, such as -j 0, goes to click, which says what is wrong (even when the run would be a no-op)."""
    import subprocess
    import sys

    assert chain.make().code == 0
    chain.write("src/x.txt", "edited\n")
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "runner", "make", "--json", "-j", "2"],
        cwd=chain.root,
        capture_output=True,
        text=True,
    )
    assert timed.returncode == 0 and json.loads(timed.stdout.splitlines()[-1])["ran"] == 2
    assert not [line for line in timed.stderr.splitlines() if line.rstrip().endswith("| click")]
    assert chain.make().finished()["ran"] == 0
    for bad in (["-j", "0"], ["-j0"], ["--timeout", "-1"]):
        result = chain.make(*bad)
        assert result.code == 2 and "Invalid value for" in result.err, bad
        # asked for --json: the same message as an error object on stdout (runner/schemas/events.json)
        assert json.loads(result.out) == {
            "event": "error",
            "code": 2,
            "message": result.err.strip().splitlines()[-1].removeprefix("Error: "),
            "problems": [],
        }, bad


def test_a_spec_cache_cut_short_is_made_again(chain):
    """The compiled spec's step records follow its header in the same file: a file cut short (a full disk, a
    copy interrupted) is compiled again, not read past its end."""
    chain.age_all()  # a spec older than the racy window is kept
    assert chain.make().code == 0
    cache = chain.root / ".runner/spec.pickle"
    cache.write_bytes(cache.read_bytes()[:-40])
    chain.write("src/x.txt", "edited\n")
    result = chain.make()
    assert result.code == 0, result.err
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "cached"}
