"""Many agent steps at once: what the runner itself costs per agent step, beside the model's latency.

Generates a project of N independent agent steps (each its own intent, its own output file, a cheap verify
command), in a git repository with a few dozen other files, and serves every model request from the fake
Responses server (tests/fakes/) after a set delay. Two workers side by side:

- `openai`: one Responses API call per step (httpx2, in the runner's process);
- `codex`: the real Codex CLI (`codex exec`, from the `codex` extra), two requests per step (a shell call that
  writes the output, then the final message).

For each worker and -j it reports the wall time of `runner make -j J`, the ideal time (ceil(steps / j) x
requests per step x delay: the model's latency alone, with every slot busy), their ratio, and at -j 1 the
runner's own part per step: (wall - steps x requests x delay) / steps, less for codex a bare `codex exec`
measured the same way (same command line, same server, same delay) and less the CLI's start-up (a no-op
`runner make` on the same project). Figures from one run, ratios; never a timed test.

    .venv/bin/python bench/agents.py                       # 16 and 64 steps, -j 1 and 16, delay 1 s
    .venv/bin/python bench/agents.py --workers openai --steps 64 --jobs 16
    .venv/bin/python bench/agents.py --serve openai --steps 16   # a project for bench/agent_times.py

-j 1 runs only at the smallest step count (64 steps of 2 requests of 1 s is two minutes of waiting that says
nothing more).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FAKE_SERVER = REPO / "tests" / "fakes" / "fake_responses_server.py"
REQUESTS = {"openai": 1, "codex": 2}
KEY = "sk-bench-not-a-secret"


def project(root: Path, steps: int, worker: str, server_url: str, files: int, codex_home: Path) -> None:
    """A git repository with `files` source files and `steps` agent intents under `all`."""
    if root.exists():
        shutil.rmtree(root)
    (root / "src").mkdir(parents=True)
    (root / "adapters").mkdir()
    for i in range(files):
        (root / "src" / f"m{i:03d}.py").write_text(f"VALUE_{i} = {i}\n" * 20)
    (root / "adapters" / "bench.toml").write_text('name = "bench"\n[commands.check]\nrun = "true"\n')
    (root / ".gitignore").write_text(".runner/\n")
    if worker == "codex":
        binary = codex_binary()
        worker_toml = f"""\
            [worker]
            kind = "codex"
            model = "gpt-bench"
            binary = "{binary}"
            base_url = "{server_url}"
            env_key = "BENCH_KEY"
            timeout = 120
            extra = {{ request_max_retries = 0, stream_max_retries = 0, codex_home = "{codex_home}" }}
            """
    else:
        worker_toml = f"""\
            [worker]
            kind = "openai"
            model = "gpt-bench"
            base_url = "{server_url}"
            env_key = "BENCH_KEY"
            timeout = 120
            """
    intents = [
        textwrap.dedent("""\
            [project]
            name = "agents-bench"
            default = "all"
            """)
        + textwrap.dedent(worker_toml),
        textwrap.dedent("""\
            [intent.all]
            deps = [{deps}]
            """).format(deps=", ".join(f'"s{i:03d}"' for i in range(steps))),
    ]
    for i in range(steps):
        intents.append(
            textwrap.dedent(f"""\
                [intent.s{i:03d}]
                goal = "Write the answer for bench step s{i:03d} to out/s{i:03d}.txt"
                inputs = ["src/m{i % max(files, 1):03d}.py"]
                outputs = ["out/s{i:03d}.txt"]
                adapter = "bench"
                verify = ["check"]
                """)
        )
    (root / "intents.toml").write_text("\n".join(intents))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench project"], cwd=root, check=True)


def script(steps: int, worker: str, delay: float) -> list[dict]:
    """One conversation script per step, matched by its goal's words, each request answered after `delay`."""
    out = []
    for i in range(steps):
        name = f"s{i:03d}"
        match = f"bench step {name} "
        if worker == "codex":
            body = [
                {"shell": f"mkdir -p out && printf 'answer {name}\\n' > out/{name}.txt", "delay": delay},
                {"message": f"Wrote out/{name}.txt.", "delay": delay},
            ]
        else:
            answer = (
                f"<<MIS:START>>\n<<MIS:FILE path=out/{name}.txt>>\nanswer {name}\n"
                f'<<MIS:JSON>>\n{{"summary": "wrote out/{name}.txt"}}\n<<MIS:END>>\n'
            )
            body = [{"message": answer, "delay": delay}]
        out.append({"match": match, "steps": body})
    return out


