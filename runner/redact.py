"""Secret redaction: every text the runner writes passes through redact() with the values of the key variables."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

# Variables whose values are secrets wherever they appear; the policy and the worker config add more names.
DEFAULT_SECRET_NAMES = ("OPENAI_API_KEY", "CODEX_API_KEY")
MIN_SECRET_LEN = 8  # shorter values ("1", "true") would redact ordinary text and protect nothing


class Secret(str):
    """A secret value that remembers the name of the variable it came from (still a plain str)."""

    name: str

    def __new__(cls, value: str, name: str = "SECRET") -> Secret:
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


def secret_values(extra_names: Iterable[str | None] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the key variables (defaults plus extra_names) present in environ (default os.environ),
    longest first so a secret containing another is replaced whole. Short or empty values are ignored."""
    env = os.environ if environ is None else environ
    seen: dict[str, Secret] = {}
    for name in (*DEFAULT_SECRET_NAMES, *extra_names):
        if not name:
            continue
        value = env.get(name) or ""
        if len(value.strip()) >= MIN_SECRET_LEN and value not in seen:
            seen[value] = Secret(value, name)
    return sorted(seen.values(), key=len, reverse=True)


def _pairs(secrets: Iterable[str] | Mapping[str, str]) -> list[tuple[str, str]]:
    if isinstance(secrets, Mapping):
        pairs = [(v, k) for k, v in secrets.items()]
    else:
        pairs = [(s, getattr(s, "name", "SECRET")) for s in secrets]
    return sorted(((v, n) for v, n in pairs if v and len(v) >= MIN_SECRET_LEN), key=lambda p: len(p[0]), reverse=True)


def redact(text: str, secrets: Iterable[str] | Mapping[str, str]) -> str:
    """text with each secret value replaced by [REDACTED:NAME]. secrets: secret_values() or {name: value}."""
    if not text:
        return text
    for value, name in _pairs(secrets):
        if value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
    return text


def redact_obj(obj: Any, secrets: Iterable[str] | Mapping[str, str]) -> Any:
    """A copy of a JSON-able structure with every string (keys included) redacted."""
    pairs = _pairs(secrets)
    if not pairs:
        return obj

    def walk(o: Any) -> Any:
        if isinstance(o, str):
            for value, name in pairs:
                if value in o:
                    o = o.replace(value, f"[REDACTED:{name}]")
            return o
        if isinstance(o, Mapping):
            return {walk(k): walk(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [walk(v) for v in o]
        return o

    return walk(obj)
