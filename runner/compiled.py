"""The compiled project: spec, topological order and each step's static digest, cached between runs under its
fingerprint (the stats and digests of the files it came from); its table format is runner/compiled_table.py.

A warm command checks the stat of every file the spec came from and reuses the file, so an unchanged
project is neither re-parsed nor re-validated (and jsonschema and networkx stay unimported): shortcuts 3-5
of runner.freshness, whose docstring states the rule it keeps. Each step's
record (its intent, dependencies, dependants, declared files, static digests) is marshal bytes in one blob
after the pickled header, and the file is mapped: a run decodes the records of the steps it looks at, so
an edit in a 10,000-step project reads its few hundred steps, not the whole table. An edit of a few intents'
tables that leaves the graph as it was makes only their records again (_recompiled).
"""

from __future__ import annotations

import hashlib
import marshal
import mmap
import os
import pickle
import time
from pathlib import Path
from typing import NamedTuple

from . import __version__
from .compiled_table import _COLUMNS, Compiled, _Column, _graph
from .globs import GLOB_CHARS
from .index_file import PackedTable, give_back_memory, map_file, replacing, write_marshal
from .keys import content_digest, digest_bytes, digest_value
from .libraries import regex_dirs
from .memory import key_parts as memory_parts
from .names import home, split
from .spec import BUILTIN_DIR, STEP_AGENT, STEP_AGGREGATE, STEP_SHELL, Spec, env_refs, runs_always, worker_of
from .stat_cache import NEVER, stat_of, vouches
from .workspace import Layout

_FORMAT = 29  # 29: a sub-project's own regexes/ in its steps' regex part (libraries.py)
# 28: the sub-projects [project] include names (spec.subprojects); the tables of each intents file
# 27: the spec's [telemetry] table (spec.TelemetrySettings)
# 26: each step's runtime commands (runtimes; runner/toolchain.py)
# 25: an agent step's worker part holds what decides the answer, not base_url (spec.answer_parts)
# 24: a document's digest made of its intents' tables' digests (toml_read.document_digests)
# 23: the positions of each step's dependencies and declared paths (Compiled.graph)
# 22: the digests of the spec files' documents (a comment keeps the compilation)
# 21: the digests of the spec files as read (reused by content after a touch)
# 20: each step's fingerprint (edited_since); 15: an intent's memory and scope; 16: [executor] and
# [cache] in the spec; 17: executor.hermetic; 18: the project's root in the fingerprint; 19: the tables' keys'
# positions in sorted order
# 14: the aggregates; 13: the candidate patterns (gates) in the header; 12: exclude, outputs, env
_WATCHED_DIRS = ("adapters", "prompts", "regexes")


class Fingerprint(NamedTuple):
    """What a compilation is saved under, first in its file and unpickled alone (as a plain tuple: a file another
    runner wrote reads the same), so a stale compilation is found without unpickling the rest."""

    format: int  # _FORMAT: another layout is compiled again
    version: str  # runner's own
    root: str  # the project's root: a copied project (cp -a keeps every mtime) is not run against the original's
    paths: list[str]  # the files the spec came from (and the folders watched: _watched)
    stats: list  # their stats as compiled; NEVER where too fresh to vouch for the bytes read
    read: list[str | None]  # the digest of each file's bytes as the loader read them; None: not read by it
    parsed: list[str | None]  # the digest of the TOML document each one read as (toml_read.document_digests)


def _watched(root: Path, sources) -> list[str]:
    return list(sources) + [str(root / d) for d in _WATCHED_DIRS] + [str(BUILTIN_DIR / d) for d in _WATCHED_DIRS]


def _stats(paths: list[str]) -> list:
    stats: list = []
    for path in paths:
        try:
            stats.append(stat_of(os.stat(path)))
        except OSError:
            stats.append(None)
    return stats


def _racy(paths: list[str], stats: list, taken_ns: int, read: list[str | None]) -> dict[str, str | None]:
    """path -> content digest of each file modified within the racy window of `taken_ns`, whose stats do
    not vouch for what was read: the digest of the bytes read where the loader read the file itself (`read`),
    else taken now, just after the compile (only a rewrite during the compile itself, in the clock tick of an
    earlier write, could differ from the bytes read)."""
    return {
        p: d or content_digest("/", p)
        for p, s, d in zip(paths, stats, read, strict=True)
        if s and not vouches(s, taken_ns)
    }


