"""Shell steps on a real Dask cluster of worker processes on 127.0.0.1, sharing the project's filesystem."""

from __future__ import annotations

import json
import os
import signal
import time
from importlib.resources import files
from pathlib import Path

import pytest
from executor_helpers import Result, project, runner, start_runner, wait_for
from jsonschema import Draft7Validator

# a diamond and a fan: outputs built from other outputs, so a wrong order or a lost byte shows in the result
SPEC = """\
[project]
name = "cluster"

[intent.seed]
run = "printf 'seed %s\\\\n' 42 > seed.txt"
inputs = ["intents.toml"]
outputs = ["seed.txt"]

[intent.left]
run = "sed 's/seed/left/' seed.txt > left.txt && echo left printed"
deps = ["seed"]
inputs = ["seed.txt"]
outputs = ["left.txt"]

[intent.right]
run = "sed 's/seed/right/' seed.txt > right.txt"
deps = ["seed"]
inputs = ["seed.txt"]
outputs = ["right.txt"]

[intent.fan]
run = "for i in 1 2 3; do cat left.txt right.txt > fan$i.txt; done"
deps = ["left", "right"]
inputs = ["left.txt", "right.txt"]
outputs = ["fan1.txt", "fan2.txt", "fan3.txt"]

[intent.join]
run = "cat fan1.txt fan2.txt fan3.txt | sort > join.txt"
deps = ["fan"]
inputs = ["fan*.txt"]
outputs = ["join.txt"]
"""
OUTPUTS = ["seed.txt", "left.txt", "right.txt", "fan1.txt", "fan2.txt", "fan3.txt", "join.txt"]


def test_a_build_on_the_cluster_gives_the_local_bytes_then_a_noop(cluster, tmp_path: Path):
    address, workers = cluster
    here = project(tmp_path / "here", SPEC)
    there = project(tmp_path / "there", SPEC)
    assert runner(here, "make", "--executor", "local").code == 0

    built = runner(there, "make", "--json", "--executor", address.replace("tcp://", "dask://"), "-j", "4")
    assert built.code == 0, built.err
    for rel in OUTPUTS:
        assert (there / rel).read_bytes() == (here / rel).read_bytes(), rel
    ran = built.finished("ran")
    assert sorted(e["intent"] for e in ran) == ["fan", "join", "left", "right", "seed"]
    assert {e["worker"] for e in ran} <= set(workers)  # each step names the worker that ran it
    left = next(e for e in ran if e["intent"] == "left")
    assert Path(left["log"]).read_text() == f"$ {_line(SPEC, 'left')}\nleft printed\n"  # written on this side

    validator = Draft7Validator(json.loads(files("runner.schemas").joinpath("events.json").read_text()))
    for event in built.events():  # the events' contract (runner/schemas/events.json) holds their `worker`
        validator.validate(event)

    again = runner(there, "make", "--json", "--executor", address.replace("tcp://", "dask://"))
    assert again.code == 0
    assert again.events()[-1]["ran"] == 0 and again.events()[-1]["cached"] == 5


def test_the_intents_file_chooses_the_cluster_and_the_plain_lines_name_the_worker(cluster, tmp_path: Path):
    address, workers = cluster
    root = project(tmp_path / "p", SPEC + f'\n[executor]\nkind = "dask"\naddress = "{address}"\n')
    result = runner(root, "make", "seed")
    assert result.code == 0, result.err
    line = result.out.splitlines()[0]
    assert line.startswith("[1/1] ran seed (") and any(line.endswith(f"s on {w})") for w in workers), line


def test_a_failing_step_fails_as_it_does_here(cluster, tmp_path: Path):
    address, workers = cluster
    spec = '[intent.bad]\nrun = "echo broken; exit 3"\n\n[intent.after]\nrun = "true"\ndeps = ["bad"]\n'
    local = runner(project(tmp_path / "here", spec), "make", "--json")
    remote = runner(project(tmp_path / "there", spec), "make", "--json", "--executor", address)
    assert local.code == remote.code == 1
    [here], [there] = local.finished("failed"), remote.finished("failed")
    for key in ("error", "exit_code", "timed_out", "log_tail", "excerpt"):
        assert here[key] == there[key], key
    assert there["error"] == "command exited with code 3" and there["worker"] in workers
    assert [e["intent"] for e in remote.finished("skipped")] == ["after"]


