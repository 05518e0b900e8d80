"""What seeing a run costs: a 10,000-step run's page from `runner serve` (the HTML, and the page loaded in chromium)
beside the run's own no-op time; and a clean build's time with `runner serve` and a browser on its live page
beside it, against the same build alone (interleaved).

    .venv/bin/python bench/web.py --steps 10000 --reps 5 --beside-steps 2000 --beside-reps 3

The page's figures also time the search box's answer for a step beyond the steps table's listed rows (the page with
`?q=`, and the table alone, `?q=...&rows=1`, which the box's script asks for); `--only-page` leaves out the builds.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import shutil
import statistics
import subprocess
import sys
import threading
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


def _newest_run(work: Path, make: subprocess.Popen) -> str | None:
    runs = work / ".runner" / "runs"
    while make.poll() is None and not (runs.is_dir() and any(runs.iterdir())):
        time.sleep(0.05)
    return sorted(p.name for p in runs.iterdir())[-1] if runs.is_dir() and any(runs.iterdir()) else None


def _stream(port: int, token: str, run_id: str) -> None:
    """What a live page asks of the server: the run's event stream, read to its end."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", f"/runs/{run_id}/events", headers={"Cookie": f"runner_token_{port}={token}"})
    response = conn.getresponse()
    while response.read(4096):
        pass


def _start_stream(port: int, token: str, run_id: str) -> None:
    threading.Thread(target=_stream, args=(port, token, run_id), daemon=True).start()


def _open_live(page, base: str, run_id: str) -> None:
    page.goto(f"{base}/runs/{run_id}")


def _build_beside(work: Path, watch) -> float:
    """A clean -j2 build; `watch(run_id)` once its run is recorded."""
    clean(work)
    began = time.perf_counter()
    make = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "-j", "2"],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_id = _newest_run(work, make)
    if run_id is not None and make.poll() is None and watch is not None:
        watch(run_id)
    make.wait()
    return time.perf_counter() - began


def beside(work: Path, reps: int) -> dict[str, list[float]]:
    """Clean -j2 builds alone; with `runner serve` streaming the live run's events to a client; with chromium on the
    live run's page: interleaved, so each kind sees the same machine load."""
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {"alone": [], "served": [], "browser": []}
    for _ in range(reps):
        times["alone"].append(_build_beside(work, None))
        proc, url, port, token = serve(work)
        try:
            times["served"].append(_build_beside(work, functools.partial(_start_stream, port, token)))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                page.goto(url)
                times["browser"].append(_build_beside(work, functools.partial(_open_live, page, url.split("/?")[0])))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(10)
    return times


def page_figures(a: argparse.Namespace) -> None:
    med = statistics.median
    work = project(a.work / str(a.steps), a.steps)
    built = runner(work, "make", "-j", "2")
    run_id = sorted(p.name for p in (work / ".runner" / "runs").iterdir())[-1]
    noop = [runner(work, "make") for _ in range(a.reps)]
    events = (work / ".runner" / "runs" / run_id / "events.jsonl").read_text().splitlines()
    last = json.loads(next(line for line in reversed(events) if '"step_finished"' in line))["intent"]
    proc, url, port, token = serve(work)
    try:
        html = [fetch(port, token, f"/runs/{run_id}") for _ in range(a.reps)]
        runs_page = [fetch(port, token, "/")[0] for _ in range(a.reps)]
        searched = [fetch(port, token, f"/runs/{run_id}?q={last}")[0] for _ in range(a.reps)]
        rows = [fetch(port, token, f"/runs/{run_id}?q={last}&rows=1")[0] for _ in range(a.reps)]
        loads = page_load(f"http://127.0.0.1:{port}/runs/{run_id}?token={token}", a.reps)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"## {a.steps:,}-step run (clean -j2 build {built:.1f} s, run {run_id})")
    print(f"- the run's own no-op (`runner make`): median {med(noop):.3f} s of {a.reps}")
    print(
        f"- `runner serve`: the run's page, {html[0][1] / 1e6:.2f} MB of HTML, "
        f"in median {med(t for t, _ in html):.3f} s (the first, spec loaded: {html[0][0]:.3f} s); "
        f"the runs page {med(runs_page):.3f} s"
    )
    print(
        f"- the run's page loaded in chromium (navigation to the load event): median {med(loads):.3f} s, "
        f"at most {max(loads):.3f} s",
        flush=True,
    )
    print(
        f"- the search for its last step ({last}, beyond the table's listed rows): the page with `?q=` median "
        f"{med(searched):.3f} s, the table alone (`&rows=1`, what the box's script asks) {med(rows):.3f} s",
        flush=True,
    )


def beside_figures(a: argparse.Namespace) -> None:
    med = statistics.median
    work = project(a.work / str(a.beside_steps), a.beside_steps)
    times = beside(work, a.beside_reps)
    alone = med(times["alone"])
    print(f"## beside a clean -j2 build of {a.beside_steps:,} steps ({a.beside_reps} of each, interleaved)")
    for kind, words in (
        ("alone", "the build alone"),
        ("served", "`runner serve` streaming the live run's events to a client"),
        ("browser", "`runner serve` and chromium on the live run's page"),
    ):
        runs = ", ".join(f"{t:.2f}" for t in times[kind])
        change = (med(times[kind]) - alone) / alone * 100
        print(f"- {words}: {runs} s (median {med(times[kind]):.2f} s, {change:+.1f}%)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--beside-steps", type=int, default=2000)
    ap.add_argument("--beside-reps", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "work" / "web")
    ap.add_argument("--only-beside", action="store_true", help="only the builds beside the server")
    ap.add_argument("--only-page", action="store_true", help="only the 10,000-step page's figures")
    a = ap.parse_args()
    if not a.only_beside:
        page_figures(a)
    if not a.only_page:
        beside_figures(a)


if __name__ == "__main__":
    main()
