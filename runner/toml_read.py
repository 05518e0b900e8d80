"""Reading TOML 1.1: rtoml (Rust, ~8x faster on a big spec) when it accepts the text, tomli for every error."""

from __future__ import annotations

from types import ModuleType

import tomli

_rtoml: ModuleType | None
try:  # a wheel exists for every platform CI uses; without one the pure-Python parser does the same job
    import rtoml as _rtoml
except ImportError:  # pragma: no cover
    _rtoml = None

TOMLDecodeError = tomli.TOMLDecodeError


def loads(text: str) -> dict:
    """The document as plain dicts and lists. A text rtoml refuses goes to tomli (the stdlib's tomllib,
    TOML 1.1 edition), whose error names the line and column; a text one reads and the other refuses
    would be read by tomli."""
    if _rtoml is not None:
        try:
            return _rtoml.loads(text)
        except Exception:  # rtoml.TomlParsingError, or anything else it could raise: tomli decides
            pass
    return tomli.loads(text)
