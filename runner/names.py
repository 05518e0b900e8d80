"""Qualified intent names: PATH:NAME for a sub-project's intent (a root intent is NAME, typed :NAME too), the
names typed in a sub-project's folder made qualified, and an intent's name as one file name under .runner/.
Imported by the warm no-op (runner/noop.py): the standard library's hashlib only, when a name is very long."""

from __future__ import annotations

TYPE_CHECKING = False  # runner/noop.py's cheap-import rule: typing for mypy only
if TYPE_CHECKING:
    from collections.abc import Sequence


def split(name: str) -> tuple[str, str]:
    """(the sub-project's folder, "" for the root; the intent's own name). A folder may hold a ':', a name not."""
    folder, _colon, own = name.rpartition(":")
    return folder, own


def qualified(folder: str, name: str) -> str:
    """The name `name` has in the spec when declared in `folder`'s intents.toml ("" for the root: unchanged)."""
    return f"{folder}:{name}" if folder else name


def shown(name: str) -> str:
    """How a name is written to be typed anywhere: a root intent's as :NAME, a sub-project's as PATH:NAME."""
    return name if ":" in name else f":{name}"


def typed(targets: Sequence[str], here: str) -> list[str]:
    """The targets typed in `here` (the sub-project folder the command runs in, "" for the root) as names that mean
    the same anywhere: a bare NAME or output path typed in a sub-project is `here:NAME`, and none typed there is
    `here:` (its [project] default, else all of its intents); `:NAME` (the root's) and `PATH:NAME` stay as typed.
    At the root, what was typed as is: a project without `include` behaves as it always has. Applied twice, the
    same."""
    if not here:
        return list(targets)
    if not targets:
        return [f"{here}:"]
    return [t if ":" in t else f"{here}:{t[2:] if t.startswith('./') else t}" for t in targets]


_LONGEST = 200  # bytes of a file name kept as it is (a file name holds 255)


def stored(name: str) -> str:
    """An intent's name as one file name (logs/NAME.log, versions/NAME/, approved/NAME...): a plain name as it is,
    a qualified one with '%', '/' and ':' written %25, %2F and %3A. A plain name holds no '%' (intents.json), so
    no two names share a file name, and none is '.', '..' or holds a '/': nothing under .runner/ is escaped."""
    if ":" not in name and "/" not in name and "%" not in name and name not in (".", ".."):
        return name
    safe = name.replace("%", "%25").replace("/", "%2F").replace(":", "%3A")
    if safe in (".", ".."):
        safe = safe.replace(".", "%2E")
    if len(safe.encode()) > _LONGEST:
        import hashlib

        cut = safe.encode()[: _LONGEST - 17].decode(errors="ignore")
        safe = f"{cut}~{hashlib.sha256(name.encode()).hexdigest()[:16]}"
    return safe


def unstored(stem: str) -> str:
    """The name `stored` made a file name of (a plain name is itself)."""
    if "%" not in stem:
        return stem
    return stem.replace("%2E", ".").replace("%3A", ":").replace("%2F", "/").replace("%25", "%")


def home(root: str, name: str) -> str:
    """The folder an intent was declared in: its sub-project's, else the root. Where its adapter's variants are
    detected and its folder's own regexes and prompts are looked for."""
    folder = split(name)[0]
    return f"{root}/{folder}" if folder else root