def codex_binary() -> str:
    from runner.workers.base import WorkerConfig
    from runner.workers.codex import resolve_binary

    path, why = resolve_binary(WorkerConfig())
    if path is None:
        sys.exit(f"bench/agents.py: {why}")
    return path


class Server:
    """The fake Responses server in its own process, on loopback."""

    def __init__(self, work: Path, scripts: list[dict]):
        work.mkdir(parents=True, exist_ok=True)
        self.log = work / "requests.jsonl"
        self.log.unlink(missing_ok=True)
        path = work / "script.json"
        path.write_text(json.dumps(scripts))
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKE_SERVER), "--port", "0", "--script", str(path), "--log", str(self.log)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            sys.exit(f"bench/agents.py: the fake server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/v1"

    def requests(self) -> int:
        return len(self.times())

    def times(self) -> list[float]:
        """When each request reached the server (wall clock), in order."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return sorted(json.loads(line)["ts"] for line in lines)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


RUNNER_SRC: str | None = None  # --runner-src: run another checkout's runner (e.g. main's, for "before")


def env() -> dict:
    e = dict(os.environ, BENCH_KEY=KEY, PYTHONDONTWRITEBYTECODE="1")
    if RUNNER_SRC:
        e["PYTHONPATH"] = RUNNER_SRC
    return e


def children_cpu() -> float:
    """User + system CPU seconds of this process's reaped children (and theirs): the runner, its git and
    verify processes, codex; the fake server is reaped only at its stop, outside every measured span."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def runner_make(root: Path, jobs: int) -> tuple[float, float, dict, float]:
    """Wall time of `runner make -j J --json`, fork to reap, the CPU time it and its children used, its
    run_finished event, and the wall clock at the fork."""
    pre = [sys.executable, "-m", "runner"]
    argv = [*pre, "make", "-C", str(root), "-j", str(jobs), "--json"]
    cpu0 = children_cpu()
    forked = time.time()
    t0 = time.perf_counter()
    # cwd: the project, so that `-m runner` imports the runner on PYTHONPATH (--runner-src) or the installed one,
    # never a checkout that happens to be the bench's cwd
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(), stdin=subprocess.DEVNULL, cwd=root)
    wall = time.perf_counter() - t0
    cpu = children_cpu() - cpu0
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    finished = next((e for e in events if e.get("event") == "run_finished"), {})
    if proc.returncode != 0:
        failed = [e for e in events if e.get("event") == "step_finished" and e.get("status") != "ran"]
        sys.exit(f"bench/agents.py: runner make exited {proc.returncode}\n{proc.stderr[-2000:]}\n{failed[:2]}")
    return wall, cpu, finished, forked


