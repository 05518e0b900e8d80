"""Prompt variants through the gate. A variant of a template cannot be scored offline (a new prompt needs new
model answers), so it goes straight to canary, and only through `runner approve`: there it is used for its
weight's slice of the agent steps that use the template, and compared with the template on the same steps by
what their attempts show (verify passed at the first attempt, attempts, tokens). It is promoted only through
`runner approve` too, which writes it over the template and keeps the template as a retired variant."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import toml_read
from ..errors import UserError
from ..prompts import CANDIDATES_SUFFIX
from ..record import read_events, runs_after
from . import writeback
from .gate import Move, Settings, Standing

SLACK = 1.5  # a variant may take up to this many times the template's attempts and tokens per step


def standings(root: Path) -> list[Standing]:
    """Every variant of the project's prompt templates, as its candidates file records it (family: prompt:NAME)."""
    found = []
    folder = root / "prompts"
    for path in sorted(folder.glob(f"*{CANDIDATES_SUFFIX}")) if folder.is_dir() else []:
        prompt = path.name[: -len(CANDIDATES_SUFFIX)]
        try:
            data = toml_read.loads(path.read_text(encoding="utf-8"))
        except (OSError, toml_read.TOMLDecodeError) as exc:
            raise UserError(f"{path}: cannot be read ({exc})") from None
        for table in data.get("candidate", ()):
            found.append(
                Standing(
                    f"prompt:{prompt}", table["name"], table.get("stage", "proposed"), path, dict(table.get("gate", {}))
                )
            )
    return found


@dataclass
class _Use:
    """What one candidate (in the scheduler's sense: a line of attempts) of one agent step showed."""

    first_ok: bool
    attempts: int
    tokens: int


def _uses(runs_dir: Path, runs: list[str], intents_of_prompt: set[str]) -> dict[str | None, list[tuple[str, _Use]]]:
    """variant ref (None: the template itself) -> (run, what a use showed), for the steps using the template."""
    found: dict[str | None, list[tuple[str, _Use]]] = {}
    for run in runs:
        try:
            events = read_events(runs_dir, run)
        except OSError:
            continue
        started: dict[tuple[str, int], str | None] = {}
        results: dict[tuple[str, int], _Use] = {}
        for e in events:
            if e.get("intent") not in intents_of_prompt:
                continue
            key = (e["intent"], e.get("candidate", 1))
            if e.get("event") == "attempt_started" and e.get("attempt") == 1:
                started[key] = e.get("prompt")
            elif e.get("event") == "attempt_finished" and key in started:
                use = results.setdefault(key, _Use(False, 0, 0))
                use.attempts += 1
                use.tokens += int(e.get("tokens") or 0)
                if e.get("attempt") == 1:
                    use.first_ok = bool(e.get("ok"))
        for key, use in results.items():
            found.setdefault(started[key], []).append((run, use))
    return found


def _intents_using(root: Path, prompt: str) -> set[str]:
    try:
        data = toml_read.loads((root / "intents.toml").read_text(encoding="utf-8"))
    except (OSError, toml_read.TOMLDecodeError):
        return set()
    return {name for name, table in (data.get("intent") or {}).items() if table.get("prompt") == prompt}


def _rate(uses: list[tuple[str, _Use]]) -> float:
    return sum(u.first_ok for _r, u in uses) / len(uses)


def _attempts(uses: list[tuple[str, _Use]]) -> float:
    return sum(u.attempts for _r, u in uses) / len(uses)


def _tokens(uses: list[tuple[str, _Use]]) -> float:
    return sum(u.tokens for _r, u in uses) / len(uses)


