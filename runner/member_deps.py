"""Which workspace members depend on which, read from their own manifests (pyproject.toml, package.json,
Cargo.toml, go.mod), and the lines `runner init` adds to a member's test step so that it reads the sources of the
members it runs (issue 41: an edit of api's sources re-runs sdk's tests)."""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from pathlib import Path
from typing import NamedTuple

from .workspace_members import few

# the adapter whose test step runs a member's code, by the manifest that names its dependencies
_ADAPTER = {"pyproject.toml": "python", "package.json": "node", "Cargo.toml": "rust", "go.mod": "go"}
_NPM_KEYS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
_CARGO_KEYS = ("dependencies", "dev-dependencies", "build-dependencies")


class Need(NamedTuple):
    """One member's dependency on another, as its manifest says it."""

    member: str  # the folder of the member depended on
    name: str  # its name in that manifest: "opentelemetry-api"
    where: str  # what says it: "pyproject.toml [project] dependencies"
    through: str | None  # None for a direct dependency; else the member's name it comes through


class Reads(NamedTuple):
    """What a member's test step reads of other members, once the closure is taken."""

    member: str
    needs: list[Need]  # direct ones first, then the ones that come through them


def _pep508(requirement: str) -> str | None:
    found = re.match(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)", requirement)
    return found.group(1) if found else None  # as written: compared by _key