def _unchanged(
    paths: list[str], stats: list, now: list, read: list, parsed: list, documents: dict
) -> list[str | None] | None:
    """The digests of the spec files' bytes as they are now (`read` as it stands for the files that kept their
    stats) if every file whose stats moved since the compile (or that was saved too fresh to vouch for,
    NEVER) still reads as the loader read it, else None. The same bytes: a touch, a checkout that put the
    same bytes back, the run after an edit saved within the racy window (git answers a racily clean entry the
    same way, by content). Or, for a TOML file the loader read, other bytes that read as the same document
    (`parsed`): a comment, a blank line, spacing; the loader makes the same spec of the same documents. A file
    the loader did not read itself (a folder of adapters, a prompt) must keep its stats. A document found to
    differ is left in `documents` (_same_document), for the compile that follows to read it from there."""
    now_read = list(read)
    for i, (path, was, is_, digest) in enumerate(zip(paths, stats, now, read, strict=True)):
        if was == is_:
            continue
        if digest is None or is_ is None:
            return None
        if content_digest("/", path) == digest:
            continue
        now_read[i] = _same_document(path, parsed[i], documents)
        if now_read[i] is None:
            return None
    return now_read


def _same_document(path: str, parsed: str | None, documents: dict) -> str | None:
    """The digest of the bytes of the TOML file at `path` if they read as the document whose digest is `parsed`;
    None if they do not (the document is then left in `documents`, as load_spec takes it: the compile would
    read it again, ~0.7 s at 100,000 steps) or cannot be read (the compile that follows says why)."""
    if parsed is None:
        return None
    from .toml_read import document_digests, loads  # rtoml: only when a spec file's bytes changed

    try:
        with open(path, "rb") as f:
            raw = f.read()
        document = loads(raw.decode("utf-8-sig"))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError and TOMLDecodeError are ValueErrors
        return None
    digest, now = digest_bytes(raw), document_digests(document)
    if now is not None and now[0] == parsed:
        return digest
    documents[path] = (digest, document, now)
    return None


def _reused(cache_file: str, f, fingerprint: Fingerprint, now: list, read: list, began: int) -> Compiled:
    """The compiled spec whose file `f` is open past its fingerprint, its files found to read as they did
    although their stats moved (_unchanged), `read` the digests of their bytes now. The file is saved again with
    the stats of now once they vouch for those bytes, so the next run compares stats only; until then the proof
    keeps their digests (spec_kept), and where the bytes are new ones (the same document), it is saved at once,
    those stats as NEVER: the next run compares the new bytes, not the document."""
    start = f.tell()
    compiled = _mapped(f)
    paths = fingerprint.paths
    compiled.spec_stats = now
    kept = compiled.spec_kept = {p: d for p, s, d in zip(paths, now, read, strict=True) if s and not vouches(s, began)}
    compiled.spec_read = _read_by_path(paths, read)
    if not kept or read != fingerprint.read:
        stats = [NEVER if p in kept else s for p, s in zip(paths, now, strict=True)]
        tmp = f"{cache_file}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as out:
                again = tuple(fingerprint._replace(stats=stats, read=read))
                pickle.dump(again, out, protocol=pickle.HIGHEST_PROTOCOL)
                f.seek(start)
                while chunk := f.read(1 << 22):
                    out.write(chunk)
            os.replace(tmp, cache_file)
        except OSError:  # read-only: the next run compares by content again
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return compiled


def _read_by_path(paths: list[str], read: list[str | None]) -> dict[str, str]:
    return {path: digest for path, digest in zip(paths, read, strict=True) if digest is not None}


def _file_digest(path: str | None) -> str | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return digest_bytes(f.read())


def _regex_files(spec: Spec, families: set[str], folder: str = "") -> list[str]:
    """The files that make these families for a step of `folder` (its sub-project's own, the root's, else the
    built-in one): a change in any of them may change what the step's key holds of them."""
    from .libraries import family_files

    return [path for family in sorted(families) for path in family_files(spec.root, folder, family)]