def test_a_step_a_signal_killed_fails_as_it_does_here(cluster, tmp_path: Path):
    address, _workers = cluster
    spec = '[intent.bad]\nrun = "echo broken; kill -KILL $$"\n'  # the shell of the line itself, as the OOM killer would
    local = runner(project(tmp_path / "here", spec), "make", "--json")
    remote = runner(project(tmp_path / "there", spec), "make", "--json", "--executor", address)
    [here], [there] = local.finished("failed"), remote.finished("failed")
    assert here["error"] == there["error"] == "command killed by signal 9"
    assert here["exit_code"] == there["exit_code"] == -9 and here["log_tail"] == there["log_tail"]


def test_a_step_past_its_timeout_is_killed_on_the_worker(cluster, tmp_path: Path):
    address, _workers = cluster
    root = project(
        tmp_path / "p",
        "[intent.slow]\nrun = \"echo $(awk '{print $5}' /proc/$$/stat) > group.txt; sleep 300; touch late.txt\"\n"
        "timeout = 0.5\n",
    )
    result = runner(root, "make", "--json", "--executor", address)
    group = int((root / "group.txt").read_text())
    try:
        assert result.code == 1
        [failed] = result.finished("failed")
        assert failed["error"] == "timed out after 0.5s; its process group was killed" and failed["timed_out"]
        _wait_gone(group)  # its sleep had 300 s to go: gone means killed
        assert not (root / "late.txt").exists()
    finally:
        for pid in _group_alive(group):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_kills_the_command_on_the_worker_and_exits_130(cluster, tmp_path: Path):
    address, _workers = cluster
    root = project(
        tmp_path / "p", '[intent.slow]\nrun = "touch started.txt; sleep 2; touch late.txt"\noutputs = ["late.txt"]\n'
    )
    proc = start_runner(root, "make", "--json", "--executor", address)
    wait_for(root / "started.txt")
    interrupted = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - interrupted < 10  # promptly: the remote kill waits 2 s at most
    time.sleep(2.5)  # past the command's end, had it gone on
    assert not (root / "late.txt").exists()
    assert (root / ".runner" / "inflight").stat().st_size == 0


