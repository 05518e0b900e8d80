"""The compiled project: spec, topological order and each step's static digest, cached between runs.

A warm command checks the stat of every file the spec came from and reuses the pickle, so an
unchanged project is neither re-parsed nor re-validated (and jsonschema and networkx stay unimported).
The per-step tables a run reads whole (order, dependencies, static digests, declared files) are kept as
marshal, which loads twice as fast as pickle; intents and key ingredients are decoded one at a time, when
a step is decided, so an edit in a 10,000-step project decodes the few hundred steps downstream of it.
"""

from __future__ import annotations

import marshal
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import __version__
from .keys import GLOB_CHARS, digest_bytes, digest_value
from .spec import BUILTIN_DIR, STEP_AGENT, Intent, Spec, runs_always
from .workspace import Layout

_FORMAT = 6
_WATCHED_DIRS = ("adapters", "prompts", "regexes")


class LazyTable(Mapping):
    """name -> value, each value decoded from its own bytes the first time it is asked for."""

    def __init__(self, blobs: dict[str, bytes], decode):
        self._blobs = blobs
        self._decode = decode
        self._values: dict = {}

    def __getitem__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            value = self._values[name] = self._decode(self._blobs[name])
            return value

    def __contains__(self, name) -> bool:
        return name in self._blobs

    def __iter__(self):
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)


def _intent(blob: bytes) -> Intent:
    return Intent._make(marshal.loads(blob))


@dataclass
class Compiled:
    spec: Spec
    order: list[str]  # every intent, topologically sorted (deterministic)
    deps: dict[str, tuple[str, ...]]
    static: dict[str, str]  # intent -> digest of everything but its files and dependencies
    parts: Mapping[str, dict[str, str]] = field(default_factory=dict)  # intent -> digest per ingredient
    sources: list[str] = field(default_factory=list)  # files and folders the spec depends on
    static_replay: dict[str, str] = field(default_factory=dict)  # static digest without the worker part
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # intent -> its inputs, then outputs
    agents: frozenset[str] = frozenset()  # agent steps
    # steps no stat snapshot can prove up to date: they run every time, or a glob could match a new file
    unprovable: frozenset[str] = frozenset()

    def __getstate__(self) -> dict:
        intents = {name: marshal.dumps(tuple(intent)) for name, intent in self.spec.intents.items()}
        parts = {name: marshal.dumps(value) for name, value in self.parts.items()}
        tables = (self.order, self.deps, self.static, self.static_replay, self.sources, self.declared, self.agents,
                  self.unprovable, intents, parts)
        return {"spec": replace(self.spec, intents={}), "tables": marshal.dumps(tables)}

    def __setstate__(self, state: dict) -> None:
        (self.order, self.deps, self.static, self.static_replay, self.sources, self.declared, self.agents,
         self.unprovable, intents, parts) = marshal.loads(state["tables"])
        self.spec = replace(state["spec"], intents=LazyTable(intents, _intent))
        self.parts = LazyTable(parts, marshal.loads)


def _watched(root: Path, sources) -> list[str]:
    return list(sources) + [str(root / d) for d in _WATCHED_DIRS] + [str(BUILTIN_DIR / d) for d in _WATCHED_DIRS]


