"""`runner make --sync-roadmap`: once a run ends, the roadmap item of each intent that completed is marked done in
the file's own dialect (a checkbox `[ ]` becomes `[x]`, a status emoji ✅, a `TODO:` or `(planned)` word `DONE:`
or `(done)`), an exact edit of the marker's characters: every other byte of the file stays as it was, and the
file is replaced whole or not at all. An item with no marker to turn (a plain bullet, a heading that says
nothing) is left alone and reported. The item is found by its text, so lines added above it do not matter; the
recorded line only chooses between items with the same text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from ..events import roadmap_synced
from ..toml_read import loads
from ..toml_write import replace_file
from .markdown import Entry, parse


class Synced(NamedTuple):
    ticked: list[dict]  # {"intent", "file", "line"}: marked done now
    unmarked: list[dict]  # completed, but its item has no marker to turn
    missing: list[dict]  # completed, but no item of its file has its text any more

    def to_json(self) -> dict:
        return roadmap_synced(self.ticked, self.unmarked, self.missing)

    def lines(self) -> list[str]:
        out = [f"roadmap: ticked {t['file']}:{t['line']} ({t['intent']})" for t in self.ticked]
        out += [f"roadmap: {u['file']}:{u['line']} ({u['intent']}) has no status marker to tick" for u in self.unmarked]
        out += [f"roadmap: {m['file']}: no item reads '{m['item']}' any more ({m['intent']})" for m in self.missing]
        return out


def completed(order: Iterable[str], deps: Mapping, aggregates, unfinished: set[str]) -> set[str]:
    """The intents of a run's selection (in dependency order) that completed: every step that did not fail, block
    or stay unfinished, and every aggregate whose dependencies all completed."""
    done: set[str] = set()
    for name in order:
        if name in aggregates:
            if all(d in done for d in deps[name]):
                done.add(name)
        elif name not in unfinished:
            done.add(name)
    return done


def links(spec_path: Path) -> dict[str, tuple[str, int, str]]:
    """intent -> (roadmap file, line, item text) for every intent of the intents file that has a link."""
    data = loads(spec_path.read_text(encoding="utf-8"))
    found = {}
    for name, table in (data.get("intent") or {}).items():
        link = table.get("roadmap") if isinstance(table, dict) else None
        if isinstance(link, dict) and isinstance(link.get("file"), str) and isinstance(link.get("item"), str):
            found[name] = (link["file"], int(link.get("line", 0)), link["item"])
    return found


def sync(root: Path, spec_path: Path, done: set[str]) -> Synced:
    result = Synced([], [], [])
    by_file: dict[str, list[tuple[str, int, str]]] = {}
    for name, (file, line, item) in sorted(links(spec_path).items()):
        if name in done:
            by_file.setdefault(file, []).append((name, line, item))
    for file, wanted in sorted(by_file.items()):
        path = root / file
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            result.missing.extend({"intent": n, "file": file, "item": item} for n, _, item in wanted)
            continue
        lines = text.split("\n")
        entries: dict[str, list[Entry]] = {}
        for entry in parse(text):
            entries.setdefault(entry.title, []).append(entry)
        edits: dict[int, list[tuple[int, int, str]]] = {}
        for name, line, item in wanted:
            candidates = entries.get(item)
            if not candidates:
                result.missing.append({"intent": name, "file": file, "item": item})
                continue
            entry = min(candidates, key=lambda e: (abs(e.line - line), e.line))
            marker = entry.marker
            if marker.tick is None:
                if marker.dialect == "none" or not entry.done:
                    result.unmarked.append({"intent": name, "file": file, "line": entry.line})
                continue  # already says done
            edits.setdefault(entry.line, []).append((marker.start, marker.end, marker.tick))
            result.ticked.append({"intent": name, "file": file, "line": entry.line})
        if not edits:
            continue
        for number, changes in edits.items():
            changed = lines[number - 1]
            for start, end, tick in sorted(set(changes), reverse=True):
                changed = changed[:start] + tick + changed[end:]
            lines[number - 1] = changed
        replace_file(path, "\n".join(lines).encode("utf-8"))
    result.ticked.sort(key=lambda t: (t["file"], t["line"]))
    return result
