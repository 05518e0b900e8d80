"""`runner explain INTENT`: everything that decides one step: its key's ingredients, its last run, the decision."""

from __future__ import annotations

from ..graph import resolve_target, selected_order
from ..plan import make_plan
from . import Command, Invocation, argument, echo, print_json


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else digest


def explain_intent(project, name: str) -> dict:
    from ..pipeline import planner_for

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


def run(inv: Invocation, intent: str) -> None:
    from ..pipeline import load_project

    report = explain_intent(load_project(inv.directory), intent)
    if inv.as_json:
        print_json(report)
    else:
        echo(render_explanation(report))


COMMAND = Command(
    "explain",
    "Everything that decides one step: its key's ingredients, its last run, what it would do.",
    (argument("intent"),),
    run,
)
