"""Writing the TOML files a user owns (intents.toml, regexes/FAMILY.toml, a prompt's candidates) with tomlkit:
every comment, order and byte of what is not changed stays as it was, and a file is replaced whole or not at
all. The one importer of tomlkit: the learning loop's write-back (runner/learn/writeback.py) and the roadmap
import (runner/roadmap/) build their changes with the constructors re-exported here."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import tomlkit
from tomlkit import aot, array, comment, document, inline_table, nl, string, table
from tomlkit.items import AoT, Array, Table
from tomlkit.toml_document import TOMLDocument

from .errors import UserError

__all__ = [
    "AoT",
    "Array",
    "Table",
    "TOMLDocument",
    "aot",
    "array",
    "comment",
    "document",
    "dumps",
    "inline_table",
    "nl",
    "parse",
    "read",
    "replace_file",
    "string",
    "table",
    "table_text",
    "write",
]


def parse(text: str, path: Path, doing: str) -> TOMLDocument:
    """The document as tomlkit keeps it (comments and layout included); a UserError naming the file and the
    line when it is not TOML. `doing`: the command about to write to it, for the message."""
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise UserError(f"{path}: not valid TOML ({exc}); fix it before {doing} writes to it") from None


def read(path: Path, doing: str) -> TOMLDocument:
    return parse(path.read_text(encoding="utf-8"), path, doing)


def dumps(doc: TOMLDocument) -> str:
    return tomlkit.dumps(doc)


def write(path: Path, doc: TOMLDocument) -> None:
    """Atomically: the new bytes in a file beside it, then renamed over it."""
    replace_file(path, tomlkit.dumps(doc).encode("utf-8"))


def replace_file(path: Path, data: bytes) -> None:
    """A whole file the user owns replaced at once (a temp file beside it, renamed over it), keeping its mode:
    a reader sees the old bytes or the new ones, never half of them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# ---- new tables as text ----------------------------------------------------------------------------------------
# Adding whole tables at the end of a file changes no byte of it, so no document model is needed: the tables are
# written as text (runner import's 2,000 tasks in milliseconds, where building them with tomlkit took seconds).
# Only the values an import writes are spoken: strings, integers, lists of strings, inline tables of those.

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_text(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string_text(key)


def _string_text(value: str) -> str:
    # JSON's escapes are TOML's basic-string escapes; TOML also wants DEL escaped, which JSON leaves alone
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")


def value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key_text(k)} = {value_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML text for {type(value).__name__}")


def table_text(path: list[str], fields: dict) -> str:
    """`[a.b]` and its `key = value` lines, in the order of `fields`."""
    lines = ["[" + ".".join(key_text(k) for k in path) + "]"]
    lines.extend(f"{key_text(k)} = {value_text(v)}" for k, v in fields.items())
    return "\n".join(lines) + "\n"