def _resolved(spec: Spec, intent):
    from .adapters import resolve
    from .errors import UserError

    try:  # a sub-project's intent: its variants detected in its folder (names.home)
        return resolve(intent.adapter, Path(home(spec.root, intent.name)), spec.adapters)
    except UserError:
        return None  # `auto` that detects nothing: the step says so when it runs


def _evidence_files(root: Path, adapter) -> list[str]:
    """What detection looked at, so the cache of this compiled spec notices a new lock file or package.json edit."""
    names = set(adapter.markers)
    for v in adapter.variants:
        names.update(v.files)
        names.update(f for f, _text in v.contains)
        names.update(f for f, _key, _text in v.keys)
    return [str(root)] + sorted(str(root / n) for n in names if not any(ch in n for ch in "*?["))


def _library(spec: Spec, loaded: dict, folder: str = ""):
    """The regex library as the steps of `folder` see it (the built-in families, the root's, then the sub-project's
    own), loaded once per compile and folder (`loaded` is the compile's own); a sub-project without a regexes/
    folder shares the root's."""
    from .parse import load_library

    if folder and not os.path.isdir(os.path.join(spec.root, folder, "regexes")):
        folder = ""
    libraries = loaded.setdefault("libraries", {})
    if folder not in libraries:
        libraries[folder] = load_library(regex_dirs(spec.root, folder))
    return libraries[folder]


def _gate_entry(pattern) -> tuple:
    """What a run needs of a candidate pattern: its name, stage and weight, and the digest of its definition
    (an agent step in a canary's slice has it in its key)."""
    return (pattern.family, pattern.name, pattern.stage, pattern.weight, digest_value(pattern.definition()))


def _static_parts(spec: Spec, name: str, gated: list, loaded: dict) -> tuple[dict[str, str], list[str]]:
    """Digest per key ingredient (the names appear in `explain` and in the reasons). `gated` gets the gate entries
    (_gate_entry) of the candidate patterns (shadow, canary) of the families the step's adapter commands are read
    with, and of the canary variants of an agent step's prompt."""
    intent = spec.intents[name]
    parts = {"definition": digest_value(intent.definition())}
    extra_sources: list[str] = []
    if intent.prompt:
        parts["prompt"] = _file_digest(spec.prompts.get(intent.prompt)) or ""
        if intent.kind == STEP_AGENT:  # its variants in canary: in the key of the steps whose slice uses one
            from .prompts import candidates_file, read_candidates

            extra_sources.append(str(candidates_file(spec.root, intent.prompt)))
            for candidate in read_candidates(spec.root, intent.prompt):
                if candidate.stage == "canary":
                    gated.append(
                        (
                            f"prompt:{candidate.prompt}",
                            candidate.name,
                            "canary",
                            candidate.weight,
                            digest_value(candidate.text),
                        )
                    )
    from .identify import own_families

    resolved = _resolved(spec, intent) if intent.adapter else None
    # the commands as they run here (variant and vars applied); a plain run line is read by its tool's own family
    commands = sorted((n, c.run, list(c.parse)) for n, c in resolved.commands.items()) if resolved else []
    runs = [r for _n, r, _p in commands] or ([intent.run] if intent.kind == STEP_SHELL and not intent.adapter else [])
    folder = split(name)[0]  # a sub-project's step reads its folder's regexes/ first
    families = sorted({f for *_nr, parse in commands for f in parse} | own_families(spec.root, runs, folder))
    if files := _regex_files(spec, set(families), folder) if families else []:
        # what the patterns find, not the bytes: a comment or a candidate of the learning loop changes no key
        library = _library(spec, loaded, folder)
        parts["regexes"] = library.digest(families := [f for f in families if f in library.families])
        extra_sources += files
        gated.extend(_gate_entry(p) for f in families for p in library.family(f).candidates())
    from .toolchain import static_part  # its runtime commands; what they print is added as it is decided (plan.py)

    static_part(intent, resolved, parts, loaded.setdefault("runtimes", {}))
    if resolved is not None:
        parts["adapter"] = digest_value([resolved.adapter.name, list(resolved.variants), commands])
        extra_sources += _evidence_files(Path(home(spec.root, name)), resolved.adapter)
    if intent.kind == STEP_AGENT:
        w = worker_of(spec, name)  # its sub-project's own [worker], else the root's
        parts["worker"] = digest_value(w.answer_parts())
        p = spec.policies[intent.policy]
        parts["policy"] = digest_value([p.write_files, p.run_shell, p.network, list(p.scope)])
        parts.update(memory_parts(intent))  # one part per field, so a reason can say which one changed
    return parts, extra_sources


