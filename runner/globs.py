"""The one meaning of a path glob in a spec (inputs, outputs, a policy's scope): expanding it over the project,
and matching a path against it without looking at the disk.

The meaning is Python's `glob.glob(recursive=True)`, which the expansion calls: `*`, `?` and `[...]` match
within one name, never across `/`; `**` standing alone between slashes spans zero or more folders (last in a
pattern, everything below). A name starting with `.` is matched only by a pattern part that starts with `.`
(or names it): `*` and `**` pass over hidden files and folders, as in the shell, so a scope of `**` does not
let an agent write `.github/workflows/` or `.env` unless the scope names them. A pattern without `*`, `?` or
`[` is a literal path. `matches` gives, for any path, the answer the expansion would give over a tree that
holds that path; tests/core/test_globs.py holds the two to each other.
"""

from __future__ import annotations

import glob as _glob
import os
import re
from fnmatch import translate

TYPE_CHECKING = False  # the no-op path imports this module (through freshness) and never loads typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

GLOB_CHARS = frozenset("*?[")


def expand(root: str, patterns: tuple[str, ...]) -> list[str]:
    """Project-relative files matched by the patterns, sorted. Literal paths skip globbing entirely."""
    out: set[str] = set()
    for pattern in patterns:
        if GLOB_CHARS.isdisjoint(pattern):
            out.add(pattern)
            continue
        for match in _glob.glob(pattern, root_dir=root, recursive=True):
            if os.path.isfile(os.path.join(root, match)):
                out.add(match)
    return sorted(out)


def matches(path: str, pattern: str) -> bool:
    """Whether the project path (as `a/b/c`, no `./`) is one the pattern names."""
    if GLOB_CHARS.isdisjoint(pattern):
        return path == pattern
    parts = _COMPILED.get(pattern)
    if parts is None:
        parts = _COMPILED[pattern] = [_part(part) for part in pattern.split("/")]
    return _match(parts, 0, path.split("/"), 0)


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    return any(matches(path, pattern) for pattern in patterns)


# pattern -> one matcher per part: None for `**` (zero or more folders), else a test of one name. A spec's
# patterns are few and fixed for the process, so each is compiled once.
_COMPILED: dict[str, list[Callable[[str], bool] | None]] = {}


def _part(part: str) -> Callable[[str], bool] | None:
    if part == "**":
        return None
    if GLOB_CHARS.isdisjoint(part):
        return part.__eq__  # glob looks a literal part up by its name: hidden or not
    # glob applies fnmatch to each name, and a part not starting with "." to names not starting with "."
    match = re.compile(translate(part)).match
    if part.startswith("."):
        return lambda name: match(name) is not None
    return lambda name: not name.startswith(".") and match(name) is not None


def _match(parts: list[Callable[[str], bool] | None], i: int, names: list[str], j: int) -> bool:
    """Whether parts[i:] match names[j:]."""
    while i < len(parts):
        part = parts[i]
        if part is None:  # `**`
            if i == len(parts) - 1:  # last: everything below, at least one name, none of them hidden
                return j < len(names) and not any(name.startswith(".") for name in names[j:])
            for k in range(j, len(names)):  # `**` takes names[j:k], folders that are not hidden
                if _match(parts, i + 1, names, k):
                    return True
                if names[k].startswith("."):
                    return False
            return False
        if j == len(names) or not part(names[j]):
            return False
        i += 1
        j += 1
    return j == len(names)