def bare_codex(work: Path, delay: float, reps: int, codex_home: Path) -> tuple[float, float]:
    """Mean wall and CPU time of a bare `codex exec` (the worker's own command line) doing one step's two
    requests."""
    from runner.workers.base import WorkerConfig, WorkerRequest
    from runner.workers.codex import build_argv

    scripts = [
        {
            "steps": [
                {"shell": "mkdir -p out && printf 'answer\\n' > out/bare.txt", "delay": delay},
                {"message": "Wrote out/bare.txt.", "delay": delay},
            ]
        }
    ]
    server = Server(work, scripts)
    times, cpus = [], []
    try:
        cfg = WorkerConfig(
            kind="codex",
            model="gpt-bench",
            base_url=server.url,
            env_key="BENCH_KEY",
            extra={"request_max_retries": 0, "stream_max_retries": 0, "codex_home": str(codex_home)},
        )
        for rep in range(reps):
            ws = work / f"bare{rep}"
            shutil.rmtree(ws, ignore_errors=True)
            ws.mkdir(parents=True)
            request = WorkerRequest(prompt=f"bare run {rep}", workspace=ws, intent="bare", step_key="", config=cfg)
            argv = build_argv(codex_binary(), request, cfg.model)
            codex_home.mkdir(parents=True, exist_ok=True)
            e = dict(env(), CODEX_HOME=str(codex_home))
            cpu0 = children_cpu()
            t0 = time.perf_counter()
            proc = subprocess.run(argv, cwd=ws, capture_output=True, env=e, stdin=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            cpus.append(children_cpu() - cpu0)
            if proc.returncode != 0:
                sys.exit(f"bench/agents.py: the bare codex exec failed:\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}")
            if not (ws / "out" / "bare.txt").is_file():
                sys.exit("bench/agents.py: the bare codex exec did not write its file")
    finally:
        server.stop()
    return sum(times) / len(times), sum(cpus) / len(cpus)


def one(work: Path, worker: str, steps: int, jobs: int, delay: float, files: int) -> dict:
    """One clean `runner make` of `steps` agent steps at -j `jobs`; then a no-op for the CLI's start-up."""
    home = work / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    server = Server(work, script(steps, worker, delay))
    try:
        root = work / "proj"
        project(root, steps, worker, server.url, files, home)
        wall, cpu, finished, forked = runner_make(root, jobs)
        times = server.times()
        requests = len(times)
        noop, noop_cpu, _again, _forked = runner_make(root, jobs)
    finally:
        server.stop()
    ran = (finished.get("counts") or {}).get("ran", finished.get("ran"))
    produced = sum(1 for i in range(steps) if (root / "out" / f"s{i:03d}.txt").is_file())
    if produced != steps or requests != steps * REQUESTS[worker]:
        sys.exit(f"bench/agents.py: {worker} {steps}x-j{jobs}: {produced} outputs, {requests} requests")
    model = steps * REQUESTS[worker] * delay  # the model's latency summed over the steps
    ideal = math.ceil(steps / jobs) * REQUESTS[worker] * delay
    per = REQUESTS[worker]
    timeline = {
        # the CLI's start-up, planning, the first workspace and (openai) its HTTP client's import: paid once a run
        "first_call": times[0] - forked,
        # after the last answer: the last step's verify, apply and record, the run's end
        "after_last_answer": forked + wall - (times[-1] + delay),
    }
    if jobs == 1 and steps > 1:
        # from one step's first request to the next step's, less the model's latency: a step's own cost
        # between two calls (verify, apply, the next workspace and prompt; codex: its process too), the
        # start-up and the client's import left out
        timeline["between_calls"] = (times[(steps - 1) * per] - times[0]) / (steps - 1) - per * delay
    return timeline | {
        "worker": worker,
        "steps": steps,
        "jobs": jobs,
        "delay": delay,
        "wall": wall,
        "ideal": ideal,
        "ratio": wall / ideal,
        "noop": noop,
        "cpu": cpu,
        "noop_cpu": noop_cpu,
        "model": model,
        "ran": ran,
        "requests": requests,
    }


def serve(work: Path, worker: str, steps: int, delay: float, files: int) -> int:
    """A project and its fake server, left running for a profiler (bench/agent_times.py) to make it. Ctrl-C or
    a SIGTERM (`kill`, `pkill`) stops the server with it."""
    server = Server(work, script(steps, worker, delay))
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: through the finally below
    try:
        project(work / "proj", steps, worker, server.url, files, work / "codex-home")
        print(f"serving {steps} {worker} steps: BENCH_KEY=x bench/agent_times.py {work / 'proj'} -- make -j1 --json")
        print("(remove its .runner/ and out/ to make it again; Ctrl-C stops the server)", flush=True)
        while server.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", nargs="+", default=["openai", "codex"], choices=sorted(REQUESTS))
    ap.add_argument("--steps", nargs="+", type=int, default=[16, 64])
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 16])
    ap.add_argument("--delay", type=float, default=1.0, help="seconds the fake server waits before each answer")
    ap.add_argument("--files", type=int, default=50, help="other files in the project (copied or not per attempt)")
    ap.add_argument("--reps", type=int, default=1, help="runs of each row; the fastest is shown")
    ap.add_argument("--bare-reps", type=int, default=4, help="bare `codex exec` runs to average")
    ap.add_argument(
        "--serve",
        choices=sorted(REQUESTS),
        help="make one project (the smallest --steps) for this worker, serve it until Ctrl-C (bench/agent_times.py)",
    )
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--work", default=str(BENCH / "work" / "agents"))
    ap.add_argument("--runner-src", help="put this checkout's runner first on PYTHONPATH (a before/after pair)")
    args = ap.parse_args(argv)
    global RUNNER_SRC
    RUNNER_SRC = args.runner_src
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.serve:
        return serve(work / "serve", args.serve, min(args.steps), args.delay, args.files)
    rows = []
    bare = None
    tmp = Path(tempfile.mkdtemp(prefix="agents-bench-", dir=work))
    try:
        for worker in args.workers:
            if worker == "codex":
                bare = bare_codex(tmp / "bare", args.delay, args.bare_reps, tmp / "bare-home")
            for steps in args.steps:
                for jobs in args.jobs:
                    if jobs == 1 and steps != min(args.steps):
                        continue
                    runs = [
                        one(tmp / f"{worker}-{steps}-{jobs}", worker, steps, jobs, args.delay, args.files)
                        for _rep in range(args.reps)
                    ]
                    row = min(runs, key=lambda r: r["wall"])  # the least disturbed by the machine's neighbours
                    row["walls"] = [round(r["wall"], 2) for r in runs]
                    # CPU per step beside the wall figures: the machine is shared, and a busy neighbour
                    # stretches wall time but not the CPU the runner spends
                    row["cpu_per_step"] = row["cpu"] / steps  # the start-up's share included
                    if worker == "codex" and bare is not None:
                        row["cpu_per_step"] -= bare[1]
                    if jobs == 1:
                        beyond = (row["wall"] - row["model"]) / steps
                        row["beyond_model_per_step"] = beyond
                        own = beyond - row["noop"] / steps
                        if worker == "codex" and bare is not None:
                            row["bare_codex_beyond_model"] = bare[0] - REQUESTS["codex"] * args.delay
                            own -= row["bare_codex_beyond_model"]
                        row["runner_own_per_step"] = own
                    rows.append(row)
                    print(_line(row), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def _line(row: dict) -> str:
    return (
        f"{row['worker']:6} {row['steps']:3} steps -j {row['jobs']:2}: {row['wall']:6.2f} s, "
        f"ideal {row['ideal']:5.1f} s, x{row['ratio']:.2f}, no-op {row['noop']:.2f} s, "
        f"CPU {row['cpu']:.2f} s ({row['cpu_per_step'] * 1000:.0f} ms a step"
        f"{' and a bare codex exec' if row['worker'] == 'codex' else ''}), first call after "
        f"{row['first_call']:.2f} s, {row['after_last_answer']:.2f} s after the last answer"
        + (f", {row['between_calls'] * 1000:.0f} ms a step between calls" if "between_calls" in row else "")
    )


def table(rows: list[dict]) -> str:
    """The markdown table bench/README.md shows."""
    lines = [
        "| worker | steps | -j | wall | ideal | ratio | beyond the model, per step | bare `codex exec` beyond "
        "the model | runner's own, per step | runner's CPU, per step | first call after | after the last answer "
        "| a step between two calls, less the model |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        beyond = f"{r['beyond_model_per_step']:.3f} s" if "beyond_model_per_step" in r else ""
        bare = f"{r['bare_codex_beyond_model']:.3f} s" if "bare_codex_beyond_model" in r else ""
        own = f"{r['runner_own_per_step']:.3f} s" if "runner_own_per_step" in r else ""
        between = f"{r['between_calls'] * 1000:.0f} ms" if "between_calls" in r else ""
        lines.append(
            f"| {r['worker']} | {r['steps']} | {r['jobs']} | {r['wall']:.2f} s | {r['ideal']:.1f} s | "
            f"{r['ratio']:.2f}x | {beyond} | {bare} | {own} | {r['cpu_per_step'] * 1000:.0f} ms | "
            f"{r['first_call']:.2f} s | {r['after_last_answer']:.2f} s | {between} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
