"""Toolchain adapters: load adapters/*.toml into spec.Adapter, detect them in a project, resolve their commands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from .errors import UsageError
from .spec import PLACEHOLDER, Adapter, AdapterCommand, AdapterVariant
from .suggest import did_you_mean

SCHEMA = "adapter.json"
_GLOB = set("*?[")


# ---- loading ---------------------------------------------------------------------------------


def _deep_merge(base: dict, over: dict) -> dict:
    """Tables merge key by key; anything else in `over` replaces what `base` had."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _commands(table: dict) -> tuple[AdapterCommand, ...]:
    return tuple(
        AdapterCommand(k, v["run"], tuple(v.get("parse", ())), tuple(v.get("reports", ())), tuple(v.get("runtime", ())))
        for k, v in table.items()
    )


def _build(data: dict, shown: str) -> Adapter:
    detect = data.get("detect", {})
    variants = tuple(
        AdapterVariant(
            name=vname,
            description=v.get("description", ""),
            group=v.get("group", ""),
            files=tuple(v.get("files", ())),
            contains=tuple((c["file"], c["text"]) for c in v.get("contains", ())),
            vars=tuple(v.get("vars", {}).items()),
            commands=_commands(v.get("commands", {})),
            keys=tuple((k["file"], k["key"], k.get("text", "")) for k in v.get("keys", ())),
        )
        for vname, v in data.get("variant", {}).items()
    )
    return Adapter(
        name=data["name"],
        source=shown,
        description=data.get("description", ""),
        markers=tuple(detect.get("files", ())),
        confidence=float(detect.get("confidence", 0.5)),
        commands=_commands(data.get("commands", {})),
        vars=tuple(data.get("vars", {}).items()),
        variants=variants,
        inputs=tuple(data.get("inputs", ())),
        runtime=tuple(data.get("runtime", ())),
        exclude=tuple(data.get("exclude", ())),
    )


def _check(data: dict, shown: str, families: set[str] | None, problem) -> bool:
    """What the schema cannot say: a command has `run` after merging, placeholders name vars, families exist."""
    ok = True
    if not data.get("commands"):
        problem(
            shown,
            "commands",
            f"adapter '{data['name']}' declares no commands: add [commands.test] "
            '(or extends = "NAME" to start from another adapter)',
        )
        ok = False
    known_vars = set(data.get("vars", {}))
    for v in data.get("variant", {}).values():
        known_vars |= set(v.get("vars", {}))
    tables = [("commands", data.get("commands", {}))]
    tables += [(f"variant.{n}.commands", v.get("commands", {})) for n, v in data.get("variant", {}).items()]
    lines = [(f"runtime[{i}]", r) for i, r in enumerate(data.get("runtime", ()))]  # shell lines that may name vars
    for where, table in tables:
        for cname, cmd in table.items():
            at = f"{where}.{cname}"
            if "run" not in cmd:
                problem(shown, at, f"command '{cname}' has no 'run' (the shell line to run)")
                ok = False
                continue
            lines += [(f"{at}.run", cmd["run"])] + [
                (f"{at}.runtime[{i}]", r) for i, r in enumerate(cmd.get("runtime", ()))
            ]
            for i, fam in enumerate(cmd.get("parse", ())):
                if families is not None and fam not in families:
                    problem(
                        shown,
                        f"{at}.parse[{i}]",
                        f"unknown regex family '{fam}'{did_you_mean(fam, families)}; "
                        f"known: {', '.join(sorted(families))}; a family of the project's own needs its file: "
                        f'create regexes/{fam}.toml holding family = "{fam}" (`runner learn` adds its patterns)',
                    )
                    ok = False
    for field, line in lines:
        for var in PLACEHOLDER.findall(line):
            if var not in known_vars:
                problem(
                    shown,
                    field,
                    f"'{{{var}}}' names no var{did_you_mean(var, known_vars)}; "
                    f"declare it under [vars] (known: {', '.join(sorted(known_vars)) or 'none'})",
                )
                ok = False
    return ok


def _families(dirs: list[Path]) -> set[str] | None:
    """Regex family names next to each adapters folder (regexes/FAMILY.toml): what `parse` may name."""
    found = {p.stem for d in dirs for p in (d.parent / "regexes").glob("*.toml")}
    return found or None  # no regexes folder at all: nothing to check against


def _passed(verdict) -> bool:
    """validate() says yes as True or as an empty list of failed paths (both shapes of load.py's reader)."""
    return verdict is True or (isinstance(verdict, list) and not verdict)


