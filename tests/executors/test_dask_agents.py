"""Agent steps on a real Dask cluster of worker processes on 127.0.0.1 (a shared filesystem): each attempt is one
Dask task, with the openai worker against the fake Responses server; the runner applies the verified change."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from importlib.resources import files

import pytest
from agent_helpers import FAILING_TEST, PASSING_TEST, AgentProject
from executor_helpers import wait_for
from jsonschema import Draft7Validator


def _answer(files: dict[str, str]) -> str:
    blocks = "".join(f"<<MIS:FILE path={path}>>\n{body}" for path, body in files.items())
    return f'<<MIS:START>>\n{blocks}<<MIS:JSON>>\n{{"summary": "wrote the tests"}}\n<<MIS:END>>\n'


def _worker(srv) -> str:
    return textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{srv.base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        """)


def _evidence(agent: AgentProject, before: str = "") -> None:
    """The verify command `test`: notes, on a line, its parent and that one's parent (the process that started
    it is one of them: the runner, or the Dask worker process, whose child is process.py's tethering shell), then
    runs the tests."""
    (agent.root / "adapters/local.toml").write_text(
        'name = "local"\n[commands.test]\n'
        "run = \"echo $PPID $(awk '{print $4}' /proc/$PPID/stat)"
        f" >> {agent.home}/verify_parents.txt; {before}"
        f'{sys.executable} -m pytest -q -p no:cacheprovider"\n'
        'parse = ["pytest"]\n'
    )


def _start(agent: AgentProject, *args: str) -> subprocess.Popen:
    """`runner make --json` in the background, with the key the worker reads (FAKE_KEY)."""
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", *args],
        cwd=agent.root, env=agent.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip


def _pids(address: str) -> set[int]:
    from distributed import Client

    with Client(address, timeout=30) as client:
        return set(client.run(os.getpid).values())


@pytest.mark.slow  # three runs, the workers' first import of the openai SDK: 25 s at load 16 on 2 cores
def test_an_agent_step_runs_on_a_worker_gives_the_local_bytes_then_a_noop(cluster, agent, server, tmp_path):
    address, workers = cluster
    here = AgentProject(tmp_path / "here", agent.home)
    here.key = agent.key
    script = [{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}]
    for project in (here, agent):
        project.spec(_worker(server(script)))
        _evidence(project)
    local = here.make("tests")
    assert local.code == 0, local.err

    remote = agent.make("tests", "--executor", address)
    assert remote.code == 0, remote.err
    step = remote.step("tests")
    assert step["status"] == "ran" and step["worker"] in workers
    [finished] = [e for e in remote.events() if e["event"] == "attempt_finished"]
    assert finished["ok"] and finished["worker"] == step["worker"]
    assert (agent.root / "tests/test_calc.py").read_bytes() == (here.root / "tests/test_calc.py").read_bytes()
    parents = [{int(p) for p in line.split()} for line in (agent.home / "verify_parents.txt").read_text().splitlines()]
    # twice: the local run's verify (started by the runner) and the remote one's (by a Dask worker process)
    assert len(parents) == 2 and parents[1] & _pids(address) and not parents[0] & _pids(address)
    attempt = agent.root / ".runner/runs" / remote.events()[0]["run_id"] / "attempts/tests/c1-a1"
    assert sorted(p.name for p in attempt.iterdir()) == [
        "diff.patch", "prompt.md", "result.json", "transcript.jsonl", "verify.log",
    ]  # fmt: skip
    assert "1 passed" in (attempt / "verify.log").read_text()
    assert json.loads((attempt / "result.json").read_text())["dask_worker"] == step["worker"]
    assert not agent.leaks()
    validator = Draft7Validator(json.loads(files("runner.schemas").joinpath("events.json").read_text()))
    for event in remote.events():  # the events' contract holds the attempt's `worker`
        validator.validate(event)

    again = agent.make("tests", "--executor", address)
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    assert len(agent.home.joinpath("verify_parents.txt").read_text().splitlines()) == 2  # nothing ran again


