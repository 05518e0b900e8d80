"""`runner log [RUN] --trace FILE`: a recorded run as Chrome trace-event JSON, through the CLI on real runs: one
complete event per step on its job slot's track, named by its intent; agent attempts and their verify commands
nested inside; the errors a user meets."""

from __future__ import annotations

import json

PARALLEL = """
[intent.left]
run = "sleep 0.3; echo l > left.txt"
inputs = ["x"]
outputs = ["left.txt"]

[intent.right]
run = "sleep 0.5; echo r > right.txt"
inputs = ["x"]
outputs = ["right.txt"]

[intent.third]
run = "sleep 0.1; echo t > third.txt"
inputs = ["x"]
outputs = ["third.txt"]

[intent.joined]
run = "cat left.txt right.txt third.txt > joined.txt"
deps = ["left", "right", "third"]
outputs = ["joined.txt"]
"""


def slices(trace: dict, category: str | None = None) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and (category is None or e["cat"] == category)]


def inside(inner: dict, outer: dict) -> bool:
    return (
        inner["tid"] == outer["tid"]
        and outer["ts"] <= inner["ts"]
        and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    )


def test_a_j2_run_traced_one_slice_per_step_on_its_slot(project):
    project.spec(PARALLEL)
    project.write("x", "1")
    built = project.make("-j", "2", "joined")
    assert built.code == 0, built.err
    result = project.run("log", "--trace", "trace.json")
    assert result.code == 0, result.err
    run_id = built.events()[0]["run_id"]
    trace_path = project.root / "trace.json"
    assert result.err == (
        f"runner: run {run_id}: 4 steps traced in trace.json; open it in https://ui.perfetto.dev or chrome://tracing\n"
    )
    trace = json.loads(trace_path.read_text())
    assert trace["displayTimeUnit"] == "ms" and trace["otherData"]["run_id"] == run_id
    steps = {e["name"]: e for e in slices(trace, "step")}
    assert set(steps) == {"left", "right", "third", "joined"}
    assert all(e["ph"] == "X" and e["pid"] == 1 and e["tid"] in (0, 1) for e in steps.values())
    assert all(e["args"]["status"] == "ran" for e in steps.values())
    # the two tracks are named, and the first two steps ran side by side, one on each
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {0: "slot 0", 1: "slot 1"}
    assert {steps["left"]["tid"], steps["right"]["tid"]} == {0, 1}
    assert steps["right"]["dur"] >= 450_000  # microseconds: the step's own sleep 0.5
    # no slot runs two steps at once, and `joined` starts once the three it needs have ended
    for a in steps.values():
        for b in steps.values():
            if a is not b and a["tid"] == b["tid"]:
                assert a["ts"] + a["dur"] <= b["ts"] + 2000 or b["ts"] + b["dur"] <= a["ts"] + 2000
    deps_end = max(steps[n]["ts"] + steps[n]["dur"] for n in ("left", "right", "third"))
    assert steps["joined"]["ts"] >= deps_end - 2000
    # --json says where it went; a run named by a prefix of its id is traced the same
    again = project.run("log", "--json", run_id[:15], "--trace", str(project.root / "again.json"))
    assert json.loads(again.out) == {"run_id": run_id, "trace": str(project.root / "again.json"), "steps": 4}


def test_a_cached_run_traces_no_step_and_a_failed_step_says_how_it_ended(project):
    project.spec(PARALLEL + '\n[intent.broken]\nrun = "echo nope >&2; exit 3"\ninputs = ["x"]\n')
    project.write("x", "1")
    assert project.make("joined").code == 0
    assert project.make("-v", "joined").code == 0  # the full pipeline's no-op: every step cached
    assert project.run("log", "--trace", "t.json").code == 0
    assert slices(json.loads((project.root / "t.json").read_text())) == []
    assert project.make("broken").code == 1
    assert project.run("log", "--trace", "t.json").code == 0
    (broken,) = slices(json.loads((project.root / "t.json").read_text()))
    assert broken["name"] == "broken" and broken["args"]["status"] == "failed" and broken["args"]["exit_code"] == 3


def test_agent_attempts_and_their_verify_commands_nest_inside_their_step(quickstart):
    """The quickstart's agent steps, served by the replay worker: `tests` fails its first attempt's verify and
    passes the second; each attempt is a slice inside the step's, each verify command one inside its attempt's."""
    root, runner = quickstart

    assert runner("make", "-j", "2").returncode == 0
    traced = runner("log", "--trace", "trace.json")
    assert traced.returncode == 0, traced.stderr
    trace = json.loads((root / "trace.json").read_text())
    steps = {e["name"]: e for e in slices(trace, "step")}
    assert set(steps) == {"tests", "docs", "check"}
    attempts = [e for e in slices(trace, "attempt") if e["name"].startswith("tests ")]
    assert [a["name"] for a in attempts] == ["tests candidate 1 attempt 1", "tests candidate 1 attempt 2"]
    assert [a["args"]["verdict"] for a in attempts] == ["rejected (logic)", "verified"]
    assert all(inside(a, steps["tests"]) for a in attempts)
    verifies = [v for v in slices(trace, "verify") if inside(v, steps["tests"])]
    assert [v["name"] for v in verifies] == ["verify test", "verify test"]
    assert [v["args"]["exit_code"] for v in verifies] == [1, 0]
    assert inside(verifies[0], attempts[0]) and inside(verifies[1], attempts[1])


def test_what_a_trace_cannot_be_made_of(chain):
    no_runs = chain.run("log", "--trace", "t.json")
    assert (no_runs.code, no_runs.err) == (2, "error: no runs recorded yet in .runner/runs: run `runner make` first\n")
    built = chain.make()
    run_id = built.events()[0]["run_id"]
    step = chain.run("log", "b", "--trace", "t.json")
    assert step.code == 2
    assert step.err == (
        f"error: --trace writes a run's trace and b is a step: `runner log {run_id} --trace t.json` writes the run "
        "that last ran it\n"
    )
    (chain.root / "folder").mkdir()
    folder = chain.run("log", "--trace", "folder")
    assert folder.code == 2 and folder.err.endswith(
        "Error: Invalid value for '--trace': File 'folder' is a directory.\n"
    )
    missing = chain.run("log", "--trace", "no/such/dir/t.json")
    assert missing.code == 2
    assert missing.err == "error: cannot write the trace to no/such/dir/t.json: No such file or directory\n"
    listed = chain.run("log", "--list", "--trace", "t.json")
    assert (listed.code, listed.err) == (2, "error: --trace writes one run's trace; it does not go with --list\n")
    # a run recorded before events carried their times: said, nothing written
    events = chain.root / ".runner" / "runs" / run_id / "events.jsonl"
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    for e in lines:
        e.pop("at", None), e.pop("slot", None), e.pop("started", None)
    events.write_text("".join(json.dumps(e) + "\n" for e in lines))
    old = chain.run("log", "--trace", "t.json")
    assert (old.code, old.err) == (
        2,
        f"error: run {run_id} was recorded before runner timed its steps: no trace to write "
        "(a run of `runner make` now records one)\n",
    )
    assert not (chain.root / "t.json").exists()
