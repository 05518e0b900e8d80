"""`runner history INTENT`: the versions of an agent intent's applied changes, oldest first."""

from __future__ import annotations

from . import SPEC_FILE, Command, Invocation, echo, print_json, target_argument

FIELDS = ("version", "kind", "run", "time", "key", "diffstat", "tokens", "attempts", "verified", "verify", "checkpoint")


def summary(record: dict) -> dict:
    """What history lists of a version (show gives the rest: files, diff, transcript)."""
    out = {k: record.get(k) for k in FIELDS} | {"checkpoint": record.get("checkpoint") or []}
    for extra in ("feedback", "improves", "restores", "edits", "applied_by", "checkpoint_error"):
        if record.get(extra) is not None and record[extra] != "":  # restores 0: before the first version
            out[extra] = record[extra]
    return out


def change_text(stat: dict) -> str:
    files = stat.get("files", 0)
    return f"{files} file{'s' if files != 1 else ''} +{stat.get('insertions', 0)} -{stat.get('deletions', 0)}"


def verified_text(record: dict) -> str:
    if record.get("kind") == "edit":
        return "no: a person's edit"
    if record.get("kind") == "rollback" and record.get("restores") == 0:
        return "no: as before version 1"
    return f"yes ({', '.join(record['verify'])})" if record.get("verified") else "no verify declared"


def kind_text(record: dict, version: str = "") -> str:
    """The kind of a version, with the version it restores, improves or edits (`version `: as show says it)."""
    of = next((record[k] for k in ("restores", "improves", "edits") if record.get(k) is not None), None)
    return record["kind"] + (f" of {version}{of}" if of is not None else "")


def run(inv: Invocation, intent: str, spec_file: str | None) -> None:
    from ..pipeline import load_project
    from ..versions import agent_intent, versions

    project = load_project(inv.directory, spec_file=spec_file)
    intent = project.named(intent)
    agent_intent(project.spec, intent)
    records = [summary(r) for r in versions(project.layout.state_dir, intent)]
    if inv.as_json:
        print_json({"intent": intent, "versions": records})
        return
    if not records:
        echo(f"{intent} has no version yet: `runner make {intent}` applies its first change")
        return
    rows = [("VERSION", "TIME", "RUN", "KIND", "CHANGE", "TOKENS", "VERIFIED")]
    for r in records:
        rows.append(
            (
                str(r["version"]),
                r["time"],
                r["run"],
                kind_text(r),
                change_text(r["diffstat"]),
                str(r["tokens"]),
                verified_text(r),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])


COMMAND = Command(
    "history",
    "List the versions of an agent intent: every applied change, with its run, time, key, diff stat, tokens "
    "and verification.",
    (target_argument("intent", required=True), SPEC_FILE),
    run,
)