def _fingerprint(root: Path, sources) -> tuple:
    stats = []
    for path in _watched(root, sources):
        try:
            st = os.stat(path)
            stats.append((path, st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            stats.append((path, None))
    return (_FORMAT, __version__, tuple(stats))


def _file_digest(path: str | None) -> str | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return digest_bytes(f.read())


def _regex_files(spec: Spec, families: set[str]) -> list[str]:
    found = []
    for family in sorted(families):
        for folder in (Path(spec.root) / "regexes", BUILTIN_DIR / "regexes"):
            candidate = folder / f"{family}.toml"
            if candidate.is_file():
                found.append(str(candidate))
                break
    return found


def _resolved(spec: Spec, name: str):
    from .adapters import resolve
    from .errors import UserError

    try:
        return resolve(name, Path(spec.root), spec.adapters)
    except UserError:
        return None  # `auto` that detects nothing: the step says so when it runs


def _evidence_files(root: Path, adapter) -> list[str]:
    """What detection looked at, so the cache of this compiled spec notices a new lock file or package.json edit."""
    names = set(adapter.markers)
    for v in adapter.variants:
        names.update(v.files)
        names.update(f for f, _text in v.contains)
    return [str(root)] + sorted(str(root / n) for n in names if not any(ch in n for ch in "*?["))


def _static_parts(spec: Spec, name: str) -> tuple[dict[str, str], list[str]]:
    """Digest per key ingredient (the names appear in `explain` and in the reasons)."""
    intent = spec.intents[name]
    parts = {"definition": digest_value(intent.definition())}
    extra_sources: list[str] = []
    if intent.prompt:
        parts["prompt"] = _file_digest(spec.prompts.get(intent.prompt)) or ""
    if intent.adapter:
        resolved = _resolved(spec, intent.adapter)
        if resolved is not None:
            # the commands as they run here: variant (uv or pip, jest or vitest) and vars applied
            commands = sorted((n, c.run, list(c.parse)) for n, c in resolved.commands.items())
            parts["adapter"] = digest_value([resolved.adapter.name, list(resolved.variants), commands])
            files = _regex_files(spec, {f for _n, _r, parse in commands for f in parse})
            if files:
                parts["regexes"] = digest_value([_file_digest(f) for f in files])
                extra_sources += files
            extra_sources += _evidence_files(Path(spec.root), resolved.adapter)
    if intent.kind == STEP_AGENT:
        w = spec.worker
        parts["worker"] = digest_value([w.kind, w.model, list(w.fallback_models), w.base_url])
        p = spec.policies[intent.policy]
        parts["policy"] = digest_value([p.write_files, p.run_shell, p.network, list(p.scope)])
    return parts, extra_sources


def compile_spec(spec: Spec) -> tuple[Compiled, list[str]]:
    from .graph import spec_order

    order = spec_order(spec)
    parts, static, static_replay, sources = {}, {}, {}, list(spec.sources)
    for name in order:
        p, extra = _static_parts(spec, name)
        parts[name] = p
        static[name] = digest_value(p)
        static_replay[name] = digest_value({k: v for k, v in p.items() if k != "worker"})
        sources += extra
    intents = spec.intents
    deps = {name: intents[name].deps for name in order}
    declared = {name: intents[name].inputs + intents[name].outputs for name in order}
    agents = frozenset(name for name in order if intents[name].kind == STEP_AGENT)
    unprovable = frozenset(name for name in order if runs_always(intents[name])
                           or any(not GLOB_CHARS.isdisjoint(path) for path in declared[name]))
    watched = _watched(Path(spec.root), sources)
    return Compiled(spec=spec, order=order, deps=deps, static=static, parts=parts, sources=watched,
                    static_replay=static_replay, declared=declared, agents=agents, unprovable=unprovable), sources


def load_compiled(root: Path, use_cache: bool = True) -> Compiled:
    layout = Layout(root)
    if use_cache:
        try:
            with open(layout.spec_cache, "rb") as f:
                fingerprint = pickle.load(f)  # first and alone: a stale spec is not unpickled at all
                if fingerprint == _fingerprint(root, fingerprint_sources(fingerprint)):
                    return pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, KeyError):
            pass  # an older runner's file (another layout) is made again
    from .load import load_spec  # the cold path only: a warm run unpickles what it made

    spec = load_spec(root)
    compiled, sources = compile_spec(spec)
    fingerprint = _fingerprint(root, sources)
    if layout.state_dir.is_dir():
        _save(layout, fingerprint, compiled)
    else:  # a command that only reads leaves no .runner behind; `runner make` saves it once it made one
        _unsaved[str(root)] = (fingerprint, compiled)
    return compiled


_unsaved: dict[str, tuple] = {}


def save_unsaved(root: Path) -> None:
    """Keep the compiled spec of a first run (made before .runner existed) for the next full run."""
    pending = _unsaved.pop(str(root), None)
    if pending is not None:
        _save(Layout(root), *pending)


def fingerprint_sources(fingerprint: tuple) -> list[str]:
    n = len(_WATCHED_DIRS) * 2
    return [entry[0] for entry in fingerprint[2][:-n]] if len(fingerprint[2]) >= n else []


def _save(layout: Layout, fingerprint: tuple, compiled: Compiled) -> None:
    tmp = f"{layout.spec_cache}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            pickle.dump(fingerprint, f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(compiled, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, layout.spec_cache)
    except OSError:
        pass  # a read-only checkout still works, just without the warm path
