"""The parse of a markdown roadmap into phases and tasks: deterministic, line by line, no markdown library.

What is read (the README's "Importing a roadmap" says the same to users):

- ATX headings (`#` to `######`) are phases; list items (`-`, `*`, `+`, `1.`, `1)`) are tasks, nested by their
  indentation. In a file with at least one checkbox item (`- [ ]`), only checkbox items are tasks: a plain
  bullet there is a note, kept as the acceptance of the task it sits under.
- A task's status: its checkbox (`[x]` done; `[ ]`, `[-]`, `[~]`, `[/]` not), else the first status emoji in
  it (done: ✅ ✔ ☑ ✓; not done: 🚧 ⏳ 🔄 ❌ ⬜ 🔲 ☐ 🔜 🟡), else a prose marker (`DONE:`, `TODO:`, `WIP:` in
  front; `(done)`, `[completed]`, `(in progress)`, `(planned)`... anywhere; the whole text ~~struck~~; 已完成
  or 已修复). A phase is done when its heading says so or every task and phase under it is; a task that says
  nothing is done when the phase or task it sits under says so.
- Dependencies: each phase or task depends on the one before it under the same parent (order), and a phase or
  a parent task on everything directly under it (nesting).
- File paths named in a task: backticked paths (`src/app.py`, `docs/`, `LICENSE`) and bare ones with a folder
  and a known extension (src/app.py) or a known extension alone (README.md; not Node.js).
- Skipped: fenced code, HTML comments and tags, tables, paragraphs.

Each phase and task keeps the line it came from and its marker's place in that line, so `runner make
--sync-roadmap` can tick it in the file's own dialect without touching another byte.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from bisect import bisect_left
from typing import NamedTuple

from ..confine import check_glob

PHASE, TASK = "phase", "task"

_HEADING = re.compile(r"^\ufeff? {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_ITEM = re.compile(r"^(\ufeff?[ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(\S.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_CHECKBOX = re.compile(r"\[([ xX~/-])\](?=[ \t]|$)[ \t]*")

_DONE_EMOJI = ("✅", "✔️", "✔", "☑️", "☑", "✓")
_OPEN_EMOJI = ("🚧", "⏳", "🔄", "❌", "⬜", "🔲", "☐", "🔜", "🟡")
_EMOJI = re.compile("|".join(re.escape(e) for e in sorted(_DONE_EMOJI + _OPEN_EMOJI, key=len, reverse=True)))
_DONE_WORDS = ("done", "completed", "complete", "finished", "shipped", "fixed")
_OPEN_WORDS = ("todo", "wip", "in progress", "in-progress", "planned", "not started", "pending", "open")
_PREFIX = re.compile(r"^(TODO|DONE|WIP)[ \t]*:[ \t]*", re.IGNORECASE)
_BRACKETED = re.compile(r"[(\[](" + "|".join(_DONE_WORDS + _OPEN_WORDS) + r")[)\]]", re.IGNORECASE)
_CJK_DONE = re.compile("已完成|已修复")
_STRUCK = re.compile(r"^~~(.+)~~$")

# extensions that make a word a file path; those of product names (Node.js, ASP.NET) only with a folder
_EXTENSIONS = frozenset(
    [
        "md",
        "markdown",
        "rst",
        "txt",
        "adoc",
        "py",
        "pyi",
        "pyx",
        "toml",
        "json",
        "jsonc",
        "yaml",
        "yml",
        "cfg",
        "ini",
        "conf",
        "lock",
        "env",
        "rs",
        "go",
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hpp",
        "hh",
        "java",
        "kt",
        "kts",
        "scala",
        "groovy",
        "gradle",
        "rb",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "vue",
        "svelte",
        "css",
        "scss",
        "sass",
        "less",
        "html",
        "htm",
        "xml",
        "svg",
        "sh",
        "bash",
        "zsh",
        "fish",
        "ps1",
        "bat",
        "sql",
        "proto",
        "graphql",
        "gql",
        "cmake",
        "mk",
        "swift",
        "m",
        "mm",
        "php",
        "pl",
        "pm",
        "lua",
        "ex",
        "exs",
        "erl",
        "hrl",
        "hs",
        "ml",
        "mli",
        "cs",
        "fs",
        "fsx",
        "dart",
        "r",
        "jl",
        "zig",
        "nim",
        "tf",
        "hcl",
        "rl",
        "cob",
        "cbl",
        "ipynb",
        "csv",
        "tsv",
        "wasm",
    ]
)
_AMBIGUOUS = frozenset(
    ["js", "ts", "io", "net", "m", "r", "ex", "fs", "cs", "ml", "pl", "h", "c", "go", "rl"]
)  # a bare Name.js is a product
_NAMES = frozenset(
    [
        "LICENSE",
        "LICENCE",
        "COPYING",
        "NOTICE",
        "AUTHORS",
        "Makefile",
        "Dockerfile",
        "Justfile",
        "Gemfile",
        "Rakefile",
        "Procfile",
    ]
)
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_BARE = re.compile(r"(?<![\w/.:@-])([A-Za-z0-9_][A-Za-z0-9_./-]*[A-Za-z0-9_/])")
_LINE_SUFFIX = re.compile(r":\d+(?:[-:,]\d+)*$")


class Marker(NamedTuple):
    """Where a phase's or task's status is written in its line, and how: `start`/`end` columns of the marker,
    and what ticks it (`tick`: None when the dialect has no way to say done, or there is no marker)."""

    dialect: str  # checkbox | emoji | prose | none
    start: int = 0
    end: int = 0
    tick: str | None = None


class Entry(NamedTuple):
    """One phase or task of a roadmap."""

    name: str  # the intent's name: a slug of the title, de-duplicated
    kind: str  # PHASE | TASK
    title: str  # the text, status markers and markdown taken out: what the intent's link matches on
    goal: str  # the title and the lines that continue it
    deps: tuple[str, ...]
    done: bool
    line: int  # 1-based
    paths: tuple[str, ...] = ()  # file paths the task names, as globs (a folder `docs/` as docs/**)
    notes: tuple[str, ...] = ()  # plain bullets under a task in a checkbox file
    marker: Marker = Marker("none")

    def to_json(self) -> dict:
        return {"name": self.name, "goal": self.goal, "deps": list(self.deps), "done": self.done, "line": self.line}


class _Node:
    __slots__ = ("line", "kind", "level", "content", "body", "checkbox", "parent", "col")

    def __init__(self, line: int, kind: str, level: int, content: str, col: int, parent: int | None):
        self.line, self.kind, self.level, self.content, self.col = line, kind, level, content, col
        self.parent = parent
        self.body: list[str] = []
        self.checkbox = kind == TASK and _CHECKBOX.match(content) is not None


def _width(indent: str) -> int:
    return len(indent.replace("\ufeff", "").expandtabs(4))


def _scan(lines: list[str]) -> list[_Node]:
    """Every heading and list item, each with its parent (the enclosing item, else heading)."""
    nodes: list[_Node] = []
    headings: list[int] = []  # the open headings, outermost first
    items: list[tuple[int, int]] = []  # the open list items: (indent, node)
    fence = ""
    in_comment = False
    last: int | None = None  # the item a following indented line continues
    for number, raw in enumerate(lines, 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            continue
        opened = _FENCE.match(line)
        if opened:
            fence, last = opened.group(1), None
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in line
            continue
        if not stripped:
            last = None
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            while headings and nodes[headings[-1]].level >= level:
                headings.pop()
            col = heading.start(2)
            nodes.append(_Node(number, PHASE, level, heading.group(2), col, headings[-1] if headings else None))
            headings.append(len(nodes) - 1)
            items.clear()
            last = None
            continue
        if _RULE.match(line):
            items.clear()
            last = None
            continue
        item = _ITEM.match(line)
        if item:
            indent = _width(item.group(1))
            while items and items[-1][0] >= indent:
                items.pop()
            parent = items[-1][1] if items else headings[-1] if headings else None
            nodes.append(_Node(number, TASK, indent, item.group(3), item.start(3), parent))
            items.append((indent, len(nodes) - 1))
            last = len(nodes) - 1
            continue
        indent = _width(line[: len(line) - len(line.lstrip())])
        if last is not None and indent > nodes[last].level:
            nodes[last].body.append(stripped)  # a wrapped line of the item
        elif not (items and indent > items[-1][0]):
            items.clear()  # a paragraph at the list's own indentation ends the list
            last = None
    return nodes


def _marker(content: str, col: int, heading: bool) -> tuple[Marker, bool | None, str]:
    """The status marker of a line's content: (marker, done or None when nothing says, content without it)."""
    box = None if heading else _CHECKBOX.match(content)
    if box:
        done = box.group(1) in "xX"
        return Marker("checkbox", col, col + 3, None if done else "[x]"), done, content[box.end() :]
    emoji = _EMOJI.search(content)
    if emoji:
        done = emoji.group(0) in _DONE_EMOJI
        rest = (content[: emoji.start()] + content[emoji.end() :]).strip()
        return Marker("emoji", col + emoji.start(), col + emoji.end(), None if done else "✅"), done, rest
    prefix = _PREFIX.match(content)
    if prefix:
        word = prefix.group(1)
        done = word.lower() == "done"
        tick = None if done else _same_case("done", word)
        return Marker("prose", col, col + len(word), tick), done, content[prefix.end() :]
    bracketed = _BRACKETED.search(content)
    if bracketed:
        word = bracketed.group(1)
        done = word.lower() in _DONE_WORDS
        tick = None if done else _same_case("done", word)
        start, end = col + bracketed.start(1), col + bracketed.end(1)
        rest = (content[: bracketed.start()] + content[bracketed.end() :]).strip()
        return Marker("prose", start, end, tick), done, rest
    if _CJK_DONE.search(content):
        return Marker("prose"), True, content
    struck = _STRUCK.match(content.strip())
    if struck:
        return Marker("prose"), True, struck.group(1)
    return Marker("none"), None, content