def _merge_extends(
    here: dict[str, tuple[str, dict]], earlier: dict[str, dict], problem: Callable
) -> dict[str, dict | None]:
    """Each adapter of one folder (`here`) merged over the one it extends, from this folder or an earlier one;
    None for one whose chain is broken (a cycle or an unknown parent, already reported)."""
    merged: dict[str, dict | None] = {}

    def merge(name: str, chain: tuple[str, ...] = ()) -> dict | None:
        if name not in merged:
            merged[name] = None  # a cycle back here finds None and stops
            shown, data = here[name]
            parent = data.get("extends")
            if not parent:
                merged[name] = data
                return data
            if parent in chain + (name,) and parent != name:
                problem(
                    shown,
                    "extends",
                    "adapters extend each other in a cycle: " + " -> ".join(chain + (name, parent)),
                )
                return None
            base = merge(parent, chain + (name,)) if parent in here and parent != name else earlier.get(parent)
            if base is None:
                if parent not in here:
                    problem(
                        shown,
                        "extends",
                        f"adapter '{name}' extends unknown adapter '{parent}'"
                        f"{did_you_mean(parent, set(earlier) | set(here))}",
                    )
                return None
            over = {k: v for k, v in data.items() if k != "extends"}
            merged[name] = _deep_merge({k: v for k, v in base.items() if k != "extends"}, over)
        return merged[name]

    for name in here:
        merge(name)
    return merged


def load_adapters(
    dirs: list[Path], read_toml: Callable, validate: Callable, problem: Callable, with_broken: bool = False
):
    """Every adapters/*.toml in dirs; a later folder's adapter replaces an earlier one of the same name.

    Returns {name: Adapter}; with `with_broken`, also the names whose file had a problem (already reported),
    so a reference to one is not reported again as unknown.

    `extends = "NAME"` starts from the adapter of that name loaded so far (from an earlier folder, or from
    this one) and merges this file over it table by table: a project changes one command without copying
    the rest.
    """
    families = _families(dirs)
    raw: dict[str, dict] = {}  # merged TOML data per adapter name, for extends
    adapters: dict[str, Adapter] = {}
    broken: set[str] = set()
    for folder in dirs:
        if not folder.is_dir():
            continue
        here: dict[str, tuple[str, dict]] = {}
        for path in sorted(folder.glob("*.toml")):
            shown, data = read_toml(path)
            if data is None or not _passed(validate(shown, data, SCHEMA)):
                broken.add(path.stem)
                continue
            if data["name"] != path.stem:
                problem(
                    shown,
                    "name",
                    f"adapter name '{data['name']}' does not match its file name {path.name}; rename one so they agree",
                )
                broken.add(path.stem)
                continue
            here[data["name"]] = (shown, data)
        merged = _merge_extends(here, dict(raw), problem)

        for name, (shown, _) in here.items():
            data = merged[name]
            if data is None or not _check(data, shown, families, problem):
                broken.add(name)
                continue
            broken.discard(name)
            raw[name] = data
            adapters[name] = _build(data, shown)
    return (adapters, broken) if with_broken else adapters


# ---- detection -------------------------------------------------------------------------------


class Detection(NamedTuple):
    """A toolchain found in a project: which adapter, which variants, how sure, and the files that say so.
    Named tuples here, not frozen dataclasses: importing dataclasses (and its inspect) cost every command
    that loads a spec ~6 ms."""

    adapter: str
    confidence: float
    evidence: tuple[str, ...]
    variants: tuple[str, ...] = ()

    @property
    def variant(self) -> str | None:
        return "+".join(self.variants) or None

    def to_json(self) -> dict:
        return {
            "adapter": self.adapter,
            "variant": self.variant,
            "variants": list(self.variants),
            "confidence": self.confidence,
            "evidence": list(self.evidence),
        }


def _present(root: Path, pattern: str) -> list[str]:
    if _GLOB.isdisjoint(pattern):
        return [pattern] if (root / pattern).exists() else []
    return sorted(str(p.relative_to(root)) for p in root.glob(pattern))[:3]


def _contains(root: Path, file: str, text: str) -> bool:
    try:
        with open(root / file, encoding="utf-8", errors="replace") as fh:
            return text in fh.read(1 << 20)  # a lock file can be huge; the evidence sits near the top
    except OSError:
        return False


def key_value(root: Path, file: str, key: str) -> object | None:
    """The value at a dotted key of a JSON or TOML file in root (package.json scripts.test), or None when the file
    or the key is missing or the file does not parse."""
    try:
        text = (root / file).read_text(encoding="utf-8", errors="replace")
        if file.endswith(".json"):
            value: object = json.loads(text)
        else:
            from . import toml_read

            value = toml_read.loads(text)
    except (OSError, ValueError):  # a TOML error is a ValueError too
        return None
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def variant_evidence(root: Path, v: AdapterVariant) -> tuple[str, str] | None:
    """(what says the variant applies, the file that says it), or None."""
    for pattern in v.files:
        found = _present(root, pattern)
        if found:
            return f"{found[0]} found", found[0]
    for file, text in v.contains:
        if _contains(root, file, text):
            return f"{file} mentions {text}", file
    for file, key, text in v.keys:
        value = key_value(root, file, key)
        if value is not None and (not text or text in str(value)):
            shown = f" ({json.dumps(value)})" if isinstance(value, str) else ""
            return f"{file} has {key}{shown}", file
    return None


