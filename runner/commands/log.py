"""`runner log [RUN]`: what a recorded run did; `--list` the runs recorded."""

from __future__ import annotations

from ..errors import UsageError
from . import Command, Invocation, argument, echo, flag, print_json


def run_summary(run_id: str, events: list[dict]) -> dict:
    finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
    counts = {
        k: (finished or {}).get(k, sum(1 for e in events if e.get("status") == k))
        for k in ("ran", "cached", "restored", "failed", "skipped")
    }
    return {"run_id": run_id, "status": finished.get("status") if finished else "incomplete", **counts}


def render_run(run_id: str, events: list[dict]) -> str:
    lines = [f"run {run_id}"]
    for e in events:
        if e.get("event") != "step_finished":
            continue
        line = f"  {e['status']:<8} {e['intent']}"
        if e.get("duration") is not None:
            line += f" ({e['duration']:.2f}s)"
        if e.get("error"):
            line += f": {e['error']}"
        elif e.get("reasons"):
            line += f": {'; '.join(e['reasons'])}"
        lines.append(line)
    s = run_summary(run_id, events)
    lines.append(
        f"{s['status']}: ran {s['ran']}, cached {s['cached']}, restored {s['restored']}, "
        f"failed {s['failed']}, skipped {s['skipped']}"
    )
    return "\n".join(lines)


def run(inv: Invocation, run_id: str | None, list_runs_flag: bool) -> None:
    from ..record import list_runs, read_events
    from ..workspace import Layout, find_root

    layout = Layout(find_root(inv.directory))
    runs = list_runs(layout.runs_dir)
    if list_runs_flag:
        summaries = [run_summary(r, read_events(layout.runs_dir, r)) for r in runs]
        if inv.as_json:
            print_json({"runs": summaries})
        else:
            for s in summaries:
                echo(f"{s['run_id']}  {s['status']:<11}  ran {s['ran']}, cached {s['cached']}, failed {s['failed']}")
        return
    if not runs:
        raise UsageError("error: no runs recorded yet in .runner/runs: run `runner make` first")
    if run_id is None:
        run_id = runs[-1]
    elif run_id not in runs:
        matches = [r for r in runs if r.startswith(run_id)]
        if len(matches) != 1:
            raise UsageError(f"error: no run '{run_id}' (see `runner log --list`)")
        run_id = matches[0]
    events = read_events(layout.runs_dir, run_id)
    if inv.as_json:
        print_json({"run_id": run_id, "events": events})
    else:
        echo(render_run(run_id, events))


COMMAND = Command(
    "log",
    "Show what a run did (default: the last one).",
    (argument("run_id", required=False), flag("--list", dest="list_runs_flag", help="List the recorded runs.")),
    run,
)
