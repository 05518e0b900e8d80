"""What sending a run's spans costs a build: clean -j2 builds of the bench DAG alone, with OTEL_EXPORTER_OTLP_ENDPOINT
naming a receiver that answers (tests/fakes/otlp_receiver.py, every step's span sent as it ends), and one that reads
each request and never answers; interleaved, so each kind sees the same machine load.

    .venv/bin/python bench/telemetry.py --steps 10000 --reps 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dag  # noqa: E402 - the bench's own generator, beside this file

ROOT = Path(__file__).resolve().parent.parent
RECEIVER = ROOT / "tests" / "fakes" / "otlp_receiver.py"


def receiver(hang: bool) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(RECEIVER), *(["--hang"] if hang else [])], stdout=subprocess.PIPE, text=True
    )
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}"


def build(work: Path, endpoint: str | None) -> tuple[float, float, str]:
    """A clean -j2 build: (wall seconds, the run's own duration, its stderr)."""
    shutil.rmtree(work / ".runner", ignore_errors=True)
    shutil.rmtree(work / "out", ignore_errors=True)
    (work / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "runner", "make", "--json", "-j", "2"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"runner make failed: {proc.stderr}")
    last = json.loads(proc.stdout.splitlines()[-1])
    return wall, float(last["duration"]), proc.stderr


def spans_received(url: str) -> int:
    import base64

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    with urllib.request.urlopen(f"{url}/__requests", timeout=60) as r:
        kept = json.loads(r.read())
    count = 0
    for k in kept:
        request = ExportTraceServiceRequest()
        request.ParseFromString(base64.b64decode(k["body"]))
        count += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "work" / "telemetry")
    a = ap.parse_args()
    work = a.work / str(a.steps)
    dag.write(dag.build(a.steps), work)
    build(work, None)  # the spec compiled once: not part of what is compared
    times: dict[str, list[tuple[float, float]]] = {"alone": [], "answered": [], "hung": []}
    received = []
    for _ in range(a.reps):
        times["alone"].append(build(work, None)[:2])
        proc, url = receiver(hang=False)
        try:
            times["answered"].append(build(work, url)[:2])
            received.append(spans_received(url))
        finally:
            proc.kill()
            proc.wait()
        proc, url = receiver(hang=True)
        try:
            wall, run, err = build(work, url)
            times["hung"].append((wall, run))
            if "could not be sent" not in err:
                raise SystemExit(f"the hung collector was not said: {err!r}")
        finally:
            proc.kill()
            proc.wait()
    med = statistics.median
    alone = med(w for w, _ in times["alone"])
    print(f"## clean -j2 builds of {a.steps:,} steps ({a.reps} of each, interleaved)")
    for kind, words in (
        ("alone", "no collector named"),
        ("answered", f"a receiver that answers ({', '.join(map(str, received))} spans received)"),
        ("hung", "a receiver that never answers"),
    ):
        walls = ", ".join(f"{w:.2f}" for w, _ in times[kind])
        runs = ", ".join(f"{r:.2f}" for _, r in times[kind])
        change = (med(w for w, _ in times[kind]) - alone) / alone * 100
        print(f"- {words}: wall {walls} s (median {change:+.1f}% against alone); the run's own duration {runs} s")


if __name__ == "__main__":
    main()
