"""Which families read a log: those its command names, and every test runner whose identifying lines it holds.

A log from `npm test`, `make test`, `tox`, a plain `run` line or a saved file names no test runner: what it runs is
only known from what it printed (jest's `Test Suites:` line, pytest's `test session starts`, go's `=== RUN`). Each
family may declare such lines (`identify = [...]` in regexes/FAMILY.toml); a family a log identifies is read beside
the ones its command declares, ahead of the generic ones (diagnostics, causes), whose causes and locations rank
last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parse import Family, Library, LineSet

GENERIC = ("diagnostics", "causes")  # what any log is read with: they come after the tools' own families


def identified(library: Library, text: str) -> list[str]:
    """The families whose identifying lines the log holds, in the library's order (one pass over the text)."""
    from .findings import clean_log

    held: tuple[LineSet, list[str]] | None = getattr(library, "_identify", None)
    if held is None:  # every family's identifying regexes as one RE2 set, made once per library
        from .parse import LineSet

        owners = [name for name, fam in library.families.items() for _rx in fam.identify]
        held = (LineSet("(?m)" + rx for fam in library.families.values() for rx in fam.identify), owners)
        library._identify = held  # type: ignore[attr-defined]
    found, owners = held
    if not owners:
        return []
    hits = set(found.match(clean_log(text)))
    return list(dict.fromkeys(owners[k] for k in sorted(hits)))


def read_with(library: Library, names: list[str] | tuple[str, ...], text: str) -> list[str]:
    """The names of the families to read a log with: the declared ones, and those the log identifies, placed
    before the generic families."""
    names = [n for n in names if n in library.families]
    extra = [n for n in identified(library, text) if n not in names]
    if not extra:
        return names
    at = next((i for i, n in enumerate(names) if n in GENERIC), len(names))
    return names[:at] + extra + names[at:]


def families(library: Library, names: list[str] | tuple[str, ...], text: str) -> list[Family]:
    """read_with's families themselves."""
    return [library.family(n) for n in read_with(library, names, text)]
