"""`runner list`: the targets a project offers, with their descriptions (as `just --list`); shell completion's
source of target names."""

from __future__ import annotations

from pathlib import Path

from ..globs import GLOB_CHARS
from . import SPEC_FILE, Command, Invocation, echo, print_json


def targets(spec) -> list[dict]:
    """Every intent, by name: what it is, what it says it does, what it needs and what it makes."""
    out = []
    defaults = {spec.project.default, *(default for _folder, default in spec.subprojects)}
    for name in sorted(spec.intents):
        intent = spec.intents[name]
        out.append(
            {
                "name": name,
                "kind": intent.kind,
                "description": intent.description,
                "default": name in defaults,
                "deps": list(intent.deps),
                "outputs": list(intent.outputs),
            }
        )
    return out


def completions(directory: Path, spec_file: str | None, incomplete: str) -> list[tuple[str, str]]:
    """(value, description) for each target starting with `incomplete`: the intents, and once something is
    typed, the output paths intents declare (`runner make build/<TAB>`)."""
    from ..pipeline import load_project

    project = load_project(directory, spec_file=spec_file)
    spec = project.spec
    found = [(t["name"], t["description"]) for t in targets(spec) if t["name"].startswith(incomplete)]
    if project.here:  # in a sub-project's folder, its own intents by their bare names too
        own = f"{project.here}:"
        mine = [(t["name"][len(own) :], t["description"]) for t in targets(spec) if t["name"].startswith(own)]
        found = [(n, d) for n, d in mine if n.startswith(incomplete)] + found
    if incomplete:
        paths = {out for t in targets(spec) for out in t["outputs"] if GLOB_CHARS.isdisjoint(out)}
        found += [(path, "") for path in sorted(paths) if path.startswith(incomplete)]
    return found


def run(inv: Invocation, spec_file: str | None) -> None:
    from ..pipeline import load_project

    spec = load_project(inv.directory, spec_file=spec_file).spec
    found = targets(spec)
    if inv.as_json:
        print_json({"project": spec.project.name, "default": spec.project.default, "targets": found})
        return
    width = max((len(t["name"]) for t in found), default=0)
    echo(f"Targets of {spec.project.name} ({spec.file}); `runner make TARGET` builds one:")
    for t in found:
        about = t["description"] or _summary(t)
        echo(f"  {t['name']:<{width}}  {' '.join(w for w in (about, _whose(spec, t)) if w)}".rstrip())


def _whose(spec, target: dict) -> str:
    """Which default a target is: the project's, or a sub-project's (the one `runner make` typed in its folder
    builds), so that a monorepo's list does not read as if it had several."""
    if not target["default"]:
        return ""
    if target["name"] == spec.project.default:
        return "(default)"
    folders = [folder for folder, default in spec.subprojects if default == target["name"]]
    return f"(default of {folders[0]}/)" if folders else "(default)"


def _summary(target: dict) -> str:
    """What a target without a description is, in a few words."""
    if target["kind"] == "aggregate":
        return f"[{' '.join(target['deps'])}]"
    return ""


COMMAND = Command(
    "list",
    "The targets, with their descriptions (the default marked).",
    (SPEC_FILE,),
    run,
)
