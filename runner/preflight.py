"""Before agent steps spend anything: the worker's set-up checked (no model call, no key's value shown) and the
model calls they may make, against the budgets that cap them (`validate`, `status`, `make -n`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .errors import Problem
from .spec import Spec

if TYPE_CHECKING:
    from .workers.base import WorkerConfig
    from .workers.setup import Check

# where in [worker] each check's subject is declared: a problem is reported at that line of intents.toml
_WHERE = {"binary": "worker.binary", "version": "worker.binary", "key": "worker.env_key", "base_url": "worker.base_url"}


class Preview(NamedTuple):
    """The agent steps a command selected: the worker's checks and each step's projected model calls."""

    worker: str
    model: str
    checks: list[Check]
    steps: list[dict]  # per step: candidates, attempts, calls, budget (see projection)
    calls: int  # in all, capped by the run's attempt budget
    run_budget: dict
    files: tuple[str, ...] = ()  # the intents file whose [worker] each check is of, where not only the root's

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict:
        return {
            "worker": self.worker,
            "model": self.model,
            "ok": self.ok,
            "checks": [c.to_json() for c in self.checks],
            "steps": self.steps,
            "calls": self.calls,
            "run_budget": self.run_budget,
        }


def _budget(b) -> dict:
    return {"tokens": b.tokens, "attempts": b.attempts, "seconds": b.seconds}


def projection(spec: Spec, name: str) -> dict:
    """At most how many model calls an agent step makes: its attempts (max_attempts, capped by its policy's
    attempt budget) for each of its candidates; the budget applies to each candidate."""
    intent = spec.intents[name]
    policy = spec.policies[intent.policy]
    budget = policy.step_budget
    attempts = intent.max_attempts if budget.attempts is None else min(intent.max_attempts, budget.attempts)
    return {
        "intent": name,
        "policy": policy.name,
        "candidates": intent.candidates,
        "attempts": attempts,
        "calls": attempts * intent.candidates,
        "budget": _budget(budget),
    }


def preview(
    spec: Spec, config: WorkerConfig, steps: list[tuple[str, str | None]], environ: Mapping[str, str] | None = None
) -> Preview:
    """The checks of the worker that would serve `steps` ((intent, replay key or None)), and their cost."""
    from .workers import get_worker

    checks = get_worker(config).check(config, os.environ if environ is None else environ, steps)
    projected = [projection(spec, name) for name, _key in steps]
    run_budget = spec.policies["default"].run_budget if "default" in spec.policies else None
    calls = sum(p["calls"] for p in projected)
    if run_budget is not None and run_budget.attempts is not None:
        calls = min(calls, run_budget.attempts)
    return Preview(
        config.kind,
        config.model,
        checks,
        projected,
        calls,
        _budget(run_budget) if run_budget else {"tokens": None, "attempts": None, "seconds": None},
    )


def grouped(spec: Spec, steps: list[tuple[str, str | None]], config_of, environ=None) -> Preview:
    """preview() where sub-projects declare workers of their own: each worker's checks for the steps it serves
    (a sub-project's said with its folder), every step's calls, in one Preview. `config_of`: an intent's worker
    config (plan.Planner.worker_config_of, or workers.config_for)."""
    folders = {folder for folder, _worker in spec.workers}
    groups: dict[str, list[tuple[str, str | None]]] = {}
    for step in steps:
        folder = step[0].rpartition(":")[0]
        groups.setdefault(folder if folder in folders else "", []).append(step)
    made = [(folder, preview(spec, config_of(group[0][0]), group, environ)) for folder, group in sorted(groups.items())]
    main = made[0][1]
    checks, files = [], []
    for folder, p in made:
        for c in p.checks:
            checks.append(c._replace(detail=f"{folder}/'s {p.worker} worker: {c.detail}") if folder else c)
            files.append(f"{folder}/intents.toml" if folder else "intents.toml")
    attempts = main.run_budget.get("attempts")
    calls = sum(p.calls for _folder, p in made)
    return main._replace(
        checks=checks,
        steps=[s for _folder, p in made for s in p.steps],
        calls=calls if attempts is None else min(calls, attempts),
        files=tuple(files),
    )


def _caps(b: dict) -> str:
    """A candidate's budget in words."""
    caps = [f"{b['tokens']:,} tokens" if b["tokens"] is not None else "", f"{b['seconds']:g}s" if b["seconds"] else ""]
    caps = [c for c in caps if c]
    return f"at most {' and '.join(caps)} per candidate" if caps else "no token budget"


def render(p: Preview) -> list[str]:
    """The preview as a user reads it under a plan or after `validate`."""
    lines = []
    if p.steps:
        plural = "s" if p.calls != 1 else ""
        lines.append(f"agent steps: up to {p.calls} model call{plural} ({p.worker} worker, model {p.model})")
        width = max(len(s["intent"]) for s in p.steps)
        for s in p.steps:
            n, c, b = s["attempts"], s["candidates"], s["budget"]
            lines.append(
                f"  {s['intent']:<{width}}  {n} attempt{'s' if n != 1 else ''} x {c} candidate{'s' if c != 1 else ''}"
                f" = {s['calls']} call{'s' if s['calls'] != 1 else ''}; {_caps(b)} (policy {s['policy']})"
            )
        r = p.run_budget
        if any(v is not None for v in r.values()):
            parts = [f"{r['tokens']:,} tokens" if r["tokens"] is not None else ""]
            parts += [f"{r['attempts']} attempts" if r["attempts"] is not None else ""]
            parts += [f"{r['seconds']:g}s" if r["seconds"] is not None else ""]
            lines.append(f"  the run's budget (policy default run_budget): {', '.join(x for x in parts if x)}")
    lines.append(f"agent set-up ({p.worker} worker): {'ok' if p.ok else 'NOT READY'}")
    width = max((len(c.what) for c in p.checks), default=0)
    lines += [f"  {'ok' if c.ok else 'FAIL':<4}  {c.what:<{width}}  {c.detail}" for c in p.checks]
    return lines


def problems(root: str | Path, checks: list[Check], files: tuple[str, ...] = ()) -> list[Problem]:
    """The failed checks as problems located in intents.toml (at the [worker] key they concern, if written); `files`:
    the intents file of each check's [worker] (a sub-project's own: grouped)."""
    from .toml_locate import Locator

    out = []
    for i, c in enumerate(checks):
        if c.ok:
            continue
        file = files[i] if i < len(files) else "intents.toml"
        try:
            locator: Locator | None = Locator((Path(root) / file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            locator = None
        where = _WHERE.get(c.what, "worker")
        # at the key it concerns when [worker] declares it, else at the [worker] table, else the file
        line = locator.first_line(where.split(".")) if locator is not None else None
        if line is None and locator is not None:
            where, line = "worker", locator.first_line(["worker"])
        out.append(Problem(file, f"{c.what}: {c.detail}", where if line else "", line))
    return out
