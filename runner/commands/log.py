"""`runner log [RUN|STEP]`: what a recorded run did (its steps, their logs, agent attempts and tokens), or
one step's last log; `--list` the runs recorded; `--trace FILE` a run as Chrome trace-event JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from ..names import stored
from . import Command, Invocation, argument, echo, flag, option, print_json

# the steps a run's view lists; cached are counted
_WORKED = ("ran", "failed", "restored", "kept", "blocked", "skipped")


def run_summary(run_id: str, events: list[dict]) -> dict:
    finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
    counts = {
        k: (finished or {}).get(k, sum(1 for e in events if e.get("status") == k))
        for k in ("ran", "cached", "restored", "kept", "failed", "skipped")
    }
    tokens = sum(e.get("tokens", 0) for e in events if e.get("event") == "attempt_finished")
    return {
        "run_id": run_id,
        "status": finished.get("status") if finished else "incomplete",
        **counts,
        "tokens": tokens,
    }


def run_steps(run_dir: Path, events: list[dict]) -> list[dict]:
    """The steps of a run that did something (cached ones are only counted), each with its log's path (None:
    it printed nothing) and, for an agent step, its attempts with their tokens and folders."""
    from ..record import attempts_of

    attempts = attempts_of(run_dir, events)
    steps = []
    for e in events:
        if e.get("event") != "step_finished" or e.get("status") not in _WORKED:
            continue
        step: dict = {k: e.get(k) for k in ("intent", "status", "duration", "error", "log")}
        if e.get("drift"):
            step["drift"] = e["drift"]
        tried = attempts.get(e["intent"])
        if tried:
            step["attempts"] = tried
            step["tokens"] = sum(a["tokens"] for a in tried)
        steps.append(step)
    return steps


def render_run(run_id: str, events: list[dict], steps: list[dict]) -> str:
    lines = [f"run {run_id}"]
    for step in steps:
        line = f"  {step['status']:<8} {step['intent']}"
        if step.get("duration") is not None:
            line += f" ({step['duration']:.2f}s)"
        if step.get("error"):
            line += f": {step['error']}"
        lines.append(line)
        if step.get("log"):
            lines.append(f"           log: {step['log']}")
        for drifted in step.get("drift") or ():
            lines.append(f"           drift: {drifted['message']}")
        for a in step.get("attempts") or ():
            verdict = "verified" if a["ok"] else f"rejected ({a['kind']})"
            lines.append(
                f"           attempt {a['attempt']} of candidate {a['candidate']}: {verdict}, "
                f"{a['tokens']:,} tokens, {a['seconds']:.1f}s: {a['folder']}"
            )
    s = run_summary(run_id, events)
    lines.append(
        f"{s['status']}: ran {s['ran']}, cached {s['cached']}, restored {s['restored']}, "
        + (f"kept {s['kept']}, " if s["kept"] else "")
        + f"failed {s['failed']}, skipped {s['skipped']}"
        + (f"; {s['tokens']:,} tokens" if s["tokens"] else "")
    )
    return "\n".join(lines)


def show_step(inv: Invocation, runs_dir: Path, run_id: str, intent: str) -> None:
    """The step's log from the run that last ran it, as the step printed it (masked): to stdout, with the
    run and the path on stderr; an agent step's attempts instead, with their folders."""
    from ..record import attempts_of, step_runs

    events = step_runs(runs_dir, run_id, intent)
    finished = next((e for e in events if e.get("event") == "step_finished"), {})
    path = runs_dir / run_id / "logs" / f"{stored(intent)}.log"
    log = str(path) if path.is_file() else None
    attempts = attempts_of(runs_dir / run_id, events).get(intent, [])
    if inv.as_json:
        text = path.read_text(encoding="utf-8", errors="replace") if log else None
        found = {"intent": intent, "run_id": run_id, "status": finished.get("status"), "log": log, "text": text}
        print_json(found | ({"attempts": attempts} if attempts else {}) | _drift(finished))
        return
    status = finished.get("status") or "did not finish"
    for a in attempts:
        verdict = "verified" if a["ok"] else f"rejected ({a['kind']}): {(a['error'] or '').partition(chr(10))[0]}"
        spent = f"{a['tokens']:,} tokens, {a['seconds']:.1f}s"
        echo(f"attempt {a['attempt']} of candidate {a['candidate']}: {verdict}; {spent}")
        echo(f"  {a['folder']}")
    for drifted in finished.get("drift") or ():
        echo(f"drift: {drifted['message']}")
    if log:
        print(f"runner: {intent} {status} in run {run_id}; its log is {log}", file=sys.stderr, flush=True)
        with open(path, "rb") as f:
            sys.stdout.buffer.write(f.read())
        sys.stdout.flush()
    elif not attempts:
        print(f"runner: {intent} {status} in run {run_id} and printed nothing", file=sys.stderr, flush=True)