def _static_digests(parts: dict[str, str]) -> tuple[str, str]:
    """(static, static_replay) of a step's static parts: the second without the worker part, which only agent
    steps have to leave out."""
    static = digest_value(parts)
    return static, digest_value({k: v for k, v in parts.items() if k != "worker"}) if "worker" in parts else static


def compile_spec(spec: Spec) -> tuple[Compiled, list[str]]:
    from .graph import spec_order

    order = spec_order(spec)
    parts, static, static_replay, sources = {}, {}, {}, list(spec.sources)
    gates: dict[str, tuple] = {}
    loaded: dict = {}
    for name in order:
        gated: list = []
        p, extra = _static_parts(spec, name, gated, loaded)
        if gated:
            gates[name] = tuple(gated)
        parts[name] = p
        static[name], static_replay[name] = _static_digests(p)
        sources += extra
    intents = spec.intents
    deps = {name: intents[name].deps for name in order}
    dependants: dict[str, list[str]] = {name: [] for name in order}
    declared_by: dict[str, list[str]] = {}
    for name in order:
        for dep in deps[name]:
            dependants[dep].append(name)
    declared = {name: intents[name].inputs + intents[name].outputs for name in order}
    for name in order:
        for path in declared[name]:
            declared_by.setdefault(path, []).append(name)
    agents = frozenset(name for name in order if intents[name].kind == STEP_AGENT)
    aggregates = frozenset(name for name in order if intents[name].kind == STEP_AGGREGATE)
    unprovable = frozenset(
        name
        for name in order
        if runs_always(intents[name]) or any(not GLOB_CHARS.isdisjoint(path) for path in declared[name])
    )
    watched = _watched(Path(spec.root), sources)
    graph = _graph(order, deps, declared, {path: i for i, path in enumerate(declared_by)})
    return Compiled(
        spec,
        order,
        watched,
        deps=deps,
        static=static,
        parts=parts,
        static_replay=static_replay,
        declared=declared,
        agents=agents,
        aggregates=aggregates,
        unprovable=unprovable,
        dependants={name: tuple(names) for name, names in dependants.items()},
        declared_by={path: tuple(names) for path, names in declared_by.items()},
        token=os.urandom(8).hex(),
        produced=tuple(dict.fromkeys(path for name in order for path in intents[name].outputs)),
        env_names=tuple(sorted({ref for name in order for _k, v in intents[name].env for ref in env_refs(v)})),
        gates=gates,
        runtimes=loaded.get("runtimes") or None,
        fingerprints=b"".join(_fingerprint(static[name], deps[name]) for name in order),
        graph=graph,
    ), sources


FINGERPRINT = 16  # bytes of sha256: a step the edit changed is told from one it did not with 2**-128 odds


def _fingerprint(static: str, deps: tuple[str, ...]) -> bytes:
    """What a step's key takes from the compiled spec: its static digest (definition, declared files, prompt,
    adapter, regexes, worker, policy) and its dependencies in their order (keys.step_key)."""
    return hashlib.sha256("\0".join((static, *deps)).encode()).digest()[:FINGERPRINT]


def edited_since(compiled: Compiled, order: list[str]) -> set[str]:
    """The steps of `order` whose key takes something else from this compilation than from the one it replaced
    (`previous`), or that one had not: all of them when there was none."""
    now = compiled.fingerprints
    was = compiled.previous[1] if compiled.previous is not None else b""
    if len(now) != len(was) or len(now) != FINGERPRINT * len(compiled.order):
        return set(order)
    step = FINGERPRINT
    edited = {
        name
        for i, name in enumerate(compiled.order)
        if now[i * step : i * step + step] != was[i * step : i * step + step]
    }
    return edited.intersection(order)


def _aligned(previous: tuple[str, list[str], bytes] | None, order: list[str]) -> tuple[str, bytes] | None:
    """The replaced compilation's (token, fingerprints) in this one's `order`, zeros for a step it had not."""
    if previous is None:
        return None
    token, old_order, fingerprints = previous
    if len(fingerprints) != FINGERPRINT * len(old_order):
        return None
    if old_order == order:  # an edit that kept every step (_recompiled)
        return token, fingerprints
    step = FINGERPRINT
    by_name = {name: fingerprints[i * step : i * step + step] for i, name in enumerate(old_order)}
    none = bytes(step)
    return token, b"".join(by_name.get(name, none) for name in order)


