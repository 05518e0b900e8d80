"""Map TOML paths (intent.test.deps[1]) back to line numbers, since tomllib keeps no positions."""

from __future__ import annotations

import json
import re
from functools import cached_property

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")
_PART = re.compile(r"[A-Za-z0-9_-]+|\"([^\"]*)\"|'([^']*)'")
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'")


def split_path(path: str) -> list[str]:
    """intent.test.deps[1] -> ['intent', 'test', 'deps'] (indices dropped: arrays share their key's line).

    Quoted parts keep their dots: intent."a.b".run -> ['intent', 'a.b', 'run'].
    """
    out = []
    for m in re.finditer(r"\"((?:[^\"\\]|\\.)*)\"|([^.\"]+)", _INDEX.sub("", path)):
        out.append(_unescape(m.group(1)) if m.group(1) is not None else m.group(2))
    return [p for p in out if p]


def _unescape(quoted: str) -> str:
    """The text of a "..." string without its quotes: JSON's escapes, which are TOML's (toml_path writes a
    part with json.dumps, so "caf\\u00e9" in a path is the key café of the file)."""
    try:
        return json.loads(f'"{quoted}"')
    except ValueError:  # an escape of TOML's alone (\e, \xHH, \UXXXXXXXX): compared as written
        return quoted


def _parts(dotted: str) -> list[str]:
    out = []
    for m in _PART.finditer(dotted):
        if m.group(1) is not None:
            out.append(_unescape(m.group(1)))
        else:
            out.append(m.group(2) if m.group(2) is not None else m.group(0))
    return out


class Locator:
    """Line lookup over one TOML document's text."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def _entries(self) -> list[tuple[list[str], int, bool]]:
        """(full key path, 1-based line, is a [header]): built on the first question, since a valid spec
        asks none."""
        entries = []
        table: list[str] = []
        for number, line in enumerate(self.lines, start=1):
            header = _HEADER.match(line)
            if header:
                table = _parts(header.group(1))
                entries.append((table, number, True))
                continue
            key = _KEY.match(line)
            if key:
                entries.append((table + _parts(key.group(1)), number, False))
        return entries

    @cached_property
    def _first_declared(self) -> dict[tuple[str, ...], int]:
        """Key path -> the first line declaring exactly it: one pass, so that a report of 100,000 problems
        looks each one up instead of scanning the document for each."""
        first: dict[tuple[str, ...], int] = {}
        for parts, number, _ in self._entries:
            first.setdefault(tuple(parts), number)
        return first

    @cached_property
    def _first_inside(self) -> dict[tuple[str, ...], int]:
        """Key path -> the first line declaring it or something inside it."""
        first: dict[tuple[str, ...], int] = {}
        for parts, number, _ in self._entries:
            for n in range(len(parts), -1, -1):
                if first.setdefault(tuple(parts[:n]), number) != number:
                    break  # an earlier line already holds this prefix, and so every shorter one
        return first

    @cached_property
    def _by_line(self) -> dict[int, tuple[list[str], bool]]:
        by_line: dict[int, tuple[list[str], bool]] = {}
        for parts, number, is_header in self._entries:
            by_line.setdefault(number, (parts, is_header))
        return by_line

    def line_of(self, path: str, value: object = None) -> int | None:
        """The line of the deepest declared prefix of `path`; with `value`, the line holding that value.

        A path no line declares by itself (a table only opened through deeper headers, as [intent.a.env]
        opens intent.a) falls back to the first line declaring something inside it.
        """
        want = split_path(path)
        best_len, best_line = 0, None
        declared = self._first_declared
        for n in range(len(want), 0, -1):
            number = declared.get(tuple(want[:n]))
            if number is not None:
                best_len, best_line = n, number
                break
        if best_len < len(want):
            deeper = self.first_line(want)
            if deeper is not None:
                return deeper
        if best_line is not None and isinstance(value, str) and best_len == len(want):
            for offset, line in enumerate(self.lines[best_line - 1 : best_line + 200]):
                if offset and (_HEADER.match(line) or _KEY.match(line)):
                    break
                for m in _QUOTED.finditer(line.split("=", 1)[1] if offset == 0 and "=" in line else line):
                    if (m.group(1) if m.group(1) is not None else m.group(2)) == value:
                        return best_line + offset
        return best_line

    def first_line(self, parts: list[str], before: int | None = None) -> int | None:
        """The first line declaring `parts` or something inside it (only lines before `before`, if given)."""
        if before is None:
            return self._first_inside.get(tuple(parts))
        n = len(parts)
        for entry, number, _ in self._entries:
            if before is not None and number >= before:
                break
            if entry[:n] == parts:
                return number
        return None

    def at(self, line: int) -> tuple[list[str], bool] | None:
        """The key path declared on `line` (with whether it is a [header]), or None."""
        return self._by_line.get(line)
