"""A monorepo's members as its own tools declare them, for `runner init` at its root: uv, npm/yarn, pnpm, Cargo and
Go workspaces, read from their files (never by running the tool), each member a folder below the root; the
`include` that takes them in, and the root's file."""

from __future__ import annotations

import json
import os
import re
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path
from typing import NamedTuple

_SKIP = (".git", ".runner", "node_modules")  # never walked for a member
ALL_ABOUT = "Every member's check"  # the description of the `all` intent init writes at a workspace's root


class Workspace(NamedTuple):
    tool: str  # uv, npm, pnpm, cargo, go
    source: str  # what declares it, as a user finds it: "pyproject.toml [tool.uv.workspace]"
    patterns: tuple[str, ...]  # its members as written, './' and a trailing '/' taken off
    excludes: tuple[str, ...]  # its exclusions, likewise
    members: tuple[str, ...]  # the member folders found, relative to the root, '/'-separated, in order
    excluded: tuple[str, ...]  # folders a pattern names that an exclusion leaves out
    root_package: str | None  # what makes the root a package of its own too ("Cargo.toml [package]"), or None


class _Declared(NamedTuple):
    """A workspace as its file declares it, before its members are looked for."""

    tool: str
    source: str
    patterns: list[str]
    excludes: list[str]
    manifest: str  # the file each member holds
    package: str | None


def _declared(root: Path) -> tuple[list[_Declared], list[str]]:
    found: list[_Declared] = []
    warnings: list[str] = []
    for reader in (_uv, _cargo, _pnpm, _npm, _go):
        try:
            ws = reader(root)
        except _Unreadable as exc:
            warnings.append(f"warning: {exc}: not read as a workspace; fix it, or write [project] include by hand")
            continue
        if ws is not None:
            found.append(ws)
    return found, warnings


def find(root: Path) -> tuple[list[Workspace], list[str]]:
    """The workspaces root's files declare (most have one), and a warning for each file that names a workspace
    but cannot be read (it is skipped: the file and line said, never a traceback)."""
    declared, warnings = _declared(root)
    return [_made(root, *d) for d in declared], warnings


def member_of(folder: Path) -> tuple[Path, str] | None:
    """(the folder above whose workspace `folder` is a member of, what declares it), or None: read without walking
    the workspace, its files only (a folder above whose file does not read says nothing here)."""
    folder = folder.resolve()
    for above in folder.parents:
        rel = folder.relative_to(above).as_posix()
        try:
            declared, _warnings = _declared(above)
        except OSError:
            continue
        for d in declared:
            named = any(matches(rel, _clean(p)) for p in d.patterns if _clean(p))
            if named and not any(matches(rel, _clean(e)) for e in d.excludes) and (folder / d.manifest).is_file():
                return above, d.source
    return None


class _Unreadable(Exception):
    """A workspace file that does not parse: its message names the file and the line."""


def _text(root: Path, name: str, needle: str) -> str | None:
    """The file's text when it exists and holds `needle` (a file that never mentions a workspace is not read)."""
    try:
        text = (root / name).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    return text if needle in text else None


def _toml(root: Path, name: str, needle: str) -> dict | None:
    text = _text(root, name, needle)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        line = at.group(1) if at else str(len(text.splitlines()) or 1)  # "(at end of document)": its last line
        raise _Unreadable(f"{name}:{line}: {str(exc).split(' (at')[0]}") from None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _uv(root: Path) -> _Declared | None:
    data = _toml(root, "pyproject.toml", "workspace")
    ws = (data or {}).get("tool", {}).get("uv", {}).get("workspace") if data else None
    if not isinstance(ws, dict):
        return None
    uv = data.get("tool", {}).get("uv", {})  # type: ignore[union-attr]
    # a root with [project] is a member of its own, unless `[tool.uv] package = false` says it is only the workspace's
    own = isinstance(data.get("project"), dict) and uv.get("package") is not False  # type: ignore[union-attr]
    package = "pyproject.toml [project]" if own else None
    return _Declared(
        "uv", "pyproject.toml [tool.uv.workspace]", _strings(ws.get("members")), _strings(ws.get("exclude")),
        "pyproject.toml", package,
    )  # fmt: skip


def _cargo(root: Path) -> _Declared | None:
    data = _toml(root, "Cargo.toml", "workspace")
    ws = data.get("workspace") if data else None
    if not isinstance(ws, dict):
        return None
    package = "Cargo.toml [package]" if isinstance(data.get("package"), dict) else None  # type: ignore[union-attr]
    members = _strings(ws.get("members"))
    return _Declared("cargo", "Cargo.toml [workspace]", members, _strings(ws.get("exclude")), "Cargo.toml", package)


def _package_json(root: Path) -> dict | None:
    text = _text(root, "package.json", "{")
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"package.json:{exc.lineno}: {exc.msg}") from None
    return data if isinstance(data, dict) else None


def _npm_package(data: dict | None) -> str | None:
    scripts = data.get("scripts") if data else None
    return "package.json scripts" if isinstance(scripts, dict) and scripts else None


