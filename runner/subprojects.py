"""Sub-projects: the folders `[project] include` names in the root intents.toml, each with an intents.toml of its own,
loaded into the one spec under qualified names (PATH:NAME), their paths made the root's, their deps, policies,
adapters and prompts resolved (their folder's first, then the root's), and their reach kept to their folder and
the declared outputs and inputs of the intents they depend on. A project without `include` never comes here.

A sub-project's own regexes/ are read for its steps' logs by runner/libraries.py (its folder's, then the root's,
then the built-in families); here its folder is only watched, for the compiled spec. The learning loop reads
them when it mines, and proposes and promotes into the root's library only."""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import NamedTuple

from .confine import Folders
from .globs import GLOB_CHARS, covers, matches, may_overlap
from .names import qualified, split
from .project_root import included_by
from .schema_check import _intent_path, toml_path
from .spec import BUILTIN_DIR, Adapter, Intent, Policy, WorkerSettings
from .spec_reader import _Reader
from .suggest import did_you_mean

# the tables of a sub-project's intents.toml that only the root's may hold: one cache, executor and telemetry,
# one learning loop for the whole repository
ROOT_ONLY = ("cache", "executor", "telemetry", "learn")
# the paths written from the sub-project's folder, made the root's ('reports' are its cwd's, as every step's are)
_PATH_FIELDS = ("inputs", "outputs", "exclude", "scope")
_READ_FIELDS = ("inputs", "exclude")  # the paths that may leave a sub-project's folder, into the project
_NEVER = (".git", ".runner")  # never a sub-project
_UNWRITABLE = re.compile(r'["\\\x00-\x1f\x7f]')


class Sub(NamedTuple):
    folder: str  # relative to the root, '/'-separated
    shown: str  # its intents.toml as problems name it
    default: str | None  # its [project] default, qualified


class Loaded(NamedTuple):
    subs: list[Sub]
    place: Callable[[str], tuple[str, str]]  # an intent's name -> (its file as shown, its TOML path there)
    names: set[str]  # every intent's name, the broken ones' too
    workers: dict[str, WorkerSettings]  # folder -> the [worker] a sub-project declares for its agent steps


def include_of(data: dict) -> list | None:
    project = data.get("project")
    found = project.get("include") if isinstance(project, dict) else None
    return found if isinstance(found, list) else None


def _folders(reader: _Reader, root: Path, shown: str, patterns: list) -> list[str]:
    """The sub-project folders the include patterns name, in order, each once; a problem for a pattern naming
    none (a folder matched without an intents.toml is not one)."""
    found: list[str] = []
    for i, pattern in enumerate(patterns):
        where = f"project.include[{i}]"
        parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
        if pattern.startswith("/") or ".." in parts or "**" in pattern or not parts:
            reader.problem(
                shown,
                where,
                f"'{pattern}' must name folders below the root, one name at a time (* ? [...] within a name; "
                "no '**', '..' or leading '/')",
                pattern,
            )
            continue
        matched = [rel for rel in _walk(root, parts) if (root / rel / "intents.toml").is_file()]
        if not matched:
            reader.problem(
                shown,
                where,
                f"'{pattern}' matches no folder holding an intents.toml; create one there, or remove the pattern",
                pattern,
            )
        for rel in matched:
            if _UNWRITABLE.search(rel):  # its intents' names go into events as they are (events.cached_text)
                reader.problem(
                    shown,
                    where,
                    f"'{rel}' holds a '\"', a '\\' or a control character, which no intent's name may: rename the "
                    "folder",
                    pattern,
                )
            elif rel not in found:
                found.append(rel)
    return found


def _walk(root: Path, parts: list[str]) -> list[str]:
    level = [""]
    for part in parts:
        level = _walk_one(root, level, part)
    return [rel for rel in level if included_by(rel, "/".join(parts))]


def watched_folders(root: Path, patterns: list) -> list[str]:
    """What decides which folders the include patterns take in: each folder a wildcard lists (its stats move when
    a folder is added or removed in it) and each matched folder's intents.toml, there or not. Never a folder named
    plainly, whose stats move at every file a build writes in it."""
    out: set[str] = set()
    for pattern in patterns:
        if not isinstance(pattern, str):
            continue
        level = [""]
        for part in [p for p in pattern.strip("/").split("/") if p not in ("", ".")]:
            if not GLOB_CHARS.isdisjoint(part):
                out.update(str(root / rel) if rel else str(root) for rel in level)
            level = _walk_one(root, level, part)
        out.update(str(root / rel / "intents.toml") for rel in level)
    return sorted(out)


