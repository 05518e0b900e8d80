"""Sleep-bound shell steps on a Dask cluster: throughput on 1, 2 and 4 workers, and runner's own time per step.

Each step is `sleep 0.2` (no inputs, no outputs: it always runs), so the cluster's threads, not this machine's two
cores, bound the build: a worker of 4 threads runs 4 steps at once, and N workers should run N times as many.
For each worker count a `distributed.LocalCluster` of worker processes (4 threads each) is started on 127.0.0.1,
and `runner make --executor dask://... -j (4 x workers)` builds the steps once, clean.

Figures per worker count: wall time; throughput (steps/s); speedup over one worker and its share of linear
(speedup / workers); the ideal time (steps x 0.2 s / threads); runner's overhead per step beyond that ideal
((run - ideal) / steps x threads, `run` being run_finished's duration, without the interpreter's start and the
connect: what each slot lost between two steps); and the runner process's own CPU time per step (user + sys of
the `runner make` child: planning, the hand-off to Dask, hashing, recording).

    .venv/bin/python bench/dask_sleep.py                  # 1,000 steps on 1, 2, 4 workers
    .venv/bin/python bench/dask_sleep.py --steps 200 --workers 1 2 --readme
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

THREADS = 4
SLEEP = 0.2


def write_project(root: Path, steps: int) -> None:
    lines = ['[project]\nname = "dask-sleep"\ndefault = "all"\n']
    names = [f"s{i:05d}" for i in range(steps)]
    for name in names:
        lines.append(f'[intent.{name}]\nrun = "sleep {SLEEP}"\n')
    lines.append("[intent.all]\ndeps = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
    (root / "intents.toml").write_text("\n".join(lines))


def one(workers: int, steps: int, work: Path, per_thread: int = 1) -> dict:
    from distributed import LocalCluster

    root = work / f"w{workers}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_project(root, steps)
    threads = workers * THREADS
    slots = threads * per_thread  # -j: steps in flight; more than the threads keeps a queue on each worker
    with LocalCluster(
        processes=True, n_workers=workers, threads_per_worker=THREADS, host="127.0.0.1", dashboard_address=":0"
    ) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "runner",
                "make",
                "--json",
                "-C",
                str(root),
                "--executor",
                address,
                "-j",
                str(slots),
            ],
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"runner make failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    finished = events[-1]
    assert finished["ran"] == steps, finished
    by_worker: dict[str, int] = {}
    for e in events:
        if e["event"] == "step_finished" and e.get("worker"):
            by_worker[e["worker"]] = by_worker.get(e["worker"], 0) + 1
    ideal = steps * SLEEP / threads
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "workers": workers,
        "threads": threads,
        "jobs": slots,
        "steps": steps,
        "wall": round(wall, 2),
        "run": finished["duration"],
        "ideal": round(ideal, 2),
        "throughput": round(steps / wall, 2),
        # the run's own time (run_finished's duration: no interpreter start, no connect) beyond the ideal
        "overhead_per_step_ms": round((finished["duration"] - ideal) / steps * threads * 1000, 1),
        "runner_cpu_per_step_ms": round(cpu / steps * 1000, 2),
        "steps_per_worker": sorted(by_worker.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--readme", action="store_true", help="print a markdown table too")
    parser.add_argument("--jobs-per-thread", type=int, default=1, help="-j = the cluster's threads x this")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dask-sleep-"))
    try:
        results = []
        for workers in args.workers:
            result = one(workers, args.steps, work, args.jobs_per_thread)
            base = results[0] if results else result
            speedup = base["throughput"] and result["throughput"] / base["throughput"]
            result["speedup"] = round(speedup * base["workers"], 2)
            result["of_linear"] = round(speedup * base["workers"] / workers, 2)
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.readme:
        cores = os.cpu_count()
        per = args.jobs_per_thread
        print(f"\n{args.steps} steps of sleep {SLEEP}, {THREADS} threads a worker, -j = threads x {per}, {cores} cores")
        print()
        head = ["workers", "-j", "wall (s)", "run (s)", "ideal (s)", "steps/s", "speedup", "of linear"]
        head += ["overhead/step/slot (ms)", "runner CPU/step (ms)"]
        keys = ["workers", "jobs", "wall", "run", "ideal", "throughput", "speedup", "of_linear"]
        keys += ["overhead_per_step_ms", "runner_cpu_per_step_ms"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in results:
            print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
