"""The scripting contract of `runner make --json`: every line of every path validates against one schema,
runner/schemas/events.json, and the run's record (.runner/runs/<id>/events.jsonl) holds the same lines.

Each path runs through the real CLI in a subprocess: a build, the fast no-op and the full pipeline's no-op
(which must say the same thing), a restore, a failure with and without -k, a timeout, a blocked agent step,
`-n`, an interrupted run, a lock held with --no-wait, and agent steps served by the replay worker (one run
killed mid-apply, the next recovering it; an edited output kept).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(files("runner.schemas").joinpath("events.json").read_text(encoding="utf-8"))
VALIDATOR = Draft7Validator(SCHEMA)


def conforming(out: str) -> list[dict]:
    """The events of a `runner make --json` stdout, each checked against the schema."""
    events = []
    for line in out.splitlines():
        event = json.loads(line)
        problems = [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in VALIDATOR.iter_errors(event)]
        assert not problems, f"{line}\n" + "\n".join(problems)
        # lines the scheduler writes without the encoder (cached, started, ran) are what the encoder writes
        assert line == json.dumps(event), line
        events.append(event)
    return events


def recorded(root: Path, out: str) -> list[dict]:
    """The run's own record, which must hold the very lines the run printed."""
    run_id = next(e["run_id"] for e in map(json.loads, out.splitlines()) if e["event"] == "run_started")
    text = (root / ".runner" / "runs" / run_id / "events.jsonl").read_text(encoding="utf-8")
    assert text.splitlines() == out.splitlines()
    return conforming(text)


def test_the_schema_is_a_valid_schema_and_ships_in_the_wheel():
    Draft7Validator.check_schema(SCHEMA)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(fnmatch.fnmatch("schemas/events.json", glob) for glob in package_data["runner"])
    assert "runner/schemas/events.json" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("args", [[], ["all"], ["-j", "3", "b"]], ids=["default", "named", "jobs"])
def test_the_fast_no_op_and_the_full_pipeline_say_the_same(chain, args):
    built = chain.make(*args)
    assert built.code == 0, built.err
    recorded(chain.root, built.out)
    fast = chain.make(*args)  # right after a good run: the proof holds, nothing is loaded
    slow = chain.make(*args, "-v")  # -v is no plain `runner make`: the full pipeline decides the same no-op
    fast_events, slow_events = recorded(chain.root, fast.out), recorded(chain.root, slow.out)
    assert fast_events[0].get("fast") is True and "fast" not in slow_events[0]
    # one dialect: the same events with the same keys, and the same values but for the run's id, its timing
    # and the reasons' prose (a proof says "up to date" of an aggregate the rule calls "aggregate of 2 steps")
    ignored = ("run_id", "duration", "fast", "reasons", "started")
    for a, b in zip(fast_events, slow_events, strict=True):
        assert set(a) - {"fast"} == set(b)
        assert {k: v for k, v in a.items() if k not in ignored} == {k: v for k, v in b.items() if k not in ignored}
    finished = fast_events[-1]
    assert finished["target"] == (args[-1] if args else None)
    assert finished["blocked"] == 0 and finished["status"] == "ok"


PARALLEL = """
[intent.slow1]
run = "sleep 0.7; echo 1 > one.txt"
inputs = ["x"]
outputs = ["one.txt"]

[intent.slow2]
run = "sleep 0.3; echo 2 > two.txt"
inputs = ["x"]
outputs = ["two.txt"]

[intent.slow3]
run = "sleep 0.2; echo 3 > three.txt"
inputs = ["x"]
outputs = ["three.txt"]

[intent.last]
run = "cat one.txt two.txt three.txt > all.txt"
deps = ["slow1", "slow2", "slow3"]
outputs = ["all.txt"]
"""