def _norm(name: str) -> str:
    """A Python distribution's name as PEP 503 compares them: lower case, runs of - _ . one '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _key(manifest: str, name: str) -> str:
    """A name as its tool compares them: Python's by PEP 503, the others' as written."""
    return _norm(name) if manifest == "pyproject.toml" else name


def _load_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}  # a manifest that does not read names no dependency here: its tool says what is wrong


def _load_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _python(folder: Path) -> tuple[str | None, list[tuple[str, str]]]:
    """(its [project] name; [(a dependency's name as written, what declares it)])."""
    data = _load_toml(folder / "pyproject.toml")
    project = _dict(data.get("project"))
    name = project.get("name")
    out = [
        (n, "pyproject.toml [project] dependencies") for r in _strs(project.get("dependencies")) if (n := _pep508(r))
    ]
    for extra, reqs in _dict(project.get("optional-dependencies")).items():
        where = f"pyproject.toml [project.optional-dependencies] {extra}"
        out += [(n, where) for r in _strs(reqs) if (n := _pep508(r))]
    for group, reqs in _dict(data.get("dependency-groups")).items():
        out += [(n, f"pyproject.toml [dependency-groups] {group}") for r in _strs(reqs) if (n := _pep508(r))]
    dev = _dict(_dict(data.get("tool")).get("uv")).get("dev-dependencies")
    out += [(n, "pyproject.toml [tool.uv] dev-dependencies") for r in _strs(dev) if (n := _pep508(r))]
    return (name if isinstance(name, str) else None), out


def _node(folder: Path) -> tuple[str | None, list[tuple[str, str]]]:
    data = _load_json(folder / "package.json")
    name = data.get("name")
    out = [(dep, f"package.json {key}") for key in _NPM_KEYS for dep in _dict(data.get(key))]
    return (name if isinstance(name, str) else None), out


def _cargo(folder: Path, root: Path) -> tuple[str | None, list[tuple[str, str]]]:
    """Cargo's dependencies by package name: a `path` one by the member folder it points at (as '@folder'), a
    renamed one (`package = ...`) by its real name, a `workspace = true` one as the root's [workspace.dependencies]
    names it; `[target.*]` tables too."""
    data = _load_toml(folder / "Cargo.toml")
    name = _dict(data.get("package")).get("name")
    tables = [(key, _dict(data.get(key))) for key in _CARGO_KEYS]
    for target, t in _dict(data.get("target")).items():
        tables += [(f"target.{target}.{key}", _dict(_dict(t).get(key))) for key in _CARGO_KEYS]
    shared = _dict(_dict(_load_toml(root / "Cargo.toml").get("workspace")).get("dependencies"))
    out: list[tuple[str, str]] = []
    for key, table in tables:
        for dep, value in table.items():
            spec = _dict(value)
            at = folder
            if spec.get("workspace") is True and isinstance(shared.get(dep), dict):
                spec, at = {**shared[dep], **spec}, root  # the root's [workspace.dependencies] says where it is
            renamed = spec.get("package")
            real = renamed if isinstance(renamed, str) else dep
            path = spec.get("path")
            if isinstance(path, str):
                target_folder = (at / path).resolve()
                try:
                    real = "@" + target_folder.relative_to(root.resolve()).as_posix()
                except ValueError:
                    continue  # a path outside the workspace is no member
            out.append((real, f"Cargo.toml [{key}]"))
    return (name if isinstance(name, str) else None), out


def _go(folder: Path) -> tuple[str | None, list[tuple[str, str]]]:
    try:
        text = (folder / "go.mod").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None, []
    module = None
    out: list[tuple[str, str]] = []
    block = False
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if block:
            if line == ")":
                block = False
            elif line:
                out.append((line.split()[0].strip('"'), "go.mod require"))
        elif line.startswith("module "):
            module = line[len("module ") :].strip().strip('"')
        elif line in ("require (", "require("):
            block = True
        elif line.startswith("require "):
            out.append((line[len("require ") :].split()[0].strip('"'), "go.mod require"))
    return module, out


def _manifests(root: Path, member: str) -> dict[str, tuple[str | None, list[tuple[str, str]]]]:
    """Each manifest the member holds: (its own name, its dependencies)."""
    folder = root / member
    out = {}
    if (folder / "pyproject.toml").is_file():
        out["pyproject.toml"] = _python(folder)
    if (folder / "package.json").is_file():
        out["package.json"] = _node(folder)
    if (folder / "Cargo.toml").is_file():
        out["Cargo.toml"] = _cargo(folder, root)
    if (folder / "go.mod").is_file():
        out["go.mod"] = _go(folder)
    return out


def direct(root: Path, members: list[str]) -> dict[str, list[Need]]:
    """Each member's dependencies on other members, as its manifests declare them, in the manifests' order."""
    read = {m: _manifests(root, m) for m in members}
    names: dict[tuple[str, str], str] = {}  # (manifest, name) -> member folder
    for m, manifests in read.items():
        for manifest, (name, _deps) in manifests.items():
            if name:
                names.setdefault((manifest, _key(manifest, name)), m)
            if manifest == "Cargo.toml":
                names.setdefault((manifest, "@" + m), m)
    out: dict[str, list[Need]] = {}
    for m, manifests in read.items():
        needs: list[Need] = []
        for manifest, (_name, deps) in manifests.items():
            for dep, where in deps:
                other = names.get((manifest, _key(manifest, dep)))
                if other is None or other == m or any(n.member == other for n in needs):
                    continue
                shown = dep if not dep.startswith("@") else (manifests_name(read[other], manifest) or other)
                needs.append(Need(other, shown, where, None))
        out[m] = needs
    return out


def manifests_name(manifests: dict, manifest: str) -> str | None:
    entry = manifests.get(manifest)
    return entry[0] if entry else None


# what a member needs only to develop it (an extra, a dev group, devDependencies): given up first in a cycle
_WEAK = re.compile(
    r"optional-dependencies|dependency-groups|dev-dependencies|devDependencies|peerDependencies|"
    r"optionalDependencies|build-dependencies"
)


def closure(members: list[str], needs: dict[str, list[Need]]) -> tuple[dict[str, list[Need]], list[str]]:
    """Each member's dependencies with those that come through them (the rule reads only the declared files of a
    step's direct deps, and sdk's tests run api's code through sdk). runner's deps cannot go round: a dependency
    that would close a cycle (npm allows one; otel's sdk names configuration in an extra, configuration names sdk)
    is left out, and said in a warning. The ones a member needs to run are kept before those it needs only to
    develop (an extra, a dev group), each in the members' order."""
    kept: dict[str, list[Need]] = {m: [] for m in members}
    warnings: list[str] = []
    edges = [(m, n) for m in members for n in needs.get(m, [])]
    for m, need in sorted(edges, key=lambda e: bool(_WEAK.search(e[1].where))):
        if need.member == m or m in _reached(kept, need.member):
            warnings.append(
                f"warning: {m}'s dependency on {need.member} ({need.where} names {need.name}) closes a cycle, and "
                f"runner's deps cannot go round: {m}'s tests do not read {need.member}'s sources; edit "
                f"{m}/intents.toml if that is the one that matters"
            )
            continue
        kept[m].append(need)
    for m in members:  # in the manifest's order again
        kept[m].sort(key=lambda n: [x.member for x in needs[m]].index(n.member))
    full: dict[str, list[Need]] = {}
    for m in members:
        seen = {n.member for n in kept[m]}
        out = list(kept[m])
        queue = list(kept[m])
        while queue:
            via = queue.pop(0)
            for n in kept[via.member]:
                if n.member not in seen and n.member != m:
                    seen.add(n.member)
                    item = Need(n.member, n.name, n.where, via.name if via.through is None else via.through)
                    out.append(item)
                    queue.append(item)
        full[m] = out
    return full, warnings


def _reached(kept: dict[str, list[Need]], start: str) -> set[str]:
    """The members `start` depends on through the kept dependencies, itself included."""
    seen = {start}
    todo = [start]
    while todo:
        for n in kept[todo.pop()]:
            if n.member not in seen:
                seen.add(n.member)
                todo.append(n.member)
    return seen


class _Step(NamedTuple):
    name: str
    inputs: list[str]
    exclude: list[str]


def _test_steps(text: str) -> list[_Step]:
    """The steps of a member's file that run its tests: `test`, or `test-ADAPTER` where it has more toolchains
    (none in a kept file that does not parse: the load names what is wrong with it)."""
    try:
        intents = _dict(tomllib.loads(text).get("intent"))
    except tomllib.TOMLDecodeError:
        return []
    out = []
    for name, table in intents.items():
        if (name == "test" or name.startswith("test-")) and isinstance(table, dict) and "run" in table:
            out.append(_Step(name, _strs(table.get("inputs")), _strs(table.get("exclude"))))
    return out


def _own(patterns: list[str]) -> list[str]:
    return [p for p in patterns if not p.startswith(("../", "/"))]


def _for_adapter(steps: list[_Step], adapter: str | None) -> list[_Step]:
    if len(steps) <= 1:
        return steps
    chosen = [s for s in steps if s.name == f"test-{adapter}"]
    return chosen or steps


def link(root: Path, members: list[str], texts: dict[str, str], kept: dict[str, str]) -> tuple[dict, list, list]:
    """The members' texts with each test step reading the members it depends on (transitively): `deps` on their
    test steps, their inputs by relative path with their `exclude`; (texts, [(member, said line)], warnings).
    `texts` are the files init writes; `kept`, those a member has already (read, never changed)."""
    needs, warnings = closure(members, direct(root, members))
    said: list[tuple[str, str, list[str]]] = []
    out = dict(texts)
    for m in members:
        if m not in texts or not needs.get(m):
            continue
        own = _test_steps(texts[m])
        adds: dict[str, list[tuple[Need, _Step]]] = {}  # by the reading step's name
        missing: list[str] = []
        for need in needs[m]:
            # a member of two toolchains (test-python, test-node): the step of the manifest's toolchain reads it
            adapter = _ADAPTER.get(need.where.split(" ")[0])
            source = texts.get(need.member) or kept.get(need.member)
            steps = _for_adapter(_test_steps(source), adapter) if source else []
            # what a kept file's step reads of others is not read through it: the closure reads those members
            steps = [s._replace(inputs=_own(s.inputs), exclude=_own(s.exclude)) for s in steps]
            steps = [s for s in steps if s.inputs]
            if not steps:
                missing.append(need.member)
            for reader in _for_adapter(own, adapter) if steps else ():
                adds.setdefault(reader.name, []).extend((need, s) for s in steps)
        if missing:
            warnings.append(
                f"warning: {m} depends on {', '.join(missing)}, which has no test step declaring its sources: "
                f"an edit there does not re-run {m}'s tests; declare them in {m}/intents.toml by hand"
            )
        readers = [s for s in own if s.name in adds]
        if not readers:
            continue
        for step in readers:
            out[m] = _add(out[m], m, step, adds[step.name])
        direct_ones = [f"{n.member} ({n.where})" for n in needs[m] if n.through is None]
        through = [n.member for n in needs[m] if n.through is not None]
        line = f"  {m}/: {', '.join(s.name for s in readers)} reads {few(direct_ones)}"
        if through:
            line += f", and through them {few(through)}"
        said.append((m, line, [n.member for n in needs[m]]))
    return out, said, warnings


def _rel(member: str, other: str, pattern: str) -> str:
    return posixpath.join(posixpath.relpath(other, member), pattern)


_READ = ": its sources are read"


def _why(m: str, need: Need) -> str:
    if need.through is None:
        return f"{posixpath.basename(m)}'s tests import {need.name} ({need.where}){_READ}"
    return f"{posixpath.basename(m)}'s tests run {need.name} through {need.through}{_READ}"


def _add(text: str, member: str, step: _Step, adds: list[tuple[Need, _Step]]) -> str:
    """The text with `step`'s inputs, exclude and deps grown by what it reads of other members (init wrote each
    of these on one line: they are written again one value a line, each group under why it is there)."""
    q = json.dumps
    inputs = [f"    {q(p)}," for p in step.inputs]
    exclude = [f"    {q(p)}," for p in step.exclude]
    deps = []
    for need, dep in adds:
        inputs += [f"    # {_why(member, need)}", *(f"    {q(_rel(member, need.member, p))}," for p in dep.inputs)]
        if dep.exclude:
            exclude += [
                f"    # what {need.member}:{dep.name} leaves out of its inputs, left out here too",
                *(f"    {q(_rel(member, need.member, p))}," for p in dep.exclude),
            ]
        said = f"{need.name} ({need.where})" if need.through is None else f"{need.name}, through {need.through}"
        deps.append(f"    {q(need.member + ':' + dep.name)},  # {said}")
    lines = text.split("\n")
    at = lines.index(f"[intent.{step.name}]")
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].strip()), len(lines))
    block = [ln for ln in lines[at:end] if not ln.startswith(("inputs = ", "exclude = "))]
    block += ["inputs = [", *inputs, "]"]
    if len(exclude) > 0:
        block += ["exclude = [", *exclude, "]"]
    block += ["deps = [", *deps, "]"]
    return "\n".join([*lines[:at], *block, *lines[end:]])


def linked(root: Path, members: list[str], texts: dict[str, str], said: list[dict]) -> tuple[dict, list, list]:
    """For `runner init` at a workspace's root: the members' texts with their test steps reading the members they
    depend on, the lines that say it, the warnings; each member's entry in `said` (as --json gives it) is given
    what it reads (`reads`) and its text as written."""
    kept = {}
    for e in said:
        if e["status"] == "kept":
            try:
                kept[e["folder"]] = (root / e["folder"] / "intents.toml").read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError):
                pass
    out, reads, warnings = link(root, members, texts, kept)
    by_member = {m: needs for m, _line, needs in reads}
    for e in said:
        if e["folder"] in out and "content" in e:
            e["content"] = out[e["folder"]]
        e["reads"] = by_member.get(e["folder"], [])
    return out, [line for _m, line, _needs in reads], warnings