def load_compiled(root: Path, use_cache: bool = True, spec_file: str = "intents.toml") -> Compiled:
    """The compiled spec: reused while every file it came from holds the stats it was compiled from, each
    of them older than the compile by more than the racy window, or, where a file's stats moved (or were too
    fresh to keep), the bytes its loader read or other bytes of the same document (_unchanged); else compiled
    again, and saved with the stats of files too fresh to vouch for what was read replaced by ones no file has
    (NEVER)."""
    layout = Layout(root)
    cache_file = layout.spec_cache_of(spec_file)
    previous = None
    documents: dict = {}  # spec files parsed already (_same_document), for load_spec
    # the compilation an edit replaces, its fingerprint, the stats now and when their check began (_recompiled)
    stale: tuple[Compiled, Fingerprint, list, int] | None = None
    if use_cache:
        try:
            with open(cache_file, "rb") as f:
                saved = pickle.load(f)  # first and alone: a stale spec is not unpickled at all
                # its root too: a copied project (cp -a keeps every mtime) would otherwise find the original's
                # spec files unchanged at their absolute paths and run against the original's root
                if saved[:3] == (_FORMAT, __version__, str(root)):
                    fingerprint = Fingerprint._make(saved)
                    now = _stats(fingerprint.paths)
                    if fingerprint.stats == now:
                        compiled = _mapped(f)
                        compiled.spec_stats = fingerprint.stats
                        compiled.spec_read = _read_by_path(fingerprint.paths, fingerprint.read)
                        return compiled
                    began = time.time_ns()
                    was = fingerprint
                    now_read = _unchanged(was.paths, was.stats, now, was.read, was.parsed, documents)
                    if now_read is not None:
                        return _reused(cache_file, f, fingerprint, now, now_read, began)
                    stale = (_mapped(f), fingerprint, now, began)
                    previous = (stale[0].token, stale[0].order, stale[0].fingerprints)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, KeyError, IndexError):
            pass  # an older runner's file (another layout) is made again
    if stale is not None:
        spliced = _recompiled(root, cache_file, *stale, documents)
        if spliced is not None:
            return spliced
        del stale
    from .load import load_spec  # the cold path only: a warm run unpickles what it made

    began = time.time_ns()  # before the first read: an edit while the spec is read is inside the window
    digests: dict = {}
    spec = load_spec(root, spec_file, documents, digests)
    documents.clear()
    give_back_memory(len(spec.intents))  # the parsed document, gone now: ~35 MB at 100,000 steps
    compiled, _sources = compile_spec(spec)
    fingerprint = _fingerprinted(root, compiled, began, previous)
    tables = _tables_by_file(spec, digests)
    if not layout.state_dir.is_dir():  # a command that only reads leaves no .runner behind; `runner make`
        _unsaved[str(root)] = (cache_file, fingerprint, compiled, tables)  # saves it once it made one
        return compiled
    _save(cache_file, fingerprint, compiled, tables)
    del spec  # the compiled spec holds it too: once that is read back, neither is held any longer
    compiled = _read_back(cache_file, fingerprint, compiled)
    give_back_memory(len(compiled.order))
    return compiled


def _fingerprinted(root: Path, compiled: Compiled, began: int, previous: tuple | None) -> Fingerprint:
    """What a compilation is saved under (and its spec_stats, spec_kept, spec_read and previous, set): the stats
    and digests of the files it came from, as read since `began`."""
    read_digests, document_digests = dict(compiled.spec.read), dict(compiled.spec.parsed)
    read = [read_digests.get(path) for path in compiled.sources]
    parsed = [document_digests.get(path) for path in compiled.sources]
    compiled.spec_stats = _stats(compiled.sources)
    compiled.spec_kept = _racy(compiled.sources, compiled.spec_stats, began, read)
    compiled.spec_read = _read_by_path(compiled.sources, read)
    compiled.previous = _aligned(previous, compiled.order)
    # a file too fresh for its stats to vouch for what was read is saved with stats no file has: the compiled
    # spec is reused only once its bytes are found the same (_unchanged), else it names itself to the next one
    kept = compiled.spec_kept
    stats = [NEVER if p in kept else s for p, s in zip(compiled.sources, compiled.spec_stats, strict=True)]
    return Fingerprint(_FORMAT, __version__, str(root), compiled.sources, stats, read, parsed)


