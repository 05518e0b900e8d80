"""The one meaning of a path glob in a spec (inputs, outputs, a policy's scope): expanding it over the project,
and matching a path against it without looking at the disk.

The meaning is Python's `glob.glob(recursive=True)`, which the expansion walks by: `*`, `?` and `[...]` match
within one name, never across `/`; `**` standing alone between slashes spans zero or more folders (last in a
pattern, everything below). A name starting with `.` is matched only by a pattern part that starts with `.`
(or names it): `*` and `**` pass over hidden files and folders, as in the shell, so a scope of `**` does not
let an agent write `.github/workflows/` or `.env` unless the scope names them. A pattern without `*`, `?` or
`[` is a literal path. `matches` gives, for any path, the answer the expansion would give over a tree that
holds that path; tests/core/test_globs.py holds the two to each other. The expansion is a walk that descends
only where a match could be (`could_hold`), so an input glob can also leave out what git ignores
(runner/ignore.py) without walking an ignored node_modules/ at all.
"""

from __future__ import annotations

import os
import re
from fnmatch import translate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .ignore import IgnoreRules

GLOB_CHARS = frozenset("*?[")


def expand(
    root: str,
    patterns: tuple[str, ...],
    ignore: IgnoreRules | None = None,
    exclude: tuple[str, ...] = (),
    keep: tuple[str, ...] = (),
    empty: list[tuple[str, bool]] | None = None,
    links: list[str] | None = None,
) -> list[str]:
    """Project-relative files matched by the patterns, sorted. A literal path is returned as it is, present or
    not, ignored or not (as `git add -f` adds it). What a glob yields leaves out what `exclude` matches and,
    with `ignore` (input globs), what git ignores, unless `keep` (every intent's declared outputs) names it: one
    step's output in an ignored build/ folder is the next one's input. `empty` collects each glob that yields
    no file, with whether it left out an ignored path it could have matched in (for the warning); `links` each
    link the walk follows, to a folder it enters or to a file it yields (confine.Folders.reached)."""
    out: set[str] = set()
    for pattern in patterns:
        if GLOB_CHARS.isdisjoint(pattern):
            out.add(pattern)
            continue
        found = _walk(root, pattern, ignore, keep, _pruned(pattern, exclude), links)
        kept = [rel for rel in found if not exclude or not matches_any(rel, exclude)]
        if not kept and empty is not None:
            empty.append((pattern, found.skipped))
        out.update(kept)
    return sorted(out)


def _pruned(pattern: str, exclude: tuple[str, ...]) -> tuple[str, ...]:
    """The folders (as patterns) whose whole content `exclude` takes out of what `pattern` yields, which the walk
    need not enter: an exclude `X/**` takes every path below a folder X matches but one under a hidden name, which
    `pattern` can reach only through a part of its own that starts with `.` (an un-ignored node_modules/ with
    100,000 files is then never walked)."""
    if not exclude or any(part.startswith(".") for part in pattern.split("/")):
        return ()
    return tuple(x[:-3] for x in exclude if x.endswith("/**") and len(x) > 3)


class _Found(list):
    skipped = False  # an ignored path the pattern could have matched in was left out


def _walk(
    root: str,
    pattern: str,
    ignore: IgnoreRules | None,
    keep: tuple[str, ...],
    pruned: tuple[str, ...] = (),
    links: list[str] | None = None,
) -> _Found:
    """The files below `root` that `matches(path, pattern)`, found by descending only into folders that could
    hold a match (`could_hold`), following symbolic links to folders as `glob` does (never around a loop),
    never into `.git/` nor a folder `pruned` matches (_pruned), and with `ignore`, not into an ignored folder nor
    to an ignored file unless `keep` could name something there."""
    found = _Found()
    parts = pattern.split("/")
    start = 0  # the folders the pattern names literally, up to its first wildcard: where the walk starts
    while start < len(parts) - 1 and GLOB_CHARS.isdisjoint(parts[start]):
        start += 1
    folder = "/".join(parts[:start])
    if ignore is not None:  # a folder named on the way there may be ignored itself
        for i in range(1, start + 1):
            above = "/".join(parts[:i])
            if ignore.ignored(above, True) and not any(could_hold(above, k) for k in keep):
                found.skipped = True
                return found
    try:
        top = os.stat(os.path.join(root, folder))
    except OSError:
        return found
    stack: list[tuple[str, tuple[tuple[int, int], ...]]] = [(folder, ((top.st_dev, top.st_ino),))]
    while stack:
        folder, ancestors = stack.pop()
        try:
            with os.scandir(os.path.join(root, folder)) as entries:
                listing = [
                    (entry.name, entry.is_dir(), entry.is_file(), links is not None and entry.is_symlink())
                    for entry in entries
                ]
        except OSError:
            continue  # gone, unreadable, or not a folder
        for name, is_dir, is_file, link in listing:
            rel = f"{folder}/{name}" if folder else name
            if is_dir:
                if name == ".git" or not could_hold(rel, pattern) or (pruned and matches_any(rel, pruned)):
                    continue
                if ignore is not None and ignore.ignored(rel, True) and not any(could_hold(rel, k) for k in keep):
                    found.skipped = True
                    continue
                try:
                    st = os.stat(os.path.join(root, rel))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in ancestors:  # a link back up would loop forever
                    stack.append((rel, (*ancestors, (st.st_dev, st.st_ino))))
                    if link and links is not None:
                        links.append(rel)
            elif is_file and matches(rel, pattern):
                if ignore is not None and ignore.ignored(rel, False) and not matches_any(rel, keep):
                    found.skipped = True
                    continue
                found.append(rel)
                if link and links is not None:
                    links.append(rel)
    return found


