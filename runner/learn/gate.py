"""The gate: where each candidate pattern stands (shadow, canary at a weight, active, retired) and the move the
evidence since its last move calls for, by the rules of Flagger and GitHub's Scientist.

- shadow: it runs beside the active patterns on every run and is never used. After `shadow_runs` runs that
  observed it, one of them with a hit, and no failed check, it moves to canary at the first weight.
- canary: it is used for its weight's share: of the steps that read its family (by the hash of each step's
  key), or, where fewer steps read it than one in its slice would need, of the runs (shadow.run_uses: the
  first run after a move, then spread evenly). After `canary_runs` runs that used it, with no failed check, it
  steps up to the next weight, and after the last it is promoted to active (the pattern it replaces, if any,
  retired beside it for a one-step rollback). A run that did not use it leaves it where it is: waiting is not
  a failed check.
- anywhere: failed checks are counted over its whole way through the gate (cumulative, never reset by a step
  up); at `max_failed_checks` it is rolled back (retired), with no human.

The defaults bring a correct pattern of a project with one step per tool, and a pass after each build, from
its proposal to active in six builds: three runs in shadow, then one run at each of two canary weights.

The state is data in the family's file ([pattern.gate]); what runs observed is in the run records
(shadow.py). This module only decides; writeback.py writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..record import runs_after
from ..shadow import read_observations


def _runs(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class Settings:
    """The [learn] table of intents.toml."""

    precision: float = 0.95
    recall: float = 0.9
    shadow_runs: int = 3
    canary_steps: tuple[int, ...] = (25, 50)
    canary_runs: int = 1
    max_failed_checks: int = 2
    model_calls: int = 0
    approve_patterns: bool = False  # a pattern's promotion to active waits for `runner approve --pattern` too

    @classmethod
    def of(cls, table: dict | None) -> Settings:
        table = dict(table or {})
        if "canary_steps" in table:
            table["canary_steps"] = tuple(table["canary_steps"])
        return cls(**table)


@dataclass
class Standing:
    """A candidate as its file records it."""

    family: str
    name: str
    stage: str
    file: Path
    gate: dict
    replaces: str | None = None
    regex: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.family}/{self.name}"


@dataclass
class Move:
    """What a pass does to one candidate: its new stage and gate record, and why, in one line."""

    standing: Standing
    to: str  # shadow | canary | active | retired (a stay keeps the stage)
    gate: dict  # gate keys to set (None removes)
    why: str
    also: dict[str, dict] = field(default_factory=dict)  # other patterns of its file to change (the one replaced)

    @property
    def moved(self) -> bool:
        changed_weight = "weight" in self.gate and self.gate["weight"] != self.standing.gate.get("weight")
        return self.to != self.standing.stage or changed_weight


def evaluate(standing: Standing, runs_dir: Path, settings: Settings, today: str, approved: bool = False) -> Move:
    """The move the observations since the candidate's last move call for (`approved`: `runner approve --pattern`
    said yes to a promotion that waits for it)."""
    gate = standing.gate
    since = gate.get("since")
    runs = runs_after(runs_dir, since)
    seen = {run: [o for o in read_observations(runs_dir / run) if o.get("pattern") == standing.ref] for run in runs}
    seen = {run: found for run, found in seen.items() if found}
    latest = runs[-1] if runs else since
    failed = [o for found in seen.values() for o in found if o.get("check") == "fail"]
    failed_checks = int(gate.get("failed_checks", 0)) + len(failed)
    disagreements = int(gate.get("disagreements", 0)) + sum(
        1 for found in seen.values() for o in found if o.get("gained") or o.get("lost")
    )
    record = {"failed_checks": failed_checks, "disagreements": disagreements}
    if standing.stage == "canary":
        used = {run for run, found in seen.items() if any(o.get("used") for o in found)}
        counted = int(gate.get("runs", 0)) + len(used)
    else:
        counted = int(gate.get("runs", 0)) + len(seen)
    record["runs"] = counted
    if failed_checks >= settings.max_failed_checks:
        reason = failed[-1].get("why") if failed else "failed checks"
        return Move(
            standing,
            "retired",
            {**record, "weight": None, "since": latest, "reason": f"rolled back: {reason}"},
            f"rolled back after {failed_checks} failed checks (the last: {reason})",
        )
    if failed:
        return Move(
            standing,
            standing.stage,
            {**record, "since": latest},
            f"halted: {len(failed)} failed check(s) ({failed[-1].get('why')}), {failed_checks} of "
            f"{settings.max_failed_checks} before a rollback",
        )
    if standing.stage == "shadow":
        hits = sum(o.get("hits", 0) for found in seen.values() for o in found) + int(gate.get("hits", 0) or 0)
        if counted >= settings.shadow_runs and (hits or gate.get("hit")):
            weight = settings.canary_steps[0]
            return Move(
                standing,
                "canary",
                {**record, "runs": 0, "weight": weight, "since": latest, "hit": None},
                f"to canary at {weight}%: {_runs(counted)} in shadow, no failed check",
            )
        more = {"hit": True} if hits else {}
        return Move(
            standing,
            "shadow",
            {**record, **more, "since": latest},
            _shadow_wait(counted, settings, bool(hits or gate.get("hit"))),
        )
    # canary
    weight = int(gate.get("weight", settings.canary_steps[0]))
    if counted < settings.canary_runs:
        left = settings.canary_runs - counted
        return Move(
            standing,
            "canary",
            {**record, "since": latest},
            f"stays in canary at {weight}%: waits for {_runs(left)} that use{'s' if left == 1 else ''} it "
            f"({counted} of {settings.canary_runs} so far)",
        )
    higher = [w for w in settings.canary_steps if w > weight]
    if higher:
        return Move(
            standing,
            "canary",
            {**record, "runs": 0, "weight": higher[0], "since": latest},
            f"canary {weight}% -> {higher[0]}%: {_runs(counted)} used it, no failed check",
        )
    if settings.approve_patterns and not approved:
        return Move(
            standing,
            "canary",
            {**record, "ready": True, "since": latest},
            f"ready: waits for `runner approve --pattern {standing.ref}` to be promoted ([learn] approve_patterns)",
        )
    return promotion(
        standing, record | {"since": latest}, f"promoted: {_runs(counted)} used it at {weight}%, no failed check", today
    )


def _shadow_wait(counted: int, settings: Settings, hit: bool) -> str:
    """Why a shadow candidate stays, and what will move it, in the future tense."""
    left = settings.shadow_runs - counted
    if left > 0:
        more = f"after {left} more run{'s' if left != 1 else ''} that observe{'s' if left == 1 else ''} it"
        more += "" if hit else ", one with a hit"
    else:
        more = "after a run in which it reads a line (none has yet)"
    weight = settings.canary_steps[0] if settings.canary_steps else 100
    return f"stays in shadow ({counted} of {settings.shadow_runs} runs): will move to canary at {weight}% {more}"


def promotion(standing: Standing, record: dict, why: str, today: str) -> Move:
    """The move to active (the pattern it replaces retired beside it, for a one-step rollback)."""
    also = {}
    after = record.get("since") or standing.gate.get("since")  # runs after this one read with it (audit.py)
    if standing.replaces:
        also[standing.replaces] = {
            "stage": "retired",
            "gate": {
                "reason": f"replaced by {standing.name} on {today}",
                "history": f"{today} retired: replaced by {standing.name}",
                "retired_after": after,
            },
        }
    moved = {**record, "weight": None, "ready": None, "promoted": today, "active_after": after}
    return Move(standing, "active", moved, why, also)


def future(move: Move) -> str:
    """What the next `runner learn` will do with a candidate, in the future tense (`runner learn status`)."""
    if not move.moved:
        return move.why  # a stay says what it waits for, already in the future tense
    why = move.why.split(": ", 1)[1] if ": " in move.why else move.why
    if move.to == "retired":
        return f"the next `runner learn` will roll it back: {move.why.removeprefix('rolled back ')}"
    if move.to == "active":
        return f"the next `runner learn` will promote it to active: {why}"
    if move.to == "canary" and move.standing.stage == "canary":
        return f"the next `runner learn` will step it up to {move.gate.get('weight')}%: {why}"
    if move.to == "canary" and move.gate.get("ready"):
        return move.why
    return f"the next `runner learn` will move it to {move.to} at {move.gate.get('weight')}%: {why}"
