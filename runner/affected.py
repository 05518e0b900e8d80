"""What a change since a git commit affects (`--affected BASE`, as Nx's `affected` and Turborepo's
`--filter=...[BASE]`): the intents whose inputs, definition, adapter or prompt changed between BASE and the working
tree, and every intent that depends on one. It only narrows what is asked for; content keys still decide what runs.

A path counts as changed when `git diff BASE` names it (staged or not, deleted too) or git sees it untracked and
not ignored. An intent's definition is its `[intent.NAME]` table in the spec file as BASE held it; a change outside
the intent tables (`[worker]`, `[policy]`, `[project]`) affects every intent, as it may change any key.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from .errors import UsageError
from .globs import matches_any
from .spec import STEP_AGENT, STEP_AGGREGATE, Intent, Spec
from .toml_read import loads

GIT_TIMEOUT = 120.0
SHOWN = 3  # changed inputs named in a reason; the rest counted


class Affected(NamedTuple):
    base: str  # as typed
    commit: str  # what git resolved it to
    reasons: dict[str, list[str]]  # intent -> why it is affected; empty: it is not

    def names(self) -> list[str]:
        return [name for name, why in self.reasons.items() if why]

    def steps(self, spec: Spec) -> list[str]:
        """The affected intents that are steps: what `make --affected` names as its targets (an aggregate named
        would bring every one of its dependencies, affected or not)."""
        return [name for name in self.names() if spec.intents[name].kind != STEP_AGGREGATE]

    def to_json(self) -> dict:
        return {
            "base": self.base,
            "commit": self.commit,
            "intents": [{"intent": n, "affected": bool(why), "reasons": why} for n, why in self.reasons.items()],
        }

    def lines(self) -> list[str]:
        """`in    NAME  why` / `out   NAME  why` per intent, then the count."""
        out = []
        for name, why in self.reasons.items():
            said = "; ".join(why) if why else f"nothing it reads changed since {self.base}"
            out.append(f"{'in' if why else 'out':<5} {name}  {said}")
        count = len(self.names())
        out.append(f"{count} affected, {len(self.reasons) - count} not, since {self.base} ({self.commit[:12]})")
        return out


def affected(spec: Spec, order: Iterable[str], base: str) -> Affected:
    """Which of `order` (intents in dependency order: a dependency before its dependants) a change since `base`
    affects, and why."""
    root = Path(spec.root)
    spec_file = root / spec.file
    commit = _commit(root, base)
    changed = _changed(root, commit)
    defined = _definitions_changed(root, spec_file, commit, base) if _rel(spec_file, root) in changed else {}
    everything = defined.pop("", None)
    for folder, _default in spec.subprojects:  # a sub-project's file: its tables are its own intents' definitions
        if f"{folder}/intents.toml" in changed:
            theirs = _definitions_changed(root, root / folder / "intents.toml", commit, base)
            defined.update({(f"{folder}:{n}" if n else f"{folder}:"): why for n, why in theirs.items()})
    reasons: dict[str, list[str]] = {}
    for name in order:
        intent = spec.intents[name]
        why = [everything] if everything else []
        folder = name.rpartition(":")[0]
        if folder and f"{folder}:" in defined:  # its file changed outside its intents' tables
            why.append(defined[f"{folder}:"])
        if name in defined:
            why.append(defined[name])
        inputs = [p for p in changed if matches_any(p, intent.inputs) and not matches_any(p, intent.exclude)]
        if inputs:
            more = f" (+{len(inputs) - SHOWN} more)" if len(inputs) > SHOWN else ""
            why.append(f"input changed: {', '.join(inputs[:SHOWN])}{more}")
        files = [p for p in changed if _shapes(p, intent)]
        if files:
            why.append(f"its {'file' if len(files) == 1 else 'files'} changed: {', '.join(files)}")
        deps = [dep for dep in intent.deps if reasons.get(dep)]
        if deps:
            why.append(f"depends on {', '.join(deps)}, affected")
        reasons[name] = why
    return Affected(base, commit, reasons)


def _shapes(path: str, intent: Intent) -> bool:
    """Whether a changed path is a project file that shapes the intent besides its inputs: its adapter's file, its
    prompt template (and the candidates the learning loop keeps beside it), and, for an agent step, the project's
    regexes (their findings are quoted in its retry prompts). A sub-project's intent reads its own folder's first,
    then the root's."""
    home = intent.name.rpartition(":")[0]
    if home and path.startswith(f"{home}/"):
        path = path[len(home) + 1 :]
    folder, _, name = path.partition("/")
    if folder == "adapters" and intent.adapter is not None:
        return name == f"{intent.adapter.rpartition(':')[2]}.toml"
    if folder == "prompts" and intent.prompt is not None:
        return name.startswith(f"{intent.prompt.rpartition(':')[2]}.")
    return folder == "regexes" and intent.kind == STEP_AGENT


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"error: --affected needs git, which could not run: {exc}") from None


def _commit(root: Path, base: str) -> str:
    if _git(root, "rev-parse", "--show-toplevel").returncode != 0:
        raise UsageError(f"error: --affected {base}: {root} is not in a git repository; it compares with a commit")
    found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(
            f"error: --affected {base}: git knows no commit '{base}' (a branch, a tag or a commit id; in a shallow CI "
            f"clone, fetch it first: `git fetch --depth=1 origin {base}`)"
        )
    return found.stdout.decode().strip()


def _changed(root: Path, commit: str) -> list[str]:
    """The project's paths (relative to its root) that differ from `commit` in the working tree, or that git sees
    untracked and not ignored."""
    diff = _git(root, "diff", "--name-only", "-z", "--no-renames", "--relative", commit, "--")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
    for proc in (diff, untracked):
        if proc.returncode != 0:
            said = proc.stderr.decode(errors="replace").strip().splitlines()
            raise UsageError(f"error: --affected: git could not list the changes: {said[-1] if said else 'failed'}")
    paths = {p for proc in (diff, untracked) for p in proc.stdout.decode(errors="surrogateescape").split("\0") if p}
    return sorted(paths)


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def _definitions_changed(root: Path, spec_file: Path, commit: str, base: str) -> dict[str, str]:
    """intent -> why its table changed since `commit`; under "" the reason every intent is affected, when the spec
    changed outside its intent tables (or was not there, or could not be read, at `commit`)."""
    prefix = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
    rel = _rel(spec_file, root)
    then = _git(root, "show", f"{commit}:{prefix}{rel}")
    now = loads(spec_file.read_text(encoding="utf-8"))
    if then.returncode != 0:
        return {"": f"{rel} is new since {base}"}
    try:
        old = loads(then.stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {"": f"{rel} could not be read as {base} held it"}
    outside = sorted(k for k in set(old) | set(now) if k != "intent" and old.get(k) != now.get(k))
    if outside:
        return {"": f"{rel} changed outside its intents: [{'], ['.join(outside)}]"}
    old_intents, new_intents = old.get("intent", {}), now.get("intent", {})
    where = f"{rel}: " if "/" in rel else ""  # a sub-project's file named: its intents' names are its own
    return {
        name: (
            f"{where}[intent.{name}] changed" if name in old_intents else f"{where}[intent.{name}] is new since {base}"
        )
        for name, table in new_intents.items()
        if old_intents.get(name) != table
    }