def _group_alive(pgid: int) -> list[int]:
    """Live (non-zombie) processes of group `pgid`, on this machine (the LocalCluster's workers are here)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def _killed_mid_step(root: Path, address: str) -> int:
    """Start a run whose step sleeps 300 s on the cluster, SIGKILL the runner once the step runs; its group."""
    proc = start_runner(root, "make", "--json", "--executor", address)
    deadline = time.monotonic() + 60
    while not ((root / "group.txt").exists() and (root / "group.txt").read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up: the journal is all the next start has
    proc.communicate(timeout=30)
    return int((root / "group.txt").read_text())


SLEEPER = (
    # group.txt: the step's process group (its leader is the shell that waits for the line on a worker)
    "[intent.half]\nrun = \"echo partial > out.txt; echo $(awk '{print $5}' /proc/$$/stat) > group.txt; "
    'sleep 300; echo late > out.txt"\n'
    'inputs = ["intents.toml"]\noutputs = ["out.txt"]\n'
)
QUICK = '[intent.half]\nrun = "echo full > out.txt"\ninputs = ["intents.toml"]\noutputs = ["out.txt"]\n'


def test_a_runner_killed_mid_step_has_the_step_killed_on_the_worker_by_its_next_start(cluster, tmp_path: Path):
    address, _workers = cluster
    root = project(tmp_path / "p", SLEEPER)
    group = _killed_mid_step(root, address)
    try:
        head, where, step = [json.loads(line) for line in (root / ".runner" / "inflight").read_text().splitlines()]
        assert where == {"cluster": address, "token": where["token"]} and len(where["token"]) == 32
        assert (step["start"], step["pgid"], step["outputs"]) == ("half", 0, ["out.txt"])
        assert where["token"] != head["run"]  # the worker's commands are not this machine's children
        assert _group_alive(group), "the step died with the runner: nothing to recover"

        (root / "intents.toml").write_text(QUICK)
        resumed = runner(root, "make", "--json", "--executor", "local")
        assert resumed.code == 0, resumed.err
        _wait_gone(group)  # its sleep had 300 s to go: gone means the next start killed it
        said = [e["message"] for e in resumed.events() if e["event"] == "recovered"]
        assert said == [f"stopped 1 task a killed run left running on the Dask cluster at {address}"]
        assert [e["status"] for e in resumed.finished()] == ["ran"]
        assert (root / "out.txt").read_text() == "full\n"
        assert (root / ".runner" / "inflight").stat().st_size == 0
    finally:
        for pid in _group_alive(group):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow  # a scheduler and a worker of its own, and a 3 s connect timeout waited out
def test_the_next_start_says_once_that_the_killed_runs_scheduler_is_gone_and_goes_on(processes, tmp_path: Path):
    scheduler, address = processes.scheduler()
    processes.worker(address, "w1")
    processes.wait_for_workers(address, 1)
    root = project(tmp_path / "p", SLEEPER)
    group = _killed_mid_step(root, address)
    try:
        processes.stop()  # the scheduler and its worker
        (root / "intents.toml").write_text(QUICK)
        resumed = runner(root, "make")
        assert resumed.code == 0, resumed.err
        assert resumed.err == (
            f"runner: no Dask scheduler answered at {address} within 3s (OSError): the steps a killed run started "
            "there may still be running\n"
        )
        assert (root / "out.txt").read_text() == "full\n"
        again = runner(root, "make")
        assert again.code == 0 and again.err == ""  # said once: recovered, the journal is empty
    finally:  # the worker's death takes the step's group with it (process.TETHER): left over only if a check failed
        for pid in _group_alive(group):
            os.kill(pid, signal.SIGKILL)


BAD = [
    (
        ["--executor", "dask://127.0.0.1:1"],
        "error: --executor: no Dask scheduler answered at tcp://127.0.0.1:1 within 3s (OSError); start one with "
        "`dask scheduler` and its workers with `dask worker tcp://127.0.0.1:1`, or run here with --executor local\n",
    ),
    (
        ["--executor", "dask://nowhere"],
        "error: --executor: 'dask://nowhere' is neither local nor dask://HOST:PORT (a port 1-65535)\n",
    ),
    (
        ["--executor", "dask://h:70000"],
        "error: --executor: 'dask://h:70000' is neither local nor dask://HOST:PORT (a port 1-65535)\n",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_a_bad_or_silent_address_is_said_at_once(tmp_path: Path, args, message):
    root = project(tmp_path / "p", '[intent.a]\nrun = "touch a.txt"\noutputs = ["a.txt"]\n')
    started = time.monotonic()
    result = runner(root, "make", *args)
    assert (result.code, result.err) == (2, message)
    # 3 s to connect, the rest Python's start and distributed's import: 12.7 s once on a 2-core machine at load 24
    assert time.monotonic() - started < 30
    assert not (root / "a.txt").exists() and not (root / ".runner" / "runs").exists()


def test_the_intents_file_with_an_unreachable_scheduler_names_its_toml_path(tmp_path: Path):
    root = project(
        tmp_path / "p",
        '[executor]\nkind = "dask"\naddress = "tcp://127.0.0.1:1"\n\n[intent.a]\nrun = "touch a.txt"\n',
    )
    result = runner(root, "make")
    assert result.code == 2
    assert result.err.startswith(
        "error: intents.toml: executor.address: no Dask scheduler answered at tcp://127.0.0.1:1 within 3s"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('kind = "dask"\n', "  intents.toml:1: executor: missing required field 'address'\n"),
        (
            'kind = "dask"\naddress = "http://x:1"\n',
            '  intents.toml:3: executor.address: invalid value "http://x:1": must match ^tcp://[^\\s/:]+:[0-9]{1,5}$\n',
        ),
    ],
)
def test_a_bad_executor_table_is_a_spec_error(tmp_path: Path, table: str, message: str):
    root = project(tmp_path / "p", f'[executor]\n{table}\n[intent.a]\nrun = "true"\n')
    result = runner(root, "validate")
    assert (result.code, result.err) == (2, "error: 1 problem in the spec\n" + message)


@pytest.mark.slow  # three processes of its own, a step run twice
def test_a_worker_killed_mid_step_is_survived_and_the_step_recorded_once(processes, tmp_path: Path):
    _scheduler, address = processes.scheduler()
    workers = {"w1": processes.worker(address, "w1"), "w2": processes.worker(address, "w2")}
    processes.wait_for_workers(address, 2)
    root = project(
        tmp_path / "p",
        # the worker process that started the command: the line's parent, or that one's (a shell that waits for
        # it); the line's process group; then a child of the line's own that would write after the worker's
        # death, were it left running
        "[intent.long]\nrun = \"echo $PPID $(awk '{print $4}' /proc/$PPID/stat) $(awk '{print $5}' /proc/$$/stat) "
        ">> pids.txt; sh -c 'sleep 2; echo late >> late.txt'; echo done > out.txt\"\n"
        'inputs = ["intents.toml"]\noutputs = ["out.txt"]\n',
    )
    proc = start_runner(root, "make", "--json", "--executor", address)
    wait_for(root / "pids.txt")
    *first, group = (int(n) for n in (root / "pids.txt").read_text().splitlines()[0].split())
    victim = next(name for name, p in workers.items() if p.pid in first)
    workers[victim].send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    finished = [line for line in out.splitlines() if '"step_finished"' in line]
    assert len(finished) == 1 and '"status": "ran"' in finished[0]
    survivor = ({"w1", "w2"} - {victim}).pop()
    assert f'"worker": "{survivor}"' in finished[0]
    assert len((root / "pids.txt").read_text().splitlines()) == 2  # run again, on the other worker
    assert (root / "out.txt").read_text() == "done\n"
    _wait_gone(group)  # killed with its worker, or (were it left running) done writing
    assert (root / "late.txt").read_text() == "late\n", "the killed worker's step went on writing"
    again = runner(root, "make", "--json", "--executor", "local")
    assert again.events()[-1]["ran"] == 0


@pytest.mark.slow  # three processes of its own
def test_a_killed_workers_step_leaves_no_process_behind_and_writes_nothing_after(processes, tmp_path: Path):
    _scheduler, address = processes.scheduler()
    workers = {"w1": processes.worker(address, "w1"), "w2": processes.worker(address, "w2")}
    processes.wait_for_workers(address, 2)
    root = project(
        tmp_path / "p",
        # the first run leaves a grandchild in the background that would write late.txt, says which worker
        # started it and its process group, and waits; the run again on the other worker finishes at once
        '[intent.long]\nrun = "if [ -e group.txt ]; then echo done > out.txt; exit; fi; '
        "sh -c 'sleep 600; echo late > late.txt' & "
        "echo $PPID $(awk '{print $4}' /proc/$PPID/stat) $(awk '{print $5}' /proc/$$/stat) > group.tmp; "
        'mv group.tmp group.txt; sleep 600"\n'
        'inputs = ["intents.toml"]\noutputs = ["out.txt"]\n',
    )
    proc = start_runner(root, "make", "--json", "--executor", address)
    wait_for(root / "group.txt")
    *first, group = (int(n) for n in (root / "group.txt").read_text().split())
    try:
        assert len(_group_alive(group)) >= 2, "the step's shell and its grandchild run"
        victim = next(name for name, p in workers.items() if p.pid in first)
        workers[victim].send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        [finished] = Result(proc.returncode, out, err).finished()
        assert (finished["status"], finished["worker"]) == ("ran", ({"w1", "w2"} - {victim}).pop())
        _wait_gone(group)  # its sleeps had 600 s to go: gone means killed
        assert not (root / "late.txt").exists()
        assert (root / "out.txt").read_text() == "done\n"
    finally:
        for pid in _group_alive(group):
            os.kill(pid, signal.SIGKILL)


def _wait_gone(pgid: int, seconds: float = 60) -> None:
    """Until group `pgid` has no live process; `seconds` bounds a wait for what should already be so."""
    deadline = time.monotonic() + seconds
    while left := _group_alive(pgid):
        assert time.monotonic() < deadline, f"processes {left} of the step's group are still running"
        time.sleep(0.05)


@pytest.mark.slow  # two processes of its own, a killed scheduler's client gives up
def test_the_scheduler_gone_mid_run_stops_it_and_the_next_local_run_resumes(processes, tmp_path: Path):
    scheduler, address = processes.scheduler()
    processes.worker(address, "w1")
    processes.wait_for_workers(address, 1)
    spec = """\
