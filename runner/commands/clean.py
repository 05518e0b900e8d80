"""`runner clean [TARGET]... [-n]`: remove the files shell steps declare as outputs, and nothing else.

What it may remove: a file that the `outputs` of a shell step of the targets (every intent when none is named)
expand to, by the one glob meaning (runner/globs.py). What it never removes, whatever the spec says:
- a file that a step reads (an input), unless that step depends on the shell step that makes it (a product
  handed down a chain of steps): an output glob that also names a source some other step reads does not
  make the source a product; and an agent step's outputs, the project's own files changed by a verified
  apply (often edited in place), so they stay;
- a path outside the project once symbolic links are followed (an output folder that links elsewhere), or
  under `.git/` or `.runner/`; a sub-project's output outside its own folder once links are followed;
- a folder (only files are removed; a link is removed as a link, never what it points to).
The next `runner make` restores what it removed from the cache, or runs the steps whose cached copy is gone.
"""

from __future__ import annotations

import os

from . import SPEC_FILE, Command, Invocation, echo, flag, print_json, targets_argument

_NEVER = (".git", ".runner")  # top-level folders no clean reaches into


def plan_clean(spec, order: list[str]) -> tuple[list[str], list[dict], dict[str, str]]:
    """(the files to remove, the declared outputs kept, each with why, and the sub-project folder of the step
    declaring each file to remove)."""
    from ..globs import expand, matches_any
    from ..names import split
    from ..spec import STEP_SHELL

    root = spec.root
    real_root = os.path.realpath(root)
    intents = spec.intents
    readers = [(n, intents[n].inputs) for n in intents if intents[n].inputs]
    remove: list[str] = []
    owners: dict[str, str] = {}  # a file to remove -> the sub-project folder whose step declares it ("": the root)
    kept: list[dict] = []
    seen: dict[str, set[str]] = {}
    for name in order:
        intent = intents[name]
        folder = split(name)[0]  # a sub-project's: its outputs are removed only inside its folder
        for rel in expand(root, intent.outputs):
            why = None
            if intent.kind != STEP_SHELL:
                why = f"an output of agent step {name}: the project's own file, changed by a verified apply"
            else:
                strangers = [
                    r for r, inputs in readers if matches_any(rel, inputs) and name not in _upstream(spec, r, seen)
                ]
                if strangers:
                    why = f"an input of step {strangers[0]}, which does not depend on {name}"
                else:
                    why = _outside(root, real_root, rel) or _outside_sub(root, folder, rel)
            if why is None and os.path.lexists(os.path.join(root, rel)):
                if os.path.isdir(os.path.join(root, rel)) and not os.path.islink(os.path.join(root, rel)):
                    why = "a folder"
                else:
                    remove.append(rel)
                    owners[rel] = folder
            elif why is not None and os.path.lexists(os.path.join(root, rel)):
                kept.append({"path": rel, "reason": why})
    return sorted(set(remove)), kept, owners


def _upstream(spec, name: str, seen: dict[str, set[str]]) -> set[str]:
    """Every step `name` depends on, directly or not (`seen`: those worked out already)."""
    found = seen.get(name)
    if found is None:
        found = set()
        for dep in spec.intents[name].deps:
            found |= {dep} | _upstream(spec, dep, seen)
        seen[name] = found
    return found


def _outside(root: str, real_root: str, rel: str) -> str | None:
    """Why the file at `rel` must not be touched: its folder, links followed, is not inside the project or is
    under .git/ or .runner/; None when it may be removed."""
    folder = os.path.realpath(os.path.dirname(os.path.join(root, rel)))
    if folder != real_root and not folder.startswith(real_root + os.sep):
        return f"its folder leads outside the project (to {folder})"
    inside = os.path.relpath(os.path.join(folder, os.path.basename(rel)), real_root).split(os.sep)
    if inside[0] in _NEVER or ".git" in inside[:-1]:
        return f"under {'.git' if '.git' in inside[:-1] else inside[0]}/"
    return None


def _outside_sub(root: str, folder: str, rel: str) -> str | None:
    """Why a file a sub-project's step (of `folder`) declares must not be touched: its folder, links followed,
    is not inside the sub-project's; None for the root's steps, and when it is."""
    if not folder:
        return None
    real_folder = os.path.realpath(os.path.join(root, folder))
    real = os.path.realpath(os.path.dirname(os.path.join(root, rel)))
    if real != real_folder and not real.startswith(real_folder + os.sep):
        return f"its folder leads outside {folder}/ (to {real})"
    return None


def run(inv: Invocation, targets: tuple[str, ...], spec_file: str | None, dry_run: bool) -> None:
    from ..graph import resolve_targets, selected_order
    from ..pipeline import load_project
    from ..workspace import ProjectLock

    project = load_project(inv.directory, spec_file=spec_file)
    # none named: every intent's outputs (in a sub-project's folder, its own)
    chosen = resolve_targets(project.spec, project.typed(targets)) if targets or project.here else None
    order = selected_order(project.compiled, chosen)
    lock = None
    if not dry_run:  # not while a `runner make` writes them
        lock = ProjectLock(project.layout, "runner clean")
        lock.acquire(wait=True)
    try:
        remove, kept, owners = plan_clean(project.spec, order)
        removed = remove if dry_run else _remove(project.spec.root, remove, owners)
    finally:
        if lock is not None:
            lock.release()
    if inv.as_json:  # {"dry_run": false, "removed": [...], "kept": [...]}; with -n "would_remove" for "removed"
        print_json({"dry_run": dry_run, "would_remove" if dry_run else "removed": removed, "kept": kept})
        return
    verb = "would remove" if dry_run else "removed"
    for rel in removed:
        echo(f"{verb} {rel}")
    for item in kept:
        echo(f"kept {item['path']}: {item['reason']}")
    n = len(removed)
    echo(f"{verb} {n} file{'s' if n != 1 else ''}" + (f", kept {len(kept)}" if kept else ""))


def _remove(root: str, paths: list[str], owners: dict[str, str]) -> list[str]:
    removed = []
    real_root = os.path.realpath(root)
    for rel in paths:
        # checked again as it goes: a folder swapped for a link since
        if _outside(root, real_root, rel) or _outside_sub(root, owners.get(rel, ""), rel):
            continue
        try:
            os.unlink(os.path.join(root, rel))  # a link goes, never what it points to
        except FileNotFoundError:
            continue
        removed.append(rel)
    return removed


COMMAND = Command(
    "clean",
    "Remove the files shell steps declare as outputs; -n lists them.\n\nThe outputs of TARGETS and what they "
    "depend on, else of every intent; never an input, an agent step's output, or a path outside the project.",
    (
        targets_argument(),
        SPEC_FILE,
        flag("-n", "--dry-run", dest="dry_run", help="List what would be removed; remove nothing."),
    ),
    run,
)
