"""A roadmap's phases and tasks as [intent.NAME] tables of intents.toml: what each becomes, added to the file the
user has through runner/toml_write.py (every byte outside the added tables stays), and the diff that shows it.

What an imported intent is (the README's "Importing a roadmap" says the same):

- a task naming file paths: an agent step, `goal` its text, `outputs` the paths (a file another intent already
  produces is left out: a file has one producer), `acceptance` the notes under it;
- a task naming no path (or only paths others produce): a shell step that fails saying what to add, as make
  says "no rule to make target": nothing runs, nothing is paid for, and the roadmap never shows it as done
  until someone gives it a recipe;
- a phase: an aggregate target over what is under it;
- a done task or phase: not written (there is nothing left to make); a dependency on it is dropped.

Each table keeps `roadmap = {file, line, item}`: `runner make --sync-roadmap` finds the item by its text, the
line only choosing between items with the same text. Importing again adds what is new and leaves every
intent already linked to an item as it is (the user may have given it outputs since).
"""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path
from typing import NamedTuple

from .. import toml_write
from ..errors import UserError
from ..toml_read import TOMLDecodeError, loads
from .markdown import PHASE, Entry

LINK = "roadmap"


class Import(NamedTuple):
    entries: list[Entry]  # every phase and task, named as intents.toml names (or would name) them
    old: str | None  # the intents file's text before; None: there is none
    new: str  # its text after
    added: list[str]  # the intents added


def linked(doc: dict | None) -> dict[tuple[str, str], str]:
    """(roadmap file, item text) -> the intent linked to it, for every linked intent of the document."""
    found = {}
    intents = doc.get("intent") if doc is not None else None
    for name, table in (intents or {}).items():
        link = table.get(LINK) if isinstance(table, dict) else None
        if isinstance(link, dict) and isinstance(link.get("file"), str) and isinstance(link.get("item"), str):
            found[(str(link["file"]), str(link["item"]))] = str(name)
    return found


def _data(text: str | None, intents_path: Path) -> dict:
    """The intents file read with the fast reader ({} when there is none)."""
    if text is None:
        return {}
    try:
        return loads(text)
    except TOMLDecodeError as exc:
        raise UserError(f"{intents_path}: not valid TOML ({exc}); fix it, then import again") from None


def named(text: str | None, intents_path: Path, entries_of, roadmap: str) -> list[Entry]:
    """The roadmap's entries named as intents.toml names (or would name) them: `entries_of(taken)` gives them
    names outside the file's intents, and an item imported before keeps the name it has. Reads the file with
    the fast reader: `--json` of a 2,000-item roadmap builds no TOML document."""
    data = _data(text, intents_path)
    intents = data.get("intent")
    intents = intents if isinstance(intents, dict) else {}
    links = linked(data)
    entries: list[Entry] = entries_of({str(name) for name in intents})
    renamed = {e.name: links[(roadmap, e.title)] for e in entries if (roadmap, e.title) in links}
    if not renamed:
        return entries
    return [
        e._replace(name=renamed.get(e.name, e.name), deps=tuple(renamed.get(d, d) for d in e.deps)) for e in entries
    ]


def plan_import(entries: list[Entry], old: str | None, intents_path: Path, roadmap: str, project: str) -> Import:
    """The intents file with a table added at its end for each open phase and task it does not have yet
    (`entries` as named() names them); `roadmap`: the roadmap's path relative to the project root, as the links
    name it. Every byte of the file before stays: the tables are appended as text (toml_write.table_text)."""
    data = _data(old, intents_path)
    intents = data.get("intent")
    if intents is not None and not isinstance(intents, dict):
        raise UserError(f"{intents_path}: `intent` is not a table; fix it, then import again")
    intents = intents or {}
    produced = _outputs(intents)
    new = [e for e in entries if not e.done and e.name not in intents]
    written = set(intents) | {e.name for e in new}
    tables = "\n".join(toml_write.table_text(["intent", e.name], _fields(e, roadmap, written, produced)) for e in new)
    if old is None:
        head = (
            f"# Intents imported from {roadmap} by `runner import` (the README says what\n"
            "# each becomes). Edit them freely: importing again only adds what is new.\n\n"
            f"[project]\nname = {toml_write.value_text(project)}\n"
        )
        text = head + ("\n" + tables if tables else "")
    else:
        text = appended(old, tables)
    return Import(entries, old, text, [e.name for e in new])


def appended(old: str, tables: str) -> str:
    """The file's text with `tables` after it, every byte before kept (a newline added if it had none last)."""
    if not tables:
        return old
    return old + ("" if old.endswith("\n") or not old else "\n") + ("\n" if old.strip() else "") + tables


def _outputs(intents: dict) -> dict[str, str]:
    owners: dict[str, str] = {}
    for name, table in intents.items():
        outputs = table.get("outputs") if isinstance(table, dict) else None
        for out in outputs if isinstance(outputs, list) else ():
            owners.setdefault(str(out), str(name))
    return owners


def _fields(entry: Entry, roadmap: str, written: set[str], produced: dict[str, str]) -> dict:
    fields: dict = {}
    deps = [d for d in entry.deps if d in written]
    if entry.kind == PHASE:
        fields["description"] = entry.title
    else:
        outputs = [p for p in entry.paths if p not in produced]
        taken = [p for p in entry.paths if p in produced]
        if outputs:
            fields["goal"] = entry.goal
            fields["outputs"] = outputs
            for path in outputs:
                produced[path] = entry.name
        else:
            fields["description"] = entry.title
            why = (
                f"the files it names are outputs of intent {produced[taken[0]]} (a file has one producer)"
                if taken
                else "it names no file it writes"
            )
            message = (
                f"{roadmap}:{entry.line}: roadmap task {entry.name} has no recipe yet: {why}; give "
                f"[intent.{entry.name}] a goal and outputs (an agent step) or a run line"
            )
            fields["run"] = f"echo {shlex.quote(message)} >&2; exit 1"
    if deps:
        fields["deps"] = deps
    if entry.kind != PHASE and "goal" in fields and entry.notes:
        fields["acceptance"] = list(entry.notes)
    fields[LINK] = {"file": roadmap, "line": entry.line, "item": entry.title}
    return fields


def diff(found: Import, shown: str) -> str:
    return diff_text(found.old, found.new, shown)


def diff_text(old: str | None, new: str, shown: str) -> str:
    """The unified diff of the intents file, from /dev/null when there was none."""
    before = (old or "").splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, "/dev/null" if old is None else shown, shown))
