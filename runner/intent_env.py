"""An intent's `env` as the runner keeps it and as its step gets it: the variables it reads, and a literal value
given to a secret-like name (`SERVICE_PASSWORD = "..."`: redact.looks_secret, or a name a policy lists in
`secrets`) kept out of everything the runner writes. The loaded spec, and so the compiled spec in .runner/, holds a
stand-in naming the value's digest (the step's key changes with the value; only a digest reaches .runner/, as the
README says); the value itself is read back from the intents file when its step starts, and from then on the
run's mask hides it wherever the runner writes or prints."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from .redact import Mask, Secret, looks_secret
from .spec import env_refs, expand_env

# no value read from a TOML file holds a NUL (load refuses one in any string), so no value is mistaken for it
SECRET_STAND_IN = "\0secret:"


def kept_out(env: Mapping[str, str], secret: Collection[str] = ()) -> tuple[tuple[str, str], ...]:
    """An intent's `env` as the spec holds it: sorted by name, each literal value (one that reads no variable) of a
    secret-like name, or of one in `secret`, replaced by its stand-in."""
    return tuple(
        sorted(
            (key, stand_in(value) if not env_refs(value) and (key in secret or looks_secret(key)) else value)
            for key, value in env.items()
        )
    )


def env_names(intent) -> set[str]:
    """The variables of runner's environment an intent's `env` reads."""
    return {ref for _key, value in intent.env for ref in env_refs(value)}


def stand_in(value: str) -> str:
    return SECRET_STAND_IN + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def holds_kept(env: Iterable[tuple[str, str]]) -> bool:
    return any(value.startswith(SECRET_STAND_IN) for _key, value in env)


def shown(key: str, value: str) -> str:
    """What `runner explain` shows of a declared value: never a kept-out one."""
    return f"[REDACTED:{key}]" if value.startswith(SECRET_STAND_IN) else value


def brought_back(spec, name: str, env: tuple[tuple[str, str], ...], mask: Mask) -> tuple[tuple[str, str], ...]:
    """`env` as step `name`'s command gets it: each stand-in replaced by the value the intents file gives its name
    (its `$$` read as `$`), which `mask` hides from now on. A file whose value is no longer the one the stand-in
    names changed since the run loaded it: the run says so rather than give the step another value than its key."""
    if not holds_kept(env):
        return env
    from .errors import UsageError

    table = _env_table(str(Path(spec.root) / spec.file), name)
    out = []
    for key, value in env:
        if value.startswith(SECRET_STAND_IN):
            declared = table.get(key)
            if not isinstance(declared, str) or stand_in(declared) != value:
                raise UsageError(
                    f"error: {spec.file} changed while runner ran: intent.{name}.env.{key} is not the value the run "
                    "loaded; run again"
                )
            value = expand_env(declared, {})  # reads no variable: only its $$ become $
            mask.add([Secret(value, key)])
        out.append((key, value))
    return tuple(out)


_read: dict[tuple[str, int, int], dict] = {}  # the intents file's intent tables, read once for a run's steps


def _env_table(path: str, name: str) -> dict:
    from .toml_read import loads

    try:
        st = os.stat(path)
        seen = (path, st.st_mtime_ns, st.st_size)
        if seen not in _read:
            with open(path, "rb") as f:
                document = loads(f.read().decode("utf-8-sig"))
            _read.clear()
            _read[seen] = document.get("intent") or {}
        table = _read[seen].get(name) or {}
    except (OSError, ValueError):  # gone or broken since it was loaded: no value to give
        return {}
    env = table.get("env") if isinstance(table, dict) else None
    return env if isinstance(env, dict) else {}