@pytest.mark.slow  # two attempts, each with its pytest verify: 17 s at load 16 on 2 cores
def test_a_retry_on_the_cluster_gets_the_feedback_and_the_previous_attempts_files(cluster, agent, server):
    address, _workers = cluster
    srv = server(
        [
            # the retry's prompt holds the failed verify's feedback
            {"match": "failed (exit", "steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]},
            {"steps": [{"message": _answer({"tests/test_calc.py": FAILING_TEST, "tests/helper.py": "HELP = 1\n"})}]},
        ]
    )
    agent.spec(_worker(srv), outputs='["tests/test_calc.py", "tests/helper.py"]')
    result = agent.make("tests", "--executor", address)
    assert result.code == 0, result.err
    finished = [e for e in result.events() if e["event"] == "attempt_finished"]
    assert [(e["attempt"], e["ok"], e["kind"]) for e in finished] == [(1, False, "logic"), (2, True, None)]
    [first, second] = [r["body"] for r in srv.requests()]
    assert "failed (exit" not in json.dumps(first) and "Failing tests:" in json.dumps(second)
    # the second attempt (perhaps on the other worker) started from where the first left its copy
    assert (agent.root / "tests/helper.py").read_text() == "HELP = 1\n"
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST


def test_a_change_outside_its_scope_is_refused_on_the_cluster_as_here(cluster, agent, server, tmp_path):
    address, _workers = cluster
    answer = _answer({"tests/test_calc.py": PASSING_TEST, "src/calc.py": "broken = True\n"})
    agent.spec(_worker(server([{"steps": [{"message": answer}]}])))
    before = agent.files()
    result = agent.make("tests", "--executor", address)
    assert result.code == 1
    assert result.step("tests")["error"] == (
        "refused: src/calc.py: outside the scope of policy 'default' and the intent's outputs (tests/test_calc.py)"
    )
    assert agent.files() == before


def test_ctrl_c_kills_the_attempts_verify_on_the_worker(cluster, agent, server):
    address, _workers = cluster
    agent.spec(
        _worker(server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])),
    )
    _evidence(agent, before=f"touch {agent.home}/started; sleep 3; touch {agent.home}/late; ")
    proc = _start(agent, "--executor", address)
    wait_for(agent.home / "started", 60)
    interrupted = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - interrupted < 10
    time.sleep(3.5)  # past the verify's end, had it gone on
    assert not (agent.home / "late").exists()
    assert not (agent.root / "tests/test_calc.py").exists()
    assert (agent.root / ".runner/inflight").stat().st_size == 0