def evaluate(root: Path, standing: Standing, runs_dir: Path, settings: Settings) -> Move:
    """The move a variant's evidence calls for; a proposed one and one ready to promote wait for a human."""
    gate = standing.gate
    if standing.stage == "proposed":
        return Move(standing, "proposed", {}, "waits for `runner approve --prompt` to enter canary")
    if standing.stage != "canary":
        return Move(standing, standing.stage, {}, f"{standing.stage}")
    prompt = standing.family.split(":", 1)[1]
    runs = runs_after(runs_dir, gate.get("since"))
    uses = _uses(runs_dir, runs, _intents_using(root, prompt))
    ref = f"{standing.family}/{standing.name}"
    mine, control = uses.get(ref, []), uses.get(None, [])
    latest = runs[-1] if runs else gate.get("since")
    record: dict = {"since": latest}
    failed = int(gate.get("failed_checks", 0))
    why = None
    if not mine:
        why = "no run used it since its last move (no data)"
    elif control and _rate(mine) < _rate(control):
        why = f"verify passed at the first attempt {_rate(mine):.0%} of its uses, the template's {_rate(control):.0%}"
    elif control and _attempts(mine) > SLACK * _attempts(control):
        why = f"{_attempts(mine):.1f} attempts a use, the template's {_attempts(control):.1f}"
    elif control and _tokens(mine) > SLACK * _tokens(control):
        why = f"{_tokens(mine):.0f} tokens a use, the template's {_tokens(control):.0f}"
    if why:
        failed += 1
        record["failed_checks"] = failed
        if failed >= settings.max_failed_checks:
            record.update(weight=None, reason=f"rolled back: {why}")
            return Move(standing, "retired", record, f"rolled back after {failed} failed checks (the last: {why})")
        return Move(
            standing, "canary", record, f"halted: {why}; {failed} of {settings.max_failed_checks} failed checks"
        )
    runs_used = len({run for run, _u in mine})
    counted = int(gate.get("runs", 0)) + runs_used
    record["runs"] = counted
    weight = int(gate.get("weight", settings.canary_steps[0]))
    if counted < settings.canary_runs:
        return Move(
            standing, "canary", record, f"stays in canary at {weight}%: {counted} of {settings.canary_runs} runs"
        )
    higher = [w for w in settings.canary_steps if w > weight]
    if higher:
        record.update(runs=0, weight=higher[0])
        return Move(standing, "canary", record, f"canary {weight}% -> {higher[0]}%: no worse than the template")
    record["ready"] = True
    return Move(standing, "canary", record, "ready: waits for `runner approve --prompt` to be promoted")


def approve(root: Path, ref: str, reject: bool, settings: Settings, today: str) -> str:
    """`runner approve --prompt prompt:NAME/VARIANT` (or NAME/VARIANT): a proposed variant enters canary; one
    ready in canary is promoted (written over the template, which is kept as a retired variant); `reject`
    retires either. Returns what was done, in a line."""
    wanted = ref.removeprefix("prompt:")
    found = [s for s in standings(root) if f"{s.family.removeprefix('prompt:')}/{s.name}" == wanted]
    if not found:
        known = ", ".join(f"{s.family}/{s.name}" for s in standings(root) if s.stage in ("proposed", "canary"))
        raise UserError(f"no prompt variant {ref!r} waits for approval (waiting: {known or 'none'})")
    standing = found[0]
    prompt = standing.family.split(":", 1)[1]
    if reject:
        writeback.update_patterns(
            standing.file,
            {
                standing.name: {
                    "stage": "retired",
                    "gate": {"reason": "rejected by hand", "history": f"{today} rejected"},
                }
            },
            key="candidate",
        )
        return f"{standing.family}/{standing.name}: {standing.stage} -> retired (rejected)"
    if standing.stage == "proposed":
        weight = settings.canary_steps[0]
        writeback.update_patterns(
            standing.file,
            {
                standing.name: {
                    "stage": "canary",
                    "gate": {"weight": weight, "runs": 0, "history": f"{today} approved: to canary at {weight}%"},
                }
            },
            key="candidate",
        )
        return f"{standing.family}/{standing.name}: proposed -> canary at {weight}%"
    if standing.stage == "canary" and standing.gate.get("ready"):
        return _promote(root, standing, prompt, today)
    raise UserError(
        f"{standing.family}/{standing.name} is in {standing.stage}"
        + (
            f" at {standing.gate.get('weight')}%: not ready to promote (`runner learn status`)"
            if standing.stage == "canary"
            else ""
        )
    )


def _promote(root: Path, standing: Standing, prompt: str, today: str) -> str:
    from ..prompts import read_candidates

    text = next(c.text for c in read_candidates(root, prompt) if c.name == standing.name)
    template = root / "prompts" / f"{prompt}.md"
    if template.exists():
        old = template.read_text(encoding="utf-8")
    else:  # a built-in template: the project's own file now overrides it
        from ..spec import BUILTIN_DIR

        old = (BUILTIN_DIR / "prompts" / f"{prompt}.md").read_text(encoding="utf-8")
    previous = f"before-{standing.name}"
    writeback.add_prompt_candidate(
        standing.file,
        prompt,
        previous,
        old,
        "retired",
        {
            "reason": f"replaced by {standing.name} on {today}",
            "history": [f"{today} retired: replaced by {standing.name}"],
        },
    )
    writeback.update_patterns(
        standing.file,
        {
            standing.name: {
                "stage": "active",
                "gate": {"weight": None, "ready": None, "promoted": today, "history": f"{today} approved: promoted"},
            }
        },
        key="candidate",
    )
    writeback.write_text(template, text)
    kept = f"prompts/{prompt}.md rewritten; the old text kept as {previous}"
    return f"{standing.family}/{standing.name}: canary -> active ({kept})"
