"""Which regex library reads a step's log: the built-in families, then the root's regexes/, then its sub-project's
own regexes/ (a family or a pattern of the same name in a later folder overrides the earlier one's; a family only
a sub-project has is its steps' alone), each library loaded once while its files stay the same."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .names import split
from .spec import BUILTIN_DIR

if TYPE_CHECKING:
    from .parse import Library


def folder_of(name: str) -> str:
    """The sub-project folder a step's name says it was declared in ("" for the root's)."""
    return split(name)[0]


def regex_dirs(root: str | Path, folder: str = "") -> list[Path]:
    """The regexes/ folders a library is loaded from, the later overriding the earlier: the built-in ones, the
    root's, and `folder`'s own (a sub-project's; "" for the root)."""
    dirs = [BUILTIN_DIR / "regexes", Path(root) / "regexes"]
    if folder:
        dirs.append(Path(root) / folder / "regexes")
    return dirs


def family_files(root: str | Path, folder: str, family: str) -> list[str]:
    """The files that make `family` for the steps of `folder`: its sub-project's and the root's that exist (a
    change in either may change what it finds), else the built-in one; [] for a family nobody declares."""
    found = [str(d / f"{family}.toml") for d in reversed(regex_dirs(root, folder)[1:])]
    found = [path for path in found if os.path.isfile(path)]
    if found:
        return found
    builtin = BUILTIN_DIR / "regexes" / f"{family}.toml"
    return [str(builtin)] if builtin.is_file() else []


def has_own_family(root: str | Path, folder: str, family: str) -> bool:
    """Whether the project (the root's regexes/, or `folder`'s own) has a file for `family`."""
    return any((d / f"{family}.toml").is_file() for d in regex_dirs(root, folder)[1:])


def library_of(spec, name: str = "") -> Library:
    """The regex library a step's log is read with (`name`: the step's; "" for the root's), loaded once while
    its files stay the same; raises the library's own error for a broken regex file."""
    return library_at(str(spec.root), folder_of(name))


def library_at(root: str, folder: str = "") -> Library:
    """The regex library of `folder` (a sub-project's; "" for the root), loaded once while its files stay the
    same: a sub-project without a regexes/ folder of its own shares the root's."""
    own = folder and os.path.isdir(os.path.join(root, folder, "regexes"))
    dirs = regex_dirs(root, folder if own else "")[1:]
    # keyed by the project's regex files as they are now: a long-lived process sees an edit
    stamp = tuple(tuple(sorted((p.name, p.stat().st_mtime_ns) for p in d.glob("*.toml"))) for d in dirs if d.is_dir())
    return _library(root, folder if own else "", stamp)


@functools.lru_cache(maxsize=16)
def _library(root: str, folder: str, stamp: tuple) -> Library:
    """The regex library of a project's folder, loaded once while its files stay the same (-k with many failed
    steps reads it once)."""
    from .parse import load_library

    return load_library(regex_dirs(root, folder))