def _walk_one(root: Path, level: list[str], part: str) -> list[str]:
    from fnmatch import fnmatchcase

    nxt = []
    for rel in level:
        folder = root / rel if rel else root
        try:
            names = [e.name for e in folder.iterdir() if e.is_dir()]
        except OSError:
            continue
        nxt += [f"{rel}/{n}" if rel else n for n in sorted(names) if fnmatchcase(n, part) and n not in _NEVER]
    return nxt


def _moved(folder: str, path: str, inner: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """(a path written in `folder`'s intents.toml as the root's; None if it stays inside `folder` and out of the
    sub-projects `inner` within it, whose files are their own, else where it goes, as a message says it)."""
    if path.startswith("/"):
        return path, None  # refused as absolute where every path is checked
    joined = posixpath.normpath(f"{folder}/{path}")
    if joined != folder and not joined.startswith(folder + "/"):
        return joined, f"leaves {folder}/"
    nested = next((i for i in inner if joined == i or joined.startswith(i + "/")), None)
    return joined, f"lies in {nested}/, a sub-project of its own" if nested else None


def moved_table(folder: str, inner: tuple[str, ...], table: dict) -> tuple[dict, list[tuple]]:
    """An intent's table from `folder`'s intents.toml with its paths and cwd made the root's, and each one that
    leaves the folder (or enters `inner`, a sub-project within it): (field, index, as written, as moved, where it
    goes). An input leaving it is kept (a dependency's declared file may be read), and an exclude (it only takes
    away from what is read); any other is dropped."""
    moved, away_paths = dict(table), []
    for field in _PATH_FIELDS:
        values = table.get(field)
        if not isinstance(values, list):
            continue
        kept = []
        for i, value in enumerate(values):
            if not isinstance(value, str):
                kept.append(value)
                continue
            path, away = _moved(folder, value, inner)
            if away is not None:
                away_paths.append((field, i, value, path, away))
            if away is None or field in _READ_FIELDS and not path.startswith("../"):
                kept.append(path)
        moved[field] = kept
    cwd = table.get("cwd", ".")
    if isinstance(cwd, str):
        moved["cwd"], away = _moved(folder, cwd, inner)
        if away is not None:
            away_paths.append(("cwd", 0, cwd, moved["cwd"], away))
    return moved, away_paths


def _linked_out(fence: Folders, folder: str, table: dict, away_paths: list[tuple]) -> list[tuple]:
    """The outputs and cwd of a sub-project's table that stay in its folder as written but lead out of it through
    a link (confine.Folders, from the sub-project's folder): as moved_table reports a path that leaves it."""
    found = []
    said = {(field, i) for field, i, *_rest in away_paths}
    why = f"leads out of {folder}/ once links are followed"
    for i, value in enumerate(table.get("outputs") or ()):
        if isinstance(value, str) and ("outputs", i) not in said and fence.output(value.removeprefix("./")):
            found.append(("outputs", i, value, value, why))
    cwd = table.get("cwd")
    if isinstance(cwd, str) and cwd != "." and ("cwd", 0) not in said and fence.folder(cwd):
        found.append(("cwd", 0, cwd, cwd, why))
    return found


def load(
    reader: _Reader,
    root: Path,
    shown: str,
    data: dict,
    root_names: set[str],
    intents: dict[str, Intent],
    policies: dict[str, Policy],
    adapters: dict[str, Adapter],
    prompts: dict[str, str],
    make_intent: Callable[[str, str, dict], Intent],
    make_policies: Callable[[dict, set[str]], dict[str, Policy]],
    load_adapters: Callable[[list[Path]], tuple[dict[str, Adapter], set[str]]],
    find_prompts: Callable[[list[Path]], dict[str, str]],
    make_worker: Callable[[dict], WorkerSettings],
) -> Loaded:
    """Each sub-project's intents added to `intents` (qualified), its policies to `policies`, its own adapters
    and prompts to `adapters` and `prompts` (as PATH:NAME); every intent's deps resolved in place."""
    subs: list[Sub] = []
    workers: dict[str, WorkerSettings] = {}  # folder -> its own [worker]
    files: dict[str, str] = {}  # folder -> its file as shown
    own_names: dict[str, set[str]] = {}
    raw_deps: dict[str, tuple[str, list]] = {}  # qualified -> (folder, deps as written)
    outside: dict[str, list[tuple[int, str, str, str]]] = {}  # qualified -> inputs leaving its folder, and where
    patterns = include_of(data) or []
    folders = _folders(reader, root, shown, patterns)
    for folder in folders:
        inner = tuple(f for f in folders if f.startswith(folder + "/"))  # a sub-project inside this one's folder
        fence = Folders(str(root / folder))  # where its folders lead once links are followed
        reader.sources.extend(str(root / folder / d) for d in ("adapters", "prompts", "regexes"))
        sub_shown, sub = reader.read_toml(root / folder / "intents.toml")
        files[folder] = sub_shown
        if sub is None:
            continue
        project = sub.get("project")
        for key in sorted(project) if isinstance(project, dict) else ():
            if key != "default":
                reader.problem(
                    sub_shown,
                    toml_path(["project", key]),
                    f"a sub-project's [project] holds only 'default'; '{key}' is the root's ({shown}) to set",
                )
        for table in ROOT_ONLY:
            if table in sub:
                reader.problem(
                    sub_shown,
                    toml_path([table]),
                    f"[{table}] is set once for the whole repository, in the root's {shown}; remove it here",
                )
        checked = {k: v for k, v in sub.items() if k not in ("project", *ROOT_ONLY)}
        failed = reader.validate(sub_shown, checked, "intents.json") if "intent" in checked else []
        if "intent" not in checked or not isinstance(checked.get("intent"), dict):
            reader.problem(sub_shown, "", "a sub-project's intents.toml needs [intent.NAME] tables", None)
            continue
        broken = {
            section: {str(parts[1]) for parts in failed if len(parts) > 1 and parts[0] == section}
            for section in ("intent", "policy")
        }
        if isinstance(sub.get("worker"), dict) and not any(parts[:1] == ["worker"] for parts in failed):
            # its own worker for its agent steps; its replays beside its intents.toml, as the root's are beside its
            worker = make_worker(sub["worker"])
            if not posixpath.isabs(worker.replays_dir):
                worker = worker._replace(replays_dir=posixpath.normpath(f"{folder}/{worker.replays_dir}"))
            workers[folder] = worker
        declared = sub["policy"] if isinstance(sub.get("policy"), dict) else {}
        for name, policy in make_policies(declared, broken["policy"]).items():
            if name in declared:
                scope = []
                for i, pattern in enumerate(policy.scope):
                    path, away = _moved(folder, pattern, inner)
                    if away is not None:
                        where = f"{toml_path(['policy', name])}.scope[{i}]"
                        reader.problem(sub_shown, where, f"path '{pattern}' {away}; keep it inside {folder}/", pattern)
                    scope.append(path)
                policies[qualified(folder, name)] = policy._replace(name=qualified(folder, name), scope=tuple(scope))
        sub_adapters: dict[str, Adapter] = {}
        if (root / folder / "adapters").is_dir():
            seen, _broken = load_adapters([BUILTIN_DIR / "adapters", root / "adapters", root / folder / "adapters"])
            own = f"{folder}/adapters/"  # as problems name the file it came from
            sub_adapters = {n: a for n, a in seen.items() if a.source.startswith(own)}
            adapters.update({qualified(folder, n): a for n, a in sub_adapters.items()})
        sub_prompts = find_prompts([root / folder / "prompts"])
        prompts.update({qualified(folder, n): path for n, path in sub_prompts.items()})
        tables = sub["intent"]
        own_names[folder] = set(tables)
        for own, table in tables.items():
            name = qualified(folder, own)
            if own in broken["intent"] or not isinstance(table, dict):
                continue
            moved, away_paths = moved_table(folder, inner, table)
            away_paths += _linked_out(fence, folder, table, away_paths)
            for field, i, value, path, away in away_paths:
                if field == "exclude" and not path.startswith("../"):
                    continue  # leaves out what it reads of another's: nothing it reads or writes
                if field == "inputs" and not path.startswith("../"):
                    outside.setdefault(name, []).append((i, value, path, away))  # checked once deps are known
                elif field == "cwd":
                    where = f"{_intent_path(own)}.cwd"
                    reader.problem(sub_shown, where, f"folder '{value}' {away}; keep it inside {folder}/", value)
                else:
                    reader.problem(
                        sub_shown,
                        f"{_intent_path(own)}.{field}[{i}]",
                        f"path '{value}' {away}: a sub-project declares {field} inside its own folder"
                        + (
                            "; another sub-project's files are read as the inputs or outputs of an intent it depends on"
                            if field == "inputs"
                            else ""
                        ),
                        value,
                    )
            deps = table.get("deps")
            raw_deps[name] = (folder, list(deps) if isinstance(deps, list) else [])
            intent = make_intent(sub_shown, own, moved)
            intents[name] = intent._replace(  # deps are resolved below, once every sub-project's names are known
                name=sys.intern(name),
                policy=qualified(folder, intent.policy) if intent.policy in declared else intent.policy,
                prompt=qualified(folder, intent.prompt) if intent.prompt in sub_prompts else intent.prompt,
                adapter=qualified(folder, intent.adapter) if intent.adapter in sub_adapters else intent.adapter,
            )
        default = project.get("default") if isinstance(project, dict) else None
        if isinstance(default, str) and default not in tables:
            reader.problem(
                sub_shown,
                "project.default",
                f"unknown intent '{default}'{did_you_mean(default, tables)}: a sub-project's default names one "
                "of its own intents",
            )
            default = None
        subs.append(Sub(folder, sub_shown, qualified(folder, default) if isinstance(default, str) else None))
    names = set(root_names) | {qualified(f, n) for f, theirs in own_names.items() for n in theirs}
    by_own: dict[str, list[str]] = {}
    for folder, theirs in own_names.items():
        for n in theirs:
            by_own.setdefault(n, []).append(qualified(folder, n))

    def place(name: str) -> tuple[str, str]:
        folder, own = split(name)
        return (files.get(folder, shown), _intent_path(own)) if folder else (shown, _intent_path(name))

    for name, intent in list(intents.items()):
        folder, wrote = raw_deps.get(name, ("", list(intent.deps)))
        file, where = place(name)
        deps = []
        for i, dep in enumerate(wrote):
            found = resolve_dep(dep, folder, names, root_names, own_names.get(folder, set()), by_own)
            if isinstance(found, str):
                deps.append(found)
            else:
                reader.problem(file, f"{where}.deps[{i}]", found[0], dep)
        intents[name] = intent._replace(deps=tuple(sys.intern(d) for d in deps))
    links = Folders(str(root), tuple((f, None) for f in folders))  # where another's files lie, links followed
    for name, reaching in outside.items():
        file, where = place(name)
        for i, value, path, away in reaching:
            why = _unread(path, intents[name], intents, links)
            if why is not None:
                reader.problem(file, f"{where}.inputs[{i}]", f"path '{value}' {away} and {why}", value)
    # what decides which folders are sub-projects, and their own adapters, prompts and regexes: in the compiled
    # spec's fingerprint, so a new sub-project or a new adapter file there compiles again
    reader.sources.extend(p for p in watched_folders(root, patterns) if p not in reader.sources)
    return Loaded(subs, place, names, workers)


_WAY_OUT = "add the intent that makes or reads it to deps"
_READS_ONLY = (
    f"a sub-project reads another's files only as the declared inputs or outputs of an intent in its deps; {_WAY_OUT}"
)


def _unread(path: str, reader: Intent, intents: dict[str, Intent], links: Folders) -> str | None:
    """Why `reader`, a sub-project's intent, may not read `path` (an input of its, made the root's, out of its
    folder), as the rest of a problem's sentence; None when an intent in its deps declares every file it names,
    as an output or as an input (less what that one's `exclude` leaves out, unless `reader` leaves it out too),
    in the folder that declares it once links are followed. Reading is not writing: the files are the reader's
    own inputs, in its key, and its writes stay in its folder."""
    folder = split(reader.name)[0]
    deps = [intents[d] for d in reader.deps if d in intents]
    own = split(reader.name)[1]

    def shown(pattern: str) -> str:
        return f"'{posixpath.relpath(pattern, folder)}'"

    covered = any(covers(out, path) for dep in deps for out in dep.outputs)
    left_out: list[tuple[Intent, str]] = []
    for dep in deps if not covered else ():
        for pattern in dep.inputs:
            if not covers(pattern, path):
                continue
            literal = GLOB_CHARS.isdisjoint(path)
            taken = [
                x
                for x in ([] if GLOB_CHARS.isdisjoint(pattern) else dep.exclude)
                if (matches(path, x) if literal else may_overlap(path, x))
                and (literal or not any(covers(mine, x) for mine in reader.exclude))
            ]
            if not taken:
                covered = True
                break
            left_out += [(dep, x) for x in taken]
        if covered:
            break
    if not covered and left_out:
        dep, x = left_out[0]
        way = "remove it" if GLOB_CHARS.isdisjoint(path) else f"exclude {shown(x)} here too"  # a literal is kept
        return f"reads what {dep.name} leaves out of its inputs ({shown(x)}): {way}, or {_WAY_OUT}"
    if not covered:
        near = [
            f"{dep.name} {verb} {', '.join(shown(p) for p in near)}"
            for dep in deps
            for verb, patterns in (("reads", dep.inputs), ("makes", dep.outputs))
            if (near := [p for p in patterns if may_overlap(path, p)])
        ]
        if near:
            return (
                f"names more than the intents '{own}' depends on declare there ({'; '.join(near)}): narrow it to "
                "what they declare, or add the intent that makes or reads the rest to deps"
            )
        return f"is no declared input or output of an intent '{own}' depends on: {_READS_ONLY}"
    why = links.reached(path, reader.exclude)
    if why is not None:
        return f"{why}: a sub-project reads another's files only where they lie (remove the link)"
    return None


def edited_intent(
    spec, folder: str, own: str, table: dict, make_intent: Callable[[str, dict], Intent]
) -> Intent | None:
    """The intent `own` of `folder`'s intents.toml ("" for the root's) as its edited `table` makes it, named and
    resolved as a full load makes it (its paths moved, its policy, prompt, adapter and deps named), for an edit
    that keeps the graph (compiled._recompiled, load.edited_intents); None where only the full load may say what
    is wrong (a path leaving its folder, a dep that names nothing)."""
    moved = table
    if folder:
        inner = tuple(f for f, _default in spec.subprojects if f.startswith(folder + "/"))
        moved, away = moved_table(folder, inner, table)
        if any(field not in _READ_FIELDS or path.startswith("../") for field, _i, _value, path, _where in away):
            return None
    intent = make_intent(own, moved)
    names = spec.intents
    prefix = f"{folder}:"
    root_names = {n for n in names if ":" not in n}
    theirs = {n[len(prefix) :] for n in names if n.startswith(prefix)} if folder else set()
    deps_written = table.get("deps")
    wrote: list = deps_written if isinstance(deps_written, list) else []
    bare = {d for d in wrote if isinstance(d, str) and ":" not in d and d not in root_names} if not folder else set()
    by_own = {d: [n for n in names if n.endswith(f":{d}")] for d in bare}
    deps = []
    for dep in wrote:
        found = resolve_dep(dep, folder, names, root_names, theirs, by_own)
        if not isinstance(found, str):
            return None
        deps.append(sys.intern(found))
    was = spec.intents.get(qualified(folder, own) if folder else own)
    if was is not None and was.exclude != intent.exclude:
        return None  # what a sub-project may read of it, or reads of another's, hangs on it (_unread): a full load
    if not folder:
        return intent._replace(deps=tuple(deps))
    return intent._replace(
        name=sys.intern(qualified(folder, own)),
        deps=tuple(deps),
        policy=f"{prefix}{intent.policy}" if f"{prefix}{intent.policy}" in spec.policies else intent.policy,
        prompt=f"{prefix}{intent.prompt}" if f"{prefix}{intent.prompt}" in spec.prompts else intent.prompt,
        adapter=f"{prefix}{intent.adapter}" if f"{prefix}{intent.adapter}" in spec.adapters else intent.adapter,
    )


def resolve_dep(
    dep: str,
    folder: str,
    names: Collection[str],
    root_names: set[str],
    own: set[str],
    by_own: dict[str, list[str]],
) -> str | tuple[str]:
    """The intent a dep written in `folder`'s file names (qualified), or (the problem,). In a sub-project a bare
    name is its own intent's; at the root, the root's, else the one sub-project intent of that name."""
    if not isinstance(dep, str):
        return (f"'{dep}' is not an intent's name",)
    if dep.startswith(":") and ":" not in dep[1:]:
        if dep[1:] in root_names:
            return dep[1:]
        return (
            f"unknown intent '{dep}': the root's intents.toml has no intent '{dep[1:]}'"
            f"{did_you_mean(dep[1:], root_names)}",
        )
    if ":" in dep:
        if dep in names:
            return dep
        return (f"unknown intent '{dep}'{did_you_mean(dep, names)}",)
    if folder:
        if dep in own:
            return qualified(folder, dep)
        return (
            f"unknown intent '{dep}' in {folder}/{did_you_mean(dep, own)}: a bare name is an intent of this "
            "sub-project; write :NAME for the root's, PATH:NAME for another sub-project's",
        )
    if dep in root_names:
        return dep
    claimed = by_own.get(dep, [])
    if len(claimed) == 1:
        return claimed[0]
    if claimed:
        return (
            f"'{dep}' is an intent of {len(claimed)} sub-projects ({', '.join(sorted(claimed))}) and not of the "
            "root: name the one meant",
        )
    return (f"unknown intent '{dep}'{did_you_mean(dep, names)}",)


def sub_default(subs, folder: str) -> str | None:
    return next((s.default for s in subs if s.folder == folder), None)