def _npm(root: Path) -> _Declared | None:
    if _text(root, "package.json", '"workspaces"') is None:
        return None
    data = _package_json(root)
    ws = data.get("workspaces") if data else None
    if isinstance(ws, dict):
        ws = ws.get("packages")  # yarn's {packages: [...], nohoist: [...]}
    if not isinstance(ws, list):
        return None
    patterns = _strings(ws)
    kept = [p for p in patterns if not p.startswith("!")]
    excludes = [p[1:] for p in patterns if p.startswith("!")]
    return _Declared("npm", "package.json workspaces", kept, excludes, "package.json", _npm_package(data))


def _pnpm(root: Path) -> _Declared | None:
    text = _text(root, "pnpm-workspace.yaml", "packages")
    if text is None:
        return None
    patterns = _yaml_packages(text)
    kept = [p for p in patterns if not p.startswith("!")]
    excludes = [p[1:] for p in patterns if p.startswith("!")]
    try:
        package = _npm_package(_package_json(root))
    except _Unreadable:
        package = None  # the npm reader says so
    return _Declared("pnpm", "pnpm-workspace.yaml packages", kept, excludes, "package.json", package)


_YAML_ITEM = re.compile(r"""^\s+-\s*(?:"([^"]*)"|'([^']*)'|([^#'"\s{}\[\]&*!|>][^#]*?))\s*(?:#.*)?$""")


def _yaml_packages(text: str) -> list[str]:
    """`packages:` of pnpm-workspace.yaml: a block list of (quoted or plain) strings, or a flow list on its line.
    Read by hand: the few lines it needs do not call for a YAML library at run time."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if not line.startswith("packages:"):
            continue
        rest = line[len("packages:") :].split(" #")[0].strip()
        if rest.startswith("["):
            if not rest.endswith("]"):
                raise _Unreadable(f"pnpm-workspace.yaml:{n + 1}: a flow list of packages that ends on another line")
            items = [i.strip().strip("'\"") for i in rest[1:-1].split(",")]
            return [i for i in items if i]
        if rest:
            raise _Unreadable(f"pnpm-workspace.yaml:{n + 1}: 'packages:' holds no list")
        found = []
        for m, item in enumerate(lines[n + 1 :], start=n + 2):
            if not item.strip() or item.lstrip().startswith("#"):
                continue
            if not item[:1].isspace():
                break  # the next key
            matched = _YAML_ITEM.match(item)
            if matched is None:
                raise _Unreadable(f"pnpm-workspace.yaml:{m}: not a list item of 'packages:' ({item.strip()!r})")
            found.append(next(g for g in matched.groups() if g is not None))
        return found
    return []


def _go(root: Path) -> _Declared | None:
    text = _text(root, "go.work", "use")
    if text is None:
        return None
    uses: list[str] = []
    block = False
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("//")[0].strip()
        if block:
            if line == ")":
                block = False
            elif line:
                uses.append(line.strip('"'))
        elif line == "use (" or line == "use(":
            block = True
        elif line.startswith("use ") or line.startswith("use\t"):
            uses.append(line[4:].strip().strip('"'))
        elif line.startswith("use"):
            raise _Unreadable(f"go.work:{n}: a 'use' directive runner cannot read ({raw.strip()!r})")
    if block:
        raise _Unreadable("go.work: a 'use (' block that never closes")
    package = "go.work use ." if any(_clean(u) == "" for u in uses) else None
    return _Declared("go", "go.work use", uses, [], "go.mod", package)


def _clean(pattern: str) -> str:
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _made(
    root: Path, tool: str, source: str, patterns: list[str], excludes: list[str], manifest: str, package: str | None
) -> Workspace:  # _Declared's fields, in order
    """The workspace with its member folders found: each folder a pattern names that holds the member's manifest
    (a folder without one is no member, as the tools themselves skip or refuse it), less the excluded ones."""
    kept = tuple(c for c in map(_clean, patterns) if c)
    excl = tuple(c for c in map(_clean, excludes) if c)
    members: list[str] = []
    excluded: list[str] = []
    for pattern in kept:
        for rel in expand(root, pattern):
            if not (root / rel / manifest).is_file() or rel in members or rel in excluded:
                continue
            (excluded if any(matches(rel, e) for e in excl) else members).append(rel)
    return Workspace(tool, source, kept, excl, tuple(members), tuple(excluded), package)


def expand(root: Path, pattern: str) -> list[str]:
    """The folders below root a member pattern names (* ? [...] within a name, ** for any depth), sorted."""
    level = [""]
    for part in pattern.split("/"):
        nxt: list[str] = []
        for rel in level:
            if part == "**":
                nxt += [rel, *_below(root, rel)]
            elif part == "..":
                return []  # a member outside the root is no sub-project
            elif any(c in part for c in "*?["):
                nxt += [_join(rel, n) for n in _subfolders(root, rel) if fnmatchcase(n, part)]
            elif (root / rel / part).is_dir():
                nxt.append(_join(rel, part))
        level = list(dict.fromkeys(nxt))
    return sorted(rel for rel in level if rel)


def matches(rel: str, pattern: str) -> bool:
    """Whether the folder `rel` is one the pattern names, `**` standing for any number of names."""

    def go(parts: list[str], want: list[str]) -> bool:
        if not want:
            return not parts
        if want[0] == "**":
            return any(go(parts[i:], want[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatchcase(parts[0], want[0]) and go(parts[1:], want[1:])

    return go(rel.split("/"), pattern.split("/"))


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _subfolders(root: Path, rel: str) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(root / rel) if e.is_dir() and e.name not in _SKIP)
    except OSError:
        return []


def _below(root: Path, rel: str) -> list[str]:
    out = []
    for name in _subfolders(root, rel):
        if not name.startswith("."):
            out.append(_join(rel, name))
            out += _below(root, _join(rel, name))
    return out


def include_patterns(root: Path, workspaces: list[Workspace], subs: list[str]) -> list[str]:
    """`[project] include` for these sub-project folders: each workspace pattern as written where runner's include
    takes it (names one at a time, no '**') and the folders it takes in are exactly sub-projects here; else the
    sub-project folders it names, one by one."""
    from .project_root import included_by

    out: list[str] = []
    for ws in workspaces:
        for pattern in ws.patterns:
            named = [s for s in subs if matches(s, pattern)]
            if not named:
                continue
            taken = [rel for rel in expand(root, pattern) if rel in subs or (root / rel / "intents.toml").is_file()]
            plain = "**" not in pattern.split("/") and ".." not in pattern.split("/")
            if plain and all(included_by(rel, pattern) for rel in named) and sorted(taken) == sorted(named):
                out.append(pattern)
            else:
                out += named
    out += [s for s in subs if not any(included_by(s, p) for p in out)]  # a member no pattern kept
    return list(dict.fromkeys(out))


def own_default(spec: Path) -> str | None:
    """The `[project] default` of a member's own intents.toml, if it names one (a file that does not read names
    none: the load says what is wrong with it)."""
    try:
        project = tomllib.loads(spec.read_text(encoding="utf-8-sig")).get("project")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    default = project.get("default") if isinstance(project, dict) else None
    return default if isinstance(default, str) else None


def said_once(reports: list[tuple[str, list[str]]]) -> list[str]:
    """Each member's warnings (what init says of its file), each said once with the members it is true of."""
    by_text: dict[str, list[str]] = {}
    for member, lines in reports:
        for line in lines:
            if line.startswith("warning: "):
                by_text.setdefault(line, []).append(f"{member}/")
    return [f"{line} (in {', '.join(where)})" for line, where in by_text.items()]


