"""A person's edit to an agent step's output: found when the step is decided, kept as the intent's next version.

An agent step's outputs are the team's own source files, which people edit. When one holds other bytes than the
step's last good result (the state index) says, it is never written over: the edit becomes the intent's next
version, of kind "edit" (its record, its diff from the bytes before, a copy of its bytes under the version's
blobs, as runner/plans/versions.py reads every version), and the step's last good result takes the edited bytes
as its outputs, under the same key, as a rollback does: the step is up to date with them, a cache record under
the key holds them (a later deletion restores the person's version), and its dependants see new outputs. The
version record and the state index are written by the journaled apply (runner/apply.py), so a kill in the
middle is completed or undone as a whole at the next start. A deleted output is no edit: it is restored.

The decision is the rule (freshness.decide) applied to the last good result as the kept edit makes it, and said
before anything happens (`status`, `make -n`, `explain`). Where the key changed too, the rule may find a cached
result for the new key whose bytes differ from the edit: that is never restored over it; the step runs instead,
from the project with the edit in it (the edit kept first, so nothing is lost). A shell step's outputs are
products, restored as make would make them again: only agent steps keep edits.

With no last good result here (a team mate's fresh clone sharing a remote cache, or the state gone), there is no
version to compare with: a restore from the cache would write over whatever the work tree holds. An output that
differs from the record's, and whose bytes git does not hold as committed (modified, untracked, ignored, or no git
to ask), is a person's work: kept the same way, as version 1 when the intent has none. A committed one differs
only as the team left it at that commit, and is restored: `git checkout` brings its bytes back.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .cache import LastResult
from .freshness import RUN, UP_TO_DATE, Decision, decide, why_missed

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Set

    from .apply import Retirer
    from .plan import Planner

KIND = "edit"  # the kind of the version an edit becomes (runner history)
CACHED_KIND = "cache"  # a fresh clone's version 1 under a kept edit: the agent's, as the shared cache held it


class KeptEdit:
    """What deciding an agent step found edited: the version it becomes, and the last good result before and
    with the edit (key, outputs, pre-run digests of in-place inputs)."""

    __slots__ = ("number", "edits", "before", "result")

    def __init__(self, number: int, edits: dict[str, str], before: tuple, result: tuple):
        self.number = number
        self.edits = edits  # path -> the digest the output holds now
        self.before = before
        self.result = result


def edited_outputs(planner: Planner, name: str, outputs: Mapping[str, str | None]) -> dict[str, str]:
    """The outputs of the last good result that now hold other bytes (a missing one is no edit: restored)."""
    root, stat = planner.root, planner.stat
    edits = {}
    for path, want in outputs.items():
        have = stat.digest(root, path, name)
        if have is not None and want is not None and have != want:
            edits[path] = have
    return edits


def unrecorded_edits(planner: Planner, name: str, restore: Mapping[str, str]) -> dict[str, str]:
    """Of the outputs a restore would write over, with no last good result to compare them with, those that hold
    bytes git does not (modified, untracked or ignored, or no git to ask): a person's work, kept as an edit. A file
    git holds as committed is restored: nothing is lost that `git checkout` cannot bring back."""
    root, stat = planner.root, planner.stat
    there = {path: have for path in restore if (have := stat.digest(root, path, name)) is not None}
    if not there:
        return {}
    committed = _committed(root, sorted(there))
    return {path: have for path, have in there.items() if path not in committed}


def _committed(root: str, paths: list[str]) -> set[str]:
    """Those of `paths` (files under root) whose bytes git holds as committed: `git status` lists every other one
    (modified, staged, untracked, ignored). None of them when git cannot say (not a repository, no git)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # a look: the index is not refreshed (no index.lock taken)
    status = ["status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=all", "--no-renames", "--", *paths]
    said = []
    for args in (["rev-parse", "--show-prefix"], status):
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, env=env, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError):
            return set()
        if done.returncode != 0:
            return set()
        said.append(done.stdout.decode(errors="surrogateescape"))
    prefix = said[0].strip()  # the project's folder within the repository: status names paths from its top
    listed = [entry[3:] for entry in said[1].split("\0") if len(entry) > 3]
    # a folder listed whole (ending in /) stands for every file in it
    return {
        p for p in paths if not any(prefix + p == e or (e[-1] == "/" and (prefix + p).startswith(e)) for e in listed)
    }


