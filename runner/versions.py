"""Versions of an agent intent's applied changes: history, show, what `runner improve` adds to the prompt, rollback.

A version is recorded by the journaled apply that applies its change (runner/apply.py, runner/approve.py), or
that keeps a person's edit of its outputs (runner/edits.py, kind "edit"):
.runner/versions/<intent>/<n>/version.json (run, time, key, files, diff stat, tokens, verification, checkpoint
commits), its diff.patch and the winning attempt's transcript.jsonl (both masked), and blobs/<digest>, a copy of
each file's bytes, so a rollback never depends on the cache that `runner cache gc` prunes.

Rollback writes the chosen version's files back through the same journaled apply, and records it as the next
version (kind "rollback"): the version record and the intent's new last good result (the state index) are
committed by the apply's own journal, so a kill mid-rollback is completed or undone as a whole at the next start.
The intent keeps its key and takes the restored bytes as its outputs: it is up to date (the next `runner make`
neither re-runs it nor restores the newer bytes from the cache), and the steps that depend on it see new
outputs, so they are out of date. Under a policy with checkpoint = "commit" the rollback is `git revert` of the
later versions' commits instead, or says why git refused, leaving the tree as it was.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from .apply import apply_change, diff_stat, version_files, version_numbers, versions_dir
from .attempt import Change
from .errors import UsageError, UserError
from .globs import matches_any
from .keys import digest_or_none
from .spec import STEP_AGENT, Intent, Spec


def agent_intent(spec: Spec, name: str) -> Intent:
    """The agent intent `name`, or a usage error naming what is wrong."""
    from .suggest import did_you_mean

    intent = spec.intents.get(name)
    if intent is None:
        agents = [n for n, i in spec.intents.items() if i.kind == STEP_AGENT]
        raise UsageError(
            f"error: no intent '{name}'{did_you_mean(name, spec.intents)}; "
            f"the agent intents: {', '.join(sorted(agents)) or 'none'}"
        )
    if intent.kind != STEP_AGENT:
        raise UsageError(f"error: '{name}' is not an agent step: only an agent intent's changes have versions")
    return intent


def parse_ref(ref: str) -> tuple[str, int | None]:
    """INTENT or INTENT@VERSION."""
    name, at, number = ref.partition("@")
    if not at:
        return name, None
    if not number.isdigit() or int(number) < 1:
        raise UsageError(f"error: '{ref}': a version is a number from 1 (INTENT@VERSION, as {name}@1)")
    return name, int(number)


def versions(state_dir: Path, name: str) -> list[dict]:
    """The version records of intent `name`, oldest first; one a disk or a person damaged is named, with what to do."""
    folder = versions_dir(state_dir, name)
    return [_record(folder / str(n) / "version.json", name, n) for n in version_numbers(state_dir, name)]


# what history, show, improve and rollback read of a version record, and its type
_FIELDS = {
    "intent": str,
    "version": int,
    "kind": str,
    "run": str,
    "time": str,
    "key": str,
    "files": dict,
    "tokens": int,
    "attempts": int,
    "verified": bool,
    "verify": list,
}


def _record(path: Path, name: str, number: int) -> dict:
    """Version `number`'s record, or the user's error naming its file: a record cannot be made again (it is the
    history), so the way out is a copy of it, or that version taken out of the history."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        why = _wrong(record, name, number)
    except IsADirectoryError:
        why = "a folder stands there"
    except ValueError as exc:  # not UTF-8, not JSON
        why = f"not JSON: {exc}"
    if why is None:
        return record
    root = path.parents[4]  # .runner/versions/<intent>/<n>/version.json
    raise UserError(
        f"error: {path.relative_to(root)} is damaged ({why}): the versions of '{name}' cannot be read without it; "
        f"put it back from a copy, or take version {number} out of the history "
        f"(`rm -r {path.parent.relative_to(root)}`)"
    )