def few(values: list[str]) -> str:
    """A list said on a line: all of it when short, else its first ones and how many more."""
    return ", ".join(values) if len(values) <= 6 else f"{', '.join(values[:5])} and {len(values) - 5} more"


def toml_array(key: str, values: list[str], comment: str = "") -> list[str]:
    """`key = [...]` on one line, or one value a line when that is long (a monorepo's twenty members)."""
    note = f"  # {comment}" if comment else ""
    line = f"{key} = {'[' + ', '.join(json.dumps(v, ensure_ascii=False) for v in values) + ']'}"
    if len(line) <= 100:
        return [line + note]
    return [f"{key} = [{note}", *(f"    {json.dumps(v, ensure_ascii=False)}," for v in values), "]"]


def root_file(
    own: str | None, name: str, sources: str, include: list[str], all_deps: list[str], excluded: list[str]
) -> str:
    """The root's intents.toml at a workspace: `own`, the file init writes for a root that is a package too, with
    `include` and an `all` intent on its check and each member's added; else the `name = ...` line, `include`, and
    `all` on each member's check, the default."""
    left_out = [f"# left out, excluded by the workspace: {x}" for x in excluded]
    includes = [*toml_array("include", include, f"the members of {sources}"), *left_out]
    all_intent = [
        "[intent.all]",
        "description = " + json.dumps(ALL_ABOUT + (", and the root's" if own else "")),
        *toml_array("deps", (["check"] if own else []) + all_deps),
        "",
    ]
    if own is not None:
        lines = own.rstrip("\n").split("\n")
        at = lines.index('default = "check"')
        lines[at:at] = includes
        return "\n".join([*lines, "", *all_intent]).rstrip("\n") + "\n"
    head = [
        f"# Written by `runner init` at the root of a workspace ({sources}):",
        "# each member folder is a sub-project with an intents.toml of its own; `runner make` here runs `all`,",
        "# each member's check. Edit freely: `runner validate` checks it.",
        "",
        "[project]",
        name,
        *includes,
        'default = "all"',
        "",
        *all_intent,
    ]
    return "\n".join(head).rstrip("\n") + "\n"


def problems(root: Path) -> list[str]:
    """The written files loaded as `runner validate` loads them: what is wrong, as a warning, else nothing."""
    from .errors import SpecError
    from .load import load_spec

    try:
        load_spec(root)
    except SpecError as exc:
        return [f"warning: `runner validate` finds problems to fix by hand:\n{exc.render()}"]
    return []
