"""Reading a spec's TOML files (the intents file, adapters, regex families): their bytes and documents, each
checked against its schema, every problem kept by file, line and TOML path (a syntax error worded as a user fixes
it)."""

from __future__ import annotations

import re
from pathlib import Path

from . import toml_read
from .confine import Folders
from .errors import Problem
from .keys import digest_bytes
from .schema_check import _describe, _fast_validator, _precise_validator, _schema, toml_path
from .spec import BUILTIN_DIR
from .toml_locate import Locator

_TOML_POS = re.compile(r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")


_TOML_DUP = re.compile(r"^Cannot declare \((?P<parts>.*)\) twice$")


class _Reader:
    """Collects problems while reading files relative to the project root."""

    def __init__(self, root: Path, documents: dict | None = None, digests: dict | None = None, secret=frozenset()):
        self.root = root
        self.secret_names = secret  # the names policies list in `secrets`: what env_secrets.kept_out keeps out
        # path -> (digest of its bytes, the document they read as, toml_read.document_digests): read already
        self.documents = documents or {}
        self.problems: list[Problem] = []
        self.locators: dict[str, Locator] = {}
        self.sources: list[str] = []
        self.read: dict[str, str] = {}  # path -> digest of the bytes read (Spec.read)
        self.parsed: dict[str, str | None] = {}  # path -> digest of the document read (Spec.parsed)
        # path -> toml_read.document_digests of the document read (the caller's dict, if it gave one)
        self.digests: dict[str, tuple | None] = digests if digests is not None else {}
        self.folders = Folders(str(root))  # where the spec's folders lead, links followed

    def display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            try:
                return "<builtin>/" + str(path.relative_to(BUILTIN_DIR))
            except ValueError:
                return str(path)

    def problem(self, file: str, path: str, message: str, value: object = None) -> None:
        loc = self.locators.get(file)
        line = loc.line_of(path, value) if loc and path else None
        self.problems.append(Problem(file=file, path=path, line=line, message=message))

    def read_toml(self, path: Path) -> tuple[str, dict | None]:
        shown = self.display(path)
        self.sources.append(str(path))
        raw = path.read_bytes()
        self.read[str(path)] = digest_bytes(raw)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            bad = " ".join(f"0x{b:02x}" for b in raw[exc.start : exc.end])
            self.problems.append(
                Problem(
                    file=shown,
                    line=line,
                    column=column,
                    message=f"not UTF-8 text: byte {bad} cannot be decoded; save the file as UTF-8",
                )
            )
            return shown, None
        locator = self.locators[shown] = Locator(text)
        known = self.documents.pop(str(path), None)
        if known is not None and known[0] == self.read[str(path)]:  # the same bytes: not read twice
            self._digested(str(path), known[2])
            return shown, known[1]
        try:
            doc = toml_read.loads(text)
            # taken before the loader reads the document (it drops each intent's table as it goes)
            self._digested(str(path), toml_read.document_digests(doc))
            return shown, doc
        except toml_read.TOMLDecodeError as exc:
            self.problems.append(_syntax_problem(shown, str(exc), locator))
            return shown, None
        except RecursionError as exc:  # tomli's limits on nesting and on a key's parts (a hostile file)
            self.problems.append(_too_deep(shown, str(exc), text, locator))
            return shown, None

    def _digested(self, path: str, digests: tuple | None) -> None:
        self.parsed[path] = digests[0] if digests is not None else None
        self.digests[path] = digests

    def validate(self, shown: str, data: dict, schema_name: str) -> list[list]:
        """Check `data` against a schema; report each violation; return the key paths (as lists) that failed."""
        if _fast_validator(schema_name)(data):
            return []
        # the slow, precise validator: only to word the problems
        validator = _precise_validator(_schema(schema_name))
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        failed = []
        for error in errors:
            for parts, message, value in _describe(error):
                self.problem(shown, toml_path(parts), message, value)
                failed.append(parts)
        if not errors:  # never load what the fast check refused, even if the two ever disagree again
            self.problem(shown, "", f"does not match {schema_name}, yet no rule of it says why: please report this")
            failed.append([])
        return failed


def _syntax_problem(shown: str, text: str, locator: Locator) -> Problem:
    """A tomllib error as a Problem: file, line, column, the key being read, and what to do."""
    m = _TOML_POS.match(text)
    msg, line, col = (m.group("msg"), int(m.group("line")), int(m.group("col"))) if m else (text, None, None)
    if msg.endswith(" (at end of document)"):
        msg = msg[: -len(" (at end of document)")]
        lines = locator.lines or [""]
        line, col = len(lines), len(lines[-1]) + 1
    source = locator.lines[line - 1] if line and line <= len(locator.lines) else ""
    declared = locator.at(line) if line else None
    parts, is_header = declared if declared else ([], False)
    path = toml_path(parts)
    dup = _TOML_DUP.match(msg)
    if dup or (msg == "Cannot overwrite a value" and parts):
        if dup:
            parts = [p.strip().strip("'\"") for p in dup.group("parts").split(",") if p.strip()]
            path, is_header = toml_path(parts), True
        first = locator.first_line(parts, before=line)
        col = len(source) - len(source.lstrip()) + 1 if source else col
        if first is None and not dup:  # a dotted key reaching into a value set earlier (a = 1, then a.b = 2)
            for k in range(len(parts) - 1, 0, -1):
                earlier = locator.first_line(parts[:k], before=line)
                if earlier is not None and locator.at(earlier) == (parts[:k], False):
                    return Problem(
                        file=shown,
                        path=path,
                        line=line,
                        column=col,
                        message=f"{toml_path(parts[:k])} is already a value (line {earlier}), "
                        "so it cannot hold keys; rename one",
                    )
        at = f" (first at line {first})" if first else ""
        if is_header:
            msg = f"[{path}] is declared twice{at}: each name may appear once; rename or merge one"
        else:
            msg = f"'{parts[-1]}' is set twice in the same table{at}; keep one"
        return Problem(file=shown, path=path, line=line, column=col, message=msg)
    rest = source[col - 1 :] if col else ""
    if msg == "Invalid value" and (not rest.strip() or rest.lstrip().startswith("#")):
        msg = "missing value after '='"
    elif msg == "Invalid value":
        msg = 'invalid value: quote text ("..."); unquoted values are numbers, true/false, [lists] or {tables}'
    elif msg in ("Illegal character '\\n'", "Illegal character '\\r'"):
        opened = _open_quote(source)
        col = opened + 1 if opened is not None else col
        msg = "unterminated string: close the quote on the same line, or use triple quotes for several lines"
    elif msg == "Unescaped '\\' in a string":
        slash = source.rfind("\\", 0, max((col or 1) - 1, 0)) if source else -1
        if slash >= 0:
            col = slash + 1
            msg = (
                f"invalid escape '{source[slash : slash + 2]}' in a \"...\" string: write '\\\\' for a "
                "backslash, or use a 'literal string' in single quotes"
            )
        else:
            msg = "invalid escape in a \"...\" string: write '\\\\' for a backslash"
    else:
        msg = msg[0].lower() + msg[1:] if msg else msg
    return Problem(
        file=shown, path=path if not is_header else "", line=line, column=col, message=f"TOML syntax error: {msg}"
    )


def _too_deep(shown: str, message: str, text: str, locator: Locator) -> Problem:
    """tomli's RecursionError (no position in it) as a Problem at the first line that goes past its limit."""
    limit = int(m.group()) if (m := re.search(r"\d+", message)) else 0
    if "key" in message:
        line = next((n for n, s in enumerate(locator.lines, 1) if s.count(".") >= limit), None)
        what = f"a key of more than {limit} dotted parts; use a short key"
    else:
        line = _nesting_line(text, limit)
        what = f"arrays or inline tables nested more than {limit} levels deep; a spec needs a few at most"
    declared = locator.at(line) if line else None
    path = toml_path(declared[0]) if declared and not declared[1] else ""
    return Problem(file=shown, path=path, line=line, message=f"TOML syntax error: {what}")


def _nesting_line(text: str, limit: int) -> int | None:
    """The line where '[' and '{' of values first nest deeper than `limit` (strings and comments skipped;
    a [table] header at the start of a line does not nest)."""
    depth, line, i, n = 0, 1, 0, len(text)
    at_line_start = True
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, at_line_start = line + 1, True
        elif ch in " \t\r":
            pass
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j) and (len(quote) == 3 or text[j] != "\n"):
                j += 2 if quote[0] == '"' and text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            at_line_start = False
            continue
        elif ch == "[" and at_line_start and depth == 0:  # a [table] or [[array]] header
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
        if ch != "\n" and ch not in " \t\r":
            at_line_start = False
        i += 1
    return None


def _open_quote(line: str) -> int | None:
    """The index of the quote opening a string that the line never closes, or None."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "#":
            return None
        if ch in "\"'":
            j = i + 1
            while j < len(line) and line[j] != ch:
                j += 2 if ch == '"' and line[j] == "\\" else 1
            if j >= len(line):
                return i
            i = j
        i += 1
    return None
