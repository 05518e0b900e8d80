"""A build tool's OWN CPU per step on a clean build (not its children's), runner beside GNU make.

On 2 shared cores, wall time moves with the load; what the tool's own process spends (its utime + stime,
every thread, children excluded) does not. Read from /proc/PID/stat of the tool while it is a zombie
(waitid with WNOWAIT), so nothing of a wrapper is counted; the main thread's share (the scheduler's, whose
work is serial) from /proc/PID/task/PID/stat. With both cores busy, clean -j2 is bounded by
(children CPU + tool CPU) / 2, so the ratio to make is about (children + runner) / (children + make).

    .venv/bin/python bench/own_cpu.py --steps 10000 --jobs 1 2 --reps 2 --tools runner,make
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import dag as dagmod  # noqa: E402 - dag.py sits beside this script, on the path set just above
import run as runmod  # noqa: E402 - the tools' argv and state, as bench/run.py runs them

TICK = os.sysconf("SC_CLK_TCK")


def measure(argv: list[str], cwd: Path) -> dict:
    """Run argv in cwd; wall, own CPU (user, system) and its reaped children's CPU, in seconds."""
    with open(cwd / ".bench-output.log", "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie: its counters are final and readable
        wall = time.perf_counter() - t0
        with open(f"/proc/{proc.pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{proc.pid}/task/{proc.pid}/stat", "rb") as f:  # the main thread's own: the scheduler's
            main = f.read().rsplit(b")", 1)[1].split()
        code = proc.wait()
    if code != 0:
        raise SystemExit(f"{argv} exited {code}: see {cwd / '.bench-output.log'}")
    utime, stime, cutime, cstime = (int(x) / TICK for x in fields[11:15])
    main_cpu = (int(main[11]) + int(main[12])) / TICK
    return {"wall": wall, "user": utime, "sys": stime, "children": cutime + cstime, "main": main_cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--tools", default="runner,make")
    ap.add_argument("--work", type=Path, default=BENCH / "work-cpu")
    ap.add_argument("--runner-src", help="a folder holding another runner/ package to measure (e.g. main's)")
    args = ap.parse_args()
    tools = args.tools.split(",")
    dag = dagmod.build(args.steps, dagmod.DEFAULT_LAYERS, dagmod.DEFAULT_SEED)
    base = args.work / str(args.steps)
    if not (base / "base").is_dir():
        dagmod.write(dag, base / "base")
    for t in tools:
        if not (base / t).is_dir():
            shutil.copytree(base / "base", base / t)
    print(f"load {os.getloadavg()[0]:.2f}; {args.steps} steps")
    for rep in range(args.reps):
        for jobs in args.jobs:
            for t in tools if rep % 2 == 0 else tools[::-1]:
                tool, d = runmod.TOOLS[t], base / t
                for name in [*tool.state, "out"]:
                    p = d / name
                    if p.is_dir():
                        shutil.rmtree(p)
                    elif p.exists():
                        p.unlink()
                (d / "out").mkdir()
                argv = tool.argv(d, jobs)
                if t == "runner" and args.runner_src:
                    src = args.runner_src
                    # an editable install's finder sits ahead of sys.path: set aside, or main's package is measured
                    code = (
                        "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
                        f"sys.path.insert(0, {src!r}); from runner.entry import console; console()"
                    )
                    argv = [str(runmod.RUNNER_BIN.parent / "python"), "-c", code, *argv[1:]]  # runner's own venv
                m = measure(argv, d)
                own = m["user"] + m["sys"]
                print(
                    f"{t:<7} -j{jobs} wall {m['wall']:7.2f} s  own {own:6.2f} s (user {m['user']:.2f} sys "
                    f"{m['sys']:.2f}) = {own / args.steps * 1e3:.3f} ms/step, main thread "
                    f"{m['main'] / args.steps * 1e3:.3f} ms/step  children {m['children']:6.2f} s "
                    f"= {m['children'] / args.steps * 1e3:.3f} ms/step  load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