def could_hold(folder: str, pattern: str) -> bool:
    """Whether something below project folder `folder` could match the pattern (a walk descends into it)."""
    if GLOB_CHARS.isdisjoint(pattern):
        return pattern.startswith(folder + "/")
    return _prefix(_compiled(pattern), 0, folder.split("/"), 0)


def matches(path: str, pattern: str) -> bool:
    """Whether the project path (as `a/b/c`, no `./`) is one the pattern names."""
    if GLOB_CHARS.isdisjoint(pattern):
        return path == pattern
    return _match(_compiled(pattern), 0, path.split("/"), 0)


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    return any(matches(path, pattern) for pattern in patterns)


def may_overlap(a: str, b: str) -> bool:
    """Whether one path could match both patterns. Said yes when unsure: two wildcards within one name are
    taken to overlap (an input glob another step's output may fill is then not warned about)."""
    if GLOB_CHARS.isdisjoint(a):
        return matches(a, b)
    if GLOB_CHARS.isdisjoint(b):
        return matches(b, a)
    return _overlap(a.split("/"), 0, b.split("/"), 0)


def _overlap(p: list[str], i: int, q: list[str], j: int) -> bool:
    if i == len(p) or j == len(q):
        return all(part == "**" for part in (p[i:] if j == len(q) else q[j:]))
    if p[i] == "**":
        return _overlap(p, i + 1, q, j) or _overlap(p, i, q, j + 1)
    if q[j] == "**":
        return _overlap(p, i, q, j + 1) or _overlap(p, i + 1, q, j)
    x, y = p[i], q[j]
    if GLOB_CHARS.isdisjoint(x) or GLOB_CHARS.isdisjoint(y):
        name, part = (x, y) if GLOB_CHARS.isdisjoint(x) else (y, x)
        test = _part(part)
        if test is not None and not test(name):
            return False
    return _overlap(p, i + 1, q, j + 1)


def covers(outer: str, inner: str) -> bool:
    """Whether every path `inner` matches is one `outer` matches too (a sub-project's input glob reading no more
    than its dependency declares: runner/subprojects.py). Said no when unsure, the opposite of may_overlap: within
    one name only a literal, the same part, `*` or `*TAIL` (TAIL literal) is known to take in another part."""
    if GLOB_CHARS.isdisjoint(inner):
        return matches(inner, outer)
    if GLOB_CHARS.isdisjoint(outer):
        return False  # a glob names more than one path, or none: never only the one
    return _covers(outer.split("/"), 0, inner.split("/"), 0)


def _covers(o: list[str], i: int, n: list[str], j: int) -> bool:
    """Whether o[i:] takes in every path n[j:] matches: one way of laying n's parts over o's that holds for any
    path is enough, so each choice below is sufficient on its own."""
    if j == len(n):
        return i == len(o)
    if i == len(o):
        return False
    if o[i] == "**":
        plain = not n[j].startswith(".")  # only a part not starting with "." never matches a hidden name
        if i == len(o) - 1:  # last: any one or more names below, none hidden
            return all(not part.startswith(".") for part in n[j:])
        # `**` takes no name here, or takes n[j] (whatever it matches, a folder `**` passes) and goes on
        return _covers(o, i + 1, n, j) or (plain and _covers(o, i, n, j + 1))
    if n[j] == "**" or not _part_covers(o[i], n[j]):
        return False  # a name outer matches one at a time cannot take in zero or many folders
    return _covers(o, i + 1, n, j + 1)


def _part_covers(outer: str, inner: str) -> bool:
    if outer == inner:
        return True
    if GLOB_CHARS.isdisjoint(inner):
        test = _part(outer)
        return test is not None and test(inner)
    if GLOB_CHARS.isdisjoint(outer) or inner.startswith(".") or outer.startswith("."):
        return False
    tail = outer[1:]
    return outer.startswith("*") and GLOB_CHARS.isdisjoint(tail) and "]" not in tail and inner.endswith(tail)


# pattern -> one matcher per part: None for `**` (zero or more folders), else a test of one name. A spec's
# patterns are few and fixed for the process, so each is compiled once.
_COMPILED: dict[str, list[Callable[[str], bool] | None]] = {}


def _compiled(pattern: str) -> list[Callable[[str], bool] | None]:
    parts = _COMPILED.get(pattern)
    if parts is None:
        parts = _COMPILED[pattern] = [_part(part) for part in pattern.split("/")]
    return parts


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


def _prefix(parts: list[Callable[[str], bool] | None], i: int, names: list[str], j: int) -> bool:
    """Whether parts[i:] could match names[j:] followed by at least one more name (the folder holds a match)."""
    while j < len(names):
        if i == len(parts):
            return False
        part = parts[i]
        if part is None:  # `**` takes names[j:k], folders that are not hidden, then the rest goes on from k
            for k in range(j, len(names)):
                if _prefix(parts, i + 1, names, k):
                    return True
                if names[k].startswith("."):
                    return False
            return True  # it takes every remaining folder, and goes on below them
        if not part(names[j]):
            return False
        i += 1
        j += 1
    return i < len(parts)
