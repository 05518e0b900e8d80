"""Agent steps here and on a Dask cluster, side by side: wall time and the runner process's own CPU.

N agent steps (the `openai` worker against tests/fakes/fake_responses_server.py, answering at once; each step
writes one note; verify `true`) built clean with `-j 4`, once with `--executor local` and once on a
`distributed.LocalCluster` of 2 worker processes x 2 threads on 127.0.0.1, `--reps` times each, a fresh project
each time. The first cluster run pays for the workers importing the openai SDK. "runner CPU" is the `runner
make` child's user + sys (on the cluster the worker calls and verify commands run in the worker processes).

    .venv/bin/python bench/dask_agents.py --steps 8 --reps 2
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
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests/fakes/fake_responses_server.py"


def _answer(i: int) -> str:
    return f'<<MIS:START>>\n<<MIS:FILE path=notes/n{i}.txt>>\nnote {i}\n<<MIS:JSON>>\n{{"summary": "w"}}\n<<MIS:END>>\n'


def write_project(root: Path, steps: int, port: int) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src/a.txt").write_text("a\n")
    (root / "adapters").mkdir()
    (root / "adapters/local.toml").write_text('name = "local"\n[commands.check]\nrun = "true"\n')
    intents = "".join(
        textwrap.dedent(f"""
            [intent.n{i}]
            goal = "Write note number {i} of the batch"
            inputs = ["src/a.txt"]
            outputs = ["notes/n{i}.txt"]
            adapter = "local"
            verify = ["check"]
            """)
        for i in range(steps)
    )
    all_ = ", ".join(f'"n{i}"' for i in range(steps))
    (root / "intents.toml").write_text(
        f'[project]\nname = "agents"\ndefault = "all"\n[worker]\nkind = "openai"\nmodel = "gpt-5.5"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nenv_key = "FAKE_KEY"\ntimeout = 30\n'
        f"[intent.all]\ndeps = [{all_}]\n{intents}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    from distributed import LocalCluster

    base = Path(tempfile.mkdtemp(prefix="bench-dask-agents-"))
    script = base / "script.json"
    script.write_text(
        json.dumps([{"match": f"note number {i} ", "steps": [{"message": _answer(i)}]} for i in range(args.steps)])
    )
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--script", str(script)], stdout=subprocess.PIPE, text=True
    )
    port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
    env = dict(os.environ, FAKE_KEY="sk-bench-" + "x" * 24)
    try:
        with LocalCluster(
            processes=True, n_workers=2, threads_per_worker=2, host="127.0.0.1", dashboard_address=":0"
        ) as cluster:
            for rep in range(args.reps):
                for where in ("local", cluster.scheduler_address):
                    label = "local" if where == "local" else "dask "
                    root = base / f"p{rep}-{label.strip()}"
                    write_project(root, args.steps, port)
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    started = time.monotonic()
                    done = subprocess.run(
                        [sys.executable, "-m", "runner", "make", "-j", "4", "--executor", where],
                        cwd=root, env=env, capture_output=True, text=True,
                    )  # fmt: skip
                    wall = time.monotonic() - started
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                    ok = all((root / f"notes/n{i}.txt").read_text() == f"note {i}\n" for i in range(args.steps))
                    print(f"rep {rep} {label}: {args.steps} steps, exit {done.returncode}, outputs ok {ok}, "
                          f"wall {wall:.2f} s, runner CPU {cpu:.2f} s", flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
