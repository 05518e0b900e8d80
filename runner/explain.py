"""Readable accounts of one step (`runner explain`) and of one recorded run (`runner log`)."""

from __future__ import annotations

from .graph import resolve_target, selected_order
from .plan import make_plan


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else digest


def explain_intent(project, name: str) -> dict:
    from .pipeline import planner_for

    resolve_target(project.spec, name)  # unknown name -> UsageError with did-you-mean
    order = selected_order(project.compiled.order, project.compiled.deps, name)
    planner = planner_for(project)
    try:
        decision = make_plan(planner, order)[-1]
        last = planner.state.get(name)
        record = planner.cache.get_record(last[0]) if last else None
    finally:
        planner.stat.save()
        planner.cache.close()
    intent = project.spec.intents[name]
    report = {
        "intent": name,
        "kind": intent.kind,
        "description": intent.description,
        "action": decision.action,
        "reasons": decision.reasons,
        "key": _short(decision.key) if decision.key != "aggregate" else None,
        "deps": list(intent.deps),
        "ingredients": {
            "static": {k: _short(v) for k, v in project.compiled.parts[name].items()},
            "inputs": {p: _short(d) for p, d in decision.inputs.items()},
            "deps": {d: _short(v) for d, v in decision.dep_digests.items()},
        },
        "last_run": None,
    }
    if intent.run:
        report["run"] = intent.run
    if intent.goal:
        report["goal"] = intent.goal
    if record:
        report["last_run"] = {
            "run_id": record.run_id,
            "key": _short(record.key),
            "duration": round(record.duration, 3),
            "outputs": {p: _short(d) for p, d in record.outputs.items()},
        }
    return report


def render_explanation(r: dict) -> str:
    lines = [f"{r['intent']} ({r['kind']} step)"]
    if r.get("description"):
        lines.append(f"  {r['description']}")
    if r.get("run"):
        lines.append(f"  run: {r['run']}")
    if r.get("goal"):
        lines.append(f"  goal: {r['goal']}")
    lines.append(f"  would {r['action']}: {'; '.join(r['reasons'])}")
    if r.get("key"):
        lines.append(f"  key: {r['key']}")
    lines.append("  key ingredients:")
    for part, digest in r["ingredients"]["static"].items():
        lines.append(f"    {part:<12} {digest}")
    for path, digest in r["ingredients"]["inputs"].items():
        lines.append(f"    input        {path} {digest or '(missing)'}")
    for dep in r["deps"]:
        digest = r["ingredients"]["deps"].get(dep)
        lines.append(f"    dependency   {dep} {digest or '(not built yet)'}")
    last = r.get("last_run")
    if last:
        lines.append(f"  last run: {last['run_id']} (key {last['key']}, {last['duration']:.2f}s)")
        for path, digest in last["outputs"].items():
            lines.append(f"    output       {path} {digest}")
    else:
        lines.append("  last run: none recorded")
    return "\n".join(lines)


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
