"""Each candidate's standing: its stage, evidence and next move (`runner learn status`, `runner serve`'s learning
page)."""

from __future__ import annotations

from pathlib import Path


def status_rows(root: Path) -> list[dict]:
    """Each candidate's stage, evidence and next move: `runner learn status` and `runner serve`'s learning page."""
    from ..workspace import Layout
    from . import prompts
    from .cycle import settings_of, standings, today
    from .gate import evaluate, future

    settings = settings_of(root)
    runs_dir = Layout(root).runs_dir
    rows = []
    for s in standings(root, ("shadow", "canary", "active", "retired")) + prompts.standings(root):
        if s.stage in ("active", "retired") and not s.gate:
            continue  # hand-written patterns the gate never touched
        if s.family.startswith("prompt:"):
            nxt = prompts.evaluate(root, s, runs_dir, settings).why if s.stage in ("proposed", "canary") else None
        else:
            nxt = future(evaluate(s, runs_dir, settings, today())) if s.stage in ("shadow", "canary") else None
        rows.append(
            {
                "pattern": s.ref,
                "stage": s.stage,
                "weight": s.gate.get("weight") if s.stage == "canary" else None,
                "runs": s.gate.get("runs", 0),
                "failed_checks": s.gate.get("failed_checks", 0),
                "disagreements": s.gate.get("disagreements", 0),
                "precision": s.gate.get("precision"),
                "recall": s.gate.get("recall"),
                "next": nxt,
                "reason": s.gate.get("reason"),
            }
        )
    return rows