[intent.quick]
run = "echo quick > quick.txt"
inputs = ["intents.toml"]
outputs = ["quick.txt"]

[intent.long]
run = "touch started.txt; sleep 5; echo long > long.txt"
deps = ["quick"]
outputs = ["long.txt"]

[intent.last]
run = "cat quick.txt long.txt > last.txt"
deps = ["long"]
outputs = ["last.txt"]
"""
    root = project(tmp_path / "p", spec)
    proc = start_runner(root, "make", "--json", "--executor", address)
    wait_for(root / "started.txt")
    scheduler.send_signal(signal.SIGKILL)
    gone = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert time.monotonic() - gone < 15
    events = Result(proc.returncode, out, err).events()
    failed = [e for e in events if e["event"] == "step_finished" and e["status"] == "failed"]
    assert [e["intent"] for e in failed] == ["long"]
    assert failed[0]["error"] == (
        f"the Dask scheduler at {address} went away: the run stops; the next run resumes from the cache"
    )
    assert (root / ".runner" / "inflight").stat().st_size == 0  # the journal is clean
    assert not (root / "long.txt").exists()
    processes.stop()  # the orphaned worker too: nothing writes behind the next run's back

    resumed = runner(root, "make", "--json")
    assert resumed.code == 0, resumed.err
    statuses = {e["intent"]: e["status"] for e in resumed.finished()}
    assert statuses == {"quick": "cached", "long": "ran", "last": "ran"}
    assert (root / "last.txt").read_text() == "quick\nlong\n"


def _line(spec: str, name: str) -> str:
    import tomllib

    return tomllib.loads(spec)["intent"][name]["run"]