def test_each_started_step_says_when_and_on_which_job_slot(project):
    """`at` (seconds since run_started) on step_started and step_finished, the slot a step ran on below -j, the
    wall-clock start on run_started: what a timeline and `runner log --trace` are drawn from."""
    project.spec(PARALLEL)
    project.write("x", "1")
    result = project.make("-j", "2", "last")
    assert result.code == 0, result.err
    events = recorded(project.root, result.out)
    started = events[0]["started"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", started), started
    began = datetime.fromisoformat(started.replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - began).total_seconds()) < 60
    starts = {e["intent"]: e for e in events if e["event"] == "step_started"}
    ends = {e["intent"]: e for e in events if e["event"] == "step_finished"}
    assert set(starts) == set(ends) == {"slow1", "slow2", "slow3", "last"}
    for name, start in starts.items():
        end = ends[name]
        assert 0 <= start["slot"] < 2
        assert end["at"] - end["duration"] == pytest.approx(start["at"], abs=0.002)
    # two slots: slow1 and slow2 start together; slow3 takes the slot slow2 (the shorter, started second) freed,
    # never one still held; `last` starts after all three
    assert {starts["slow1"]["slot"], starts["slow2"]["slot"]} == {0, 1}
    assert starts["slow3"]["at"] >= min(ends["slow1"]["at"], ends["slow2"]["at"]) - 0.002
    assert starts["last"]["at"] >= max(ends[n]["at"] for n in ("slow1", "slow2", "slow3")) - 0.002
    # no two steps overlap on one slot
    for a in starts:
        for b in starts:
            if a < b and starts[a]["slot"] == starts[b]["slot"]:
                assert ends[a]["at"] <= starts[b]["at"] + 0.002 or ends[b]["at"] <= starts[a]["at"] + 0.002
    assert events[-1]["duration"] >= ends["last"]["at"] - 0.01


def test_a_build_then_a_restore(chain):
    events = recorded(chain.root, chain.make().out)
    assert [e["event"] for e in events][:2] == ["run_started", "step_started"]
    (chain.root / "out/b.txt").unlink()
    result = chain.make()
    recorded(chain.root, result.out)
    assert result.statuses() == {"a": "cached", "b": "restored", "c": "cached"}


def test_a_build_and_a_clone_through_a_shared_remote_cache(chain, tmp_path):
    remote = {"RUNNER_REMOTE_CACHE": (tmp_path / "shared").as_uri()}
    built = recorded(chain.root, chain.make(env=remote).out)
    assert built[-1]["remote"]["uploaded"] == 3
    shutil.rmtree(chain.root / ".runner")
    for output in (chain.root / "out").iterdir():
        output.unlink()
    served = chain.make(env=remote)
    events = recorded(chain.root, served.out)
    assert events[-1]["remote"]["hits"] == 3 and events[-1]["remote"]["down"] is None


FAILING = """
[intent.bad]
run = "echo broken >&2; exit 3"
inputs = ["x"]

[intent.after]
run = "echo after"
deps = ["bad"]
inputs = ["x"]

[intent.slow]
run = "sleep 5"
inputs = ["x"]
timeout = 0.3

[intent.fine]
run = "echo fine > fine.txt"
inputs = ["x"]
outputs = ["fine.txt"]

[intent.all]
deps = ["after", "slow", "fine"]
"""


@pytest.mark.parametrize("keep_going", [False, True], ids=["stop", "keep-going"])
def test_a_failed_run(project, keep_going):
    project.spec(FAILING)
    project.write("x", "1")
    result = project.make("-j", "1", *(["-k"] if keep_going else []), "all")
    assert result.code == 1, result.err
    events = recorded(project.root, result.out)
    bad = next(e for e in events if e.get("intent") == "bad" and e["event"] == "step_finished")
    assert bad["status"] == "failed" and bad["exit_code"] == 3 and "broken" in bad["log_tail"]
    assert bad["reasons"] == ["no cache entry"]
    finished = events[-1]
    assert finished["status"] == "failed" and "after" in finished["left"]
    if keep_going:
        slow = next(e for e in events if e.get("intent") == "slow" and e["event"] == "step_finished")
        assert slow["status"] == "failed" and slow["timed_out"] is True
        assert result.statuses()["fine"] == "ran"