def edit_reason(path: str, number: int) -> str:
    return f"output {path} edited: keep as version {number}"


def decide_agent(
    planner: Planner, name: str, dep_outputs: Mapping[str, str | None], pending: Set[str] = frozenset()
) -> Decision:
    """The rule for an agent step, with a person's edit of its outputs kept first (see above)."""
    last = planner.state.get(name)
    edits = edited_outputs(planner, name, last.outputs) if last else None
    fresh = False  # no last good result: the edit's base is the cache's record
    if not edits:
        plain = decide(planner, planner.ask(name, dep_outputs, last), dep_outputs, pending)
        if last is not None or not plain.restore:
            return plain
        # no last good result here (a team mate's fresh clone, the state gone): the work tree's bytes are the last
        # version there is, and a restore would destroy those no commit holds
        edits = unrecorded_edits(planner, name, plain.restore)
        if not edits:
            return plain
        assert plain.key is not None  # a restore is decided for a key
        last = LastResult(plain.key, dict(plain.outputs), plain.inplace)
        fresh = True
    assert last is not None
    result = LastResult(last.key, {**last.outputs, **edits}, last.inplace)
    decision = decide(planner, planner.ask(name, dep_outputs, result), dep_outputs, pending)
    number = next_version(_state_dir(planner), name)
    if fresh and number == 1:
        number = 2  # version 1 is the agent's, as the cache holds it: keep() records it under the edit
    said = [edit_reason(path, number) for path in sorted(edits)]
    over = sorted(path for path in edits if path in decision.restore)
    if over:  # a cached result of the new key holds other bytes: never written over the edit
        old = planner.cache.get_record(result.key)
        why = why_missed(
            old,
            planner.parts(name),
            planner.spec.intents[name],
            decision.inputs,
            decision.dep_digests,
            planner.toolchain(name),
        )
        said.append(f"the cached result for these inputs would overwrite {', '.join(over)}: run instead")
        decision = Decision(
            name,
            RUN,
            said + why,
            key=decision.key,
            inputs=decision.inputs,
            dep_digests=decision.dep_digests,
            inplace=decision.inplace,
            slice_key=decision.slice_key,
            seen=decision.seen,  # what its inputs were as its key was made: re-checked once it ran (inputs_held.py)
        )
    else:
        decision.reasons = said + [reason for reason in decision.reasons if reason != UP_TO_DATE]
    decision.kept = KeptEdit(number, edits, last, result)
    return decision


def edited_while_running(planner: Planner, name: str, paths: Iterable[str]) -> list[str]:
    """Of the files an agent step's change would write (`paths`), the outputs that hold other bytes than its last
    good result (a kept edit included) said as the step started: a person edited them while the agent worked, in
    the project, not in the copy the change was made in. Applying it would write over that edit."""
    from .keys import digest_file

    last = planner.state.get(name)
    if last is None:
        return []
    edited = []
    for rel in sorted(set(paths) & last.outputs.keys()):
        try:
            now: str | None = digest_file(planner.root + "/" + rel)
        except OSError:
            now = None  # deleted while it ran: the change writes it again, nothing of the person's is lost
        if now is not None and now != last.outputs[rel]:
            edited.append(rel)
    return edited


def not_applied_reason(edited: list[str], diff: str) -> str:
    """The words of an agent step whose output a person edited while it ran."""
    which = f"output {edited[0]}" if len(edited) == 1 else "outputs " + ", ".join(edited)
    return (
        f"{which} edited while the step ran: its change is not applied, so the edit stands (its diff: {diff}); "
        "the next `runner make` keeps the edit and runs the step again"
    )


def next_version(state_dir: Path, name: str) -> int:
    from .apply import version_numbers

    numbers = version_numbers(state_dir, name)
    return (numbers[-1] if numbers else 0) + 1


def _state_dir(planner: Planner) -> Path:
    return Path(planner.state.path).parent  # .runner/state: the state index sits in the state folder


