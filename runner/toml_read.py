"""Reading TOML 1.1: rtoml (Rust, ~8x faster on a big spec) when it accepts the text, tomli for every error."""

from __future__ import annotations

import hashlib
import marshal
import re
from types import ModuleType

_rtoml: ModuleType | None
try:  # a wheel exists for every platform CI uses; without one the pure-Python parser does the same job
    import rtoml as _rtoml
except ImportError:  # pragma: no cover
    _rtoml = None


def __getattr__(name: str) -> type[ValueError]:
    """TOMLDecodeError, tomli's: imported only when a text is refused or asked for (tomli and its datetime cost
    every command that reads a spec ~3 ms)."""
    if name == "TOMLDecodeError":
        import tomli

        return tomli.TOMLDecodeError
    raise AttributeError(name)


# rtoml holds its own tree of the whole document while it builds Python's (~24x the text at its peak: 475 MB for
# a 100,000-step spec of 20 MB, the peak of that project's whole clean build), so a big text is read a piece
# at a time (`_in_pieces`)
PIECE = 1 << 21

# a piece starts at a line that is nothing but an intent's table header, [intent.NAME] with a bare NAME
_HEADER = re.compile(r"^\[intent\.[A-Za-z0-9_-]+\][ \t]*\r?$", re.MULTILINE)
# a line that could make `intent` a value, an inline or explicit table, or an array of tables: such a
# document is read whole (one piece's `intent` table could then not be extended by another's)
_INTENT_ITSELF = re.compile(
    r"""^[ \t]*(\[\[?[ \t]*["']?intent["']?[ \t]*\]|["']?intent["']?[ \t]*[.=])""", re.MULTILINE
)


def loads(text: str, piece: int = PIECE) -> dict:
    """The document as plain dicts and lists. A text rtoml refuses goes to tomli (the stdlib's tomllib,
    TOML 1.1 edition), whose error names the line and column; a text one reads and the other refuses
    would be read by tomli. A text longer than `piece` characters is read in pieces where that is
    proven to read the same (`_in_pieces`)."""
    if _rtoml is not None:
        try:
            if len(text) > piece:
                doc = _in_pieces(text, piece)
                if doc is not None:
                    return doc
            return _rtoml.loads(text)
        except Exception:  # rtoml.TomlParsingError, or anything else it could raise: tomli decides
            pass
    import tomli

    return tomli.loads(text)


def _in_pieces(text: str, piece: int) -> dict | None:
    """The document read as pieces of about `piece` characters, each starting at an `[intent.NAME]` header
    line, and merged; None when that might not read as the whole does, for the whole to be read instead.

    Why the merge is the whole document's reading: a cut inside a multi-line string or array leaves the
    piece before it unterminated, which rtoml refuses (so every piece read means every cut is at a real
    header); `intent` is then only ever a table made by headers of the form [intent.NAME] (no line could
    make it anything else, `_INTENT_ITSELF`); two pieces may share no top-level key but `intent`, and no
    intent name: each table is defined in one piece, as TOML requires of the whole, and a document that
    defines one twice is read whole (and refused there). Keys keep the document's order."""
    _rtoml_loads = _rtoml.loads if _rtoml is not None else None
    if _rtoml_loads is None or _INTENT_ITSELF.search(text):
        return None
    cuts = [0]
    while len(text) - cuts[-1] > piece:
        header = _HEADER.search(text, cuts[-1] + piece)
        if header is None:
            break
        cuts.append(header.start())
    if len(cuts) == 1:
        return None
    cuts.append(len(text))
    doc: dict = {}
    for start, end in zip(cuts, cuts[1:], strict=False):
        try:
            part = _rtoml_loads(text[start:end])
        except Exception:  # a cut inside a string or an array, or a real error, which the whole read words
            return None
        for key, value in part.items():
            if key not in doc:
                doc[key] = value
            elif key != "intent" or not isinstance(value, dict) or not isinstance(doc[key], dict):
                return None
            else:
                intents = doc[key]
                if not intents.keys().isdisjoint(value):
                    return None
                intents.update(value)
    return doc


TABLE_DIGEST = 16  # bytes of sha256 a table: an edited intent is told from one left alone with 2**-128 odds


def document_digests(doc: dict) -> tuple[str, str, bytes] | None:
    """(the document's digest, the digest of everything but the intents' tables' contents (their names and order
    included), each intent table's digest in the document's order (TABLE_DIGEST bytes each)). The first is the
    same for two texts that read as the same document (a comment, blank lines, spacing or quoting changed), another
    where a key, a value or their order differs; two documents with the same second digest differ only inside the
    tables whose digests differ (compiled._recompiled). None where a value has no marshal form (a date or a time):
    such a file is then compared by its bytes alone.

    Marshal's version 2 writes neither back-references nor which strings are interned (version 3 writes both,
    which follow from the objects, not their values), so the bytes follow from the values alone; and they read
    back as the values they were made from, so two documents with the same bytes are the same document. Each
    intent's table is encoded on its own, so no copy of the whole document is made (~22 MB at 100,000 steps)."""
    rest, tables = hashlib.sha256(), []
    sha256, dumps = hashlib.sha256, marshal.dumps
    try:
        for key, value in doc.items():
            if key == "intent" and isinstance(value, dict):
                # three fields, where every other entry has two: no document whose `intent` is not a table of
                # tables hashes the same (its count then says where the names end)
                rest.update(dumps(("intent", None, len(value)), 2))
                for name, table in value.items():
                    rest.update(dumps(name, 2))
                    tables.append(sha256(dumps((name, table), 2)).digest()[:TABLE_DIGEST])
            else:
                rest.update(dumps((key, value), 2))
    except ValueError:  # "unmarshallable object": a TOML date, time or datetime
        return None
    rest_digest, joined = rest.hexdigest(), b"".join(tables)
    return sha256(rest_digest.encode() + joined).hexdigest(), rest_digest, joined
