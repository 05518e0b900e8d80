"""`runner explain INTENT`: everything that decides one step: its key's ingredients, its last run, the decision."""

from __future__ import annotations

from ..graph import resolve_target, selected_order
from ..plan import make_plan
from . import SPEC_FILE, Command, Invocation, echo, option, print_json, target_argument


def _short(digest: str | None) -> str | None:
    return digest[:12] if digest else digest


def explain_intent(project, name: str, remote: str | None = None) -> dict:
    """`remote`: --remote URL; else RUNNER_REMOTE_CACHE or [cache] remote, only read (explain writes nothing)."""
    from ..pipeline import keep_stat_cache, planner_for
    from ..stores import mirror_named

    # an output path names its intent; unknown: did-you-mean
    name = resolve_target(project.spec, project.typed(name)[0]) or name
    order = selected_order(project.compiled, name)
    mirror = mirror_named(project.spec, remote, "read")
    planner = planner_for(project, remote=mirror)
    try:
        decision = make_plan(planner, order)[-1]
        parts = planner.parts(name)  # the expanded env's digest too, when it reads variables
        toolchain = planner.toolchain(name)  # what its runtime commands print (runner/toolchain.py)
        last = planner.state.get(name)
        record = planner.cache.get_record(last[0]) if last else None
        remote_why = planner.cache.remote_why(decision.key) if decision.key else None
    finally:
        keep_stat_cache(planner)
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
            "static": {k: _short(v) for k, v in parts.items()},
            "inputs": {p: _short(d) for p, d in decision.inputs.items()},
            "deps": {d: _short(v) for d, v in decision.dep_digests.items()},
        },
        "last_run": None,
    }
    if toolchain is not None:
        report["toolchain"] = toolchain
    if intent.run:
        report["run"] = intent.run
    report["cwd"] = intent.cwd
    report["env"] = _env(project.spec, intent)
    if intent.goal:
        report["goal"] = intent.goal
    if mirror is not None:  # why the shared cache had, or had not, this step's key
        report["remote"] = {"url": mirror.url, "why": remote_why or "not asked: the local cache answered"}
    if record:
        report["last_run"] = {
            "run_id": record.run_id,
            "key": _short(record.key),
            "duration": round(record.duration, 3),
            "outputs": {p: _short(d) for p, d in record.outputs.items()},
        }
        if record.drift:
            report["last_run"]["drift"] = record.drift
    return report


def _env(spec, intent) -> dict[str, dict]:
    """Each `env` entry as declared and as the command gets it: $NAME expanded from runner's environment, the
    value hidden where it is a secret's (a key-like name, or one a policy lists in `secrets`)."""
    import os

    from ..intent_env import shown
    from ..redact import looks_secret, secret_names
    from ..spec import env_refs, expand_env

    listed = set(secret_names(spec))
    out = {}
    for key, declared in intent.env:
        refs = env_refs(declared)
        try:
            value: str | None = expand_env(declared, os.environ)
        except KeyError:
            value = None  # not set here: `runner make` says so before it runs anything
        if value is not None and any(n in listed or looks_secret(n) for n in [key, *refs]):
            value = f"[REDACTED:{next(n for n in [key, *refs] if n in listed or looks_secret(n))}]"
        out[key] = {"declared": shown(key, declared), "value": shown(key, value) if value else value}
    return out


def render_explanation(r: dict) -> str:
    lines = [f"{r['intent']} ({r['kind']} step)"]
    if r.get("description"):
        lines.append(f"  {r['description']}")
    if r.get("run"):
        lines.append(f"  run: {r['run']}")
    if r.get("goal"):
        lines.append(f"  goal: {r['goal']}")
    if r.get("cwd", ".") != ".":
        lines.append(f"  cwd: {r['cwd']}")
    for key, entry in r.get("env", {}).items():
        declared, value = entry["declared"], entry["value"]
        shown = "" if value == declared else " (not set)" if value is None else f" = {value}"
        lines.append(f"  env: {key}={declared}{shown}")
    lines.append(f"  would {r['action']}: {'; '.join(r['reasons'])}")
    if r.get("key"):
        lines.append(f"  key: {r['key']}")
    if r.get("remote"):
        lines.append(f"  remote cache: {r['remote']['why']}")
    lines.append("  key ingredients:")
    width = max([12, *map(len, r["ingredients"]["static"])])  # memory.open_questions is the longest name
    for part, digest in r["ingredients"]["static"].items():
        lines.append(f"    {part:<{width}} {digest}")
    for command, printed in r.get("toolchain", {}).items():
        shown = "; ".join(printed.splitlines()[:3]) or "(nothing)"
        lines.append(f"    runtime      {command}: {shown}")
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
        for flag in last.get("drift", ()):
            lines.append(f"    drift        {flag['message']}")
    else:
        lines.append("  last run: none recorded")
    return "\n".join(lines)


def run(inv: Invocation, intent: str, spec_file: str | None, remote: str | None = None) -> None:
    from ..pipeline import load_project

    report = explain_intent(load_project(inv.directory, spec_file=spec_file), intent, remote)
    if inv.as_json:
        print_json(report)
    else:
        echo(render_explanation(report))


COMMAND = Command(
    "explain",
    "Everything that decides one step: its key's ingredients, its last run, what it would do.",
    (
        target_argument("intent", required=True),
        SPEC_FILE,
        option("--remote", dest="remote", help="Ask this shared cache (over [cache] remote).", metavar="URL"),
    ),
    run,
)