def _drift(finished: dict) -> dict:
    return {"drift": finished["drift"]} if finished.get("drift") else {}


def run(inv: Invocation, what: str | None, list_runs_flag: bool, trace: str | None = None) -> None:
    from ..record import last_run_of, list_runs, read_events
    from ..workspace import Layout, find_root

    layout = Layout(find_root(inv.directory))
    runs = list_runs(layout.runs_dir)
    if list_runs_flag and trace:
        raise UsageError("error: --trace writes one run's trace; it does not go with --list")
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
    run_id = runs[-1] if what is None else what if what in runs else None
    if run_id is None:
        assert what is not None
        what = _step_named(layout.runs_dir, str(layout.root), inv.directory, what)
        step_run, named = last_run_of(layout.runs_dir, what)
        if step_run is not None:
            if trace:
                raise UsageError(
                    f"error: --trace writes a run's trace and {what} is a step: "
                    f"`runner log {step_run} --trace {trace}` writes the run that last ran it"
                )
            return show_step(inv, layout.runs_dir, step_run, what)
        matches = [r for r in runs if r.startswith(what)]
        if len(matches) > 1:
            raise UsageError(f"error: '{what}' starts {len(matches)} run ids; give more of one (`runner log --list`)")
        if not matches:
            raise UsageError(_no_log(inv.directory, what, named, len(runs)))
        run_id = matches[0]
    events = read_events(layout.runs_dir, run_id)
    if trace:
        return write_trace(inv, layout.runs_dir / run_id, events, Path(trace))
    steps = run_steps(layout.runs_dir / run_id, events)
    if inv.as_json:
        print_json({"run_id": run_id, **run_summary(run_id, events), "steps": steps, "events": events})
    else:
        echo(render_run(run_id, events, steps))


def _step_named(runs_dir: Path, root: str, directory: Path, what: str) -> str:
    """A step's name as typed where the command runs, as runs record it (names.typed): inside a sub-project a bare
    name is its own intent's, `:NAME` the root's. What no run names is left as typed."""
    from ..names import typed
    from ..project_root import here
    from ..record import last_run_of

    folder = here(root, str(directory))
    if not folder and not what.startswith(":"):
        return what
    for name in (typed([what], folder)[0], what[1:] if what.startswith(":") else what):
        if last_run_of(runs_dir, name)[0] is not None:
            return name
    return what


def write_trace(inv: Invocation, run_dir: Path, events: list[dict], path: Path) -> None:
    """The run as Chrome trace-event JSON in `path` (runner/trace.py), said on stderr (--json: on stdout)."""
    from .. import trace
    from ..timeline import build

    timeline = build(run_dir, events)
    if timeline.untimed:
        raise UsageError(
            f"error: run {run_dir.name} was recorded before runner timed its steps: no trace to write "
            "(a run of `runner make` now records one)"
        )
    path = path if path.is_absolute() else inv.directory / path
    try:
        slices = trace.write(timeline, path)
    except OSError as exc:
        from ..errors import NoSpaceError
        from ..nospace import is_no_space

        if is_no_space(exc):
            raise NoSpaceError(str(path), exit_code=2) from None
        raise UsageError(f"error: cannot write the trace to {path}: {exc.strerror or exc}") from None
    if inv.as_json:
        print_json({"run_id": run_dir.name, "trace": str(path), "steps": slices})
        return
    print(
        f"runner: run {run_dir.name}: {slices} step{'' if slices == 1 else 's'} traced in {path}; open it in "
        "https://ui.perfetto.dev or chrome://tracing",
        file=sys.stderr,
        flush=True,
    )


def _no_log(directory: Path, what: str, named: bool, runs: int) -> str:
    """Why there is no log of `what`, in the words of the spec when it names such a step."""
    from ..errors import RunnerError
    from ..pipeline import load_project
    from ..spec import STEP_AGGREGATE

    try:
        intent = load_project(directory).spec.intents.get(what)
    except RunnerError:
        intent = None  # a spec that does not load says so at `runner make`; here only the runs count
    if intent is not None and intent.kind == STEP_AGGREGATE:
        return (
            f"error: {what} is an aggregate (only deps): it runs nothing itself and has no log; "
            f"`runner log STEP` shows one of its steps ({', '.join(intent.deps)})"
        )
    if named or intent is not None:
        return f"error: {what} did not run in the {runs} recorded runs: no log (`runner log --list` lists the runs)"
    return f"error: no run or step '{what}' (`runner log --list` lists the runs, `runner graph` the steps)"


COMMAND = Command(
    "log",
    "Show what a run did (default: the last one), or STEP's last log.",
    (
        argument("what", required=False),
        flag("--list", dest="list_runs_flag", help="List the recorded runs."),
        option(
            "--trace",
            dest="trace",
            help="Write the run as Chrome trace-event JSON to FILE (Perfetto, chrome://tracing).",
            metavar="FILE",
            complete="file",
        ),
    ),
    run,
)
