"""`runner rollback INTENT [--to VERSION]`: restore an earlier version of an agent intent's outputs (0: as they
were before its first version)."""

from __future__ import annotations

from . import SPEC_FILE, Command, Invocation, echo, flag, option, print_json, target_argument, warn


def run(inv: Invocation, intent: str, to: int | None, spec_file: str | None, force: bool) -> None:
    from ..executors import stop_abandoned
    from ..pipeline import load_project
    from ..versions import rollback
    from .history import summary

    project = load_project(inv.directory, spec_file=spec_file)
    intent = project.named(intent)
    # what a killed run left recovered first, said on stderr as `runner make` says it
    record = rollback(project, intent, to, force, stop_abandoned, lambda message: warn([f"runner: {message}"]))
    if inv.as_json:
        print_json(summary(record) | {"files": record["files"]})
        return
    how = f"git revert, commits {' '.join(c[:12] for c in record['checkpoint'])}" if record["checkpoint"] else None
    restored = ", ".join(record["files"]) or "no files"
    echo(f"rolled {intent} back to version {record['restores']} as version {record['version']}: {restored}")
    if how and record.get("kind") == "rollback":
        echo(f"checkpoint: {how}")
    if dependants(project.spec, intent):
        echo("its dependants are now out of date: `runner status` lists them, `runner make` brings them up to date")


COMMAND = Command(
    "rollback",
    "Restore an earlier version of an agent intent's outputs (the one before the latest by default), recorded as "
    "its next version; the steps that depend on it become out of date.",
    (
        target_argument("intent", required=True),
        option(
            "--to",
            dest="to",
            help="The version to restore (see `runner history`); 0: as before the first version.",
            type=int,
            minimum=0,
        ),
        SPEC_FILE,
        flag("--force", dest="force", help="Roll back even though its files changed since the latest version."),
    ),
    run,
)


def dependants(spec, name: str) -> list[str]:
    """The intents that depend on `name` (its outputs are their inputs): what a rollback leaves out of date."""
    return sorted(n for n, i in spec.intents.items() if name in i.deps)