def _same_case(word: str, like: str) -> str:
    return word.upper() if like.isupper() else word.title() if like[:1].isupper() else word


def _plain(text: str) -> str:
    """Markdown markup out: links to their text, code spans, emphasis, strike-through and HTML tags."""
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"</?[A-Za-z][^>\n]*>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|~~)(.+?)\1", r"\2", text)
    return " ".join(text.split())


def _path(word: str, backticked: bool) -> str | None:
    """The glob a word names as a file path, or None."""
    word = _LINE_SUFFIX.sub("", word.rstrip(".,;:!?)"))
    if word.startswith("./"):
        word = word[2:]
    if not word or "://" in word or word.startswith(("-", "~", "/")) or any(c in word for c in " \t=<>|\"'(){}$"):
        return None
    last = word.rstrip("/").rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[1].lower() if "." in last.strip(".") else ""
    if word.endswith("/"):
        path = word + "**" if backticked else None
    elif "/" in word:
        path = word if ext in _EXTENSIONS or (backticked and last in _NAMES) else None
    elif backticked:
        dotfile = last.startswith(".") and last.count(".") == 1 and len(last) > 2
        path = word if ext in _EXTENSIONS or last in _NAMES or dotfile else None
    else:
        path = word if ext in _EXTENSIONS and ext not in _AMBIGUOUS else None
    if path is None or check_glob(path) is not None:
        return None
    return path