def keep(planner: Planner, name: str, decision: Decision, run_id: str, retirer: Retirer | None = None) -> dict:
    """Record the edit the decision found as the intent's next version, with the state index's new last good
    result, in one journaled apply (the project's files are left as they are); the version record."""
    from .apply import apply_change, diff_stat, version_files, version_numbers, versions_dir
    from .attempt import Change, file_diff
    from .cache import StepRecord
    from .keys import digest_bytes

    kept = decision.kept
    assert kept is not None
    root, state_dir, cache = Path(planner.root), _state_dir(planner), planner.cache
    key, outputs, inplace = kept.result[0], dict(kept.result[1]), kept.result[2]
    folder = versions_dir(state_dir, name)
    datas: dict[str, bytes] = {}
    diffs = []
    for rel in sorted(kept.edits):
        was = kept.before[1][rel]
        try:
            data = (root / rel).read_bytes()
        except OSError:  # gone since it was decided: no edit of it left to keep (the next run restores it)
            outputs[rel] = was
            continue
        outputs[rel] = digest = digest_bytes(data)  # edited again since it was decided: these bytes
        datas[digest] = data
        diffs.append(file_diff(rel, _bytes(planner, folder, was), data))
    for rel in kept.edits:
        if rel in decision.outputs:  # what the step's state and its dependants take, once it is reported
            decision.outputs[rel] = outputs[rel]
    for rel, digest in outputs.items():  # every output's bytes among the version's own copies
        if digest is not None and digest not in datas and not _copied(folder, digest):
            copy = _bytes(planner, folder, digest, root / rel)
            if copy is not None:
                datas[digest] = copy
    numbers = version_numbers(state_dir, name)
    staged: dict[str, bytes] = {}
    first = _cached_version(planner, folder, name, kept) if not numbers and kept.number == 2 else None
    if first is not None:  # a fresh clone: the agent's version as the cache holds it, version 1, the edit's base
        record1, diff1, datas1 = first
        staged.update(version_files(state_dir, cache.mask.obj(record1), cache.mask.text(diff1), None, datas1))
        numbers = [1]
        files = dict(record1["files"])
    else:
        files = _files(folder, numbers[-1]) if numbers else {}  # the files its change wrote beside its outputs
    files.update((rel, d) for rel, d in outputs.items() if d is not None and (d in datas or _copied(folder, d)))
    record: dict = {
        "intent": name,
        "version": (numbers[-1] if numbers else 0) + 1,
        "kind": KIND,
        "run": run_id,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "key": key,
        "files": dict(sorted(files.items())),
        "created": [],
        "tokens": 0,
        "attempts": 0,
        "verified": False,  # a person's bytes: no verify command vouched for them
        "verify": [],
        "checkpoint": [],
    }
    edited = 1 if first is not None else next((n for n in reversed(numbers) if _holds(_files(folder, n), kept)), None)
    if edited is not None:
        record["edits"] = edited  # the version whose bytes the person edited
    diff = cache.mask.text("".join(diffs))
    record["diffstat"] = diff_stat(diff)
    # a later deletion restores the person's bytes, not the agent's. Kept here only: the shared cache says what
    # a step makes of its key for everyone, and an edit is no product of the key
    old = cache.get_record(key)
    step = StepRecord(name, key, outputs, old.ingredients if old else {}, created=time.time(), run_id=run_id)
    cache.put_many(datas, [step], share=False)
    planner.state.set(name, key, outputs, inplace)
    staged.update(version_files(state_dir, cache.mask.obj(record), diff, None, datas))
    staged[Path(planner.state.path).name] = planner.state.file_bytes()
    apply_change(root, state_dir, Change(), f"{run_id}-{name}-{KIND}", staged, retirer)
    planner.state.saved_with_journal()
    return record


