"""Hermetic steps when the cluster fails under them: a worker killed mid-step (Dask runs the step again on
another worker; its outputs reach the project once, from the remote cache) and the scheduler gone mid-run (exit
1, the in-flight journal clean, the next local run resumes from the cache). Real `dask scheduler` and `dask
worker` processes, a file:// remote."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from executor_helpers import Result, project, runner, start_runner, wait_for


def _hermetic(shared: Path, address: str) -> str:
    cache = f'\n[cache]\nremote = "{shared.as_uri()}"\n'
    return cache + f'\n[executor]\nkind = "dask"\naddress = "{address}"\nhermetic = true\n'


@pytest.mark.slow  # three processes of its own, a step run twice
def test_a_worker_killed_mid_hermetic_step_is_survived_and_its_outputs_arrive_once(processes, tmp_path: Path):
    _scheduler, address = processes.scheduler()
    workers = {"w1": processes.worker(address, "w1"), "w2": processes.worker(address, "w2")}
    processes.wait_for_workers(address, 2)
    pids = tmp_path / "pids.txt"  # outside the scratch folder the step runs in: evidence of each start
    spec = (
        "[intent.long]\n"
        # the worker process that started it: the line's parent, or that one's (a shell that waits for it)
        f"run = \"echo $PPID $(awk '{{print $4}}' /proc/$PPID/stat) >> {pids}; "
        'sleep 2; cat seed.txt seed.txt > out.txt"\n'
        'inputs = ["seed.txt"]\noutputs = ["out.txt"]\n'
    )
    root = project(tmp_path / "p", spec + _hermetic(tmp_path / "shared", address))
    (root / "seed.txt").write_text("seed\n")
    proc = start_runner(root, "make", "--json")
    wait_for(pids)
    first = {int(pid) for pid in pids.read_text().splitlines()[0].split()}
    victim = next(name for name, p in workers.items() if p.pid in first)
    workers[victim].send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    finished = Result(proc.returncode, out, err).finished()
    assert [(e["intent"], e["status"], e["worker"]) for e in finished] == [
        ("long", "ran", ({"w1", "w2"} - {victim}).pop())
    ]
    assert len(pids.read_text().splitlines()) == 2  # run again, on the other worker
    assert (root / "out.txt").read_text() == "seed\nseed\n"
    again = runner(root, "make", "--json", "--executor", "local")
    assert again.events()[-1]["ran"] == 0


@pytest.mark.slow  # two processes of its own, a killed scheduler's client gives up
def test_the_scheduler_gone_mid_hermetic_run_stops_it_and_the_next_local_run_resumes(processes, tmp_path: Path):
    scheduler, address = processes.scheduler()
    processes.worker(address, "w1")
    processes.wait_for_workers(address, 1)
    started = tmp_path / "started.txt"
    spec = f"""\
[intent.quick]
run = "cat seed.txt > quick.txt"
inputs = ["seed.txt"]
outputs = ["quick.txt"]

[intent.long]
run = "touch {started}; sleep 5; cat quick.txt quick.txt > long.txt"
deps = ["quick"]
outputs = ["long.txt"]
"""
    root = project(tmp_path / "p", spec + _hermetic(tmp_path / "shared", address))
    (root / "seed.txt").write_text("seed\n")
    proc = start_runner(root, "make", "--json")
    wait_for(started)
    scheduler.send_signal(signal.SIGKILL)
    gone = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert time.monotonic() - gone < 15
    failed = Result(proc.returncode, out, err).finished("failed")
    assert [(e["intent"], e["error"]) for e in failed] == [
        ("long", f"the Dask scheduler at {address} went away: the run stops; the next run resumes from the cache")
    ]
    assert (root / ".runner" / "inflight").stat().st_size == 0  # the journal is clean
    assert (root / "quick.txt").read_text() == "seed\n" and not (root / "long.txt").exists()
    processes.stop()  # the orphaned worker too

    resumed = runner(root, "make", "--json", "--executor", "local")
    assert resumed.code == 0, resumed.err
    assert {e["intent"]: e["status"] for e in resumed.finished()} == {"quick": "cached", "long": "ran"}
    assert (root / "long.txt").read_text() == "seed\nseed\n"