def paths_in(text: str) -> list[str]:
    """The file paths a task's text names, in the order named, each once."""
    found: list[str] = []
    for m in _BACKTICKED.finditer(text):
        path = _path(m.group(1).strip(), backticked=True)
        if path and path not in found:
            found.append(path)
    bare = _LINK.sub(r"\1", _BACKTICKED.sub(" ", text))
    for m in _BARE.finditer(bare):
        path = _path(m.group(1), backticked=False)
        if path and path not in found:
            found.append(path)
    return found


def slug(text: str, kind: str) -> str:
    """A name for the intent from its text: lower-case ASCII words joined by '-', at most 48 characters; a text
    with no ASCII word gets the kind and a short digest of the text, so it stays put when lines move."""
    letters = (c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    words = re.findall(r"[a-z0-9]+", "".join(c if c.isascii() else " " for c in letters).lower())
    name = ""
    for word in words:
        if len(name) + len(word) + 1 > 48:
            break
        name = f"{name}-{word}" if name else word
    if not name and words:
        name = words[0][:48]
    return name or f"{kind}-{hashlib.sha1(text.encode('utf-8')).hexdigest()[:8]}"


def unique(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}-{n}"
    taken.add(found)
    return found


def parse(text: str, taken: set[str] | frozenset[str] = frozenset()) -> list[Entry]:
    """The phases and tasks of a roadmap's text, in the file's order; names avoid those in `taken`."""
    lines = text.split("\n")
    nodes = _scan(lines)
    checkbox_file = any(n.checkbox for n in nodes)
    is_task = [n.kind == TASK and (n.checkbox or not checkbox_file) for n in nodes]

    def owner(i: int | None) -> int | None:  # the nearest enclosing phase or task
        while i is not None and nodes[i].kind == TASK and not is_task[i]:
            i = nodes[i].parent
        return i

    owners = [owner(n.parent) for n in nodes]
    notes: dict[int, list[str]] = {}
    has_task = [False] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        if is_task[i]:
            has_task[i] = True
        elif nodes[i].kind == TASK:
            o = owners[i]
            if o is not None and is_task[o]:
                notes.setdefault(o, []).insert(0, _plain(" ".join([nodes[i].content, *nodes[i].body])))
            continue
        if has_task[i] and owners[i] is not None:
            has_task[owners[i]] = True  # type: ignore[index]
    kept = [i for i in range(len(nodes)) if has_task[i]]
    children: dict[int | None, list[int]] = {}
    for i in kept:
        children.setdefault(owners[i], []).append(i)

    markers: dict[int, tuple[Marker, bool | None, str]] = {}
    for i in kept:
        markers[i] = _marker(nodes[i].content, nodes[i].col, nodes[i].kind == PHASE)
    said: dict[int, bool | None] = {}
    for i in kept:  # a task or phase that says nothing is done when the phase or task it sits under says so
        o = owners[i]
        said[i] = markers[i][1] if markers[i][1] is not None else (True if o is not None and said[o] else None)
    done: dict[int, bool] = {}
    for i in reversed(kept):
        if nodes[i].kind == TASK:
            done[i] = bool(said[i])
        else:
            done[i] = bool(said[i]) or all(done[c] for c in children.get(i, ()))

    names: dict[int, str] = {}
    used = set(taken)
    titles: dict[int, str] = {}
    for i in kept:
        titles[i] = _plain(markers[i][2]).rstrip(":").strip() or _plain(nodes[i].content)
        names[i] = unique(slug(titles[i], nodes[i].kind), used)
    entries = []
    for i in kept:
        node = nodes[i]
        previous = _before(children[owners[i]], i)
        deps = ([names[previous]] if previous is not None else []) + [names[c] for c in children.get(i, ())]
        body = _plain(" ".join(node.body))
        title = titles[i]
        entries.append(
            Entry(
                name=names[i],
                kind=node.kind,
                title=title,
                goal=f"{title} {body}" if body else title,
                deps=tuple(deps),
                done=done[i],
                line=node.line,
                paths=tuple(paths_in(" ".join([node.content, *node.body]))) if node.kind == TASK else (),
                notes=tuple(notes.get(i, ())),
                marker=markers[i][0],
            )
        )
    return entries


def _before(siblings: list[int], i: int) -> int | None:
    """The sibling before node i (siblings are in the file's order): a bisection, for a phase of thousands."""
    at = bisect_left(siblings, i)
    return siblings[at - 1] if at else None