def _wrong(record, name: str, number: int) -> str | None:
    """What is wrong with a version record as read, None when nothing is."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    for field, kind in _FIELDS.items():
        if not isinstance(record.get(field), kind):
            return f"its {field} is {'missing' if field not in record else 'not a ' + kind.__name__}"
    if (record["intent"], record["version"]) != (name, number):
        return f"it records version {record['version']} of '{record['intent']}'"
    if not all(isinstance(rel, str) and (d is None or isinstance(d, str)) for rel, d in record["files"].items()):
        return "its files are not paths and digests"
    return None


def pick(records: list[dict], name: str, number: int | None) -> dict:
    """Version `number` (None: the latest), or an error naming the known ones."""
    if not records:
        raise UsageError(
            f"error: agent intent '{name}' has no version yet: `runner make {name}` applies its first change"
        )
    if number is None:
        return records[-1]
    for record in records:
        if record["version"] == number:
            return record
    known = ", ".join(str(r["version"]) for r in records)
    raise UsageError(f"error: agent intent '{name}' has no version {number}; its versions: {known}")


def details(state_dir: Path, record: dict) -> dict:
    """The record with its diff and transcript (None when its run was pruned before it was applied)."""
    folder = versions_dir(state_dir, record["intent"]) / str(record["version"])
    try:  # both masked text as written; damaged bytes are shown as what they are, never a crash
        diff = (folder / "diff.patch").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        root = state_dir.parent
        raise UserError(
            f"error: {(folder / 'diff.patch').relative_to(root)} is missing: version {record['version']} of "
            f"'{record['intent']}' cannot be shown without it; put it back from a copy, or take that version out of "
            f"the history (`rm -r {folder.relative_to(root)}`)"
        ) from None
    transcript = folder / "transcript.jsonl"
    text = transcript.read_text(encoding="utf-8", errors="replace") if transcript.is_file() else None
    return {**record, "diff": diff, "transcript": text}


def improve_request(state_dir: Path, name: str, feedback: str) -> dict:
    """What `runner improve` hands the run (RunOptions.improve): the version it improves, the feedback, and the
    block every prompt of the step gets."""
    from .prompts import improve_block

    if not feedback.strip():
        raise UsageError("error: --feedback is empty: say what the next version should do differently")
    records = versions(state_dir, name)
    if not records:
        raise UsageError(
            f"error: agent intent '{name}' has never been applied, so there is no version to improve: "
            f"run `runner make {name}` first"
        )
    latest = details(state_dir, records[-1])
    return {
        "version": latest["version"],
        "feedback": feedback,
        "prompt": improve_block(latest["version"], feedback, latest["diff"]),
    }


def rollback(project, name: str, to: int | None, force: bool, stop_cluster, say) -> dict:
    """Restore version `to`'s files (None: the version before the latest) and record that as the next version.
    `stop_cluster`, `say`: what a killed run left is recovered first (workspace.recover_inflight), said by `say`."""
    from .cache import Cache, State, StepRecord
    from .pipeline import recover_killed_run
    from .record import new_run_id
    from .redact import mask_for_run
    from .workspace import ProjectLock

    spec = project.spec
    intent = agent_intent(spec, name)
    layout = project.layout
    layout.ensure()
    root, state_dir = layout.root, layout.state_dir
    with ProjectLock(layout, f"runner rollback {name}"):
        for message in recover_killed_run(layout, stop_cluster):  # a rollback or an apply a kill cut short
            say(message)
        records = versions(state_dir, name)
        latest = pick(records, name, None)
        if to is None:
            if len(records) < 2:
                raise UsageError(
                    f"error: agent intent '{name}' has only version 1: there is no earlier version "
                    f"(`runner rollback {name} --to 0` puts the files back as they were before it)"
                )
            target = records[-2]
        elif to == 0:
            target = before_first(records, name)
        else:
            target = pick(records, name, to)
        if target is latest:
            raise UsageError(
                f"error: version {target['version']} is the latest version of '{name}': nothing to roll back; "
                f"its versions: {', '.join(str(r['version']) for r in records)}"
            )
        edited = sorted(rel for rel, d in latest["files"].items() if digest_or_none(root / rel) != d)
        if edited and not force:
            raise UsageError(
                f"error: {', '.join(edited)} changed since version {latest['version']} of '{name}' was applied; "
                "a rollback would lose that change: keep it elsewhere, or pass --force"
            )
        later = records[records.index(target) + 1 :] if target["version"] else records
        wanted: dict[str, str | None] = dict(target["files"])
        for record in later:  # a file a later version created is not part of the restored version
            for rel in record.get("created", ()):
                wanted.setdefault(rel, None)
        mask = mask_for_run(spec)
        run_id = new_run_id()
        policy = spec.policies[intent.policy]
        record = {
            "intent": name,
            "version": latest["version"] + 1,
            "kind": "rollback",
            "restores": target["version"],
            "run": run_id,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "key": target["key"],
            "tokens": 0,
            "attempts": 0,
            "verified": target["verified"],
            "verify": target["verify"],
            "checkpoint": [],
        }
        commits = [c for r in reversed(later) for c in reversed(r.get("checkpoint") or [])]
        by_git = policy.checkpoint == "commit" and all(r.get("checkpoint") for r in later)
        if by_git:
            change = Change()
            diff = _revert(root, commits, record)
            wanted = {rel: digest_or_none(root / rel) for rel in wanted}
            datas = {d: (root / rel).read_bytes() for rel, d in wanted.items() if d is not None}
        else:
            datas = _blobs(state_dir, name, target, wanted)
            change = Change(
                files={
                    rel: (None if d is None else datas[d])
                    for rel, d in wanted.items()
                    if digest_or_none(root / rel) != d
                }
            )
            diff = mask.text(change.diff(root))
        record["files"] = dict(sorted(wanted.items()))
        record["created"] = sorted(
            rel for rel, data in change.files.items() if data is not None and not (root / rel).exists()
        )
        record["diffstat"] = diff_stat(diff) if by_git else diff_stat(diff) | {"files": len(change.files)}

        # the intent's last good result: its key as it stands, the restored bytes as its outputs
        state = State(layout.state_file)
        last = state.get(name)
        key = last[0] if last else target["key"]
        record["key"] = key
        outputs = {rel: d for rel, d in wanted.items() if d is not None and matches_any(rel, intent.outputs)}
        state.set(name, key, outputs, last[2] if last else {})
        cache = Cache(layout.cache_dir, mask=mask, owner=True)
        try:
            old = cache.get_record(key)
            # so that a later restore (an output deleted) brings back these bytes, not the newer version's
            cache.put_many(
                datas,
                [
                    StepRecord(
                        intent=name,
                        key=key,
                        outputs=outputs,
                        ingredients=old.ingredients if old else {},
                        created=time.time(),
                        run_id=run_id,
                    )
                ],
            )
        finally:
            cache.close()
        staged = version_files(state_dir, mask.obj(record), diff, None, datas)
        staged[Path(layout.state_file).relative_to(state_dir).as_posix()] = state.file_bytes()
        apply_change(root, state_dir, change, f"{run_id}-{name}", staged)
        if policy.checkpoint == "commit" and (by_git or change):
            from .approve import checkpoint

            # git made the revert commits; otherwise (a later version without a commit) the restored files are
            # committed as any applied change is
            made = record["checkpoint"] if by_git else None
            checkpoint(root, state_dir, record, sorted(change.files), mask, commits=made)
    return record


def before_first(records: list[dict], name: str) -> dict:
    """Version 0: the files as they were before the intent's first version (None: absent), from what each version
    says its files held before it (the first time a version names a file). A version made before runner kept
    that can say it only of the files it created."""
    files: dict[str, str | None] = {}
    for record in records:
        before = record.get("before")
        if before is None:
            unknown = sorted(
                rel for rel in record["files"] if rel not in files and rel not in record.get("created", ())
            )
            if unknown:
                raise UsageError(
                    f"error: version {record['version']} of '{name}' does not say what {', '.join(unknown)} held "
                    f"before it (it was made by an older runner): there is no version 0 to roll back to; "
                    f"`runner rollback {name} --to 1` is the earliest"
                )
            before = dict.fromkeys(record.get("created", ()))
        for rel, digest in before.items():
            files.setdefault(rel, digest)
    return {"version": 0, "files": files, "key": records[0]["key"], "verified": False, "verify": []}


def _blobs(state_dir: Path, name: str, target: dict, wanted: dict[str, str | None]) -> dict[str, bytes]:
    """The bytes of the target version's files, from the version's own copies."""
    folder = versions_dir(state_dir, name) / "blobs"
    datas = {}
    for rel, digest in wanted.items():
        if digest is None or digest in datas:
            continue
        try:
            data = (folder / digest).read_bytes()
        except FileNotFoundError:
            data = b""
        if hashlib.sha256(data).hexdigest() != digest:
            raise UserError(
                f"error: version {target['version']} of '{name}' cannot be restored: its copy of {rel} is missing "
                f"or damaged in {folder}; roll back to another version, or `runner make -B {name}`"
            )
        datas[digest] = data
    return datas


def _revert(root: Path, commits: list[str], record: dict) -> str:
    """`git revert` the later versions' checkpoint commits (newest first); the diff they made, as git shows it."""
    from .checkpoint import CheckpointError, diff_between, revert

    try:
        made = revert(root, commits)
    except CheckpointError as exc:
        raise UserError(
            f"error: cannot roll '{record['intent']}' back to version {record['restores']}: {exc}; the tree is "
            "as it was: resolve that, then run the rollback again"
        ) from None
    record["checkpoint"] = made
    return diff_between(root, f"{made[0]}~1", made[-1]) if made else ""
