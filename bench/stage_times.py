"""Time the stages of one `runner make` on a generated bench project: where a run's wall time goes.

Wraps the pipeline's stage functions with timers in-process (no profiler overhead on everything else) and
prints the total per stage, largest first. Nested stages overlap (Executor.run holds _fill, which holds
_start). Example, after `runner make` has built the project once:

    echo edited > bench/work/10000/runner/src/f00500.txt
    .venv/bin/python bench/stage_times.py bench/work/10000/runner -- make -j1 --json
"""

from __future__ import annotations

import functools
import os
import sys
import time

_STAGES = {
    "runner.noop": ["try_noop"],
    "runner.pipeline": [
        "load_project",
        "planner_for",
        "doubtful_steps",
        "first_look",
        "selected_order",
        "snapshot_paths",
        "record_proof",
        "make",
    ],
    "runner.execute:Executor": [
        "run",
        "_fill",
        "_start",
        "_wait",
        "_complete_exited",
        "_store_deferred",
        "_report_proven",
        "_hash_outputs",
        "_complete",
        "_report_run",
        "_store_batch",
        "emit",
    ],
    "runner.steps.shell": ["start"],
    "runner.steps.spawn": ["start_process"],
    "runner.cache:State": ["__init__", "save"],
    "runner.cache:Cache": ["close", "get_record"],
    "runner.plan:Planner": ["decide", "why_missed"],
    "runner.freshness:StatCache": ["__init__", "save"],
    "runner.compiled": ["load_compiled"],
}


def _wrap(owner, name: str, label: str, totals: dict) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[label] = totals.get(label, 0.0) + time.perf_counter() - started

    setattr(owner, name, timed)


def main() -> None:
    project, _sep, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.chdir(project)
    started = time.perf_counter()
    import importlib

    totals: dict[str, float] = {}
    for where, names in _STAGES.items():
        module_name, _colon, class_name = where.partition(":")
        module = importlib.import_module(module_name)
        owner = getattr(module, class_name) if class_name else module
        for name in names:
            _wrap(owner, name, f"{class_name or module_name.split('.')[-1]}.{name}", totals)
    imported = time.perf_counter()
    sys.argv = ["runner", *argv]
    from runner.entry import main as runner_main

    out = sys.stdout
    with open(os.devnull, "w") as sys.stdout:  # the run's own output is not what is measured
        try:
            runner_main()
        except SystemExit:
            pass
    sys.stdout = out
    print(f"{'imports':<28} {imported - started:7.3f} s")
    print(f"{'the command':<28} {time.perf_counter() - imported:7.3f} s")
    for label, seconds in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"  {label:<26} {seconds:7.3f} s")


if __name__ == "__main__":
    main()
