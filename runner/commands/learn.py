"""`runner learn`: one learning pass (gate moves, then new candidates in shadow), and its subcommands `induce`,
`status` and `rollback`."""

from __future__ import annotations

from pathlib import Path

from . import Command, Invocation, argument, echo, flag, option, print_json


def run(inv: Invocation, dry_run: bool) -> None:
    from ..learn.cycle import learn_pass
    from ..workspace import Layout, ProjectLock, find_root

    root = find_root(inv.directory)
    layout = Layout(root)
    layout.ensure()

    def projected(calls: int) -> None:  # said before the first call is made
        if not inv.as_json:
            cap = "[learn] model_calls caps them" if calls else "deterministic induction only"
            echo(f"projected model calls: {calls} ({cap})")

    with ProjectLock(layout, "runner learn"):  # no run records while the gate reads them
        report = learn_pass(root, dry_run=dry_run, on_projection=projected)
    if inv.as_json:
        print_json(report.to_json())
        return
    if report.model_calls:
        echo(f"model calls made: {report.model_calls}, {report.model_tokens} tokens")
    if report.model_reused:
        echo(f"model answers read back, not paid again: {report.model_reused} (.runner/learn/answers/)")
    for note in report.notes:
        echo(note)
    echo(f"mined {report.mined} miss{'es' if report.mined != 1 else ''} from the recorded runs")
    for p in report.proposed:
        if p["kind"] == "prompt":
            template = p["family"].removeprefix("prompt:")
            waits = f"`runner approve --prompt {template}/{p['name']}`"
            echo(f"proposed a variant of prompts/{template}.md: waits for {waits}")
            continue
        verdict = "-> shadow" if p["verdict"] == "shadow" else f"dropped: {p['why']}"
        echo(
            f"proposed {p['family']}/{p['name']} ({p['kind']}): precision {p['precision']:.2f}, "
            f"recall {p['recall']:.2f} {verdict}"
        )
    for move in report.moves:
        echo(f"{move.standing.ref}: {move.why}")
    if not report.moves and not report.proposed:
        echo("nothing to move and nothing new to propose")
    if dry_run:
        echo("(dry run: nothing written)")


def induce(inv: Invocation, log: str, family: str, dry_run: bool) -> None:
    from ..errors import UserError
    from ..findings import decode_log
    from ..learn.cycle import shadow_gate
    from ..learn.propose import candidates_from_lines
    from ..learn.score import Score
    from ..learn.writeback import add_patterns
    from ..parse import re2_fullmatch
    from ..workspace import find_root

    try:
        text = decode_log(Path(log).read_bytes())
    except OSError as exc:
        raise UserError(f"cannot read {log}: {exc.strerror}") from None
    lines = text.splitlines()
    root = find_root(inv.directory)
    path = root / "regexes" / f"{family}.toml"
    taken = _names_in(path)
    found = candidates_from_lines(lines, family, taken)
    assignments = [next((c.name for c in found if re2_fullmatch(c.regex, line) is not None), None) for line in lines]
    if not dry_run and found:
        tables = []
        for c in found:
            verdict = Score(1.0, 1.0, len(set(c.lines)))  # made from these lines, all of which it reads
            tables.append(c.table("shadow", shadow_gate(c, None, verdict)))
        add_patterns(path, family, tables)
    if inv.as_json:
        print_json(
            {
                "patterns": [
                    {"name": c.name, "regex": c.regex, "template": c.template, "kind": c.kind, "fields": list(c.fields)}
                    for c in found
                ],
                "assignments": assignments,
            }
        )
        return
    for c in found:
        echo(f"{c.name} ({c.kind}, {len(c.lines)} line{'s' if len(c.lines) != 1 else ''}): {c.template}")
        echo(f"    {c.regex}")
    if dry_run:
        echo(f"(dry run: {path.relative_to(root)} not written)")
    elif found:
        echo(f"added {len(found)} pattern{'s' if len(found) != 1 else ''} to {path.relative_to(root)} in shadow")


def _names_in(path: Path) -> set[str]:
    from .. import toml_read

    if not path.exists():
        return set()
    return {t["name"] for t in toml_read.loads(path.read_text(encoding="utf-8")).get("pattern", ())}


def status(inv: Invocation) -> None:
    from ..learn.status import status_rows
    from ..workspace import find_root

    rows = status_rows(find_root(inv.directory))
    if inv.as_json:
        print_json({"candidates": rows})
        return
    if not rows:
        echo("no candidates: `runner learn` proposes them from what the recorded runs missed")
        return
    _say_status(rows)


def _say_status(rows: list[dict]) -> None:
    for r in rows:
        stage = f"canary {r['weight']}%" if r["stage"] == "canary" else r["stage"]
        # "disagreements" alone reads as a fault: for a new family's candidate every log it reads differs
        evidence = ", ".join(
            (
                # the gate counts a canary's runs afresh at each weight: "1 run" alone read as its whole life
                _count(r["runs"], "run") + (f" at {r['weight']}%" if r["stage"] == "canary" else ""),
                _count(r["failed_checks"], "failed check"),
                _count(r["disagreements"], "log") + " read otherwise than by the active patterns",
            )
        )
        echo(f"{r['pattern']}: {stage}; {evidence}")
        if r["next"] or r["reason"]:
            echo(f"    {r['next'] or r['reason']}")


def _count(n, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def rollback(inv: Invocation, pattern: str | None) -> None:
    from ..learn.cycle import rollback as undo
    from ..workspace import find_root

    done = undo(find_root(inv.directory), pattern)
    if inv.as_json:
        print_json({"rolled_back": done})
    else:
        for line in done:
            echo(line)


COMMAND = Command(
    "learn",
    "One learning pass: move candidate patterns through shadow -> canary -> active, propose new ones.",
    (flag("-n", "--dry-run", dest="dry_run", help="Say what the pass would do; write nothing."),),
    run,
    subcommands=(
        Command(
            "induce",
            "Induce patterns from one log; add them to regexes/FAMILY.toml in shadow.",
            (
                argument("log"),
                option("--family", dest="family", help="The family to add them to.", required=True),
                flag("-n", "--dry-run", dest="dry_run", help="Print them; write nothing."),
            ),
            induce,
        ),
        Command("status", "Every candidate pattern: its stage, evidence and next move.", run=status),
        Command(
            "rollback",
            "Undo the last promotion: the pattern it replaced is active again.",
            (argument("pattern", required=False),),
            rollback,
        ),
    ),
)