def _variant_evidence(root: Path, v: AdapterVariant) -> str | None:
    found = variant_evidence(root, v)
    return found[0] if found else None


def detect(root: Path, adapters: dict[str, Adapter]) -> list[Detection]:
    """Every adapter whose marker files are in root, most confident first (then by name)."""
    root = Path(root)
    out: list[Detection] = []
    for adapter in adapters.values():
        found = [f for m in adapter.markers for f in _present(root, m)]
        if not found:
            continue
        evidence = [f"{', '.join(found)} found"]
        chosen: list[str] = []
        taken: set[str] = set()
        for v in adapter.variants:
            if v.group and v.group in taken:
                continue
            why = _variant_evidence(root, v)
            if why:
                chosen.append(v.name)
                if v.group:
                    taken.add(v.group)
                evidence.append(f"{why}: variant {v.name}" + (f" ({v.description})" if v.description else ""))
        for g in sorted({v.group for v in adapter.variants if v.group} - taken):
            tried = ", ".join(v.name for v in adapter.variants if v.group == g)
            evidence.append(f"{g}: no evidence for {tried}: the base commands")
        out.append(Detection(adapter.name, adapter.confidence, tuple(evidence), tuple(chosen)))
    out.sort(key=lambda d: (-d.confidence, d.adapter))
    return out


# ---- resolution ------------------------------------------------------------------------------


class Resolved(NamedTuple):
    """An adapter with its variants chosen: the commands as they will run in this project."""

    adapter: Adapter
    variants: tuple[str, ...]
    detection: Detection | None
    commands: dict[str, AdapterCommand]

    def command(self, name: str) -> AdapterCommand:
        try:
            return self.commands[name]
        except KeyError:
            raise UsageError(
                f"adapter '{self.adapter.name}' has no command '{name}'"
                f"{did_you_mean(name, self.commands)}; it has: {', '.join(self.commands)}"
            ) from None


def resolve(
    adapter: Adapter | str,
    root: Path,
    adapters: dict[str, Adapter] | None = None,
    variants: tuple[str, ...] | None = None,
) -> Resolved:
    """The commands to run: `adapter` is an Adapter, a name, or "auto" (the one detection is surest of).

    Variants are detected in root unless given. "auto" with two toolchains equally likely is refused:
    guessing would run the wrong test suite without a word.
    """
    adapters = adapters or {}
    root = Path(root)
    detection = None
    if adapter == "auto":
        found = detect(root, adapters)
        if not found:
            raise UsageError(
                f'adapter = "auto": no toolchain detected in {root} (known: '
                f'{", ".join(sorted(adapters))}); name one with adapter = "NAME"'
            )
        if len(found) > 1 and found[1].confidence == found[0].confidence:
            tied = [d.adapter for d in found if d.confidence == found[0].confidence]
            raise UsageError(
                f'adapter = "auto" is ambiguous in {root}: {", ".join(tied)} are detected with '
                f'confidence {found[0].confidence}; name one with adapter = "NAME"'
            )
        detection = found[0]
        adapter = adapters[detection.adapter]
    elif isinstance(adapter, str):
        if adapter not in adapters:
            raise UsageError(
                f"unknown adapter '{adapter}'{did_you_mean(adapter, adapters)}; known: {', '.join(sorted(adapters))}"
            )
        adapter = adapters[adapter]
    if variants is None:
        if detection is None:
            detection = next(iter(detect(root, {adapter.name: adapter})), None)
        variants = detection.variants if detection else ()
    else:
        for v in variants:
            if adapter.variant(v) is None:
                known = [x.name for x in adapter.variants]
                raise UsageError(
                    f"adapter '{adapter.name}' has no variant '{v}'{did_you_mean(v, known)}; "
                    f"it has: {', '.join(known) or 'none'}"
                )
    variants = tuple(variants)
    commands = {n: c for n in adapter.command_names(variants) if (c := adapter.command(n, variants)) is not None}
    return Resolved(adapter, variants, detection, commands)


def resolve_command(adapter: Adapter | None, name: str, root: Path) -> AdapterCommand | None:
    """One command of an adapter with the project's detected variants applied (for shell steps and verify)."""
    if adapter is None:
        return None
    found = next(iter(detect(Path(root), {adapter.name: adapter})), None)
    return adapter.command(name, found.variants if found else ())