def _recompiled(
    root: Path, cache_file: str, old: Compiled, fingerprint: Fingerprint, now: list, began: int, documents: dict
) -> Compiled | None:
    """The compilation after an edit of some intents' tables in the intents file that leaves what every other
    intent and the graph read of them as it was (load.edited_intents), every other file as it was: `old`, the
    compilation it replaces, with those steps' records made again and every other record's bytes copied. None
    for any other edit, for the full compile to follow. Its result is the full compile's but for the token
    (a property test says so: tests/core/test_recompile.py)."""
    from .toml_read import TABLE_DIGEST  # rtoml: the spec file was read again already

    spec = old.spec
    files = _spec_files(spec)  # the intents files: the root's, and each sub-project's ("" and its folder)
    if len(documents) != 1 or next(iter(documents)) not in files:
        return None
    spec_path = next(iter(documents))
    folder = files[spec_path]
    paths, stats, read, parsed = (fingerprint.paths, fingerprint.stats, fingerprint.read, fingerprint.parsed)
    if documents[spec_path][2] is None or spec_path not in paths:
        return None
    digest, document, digests = documents[spec_path]
    others = [i for i, path in enumerate(paths) if path != spec_path]

    def of_others(column: list) -> list:
        return [column[i] for i in others]

    others_read = _unchanged(of_others(paths), of_others(stats), of_others(now), of_others(read), of_others(parsed), {})
    if others_read is None:
        return None  # another file changed too: an adapter, a prompt, a regex family
    kept = _tables_of(cache_file, old.token)
    was = kept.get(spec_path) if kept is not None else None
    if was is None or was[0] != digests[1] or len(was[1]) != len(digests[2]):
        return None  # not the same intents in the same order, or something else in the file changed
    size, now_tables, was_tables = TABLE_DIGEST, digests[2], was[1]
    names = [
        name
        for k, name in enumerate(document["intent"])
        if now_tables[k * size : k * size + size] != was_tables[k * size : k * size + size]
    ]
    from .load import edited_intents

    intents = edited_intents(spec, document, names, folder) if names else None
    if intents is None:
        return None
    del document
    documents.clear()  # the parsed document, not needed any longer: ~100 MB at 100,000 steps
    edited = spec._replace(intents=intents)  # what _static_parts reads of the spec, with these steps as edited
    records: PackedTable = spec.intents._records  # type: ignore[attr-defined]
    position = {name: i for i, name in enumerate(old.order)}
    gates, fingerprints = dict(old.gates), bytearray(old.fingerprints)
    values: dict[str, tuple] = {}
    loaded: dict = {}
    for name, intent in intents.items():
        gated: list = []
        parts, _extra = _static_parts(edited, name, gated, loaded)  # the same files: kind, prompt, adapter kept
        static, static_replay = _static_digests(parts)
        _was, deps, dependants, declared, *_rest = records[name]
        values[name] = (tuple(intent), deps, dependants, declared, static, static_replay, parts)
        gates.pop(name, None)
        if gated:
            gates[name] = tuple(gated)
        at = position[name] * FINGERPRINT
        fingerprints[at : at + FINGERPRINT] = _fingerprint(static, deps)
    if gates.keys() != old.gates.keys():  # in `order`, as compile_spec makes them
        gates = {name: gates[name] for name in old.order if name in gates}
    table = records.replaced(values)
    # the bytes each file holds now (another TOML file may hold other bytes of the same document: _unchanged)
    read_now = {path: d for path, d in zip(of_others(paths), others_read, strict=True) if d is not None}
    read_now[spec_path] = digest
    compiled = Compiled(
        spec._replace(
            intents=_Column(table, 0),
            read=tuple((path, read_now.get(path, d)) for path, d in spec.read),
            parsed=tuple((path, digests[0] if path == spec_path else d) for path, d in spec.parsed),
        ),
        old.order,
        old.sources,
        **{name: _Column(table, index) for index, name in enumerate(_COLUMNS, start=1)},  # type: ignore[arg-type]
        declared_by=old.declared_by,
        agents=old.agents,
        unprovable=old.unprovable,
        token=os.urandom(8).hex(),
        produced=old.produced,
        env_names=old.env_names,
        gates=gates,
        runtimes={**old.runtimes, **loaded.get("runtimes", {})},
        aggregates=old.aggregates,
        fingerprints=bytes(fingerprints),
        graph=old.graph,
    )
    fingerprint = _fingerprinted(root, compiled, began, (old.token, old.order, old.fingerprints))
    assert kept is not None  # was is one of its entries
    _save(cache_file, fingerprint, compiled, {**kept, spec_path: digests[1:]})
    return _read_back(cache_file, fingerprint, compiled)


