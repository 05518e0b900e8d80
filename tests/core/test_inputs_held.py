"""A step's record is stored only for the inputs it read (runner/inputs_held.py): an input edited while the step
reads it, or a file created under an input glob while it runs, leaves nothing cached; put the old bytes back, and
the next `runner make` runs the step again instead of keeping the output made from the new ones.

Each step here waits at a gate while a `hold` file exists, after it was decided (its key made from the inputs as
they were) and before it reads them: the test changes an input there, then lets it go (`go`). Timing plays no
part: the edit always lands while the step runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

GATE = "if [ -e hold ]; then : > started; while [ ! -e go ]; do sleep 0.01; done; rm -f hold go started; fi; "

COPY = f"""
[intent.copy]
run = "{GATE}cat in.txt > out.txt"
inputs = ["in.txt"]
outputs = ["out.txt"]

[intent.upper]
run = "tr a-z A-Z < out.txt > upper.txt"
inputs = ["out.txt"]
outputs = ["upper.txt"]
deps = ["copy"]
"""

GLOB = f"""
[intent.joined]
run = "{GATE}cat src/*.txt > out.txt"
inputs = ["src/*.txt"]
outputs = ["out.txt"]
"""

NOT_CACHED = "nothing was cached, the next `runner make` runs it again"


def _while_held(project, during, *args: str):
    """`runner make ARGS` with the gate closed: once the step waits there, `during()`, then the gate opens."""
    (project.root / "hold").write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", *args],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (project.root / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the step never reached its gate"
        time.sleep(0.01)
    during()
    (project.root / "go").write_text("")
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _finished(events: list[dict], name: str) -> dict:
    return next(e for e in events if e["event"] == "step_finished" and e["intent"] == name)


def _status(project) -> dict[str, dict]:
    result = project.cli("status", "--json")
    assert result.code == 0, result.err
    return {s["intent"]: s for s in json.loads(result.out)["steps"]}


def test_an_input_edited_while_the_step_reads_it_is_not_cached_and_putting_it_back_runs_the_step(project):
    project.spec(COPY)
    project.write("in.txt", "old\n", age=60)
    project.age_all()  # its stats vouch for its bytes: only the edit's own new stats can tell
    code, out, err = _while_held(project, lambda: project.write("in.txt", "new\n"), "--json")
    assert code == 0, err
    events = _events(out)
    copy = _finished(events, "copy")
    assert copy["status"] == "ran"
    assert copy["inputs_changed"] == ["in.txt"]
    assert copy["reasons"][-1] == f"input in.txt changed while the step ran: {NOT_CACHED}"
    assert project.read("out.txt") == "new\n"  # its outputs stand, as the command made them
    # its dependant ran on them: its key names the bytes copy wrote, so its own record is true
    assert _finished(events, "upper")["status"] == "ran" and "inputs_changed" not in _finished(events, "upper")
    assert events[-1]["status"] == "ok" and events[-1]["inputs_changed"] == ["copy"]

    project.write("in.txt", "old\n")  # the edit undone: the bytes copy's key was made from
    assert _status(project)["copy"]["action"] == "run"
    again = project.make()
    assert again.code == 0, again.err
    assert again.statuses() == {"copy": "ran", "upper": "ran"}
    assert project.read("out.txt") == "old\n" and project.read("upper.txt") == "OLD\n"
    assert project.make().statuses() == {"copy": "cached", "upper": "cached"}


def test_the_step_line_says_which_input_changed_and_the_summary_what_was_not_cached(project):
    project.spec(COPY)
    project.write("in.txt", "old\n")
    code, out, err = _while_held(project, lambda: project.write("in.txt", "newer\n"))
    assert code == 0, err
    said = f"s): input in.txt changed while the step ran: {NOT_CACHED}"
    assert any(line.startswith("[1/2] ran copy (") and line.endswith(said) for line in out.splitlines()), out
    assert "not cached, an input changed while it ran: copy (the next `runner make` runs it again)" in err + out, (
        out + err
    )


def test_the_old_bytes_put_back_are_no_touch_the_fast_no_op_may_prove(project):
    """The fast no-op's proof (freshness shortcut 3) must not vouch for the step: the edited input's view is
    recorded as a stat no file has, so putting its old bytes back (new stats, the bytes the stat cache knew) is
    decided by the rule, which runs the step."""
    project.spec(COPY)
    project.write("in.txt", "old\n")
    project.age_all()
    assert project.make().statuses() == {"copy": "ran", "upper": "ran"}
    assert project.make().statuses() == {"copy": "cached", "upper": "cached"}  # a proof of the target stands
    project.spec(COPY.replace("cat in.txt", "cat  in.txt"))  # the command respelled: copy must run again
    code, _out, err = _while_held(project, lambda: project.write("in.txt", "new\n"), "--json")
    assert code == 0, err
    project.write("in.txt", "old\n")  # new stats, the bytes the stat cache knew from before the run
    again = project.run("make", "--json")  # the real entry point: the fast no-op first
    assert again.code == 0, again.err
    assert again.statuses()["copy"] == "ran"
    assert project.read("out.txt") == "old\n"


def test_a_file_created_under_an_input_glob_while_the_step_runs_and_deleted_after_is_not_cached(project):
    project.spec(GLOB)
    project.write("src/a.txt", "a\n")
    project.age_all()
    code, out, err = _while_held(project, lambda: project.write("src/b.txt", "b\n"), "--json")
    assert code == 0, err
    joined = _finished(_events(out), "joined")
    assert joined["status"] == "ran" and joined["inputs_changed"] == ["src/b.txt"]
    assert joined["reasons"][-1] == f"input src/b.txt created while the step ran: {NOT_CACHED}"
    assert project.read("out.txt") == "a\nb\n"

    (project.root / "src/b.txt").unlink()  # the set of files its key was made from, again
    assert _status(project)["joined"]["action"] == "run"
    again = project.make()
    assert again.statuses() == {"joined": "ran"}
    assert project.read("out.txt") == "a\n"
    assert project.make().statuses() == {"joined": "cached"}


def test_a_file_deleted_under_an_input_glob_while_the_step_runs_is_not_cached(project):
    project.spec(GLOB.replace("cat src/*.txt", "cat src/*.txt 2>/dev/null"))
    project.write("src/a.txt", "a\n")
    project.write("src/b.txt", "b\n")
    project.age_all()
    code, out, err = _while_held(project, lambda: (project.root / "src/b.txt").unlink(), "--json")
    assert code == 0, err
    joined = _finished(_events(out), "joined")
    assert joined["inputs_changed"] == ["src/b.txt"]
    assert joined["reasons"][-1] == f"input src/b.txt deleted while the step ran: {NOT_CACHED}"
    project.write("src/b.txt", "b\n")
    assert project.make().statuses() == {"joined": "ran"}
    assert project.read("out.txt") == "a\nb\n"


def test_an_input_rewritten_with_the_same_bytes_while_the_step_runs_is_not_cached_either(project):
    """New stats, the same bytes at the end: a rewrite in place is empty, then partly written, for a moment, and
    the step may have read it then. The stats alone judge (inputs_held.py): nothing cached, and the next run
    caches it."""
    project.spec(COPY)
    project.write("in.txt", "old\n")
    project.age_all()
    code, out, err = _while_held(project, lambda: project.write("in.txt", "old\n"), "--json")
    assert code == 0, err
    copy = _finished(_events(out), "copy")
    assert copy["status"] == "ran" and copy["inputs_changed"] == ["in.txt"]
    assert project.make().statuses() == {"copy": "ran", "upper": "cached"}  # the same output: upper's key holds
    assert project.make().statuses() == {"copy": "cached", "upper": "cached"}


def test_inputs_that_held_still_while_a_clean_build_ran_are_cached(project):
    """The usual clean build: upper's input is copy's output, written and hashed a moment before (its stats too
    fresh to vouch by themselves); the re-check finds it as the run left it."""
    project.spec(COPY)
    project.write("in.txt", "old\n")
    first = project.make()
    assert first.code == 0, first.err
    assert first.statuses() == {"copy": "ran", "upper": "ran"}
    assert all("inputs_changed" not in e for e in first.events())
    assert project.make().statuses() == {"copy": "cached", "upper": "cached"}