def test_a_step_that_printed_and_ran_has_the_encoder_s_line(project):
    """A step that ran and printed: its step_finished line is made without the encoder, its log among its keys
    (runner/events.py, step_ran), and must be the line the encoder makes of the same event."""
    project.spec('[intent.chatty]\nrun = "echo said"\ninputs = ["x"]\n')
    project.write("x", "1")
    result = project.make("--json")
    assert result.code == 0, result.err
    ran = next(e for e in recorded(project.root, result.out) if e["event"] == "step_finished")
    assert (ran["status"], Path(ran["log"]).name) == ("ran", "chatty.log")


def test_a_blocked_agent_step(project):
    project.spec("""
        [worker]
        kind = "replay"

        [policy.default]
        approval = "manual"

        [intent.notes]
        goal = "Write notes.md"
        inputs = ["x"]
        outputs = ["notes.md"]
    """)
    project.write("x", "1")
    result = project.make()
    assert result.code == 3, result.err
    events = recorded(project.root, result.out)
    assert events[-2]["status"] == "blocked" and "runner approve notes" in events[-2]["error"]
    assert events[-1]["status"] == "blocked" and events[-1]["left"] == ["notes"]


def test_a_dry_run_writes_one_plan_event(chain):
    result = chain.run("make", "-n", "--json")
    assert result.code == 0, result.err
    assert len(result.out.splitlines()) == 1
    (plan,) = conforming(result.out)
    assert plan["event"] == "plan" and plan["target"] is None
    assert [s["intent"] for s in plan["steps"]] == ["a", "b", "c", "all"]
    assert not (chain.root / ".runner" / "runs").exists(), "a dry run records no run"


HELD = """
[intent.quick]
run = "echo quick > quick.txt"
inputs = ["x"]
outputs = ["quick.txt"]

[intent.held]
run = "sleep 30"
inputs = ["x"]
deps = ["quick"]
"""


def test_an_interrupted_run_and_a_lock_held_with_no_wait(project):
    project.spec(HELD)
    project.write("x", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    while not seen or '"intent": "held"' not in seen[-1]:  # events are written before the runner waits
        seen.append(proc.stdout.readline())
        assert seen[-1], proc.stderr.read()
    # a second runner that may not wait starts no run: one error object, the exit code and stderr say why
    second = project.run("make", "--json", "--no-wait")
    assert second.code == 3 and "is locked by pid" in second.err
    (error,) = conforming(second.out)
    assert error == {"event": "error", "code": 3, "message": second.err.strip().removeprefix("error: "), "problems": []}
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    out = "".join(seen) + rest
    events = recorded(project.root, out)
    held = events[-2]
    assert held["intent"] == "held" and held["status"] == "failed" and held["interrupted"] is True
    assert events[-1]["status"] == "interrupted" and events[-1]["left"] == ["held"]


def test_agent_steps_served_by_the_replay_worker_and_an_apply_recovered(tmp_path):
    """The quickstart's agent steps, the first run killed in the middle of applying a verified change (the
    apply's own crash hook), the second completing that apply and saying so."""
    example = ROOT / "examples" / "quickstart"
    root = tmp_path / "quickstart"
    generated = {".runner", "build", "tests", "docs"}
    shutil.copytree(example, root, ignore=lambda d, names: generated & set(names) if Path(d) == example else set())
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}  # no key: nothing can call a model

    def make(**extra: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "runner", "make", "--json"]
        return subprocess.run(command, cwd=root, capture_output=True, text=True, env={**env, **extra}, timeout=300)

    crashed = make(RUNNER_TEST_CRASH_AT="journaled")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    first = conforming(crashed.stdout)  # every line it wrote before it died
    result = make()
    assert result.returncode == 0, result.stderr
    second = recorded(root, result.stdout)
    assert second[0]["event"] == "recovered" and second[0]["message"].startswith("completed the interrupted apply")
    events = first + second
    assert {"attempt_started", "attempt_finished"} <= {e["event"] for e in events}
    applied = [e for e in events if e["event"] == "step_finished" and e["status"] == "ran" and "agent" in e]
    assert applied and all(e["outputs"] for e in applied)


