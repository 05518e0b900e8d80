"""The one wording of a suggestion for a mistyped name: " (did you mean 'x'?)", or nothing."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """The closest of `candidates` to `name` (difflib's ratio, at least 0.6), as the words a message adds after
    the name; "" when none is close. The same whatever order the candidates come in (ties go to the same one)."""
    import difflib  # only to word a mistake: never on a run that finds none

    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
