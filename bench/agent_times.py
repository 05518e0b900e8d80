"""Time the parts of `runner make`'s agent steps, summed over every thread: where an agent step's time goes.

cProfile sees only the thread that enabled it, and an agent step runs in the hand-off's pool threads (and its
candidates in threads of their own), so this wraps the named functions with timers in-process instead, as
bench/stage_times.py does for the stages. Totals are summed over threads: at -j 16, sixteen steps waiting on
the model at once add up sixteen times; read them per call (n) and at -j 1 for a step's own cost. The process's
own CPU and its children's (git, verify commands, codex) close the report.

    .venv/bin/python bench/agents.py --serve openai --steps 16 --delay 0.2 &   # prints the project's path
    BENCH_KEY=x .venv/bin/python bench/agent_times.py PROJECT -- make -j1 --json
"""

from __future__ import annotations

import functools
import importlib
import os
import resource
import sys
import threading
import time

_PARTS = {
    "runner.steps.agent": [
        "make_workspace",
        "find_change",
        "snapshot",
        "undo_side_effects",
        "render",
        "attempt_in",
        "_judge",
        "_verify",
    ],  # fmt: skip
    "runner.attempt": [
        "remove_workspace",  # on the background remover's thread
        "_bring_back",
        "_worktree",
        "_status",
        "_git_ignored",
        "_git_state",
        "_layout",
        "_ignore_marks",
        "_same_file",
        "_overlay",
        "_drop_empty_folders",
        "snapshot",
    ],  # fmt: skip
    "runner.steps.agent:AgentStep": ["run", "_attempt"],
    "runner.workers.openai:OpenAIWorker": ["run", "_call", "warm"],
    "runner.workers.openai": ["_http", "protocol_family", "parse_answer"],
    "runner.workers.codex:CodexWorker": ["run"],
    "runner.workers.replay": ["apply_files"],
    "runner.agent_handoff:AgentHandoff": ["finish", "submit"],
    "runner.approve": ["record_and_apply", "apply_change"],
    "runner.apply": ["_retire"],  # on the background retirer's thread
    "runner.cache:State": ["save"],
    "runner.execute:Executor": ["run", "_wait", "_complete"],
    "runner.pipeline": ["load_project"],
}


def main() -> None:
    project, _sep, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.chdir(project)
    totals: dict[str, list] = {}
    lock = threading.Lock()

    def wrap(owner, name: str, label: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                used = time.thread_time() - cpu  # this thread's CPU: what a loaded machine does not stretch
                with lock:
                    entry = totals.setdefault(label, [0.0, 0, 0.0])
                    entry[0] += spent
                    entry[1] += 1
                    entry[2] += used

        setattr(owner, name, timed)

    for where, names in _PARTS.items():
        module_name, _colon, class_name = where.partition(":")
        module = importlib.import_module(module_name)
        owner = getattr(module, class_name) if class_name else module
        for name in names:
            if hasattr(owner, name):
                wrap(owner, name, f"{class_name or module_name.split('.')[-1]}.{name}")
    sys.argv = ["runner", *argv]
    from runner.entry import main as runner_main

    started = time.perf_counter()
    out = sys.stdout
    with open(os.devnull, "w") as sys.stdout:  # the run's own output is not what is measured
        try:
            runner_main()
        except SystemExit:
            pass
    sys.stdout = out
    print(f"{'the command':<36} {time.perf_counter() - started:8.3f} s")
    for label, (seconds, calls, cpu) in sorted(totals.items(), key=lambda item: -item[1][0]):
        print(
            f"  {label:<34} {seconds:8.3f} s  {calls:4} calls  {seconds / calls * 1000:7.1f} ms a call, "
            f"CPU of its thread {cpu / calls * 1000:6.1f} ms a call"
        )
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"CPU: runner {me.ru_utime + me.ru_stime:.2f} s, its children {kids.ru_utime + kids.ru_stime:.2f} s")


if __name__ == "__main__":
    main()