def _tables_of(cache_file: str, token: str) -> dict | None:
    """intents file -> (digest of all but the intents' tables, each table's digest) of the files the compilation
    named `token` was made from (the root's and each sub-project's), kept beside it (_save); None if there is none
    for that compilation."""
    try:
        with open(f"{cache_file}.tables", "rb") as f:
            kept = marshal.load(f)  # plain values: a damaged file reads as an error or as other values, no more
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == token and isinstance(kept[1], dict):
        return kept[1]
    return None


def _spec_files(spec: Spec) -> dict[str, str]:
    """The path of each intents file of the spec -> the sub-project folder it is in ("" for the root's)."""
    root = Path(spec.root)
    return {str(root / spec.file): "", **{str(root / f / "intents.toml"): f for f, _default in spec.subprojects}}


def _tables_by_file(spec: Spec, digests: dict) -> dict | None:
    """What _tables_of reads back, from the document_digests of the files load_spec read."""
    found = {path: digests[path][1:] for path in _spec_files(spec) if digests.get(path) is not None}
    return found or None


_unsaved: dict[str, tuple] = {}


def save_unsaved(root: Path) -> Compiled | None:
    """Keep the compiled spec of a first run (made before .runner existed) for the next full run; the same spec
    as read back from that file (the caller's to use from now on), or None if there was none to keep."""
    pending = _unsaved.pop(str(root), None)
    if pending is None:
        return None
    _save(*pending)
    return _read_back(*pending[:3])


def _read_back(cache_file: str, fingerprint: Fingerprint, compiled: Compiled) -> Compiled:
    """The compiled spec just saved, as read back from its file: packed and mapped, as every later run has it,
    instead of the dicts it was made in (~2 KB a step: at 100,000 steps the clean build ran with ~190 MB more
    than the runs after it). Where it cannot be read back, the one in memory."""
    try:
        with open(cache_file, "rb") as f:
            if pickle.load(f) == tuple(fingerprint):
                packed = _mapped(f)
                packed.spec_stats, packed.spec_kept = compiled.spec_stats, compiled.spec_kept
                packed.spec_read = compiled.spec_read
                return packed
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, KeyError):
        pass
    return compiled


def _mapped(f) -> Compiled:
    """The compiled spec whose file `f` is open at its header (past the fingerprint), its records mapped."""
    header = pickle.load(f)
    start = f.tell()
    mapped = map_file(f)
    # the file's pages a clean build reads (every step's record: 50 MB at 100,000 steps) count in the run's
    # memory until they are handed back; read again, they come from the page cache
    release = (lambda: mapped.madvise(mmap.MADV_DONTNEED)) if hasattr(mmap, "MADV_DONTNEED") else None
    return Compiled.unpacked(header, memoryview(mapped)[start:], release)


def _save(cache_file: str, fingerprint: Fingerprint, compiled: Compiled, tables: dict | None = None) -> None:
    """The compiled spec's file, written whole and then put in place; beside it, `tables` (each intents file's
    document_digests but the first), for the next edit of some intents (_recompiled). Not written (a read-only
    checkout, a full disk), the next run compiles again: no half-written copy is left (index_file.replacing)."""
    if tables is not None:
        try:
            write_marshal(f"{cache_file}.tables", (compiled.token, tables))
        except OSError:
            pass  # the next edit compiles in full
    try:
        with replacing(cache_file) as f:
            header, blobs = compiled.packed()
            pickle.dump(tuple(fingerprint), f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(header, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.writelines(blobs)
    except OSError:
        pass
