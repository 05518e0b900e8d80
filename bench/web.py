"""What seeing a run costs: a 10,000-step run's page from `runner serve` (the HTML, and the page loaded in chromium)
beside the run's own no-op time; and a clean build's time with `runner serve` and a browser on its live page
beside it, against the same build alone (interleaved).

    .venv/bin/python bench/web.py --steps 10000 --reps 5 --beside-steps 2000 --beside-reps 3
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dag  # noqa: E402 - the bench's own generator, beside this file

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def runner(work: Path, *args: str) -> float:
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "runner", *args], cwd=work, capture_output=True, text=True)
    took = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"runner {' '.join(args)} failed: {proc.stderr}")
    return took


def project(work: Path, steps: int) -> Path:
    if work.exists():
        shutil.rmtree(work)
    dag.write(dag.build(steps), work)
    return work


def serve(work: Path) -> tuple[subprocess.Popen, str, int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "serve", "--port", "0"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = proc.stdout.readline().strip()
    port = int(url.split(":")[2].split("/")[0])
    return proc, url, port, url.split("token=")[1]


def fetch(port: int, token: str, path: str) -> tuple[float, int]:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path, headers={"Cookie": f"runner_token_{port}={token}"})
    body = conn.getresponse().read()
    return time.perf_counter() - began, len(body)


def page_load(url: str, reps: int) -> list[float]:
    """Navigation start to the load event in chromium, a fresh page each time (None without chromium)."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context()
        for _ in range(reps):
            page = context.new_page()
            began = time.perf_counter()
            page.goto(url, wait_until="load", timeout=120_000)
            times.append(time.perf_counter() - began)
            page.close()
        browser.close()
    return times


def clean(work: Path) -> None:
    shutil.rmtree(work / ".runner", ignore_errors=True)
    shutil.rmtree(work / "out", ignore_errors=True)
    (work / "out").mkdir()


def beside(work: Path, reps: int) -> tuple[list[float], list[float]]:
    """Clean -j2 builds alone and with `runner serve` and a browser on the live run's page, interleaved."""
    from playwright.sync_api import sync_playwright

    alone, watched = [], []
    for _ in range(reps):
        clean(work)
        alone.append(runner(work, "make", "-j", "2"))
        clean(work)
        proc, url, port, token = serve(work)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                page.goto(url)
                began = time.perf_counter()
                make = subprocess.Popen(
                    [sys.executable, "-m", "runner", "make", "-j", "2"],
                    cwd=work,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                runs = work / ".runner" / "runs"
                while make.poll() is None and not (runs.is_dir() and any(runs.iterdir())):
                    time.sleep(0.05)
                if make.poll() is None:
                    run_id = sorted(p.name for p in runs.iterdir())[-1]
                    page.goto(f"http://127.0.0.1:{port}/runs/{run_id}")  # live: streams the run's events
                make.wait()
                watched.append(time.perf_counter() - began)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)
    return alone, watched


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--beside-steps", type=int, default=2000)
    ap.add_argument("--beside-reps", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "work" / "web")
    a = ap.parse_args()
    work = project(a.work / str(a.steps), a.steps)
    built = runner(work, "make", "-j", "2")
    run_id = sorted(p.name for p in (work / ".runner" / "runs").iterdir())[-1]
    noop = [runner(work, "make") for _ in range(a.reps)]
    proc, url, port, token = serve(work)
    try:
        html = [fetch(port, token, f"/runs/{run_id}") for _ in range(a.reps)]
        runs_page = [fetch(port, token, "/")[0] for _ in range(a.reps)]
        loads = page_load(f"http://127.0.0.1:{port}/runs/{run_id}?token={token}", a.reps)
    finally:
        proc.terminate()
        proc.wait(10)
    med = statistics.median
    print(f"## {a.steps:,}-step run (clean -j2 build {built:.1f} s, run {run_id})")
    print(f"- the run's own no-op (`runner make`): median {med(noop):.3f} s of {a.reps}")
    print(
        f"- `runner serve`: the run's page, {html[0][1] / 1e6:.2f} MB of HTML, "
        f"in median {med(t for t, _ in html):.3f} s "
        f"(the first, spec loaded: {html[0][0]:.3f} s); the runs page {med(runs_page):.3f} s"
    )
    print(
        f"- the run's page loaded in chromium (navigation to the load event): median {med(loads):.3f} s, "
        f"at most {max(loads):.3f} s"
    )
    beside_work = project(a.work / str(a.beside_steps), a.beside_steps)
    alone, watched = beside(beside_work, a.beside_reps)
    change = (med(watched) - med(alone)) / med(alone) * 100
    print(f"## `runner serve` and a browser on the live page beside a clean -j2 build of {a.beside_steps:,} steps")
    print(
        f"- alone: {', '.join(f'{t:.2f}' for t in alone)} s (median {med(alone):.2f} s); watched: "
        f"{', '.join(f'{t:.2f}' for t in watched)} s (median {med(watched):.2f} s): {change:+.1f}%"
    )


if __name__ == "__main__":
    main()
