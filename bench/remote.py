"""The shared cache's benchmark: the bench DAG (bench/dag.py) built from nothing, beside the same build by a second
clone whose local cache is cold and whose remote (a file:// folder) is warm, and the first build's cost of
writing to the remote. Figures are ratios from a few runs on a shared machine, never timed tests.

    .venv/bin/python bench/remote.py --steps 10000 --reps 2
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import dag as dagmod  # noqa: E402 - bench/ is not a package


def _fresh(base: Path, dest: Path) -> None:
    """A clone: the project's files, an empty out/, no .runner/."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest, ignore=shutil.ignore_patterns(".runner", "out"))
    (dest / "out").mkdir()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _make(cwd: Path, jobs: int, remote: str | None) -> tuple[tuple[float, float], dict]:
    """((wall seconds, CPU seconds of runner and its steps), run_finished). CPU time is the steadier figure on
    a machine shared with other work."""
    argv = [sys.executable, "-m", "runner", "make", "--json", "-j", str(jobs)]
    if remote:
        argv += ["--remote", remote]
    started, cpu = time.monotonic(), _cpu()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3600)
    took = (time.monotonic() - started, _cpu() - cpu)
    if proc.returncode != 0:
        raise SystemExit(f"runner make failed in {cwd}: {proc.stderr[-2000:]}")
    return took, json.loads(proc.stdout.splitlines()[-1])


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted((d / "out").iterdir())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=BENCH / "work" / "remote")
    args = ap.parse_args(argv)

    work = args.work / str(args.steps)
    base = work / "base"
    dagmod.write(dagmod.build(args.steps, dagmod.DEFAULT_LAYERS, dagmod.DEFAULT_SEED), base)
    full, upload, served = [], [], []
    for rep in range(args.reps):
        shared = work / "shared"
        shutil.rmtree(shared, ignore_errors=True)
        shared.mkdir(parents=True)
        url = shared.as_uri()

        plain = work / "plain"
        _fresh(base, plain)
        took, _ = _make(plain, args.jobs, None)  # a full build, no remote: the baseline
        full.append(took)

        writer = work / "writer"
        _fresh(base, writer)
        took, done = _make(writer, args.jobs, url)  # a full build that also fills the remote
        assert done["remote"]["uploaded"] == args.steps and done["remote"]["upload_failed"] == 0, done["remote"]
        upload.append(took)

        reader = work / "reader"
        _fresh(base, reader)
        took, done = _make(reader, args.jobs, url)  # cold local cache, warm remote: nothing runs
        assert done["ran"] == 0 and done["remote"]["hits"] == args.steps, done
        assert _tree(reader) == _tree(plain)
        served.append(took)
        print(
            f"rep {rep + 1} (wall, cpu): full {full[-1][0]:.2f}s {full[-1][1]:.2f}s, "
            f"full+upload {upload[-1][0]:.2f}s {upload[-1][1]:.2f}s, "
            f"from remote {served[-1][0]:.2f}s {served[-1][1]:.2f}s"
        )
    result: dict = {"steps": args.steps, "jobs": args.jobs, "reps": args.reps}
    for name, samples in (("full_build", full), ("full_build_with_upload", upload), ("served_from_remote", served)):
        result[name + "_s"] = round(statistics.median(s[0] for s in samples), 2)
        result[name + "_cpu_s"] = round(statistics.median(s[1] for s in samples), 2)
    for suffix in ("_s", "_cpu_s"):
        result["remote_vs_full" + suffix] = round(
            result["served_from_remote" + suffix] / result["full_build" + suffix], 3
        )
        result["upload_overhead" + suffix] = round(
            result["full_build_with_upload" + suffix] / result["full_build" + suffix], 3
        )
    print(json.dumps(result))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