def _sleeping(marker: str) -> list[int]:
    """Live processes whose command line is `sleep MARKER` (the worker's are on this machine)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                zombie = f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if argv[:2] == [b"sleep", marker.encode()] and not zombie:
            found.append(int(entry))
    return found


def test_a_runner_killed_mid_attempt_has_it_stopped_on_the_worker_by_its_next_start(cluster, agent, server):
    address, _workers = cluster
    agent.spec(_worker(server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])))
    with open(agent.root / "intents.toml", "a") as f:  # what the next start makes: recovery comes first anyway
        f.write('\n[intent.other]\nrun = "true"\n')
    marker = f"20.{time.time_ns() % 10**9:09d}"
    _evidence(agent, before=f"touch {agent.home}/started; sleep {marker}; touch {agent.home}/late; ")
    proc = _start(agent, "--executor", address)
    try:
        wait_for(agent.home / "started", 60)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert _sleeping(marker), "the verify died with the runner: nothing to recover"
        started = time.monotonic()
        again = agent.make("other", "--executor", "local")
        assert again.code == 0, again.err
        while _sleeping(marker):  # the attempt kills its verify on seeing its cancel: within its grace
            assert time.monotonic() - started < 12, "the killed run's verify still runs on the worker"
            time.sleep(0.1)
        said = [e["message"] for e in again.events() if e.get("event") == "recovered"]
        assert said == [f"stopped 1 task a killed run left running on the Dask cluster at {address}"]
        assert not (agent.home / "late").exists()
        assert not (agent.root / "tests/test_calc.py").exists()
    finally:
        for pid in _sleeping(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow  # three processes of its own, an attempt made twice
def test_a_worker_killed_mid_attempt_is_survived_and_the_change_applied_once(processes, agent, server):
    _scheduler, address = processes.scheduler()
    workers = {"w1": processes.worker(address, "w1"), "w2": processes.worker(address, "w2")}
    processes.wait_for_workers(address, 2)
    srv = server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])
    agent.spec(_worker(srv))
    _evidence(agent, before="sleep 2; ")
    proc = _start(agent, "--executor", address)
    wait_for(agent.home / "verify_parents.txt", 60)
    first = {int(p) for p in (agent.home / "verify_parents.txt").read_text().splitlines()[0].split()}
    victim = next(name for name, p in workers.items() if p.pid in first)
    workers[victim].send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    finished = [json.loads(line) for line in out.splitlines() if '"step_finished"' in line]
    assert len(finished) == 1 and finished[0]["status"] == "ran"
    assert finished[0]["worker"] == ({"w1", "w2"} - {victim}).pop()
    assert len(srv.requests()) == 2  # the task ran afresh on the other worker: its model call too
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    again = agent.make("tests", "--executor", "local")
    assert again.code == 0 and again.step("tests")["status"] == "cached"


@pytest.mark.slow  # two processes of its own, a killed scheduler's client gives up
def test_the_scheduler_gone_mid_attempt_stops_the_run_and_the_next_local_run_resumes(processes, agent, server):
    scheduler, address = processes.scheduler()
    processes.worker(address, "w1")
    processes.wait_for_workers(address, 1)
    agent.spec(_worker(server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])))
    _evidence(agent, before=f"touch {agent.home}/started; sleep 5; ")
    proc = _start(agent, "--executor", address)
    wait_for(agent.home / "started", 60)
    scheduler.send_signal(signal.SIGKILL)
    gone = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert time.monotonic() - gone < 15
    [failed] = [json.loads(line) for line in out.splitlines() if '"step_finished"' in line]
    assert failed["status"] == "failed" and failed["error"] == (
        f"the Dask scheduler at {address} went away: the run stops; the next run resumes from the cache"
    )
    assert (agent.root / ".runner/inflight").stat().st_size == 0
    assert not (agent.root / "tests/test_calc.py").exists()
    processes.stop()  # the orphaned worker too: nothing writes behind the next run's back

    resumed = agent.make("tests")
    assert resumed.code == 0, resumed.err
    assert resumed.step("tests")["status"] == "ran"
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST


# the real Codex CLI's patch (a passing test; tests/agent/test_agent_codex_cli.py sends a failing one first)
CODEX_PATCH = (
    "*** Begin Patch\n*** Add File: tests/test_calc.py\n+import sys, pathlib\n"
    "+sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'src'))\n+from calc import mean\n+\n"
    "+def test_mean():\n+    assert mean([1, 3]) == 2\n*** End Patch\n"
)


@pytest.mark.codex_cli
@pytest.mark.parametrize("hermetic", [False, True], ids=["shared-filesystem", "hermetic"])
def test_a_codex_agent_step_runs_on_a_worker_and_its_change_is_applied_here(cluster, agent, server, tmp_path, hermetic):
    """The real Codex CLI in the Dask worker, against the fake Responses server: on a shared filesystem, and on
    a hermetic worker that gets the step's manifest from the remote cache. Its change is verified there and
    applied here; the next run is a no-op and asks nothing."""
    from ci import need_codex
    from test_agent_codex_cli import _worker as codex_worker

    address, workers = cluster
    srv = server([{"steps": [{"patch": CODEX_PATCH}, {"message": "Wrote tests."}]}])
    agent.spec(codex_worker(srv, need_codex(), agent.home))
    args = ["tests", "--executor", address]
    if hermetic:
        with open(agent.root / "intents.toml", "a") as f:
            f.write(f'\n[cache]\nremote = "{(tmp_path / "shared").as_uri()}"\n')
        args.append("--hermetic")
    result = agent.make(*args)
    assert result.code == 0, result.err + result.out[-3000:]
    step = result.step("tests")
    assert step["status"] == "ran" and step["worker"] in workers
    assert "assert mean([1, 3]) == 2" in (agent.root / "tests/test_calc.py").read_text()
    count = len(srv.requests())
    again = agent.make(*args)
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    assert len(srv.requests()) == count
    assert not agent.leaks()
