"""Writing the learning loop's results into the files a user owns (regexes/FAMILY.toml, a prompt's candidates,
a promoted template) through runner/toml_write.py (tomlkit's one importer): comments, order and formatting of
everything else stay byte for byte, and a file is replaced whole or not at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import toml_write as tomlkit
from ..errors import UserError
from ..toml_write import AoT, Table


def _read(path: Path) -> tomlkit.TOMLDocument:
    return tomlkit.read(path, "`runner learn`")


def _write(path: Path, doc: tomlkit.TOMLDocument) -> None:
    tomlkit.write(path, doc)


def _patterns(doc: tomlkit.TOMLDocument, key: str = "pattern") -> AoT | None:
    found = doc.get(key)
    return found if isinstance(found, AoT) else None


def _pattern_table(pattern: Mapping) -> Table:
    """A [[pattern]] table in the library's order of keys; examples as [[pattern.example]] tables."""
    table = tomlkit.table()
    for key in ("name", "regex", "kind", "fields", "flags", "count", "cause", "replaces", "stage"):
        value = pattern.get(key)
        if value in (None, [], ()):
            continue
        if key == "regex" and "'" not in value and "\n" not in value:
            value = tomlkit.string(value, literal=True)  # as people write regexes: no doubled backslashes
        table[key] = list(value) if isinstance(value, tuple) else value
    gate = pattern.get("gate")
    if gate:
        inline = tomlkit.table()
        for key, value in gate.items():
            inline[key] = _history(value) if key == "history" else value
        table["gate"] = inline
    examples = tomlkit.aot()
    for example in pattern.get("examples", ()):
        item = tomlkit.table()
        item["text"] = example["text"]
        if example.get("expect"):
            expect = tomlkit.inline_table()
            expect.update(example["expect"])
            item["expect"] = expect
        examples.append(item)
    if len(examples):
        table["example"] = examples
    return table


def _history(lines) -> tomlkit.Array:
    """The gate's history: one move a line, so a reviewer reads a pull request's diff line by line."""
    history = tomlkit.array()
    history.extend(lines)
    history.multiline(True)
    return history


def add_patterns(path: Path, family: str, patterns: Iterable[Mapping], description: str | None = None) -> None:
    """Append patterns to a family file (made when there is none yet), after the patterns it has."""
    patterns = list(patterns)
    if path.exists():
        doc = _read(path)
    else:
        doc = tomlkit.document()
        doc.add(tomlkit.comment(f"Patterns for {family}; `runner learn` adds candidates here, each with its stage."))
        doc["family"] = family
        if description:
            doc["description"] = description
    existing = _patterns(doc)
    if existing is None:
        existing = tomlkit.aot()
        doc.add(tomlkit.nl())
        doc.append("pattern", existing)
    for pattern in patterns:
        existing.append(_pattern_table(pattern))
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, doc)


def update_patterns(path: Path, changes: Mapping[str, Mapping], key: str = "pattern") -> None:
    """Change patterns of one family file (`key`: the candidates of a prompt's file) in one write: name ->
    {"stage": ..., "gate": {key: value or None}} (None removes a gate key; a "history" value is appended to the
    list, not set)."""
    doc = _read(path)
    tables = {str(t.get("name")): t for t in _patterns(doc, key) or ()}
    for name, change in changes.items():
        table = tables.get(name)
        if table is None:
            raise UserError(f"{path}: no pattern named {name!r} to change (was the file edited meanwhile?)")
        if "stage" in change:
            table["stage"] = change["stage"]
        gate_changes = change.get("gate") or {}
        if gate_changes:
            gate = table.get("gate")
            if gate is None:
                gate = tomlkit.table()
                table["gate"] = gate
            for key, value in gate_changes.items():
                if key == "history":
                    history = gate.get("history")
                    if history is None:
                        history = gate["history"] = _history([])
                    history.multiline(True)  # one written inline by hand is made one move a line too
                    history.append(value)
                elif value is None:
                    if key in gate:
                        del gate[key]
                else:
                    gate[key] = value
    _write(path, doc)


def add_prompt_candidate(path: Path, prompt: str, name: str, text: str, stage: str, gate: Mapping) -> None:
    """Append a variant of a prompt template to its candidates file (made when there is none yet); its text as a
    multi-line literal string, so the pull request shows it as it reads."""
    if path.exists():
        doc = _read(path)
    else:
        doc = tomlkit.document()
        doc.add(tomlkit.comment(f"Variants of prompts/{prompt}.md on their way through `runner learn`'s gate."))
        doc.add(tomlkit.comment("A proposed one waits for `runner approve --prompt`; see the README, Learning."))
    existing = _patterns(doc, "candidate")
    if existing is None:
        existing = tomlkit.aot()
        doc.add(tomlkit.nl())
        doc.append("candidate", existing)
    table = tomlkit.table()
    table["name"] = name
    table["stage"] = stage
    literal = "'''" not in text and not text.endswith("'")
    table["text"] = tomlkit.string(text, literal=literal, multiline=True)
    gate_table = tomlkit.table()
    for k, v in gate.items():
        gate_table[k] = _history(v) if k == "history" else v
    table["gate"] = gate_table
    existing.append(table)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, doc)


def write_text(path: Path, text: str) -> None:
    """A whole file the user owns, replaced at once (a promoted prompt template)."""
    tomlkit.replace_file(path, text.encode("utf-8"))


def remember_rejected(path: Path, entries: Iterable[Mapping], family: str | None = None) -> None:
    """Add regexes to a family file's `rejected` memory (made with the file when there is none yet), each once, with
    its reason and date: what no later pass proposes again, even once its pattern is deleted from the file."""
    entries = list(entries)
    if path.exists():
        doc = _read(path)
    elif family is not None:
        doc = tomlkit.document()
        doc.add(tomlkit.comment(f"Patterns for {family}; `runner learn` adds candidates here, each with its stage."))
        doc["family"] = family
    else:
        return
    memory = doc.get("rejected")
    if not isinstance(memory, AoT):
        memory = tomlkit.aot()
        doc.add(tomlkit.nl())
        doc.append("rejected", memory)
    there = {str(t.get("regex")) for t in memory}
    for entry in entries:
        if entry["regex"] in there:
            continue
        there.add(entry["regex"])
        table = tomlkit.table()
        regex = entry["regex"]
        table["regex"] = tomlkit.string(regex, literal=True) if "'" not in regex and "\n" not in regex else regex
        table["reason"] = entry["reason"]
        table["date"] = entry["date"]
        memory.append(table)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, doc)
