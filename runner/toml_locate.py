"""Map TOML paths (intent.test.deps[1]) back to line numbers, since tomllib keeps no positions."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")
_PART = re.compile(r"[A-Za-z0-9_-]+|\"([^\"]*)\"|'([^']*)'")
_INDEX = re.compile(r"\[(\d+)\]")


def split_path(path: str) -> list[str]:
    """intent.test.deps[1] -> ['intent', 'test', 'deps'] (indices dropped: arrays share their key's line)."""
    return [p for p in _INDEX.sub("", path).split(".") if p]


def _parts(dotted: str) -> list[str]:
    out = []
    for m in _PART.finditer(dotted):
        out.append(m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None else m.group(0))
    return out


class Locator:
    """Line lookup over one TOML document's text."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self._entries: list[tuple[list[str], int]] = []  # (full key path, 1-based line)
        table: list[str] = []
        for number, line in enumerate(self.lines, start=1):
            header = _HEADER.match(line)
            if header:
                table = _parts(header.group(1))
                self._entries.append((table, number))
                continue
            key = _KEY.match(line)
            if key:
                self._entries.append((table + _parts(key.group(1)), number))

    def line_of(self, path: str, value: object = None) -> int | None:
        """The line of the deepest declared prefix of `path`; with `value`, the line holding that value."""
        want = split_path(path)
        best_len, best_line = 0, None
        for parts, number in self._entries:
            n = len(parts)
            if n > best_len and n <= len(want) and want[:n] == parts:
                best_len, best_line = n, number
        if best_line is not None and isinstance(value, str) and best_len == len(want):
            for offset, line in enumerate(self.lines[best_line - 1:best_line + 200]):
                if f'"{value}"' in line or f"'{value}'" in line:
                    return best_line + offset
                if offset and (_HEADER.match(line) or _KEY.match(line)):
                    break
        return best_line
