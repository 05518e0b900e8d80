"""`runner import ROADMAP.md`: a markdown roadmap's phases and tasks as intents; `--json` prints them and writes
nothing, otherwise the change to intents.toml is shown as a diff and written when there is no intents.toml yet
or with `--yes`. (The module is import_: `import` is Python's keyword; commands.MODULES maps the name.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import UsageError, UserError
from . import SPEC_FILE, Command, Invocation, Param, echo, flag, print_json


def run(inv: Invocation, roadmap: str, yes: bool, spec_file: str | None) -> None:
    from ..roadmap.intents import diff, named, plan_import
    from ..roadmap.markdown import parse

    intents_path = inv.directory / (spec_file or "intents.toml")
    root = intents_path.parent
    source = inv.directory / roadmap
    try:
        text = source.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"error: {roadmap}: no such file; name the markdown roadmap to import") from None
    except IsADirectoryError:
        raise UsageError(f"error: {roadmap}: is a folder; name the markdown roadmap to import") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{roadmap}: not UTF-8 text (byte {exc.start}); save it as UTF-8 and import again") from None
    relative = os.path.relpath(source.resolve(), root.resolve())
    if relative.startswith(".."):
        raise UsageError(f"error: {roadmap}: outside the project ({root}); move it into the project to import it")
    relative = Path(relative).as_posix()
    old = intents_path.read_text(encoding="utf-8") if intents_path.exists() else None
    entries = named(old, intents_path, lambda taken: parse(text, taken), relative)
    if not entries:
        raise UserError(
            f"{roadmap}: no task found (a checkbox item `- [ ] ...`, a bullet or numbered item, under a heading or "
            "not); nothing to import"
        )
    if inv.as_json:
        print_json({"intents": [e.to_json() for e in entries]})
        return
    found = plan_import(entries, old, intents_path, relative, root.resolve().name or "project")
    shown = os.path.relpath(intents_path, inv.directory) if intents_path.is_absolute() else str(intents_path)
    shown = Path(shown).as_posix()
    done = sum(1 for e in found.entries if e.done)
    summary = (
        f"{len(found.entries)} phases and tasks in {relative} ({done} done, not written): "
        f"{len(found.added)} intent{'s' if len(found.added) != 1 else ''} to add"
    )
    if not found.added:
        echo(f"{shown} is up to date with {relative}: {summary}")
        return
    echo(diff(found, shown).rstrip("\n"))
    if found.old is not None and not yes:
        print(f"{summary}; {shown} exists: not written (again with --yes to write it)", file=sys.stderr, flush=True)
        return
    from ..toml_write import replace_file

    replace_file(intents_path, found.new.encode("utf-8"))
    echo(f"wrote {shown}: {summary.replace('to add', 'added')}")


COMMAND = Command(
    "import",
    "Turn a markdown roadmap (checkboxes, numbered and nested tasks, headings as phases) into intents.\n\n"
    "Shows the change to intents.toml as a diff; writes it when there is none yet, or with --yes. "
    "--json prints the phases and tasks and writes nothing.",
    (
        Param(("roadmap",), "roadmap", "argument", complete="file", metavar="ROADMAP"),
        flag("-y", "--yes", dest="yes", help="Write the change to an existing intents.toml."),
        SPEC_FILE._replace(help="Write the intents into FILE instead of intents.toml (the project root: its folder)."),
    ),
    run,
)