def keep_restored(
    planner: Planner,
    name: str,
    decision: Decision,
    before: Mapping[str, bytes | None],
    run_id: str,
    retirer: Retirer | None = None,
) -> dict | None:
    """An agent step's outputs just restored from the cache (its own, or a team mate's through the shared one)
    recorded as the intent's next version, of kind "cache", when its latest version does not hold those bytes:
    `runner history` then says where the files came from (the run that made them), and `runner rollback` can go
    back over them (to the bytes `before` held, copied among the version's own). A deleted output restored to what
    the latest version holds is no new version. Journaled as an edit is; None when nothing was recorded."""
    from .apply import apply_change, diff_stat, version_files, version_numbers, versions_dir
    from .attempt import Change, file_diff
    from .keys import digest_bytes

    root, state_dir, cache = Path(planner.root), _state_dir(planner), planner.cache
    folder = versions_dir(state_dir, name)
    numbers = version_numbers(state_dir, name)
    files = _files(folder, numbers[-1]) if numbers else {}
    if all(files.get(rel) == digest for rel, digest in decision.restore.items()):
        return None
    datas: dict[str, bytes] = {}
    diffs, befores = [], {}
    for rel, digest in sorted(decision.restore.items()):
        was, data = before.get(rel), _bytes(planner, folder, digest, root / rel)
        if data is None:  # gone again since it was restored: the next run restores it, or runs the step
            return None
        diffs.append(file_diff(rel, was, data))
        befores[rel] = None if was is None else digest_bytes(was)
        for copy in (data, was):
            if copy is not None and not _copied(folder, d := digest_bytes(copy)):
                datas[d] = copy
    files.update(decision.outputs)
    made = cache.get_record(decision.key) if decision.key else None
    record: dict = {
        "intent": name,
        "version": (numbers[-1] if numbers else 0) + 1,
        "kind": CACHED_KIND,
        "run": made.run_id if made and made.run_id else run_id,  # the run that made the change, maybe elsewhere
        "restored_in": run_id,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(made.created if made else time.time())),
        "key": decision.key,
        "files": dict(sorted(files.items())),
        "created": sorted(rel for rel, was in before.items() if was is None),
        "before": befores,  # what `runner rollback` puts back over it (`--to 0` over a first version)
        "tokens": 0,
        "attempts": 0,
        "verified": True,  # the cache holds only changes that passed their verify commands where they were made
        "verify": list(planner.spec.intents[name].verify),
        "checkpoint": [],
    }
    diff = cache.mask.text("".join(diffs))
    record["diffstat"] = diff_stat(diff) | {"files": len(diffs)}
    staged = version_files(state_dir, cache.mask.obj(record), diff, None, datas)
    apply_change(root, state_dir, Change(), f"{run_id}-{name}-{CACHED_KIND}", staged, retirer)
    return record


def _cached_version(planner: Planner, folder: Path, name: str, kept: KeptEdit) -> tuple[dict, str, dict] | None:
    """The record the cache would have restored over a fresh clone's edit, as a version (kind "cache"): the agent's
    change as the team's cache holds it, so that `runner rollback` can bring it back over the edit. Its record,
    diff and bytes; None when the cache no longer holds every file's bytes."""
    from .apply import diff_stat
    from .attempt import file_diff

    key, outputs = kept.before[0], kept.before[1]
    files = {rel: d for rel, d in sorted(outputs.items()) if d is not None}
    datas: dict[str, bytes] = {}
    for digest in set(files.values()):
        data = _bytes(planner, folder, digest)
        if data is None:
            return None
        datas[digest] = data
    diff = "".join(file_diff(rel, None, datas[d]) for rel, d in files.items())
    old = planner.cache.get_record(key)
    record = {
        "intent": name,
        "version": 1,
        "kind": CACHED_KIND,
        "run": old.run_id if old else "",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(old.created if old else time.time())),
        "key": key,
        "files": files,
        "created": [],
        "tokens": 0,
        "attempts": 0,
        "verified": True,  # the cache holds only changes that passed their verify commands where they were made
        "verify": list(planner.spec.intents[name].verify),
        "checkpoint": [],
        "diffstat": diff_stat(diff),
    }
    return record, diff, datas


def _bytes(planner: Planner, folder: Path, digest: str, path: Path | None = None) -> bytes | None:
    """The bytes of `digest`: the versions' own copy, the file at `path` while it holds them, or the cache's."""
    from .keys import digest_bytes

    for where in (folder / "blobs" / digest, path):
        try:
            data = where.read_bytes() if where is not None else None
        except OSError:
            continue
        if data is not None and digest_bytes(data) == digest:
            return data
    return planner.cache.get_blob(digest)


def _copied(folder: Path, digest: str) -> bool:
    return (folder / "blobs" / digest).is_file()


def _holds(files: Mapping[str, str | None], kept: KeptEdit) -> bool:
    """Whether a version's files held the bytes the edit replaced."""
    return all(files.get(rel) == kept.before[1][rel] for rel in kept.edits)


def _files(folder: Path, number: int) -> dict[str, str | None]:
    """The files version `number` lists (none when its record cannot be read)."""
    try:
        return dict(json.loads((folder / str(number) / "version.json").read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}
