"""`runner replay RUN`: re-execute a recorded run's agent steps from their recordings, in a scratch copy of the
project, and report every step whose outputs differ or whose recording no longer matches."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import UsageError
from ..execute import RunOptions
from ..executors import stop_abandoned
from ..pipeline import load_project, make
from ..record import list_runs, read_events
from . import Command, Invocation, argument, echo, print_json


def replay_run(root: Path, run_id: str) -> dict:
    project = load_project(root)
    runs_dir = project.layout.runs_dir
    matches = [r for r in list_runs(runs_dir) if r == run_id or r.startswith(run_id)]
    if len(matches) != 1:
        raise UsageError(f"error: no run '{run_id}' (see `runner log --list`)")
    run_id = matches[0]
    recorded = {
        e["intent"]: e
        for e in read_events(runs_dir, run_id)
        if e.get("event") == "step_finished" and e.get("status") == "ran" and "agent" in e
    }
    if not recorded:
        return {"run_id": run_id, "steps": [], "ok": True}
    scratch = Path(tempfile.mkdtemp(prefix="runner-replay-"))
    try:
        copy = scratch / "project"
        shutil.copytree(project.layout.root, copy, symlinks=True, ignore=shutil.ignore_patterns(".runner"))
        results = []
        for name, event in sorted(recorded.items()):
            _clear_outputs(load_project(copy).spec, name)
            events: list[dict] = []
            options = RunOptions(jobs=1, force=True, worker="replay")
            make(load_project(copy), [name], options, events.append, stop_cluster=stop_abandoned)
            finished = [e for e in events if e.get("event") == "step_finished" and e.get("intent") == name]
            now = finished[-1] if finished else {}
            want = event.get("outputs", {})
            if now.get("status") != "ran":
                results.append(
                    {
                        "intent": name,
                        "status": "unmatched",
                        "detail": now.get("error") or "the step did not run from its recording",
                    }
                )
                continue
            got = now.get("outputs", {})
            differ = sorted(p for p in set(want) | set(got) if want.get(p) != got.get(p))
            results.append(
                {
                    "intent": name,
                    "status": "differs" if differ else "same",
                    "detail": ("outputs differ: " + ", ".join(differ)) if differ else "outputs identical",
                }
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"run_id": run_id, "steps": results, "ok": all(r["status"] == "same" for r in results)}


def _clear_outputs(spec, name: str) -> None:
    """Delete the step's outputs from the scratch copy (those it does not also read), as the recorded run found
    them missing: a recording that writes what is already there would change nothing, which is no success."""
    from ..globs import expand, matches_any

    intent = spec.intents[name]
    for rel in expand(spec.root, intent.outputs):
        if not matches_any(rel, intent.inputs):
            (Path(spec.root) / rel).unlink(missing_ok=True)


def run(inv: Invocation, run_id: str) -> int:
    from ..errors import EXIT_OK, EXIT_STEP_FAILED
    from ..workspace import find_root

    report = replay_run(find_root(inv.directory), run_id)
    if inv.as_json:
        print_json(report)
    else:
        for step in report["steps"]:
            echo(f"{step['status']:<9} {step['intent']}: {step['detail']}")
        if not report["steps"]:
            echo(f"run {report['run_id']} ran no agent step: nothing to replay")
    return EXIT_OK if report["ok"] else EXIT_STEP_FAILED


COMMAND = Command(
    "replay",
    "Re-execute RUN's agent steps from their recordings in a scratch copy; flag any that differ.",
    (argument("run_id"),),
    run,
)