def test_an_agent_step_s_edited_output_kept_as_its_next_version(tmp_path):
    """The quickstart's `tests` output edited by hand: its step_finished says kept, with the version it became,
    and run_finished counts it (runner/edits.py)."""
    example = ROOT / "examples" / "quickstart"
    root = tmp_path / "quickstart"
    generated = {".runner", "build", "tests", "docs"}
    shutil.copytree(example, root, ignore=lambda d, names: generated & set(names) if Path(d) == example else set())
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}  # no key: nothing can call a model
    command = [sys.executable, "-m", "runner", "make", "--json"]
    assert subprocess.run(command, cwd=root, capture_output=True, env=env, timeout=300).returncode == 0
    with open(root / "tests/test_calc.py", "a") as f:
        f.write("# mine\n")
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    events = recorded(root, result.stdout)
    kept = next(e for e in events if e.get("intent") == "tests")
    assert (kept["status"], kept["version"]) == ("kept", 2)
    assert events[-1]["kept"] == 1


@pytest.mark.parametrize("extra", [[], ["-v"]], ids=["plain-path", "click"])
def test_a_run_that_cannot_start_writes_one_error_object(chain, extra):
    """Without click (entry's plain path) and through click's boundary alike: the message on stderr, the same
    as one JSON line on stdout, and no run recorded."""
    result = chain.make("nosuch", *extra)
    assert result.code == 2 and result.err.startswith("error: unknown target 'nosuch'")
    message = result.err.removeprefix("error: ").removesuffix("\n")
    assert conforming(result.out) == [{"event": "error", "code": 2, "message": message, "problems": []}]
    assert not (chain.root / ".runner" / "runs").exists()


def test_a_spec_error_lists_its_problems_in_the_error_object(project):
    project.spec("""
        [intent.a]
        run = "echo a"
        colour = "blue"
        timeout = "soon"
    """)
    result = project.make()
    assert result.code == 2
    (error,) = conforming(result.out)
    assert error["message"] == result.err.rstrip("\n").removeprefix("error: ")
    assert error["message"].startswith("2 problems in the spec\n")
    validated = json.loads(project.run("validate", "--json").out)  # the same problems validate lists
    assert error["problems"] == validated["problems"] and len(error["problems"]) == 2
    assert {p["path"] for p in error["problems"]} == {"intent.a.colour", "intent.a.timeout"}
    assert all(p["file"].endswith("intents.toml") and p["line"] for p in error["problems"])


def test_every_command_with_json_says_its_error_in_json_once(chain):
    status = chain.run("status", "nosuch", "--json")
    assert status.code == 2 and conforming(status.out)[0]["message"] == status.err.removeprefix("error: ").rstrip()
    chain.spec("[intent.a]\nrun = 3\n")
    validate = chain.run("validate", "--json")  # its answer is the problems: no second document after it
    assert validate.code == 2 and json.loads(validate.out)["ok"] is False
    # a problem quoting a secret's value: masked in the error object as on stderr
    chain.spec('[intent.a]\nrun = "echo"\ntimeout = "s3cr3t-in-a-spec-error"\n')
    masked = chain.run("status", "--json", env={"MY_SERVICE_TOKEN": "s3cr3t-in-a-spec-error"})
    (error,) = conforming(masked.out)
    assert masked.code == 2 and "s3cr3t" not in masked.out + masked.err
    assert "[REDACTED:MY_SERVICE_TOKEN]" in error["message"] and "[REDACTED:MY_SERVICE_TOKEN]" in str(error["problems"])
