"""What happens to a verified agent change: ask a human, or save it as pending (blocked), or record and apply it
as the intent's next version (and commit it, under a policy with checkpoint = "commit").

The cache record is written before the apply, so a crash mid-apply is rolled forward at the next start and
the step is then a cache hit: a model is never paid twice for one change. The version record is committed by
the apply's own journal (apply.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .apply import (
    Retirer,
    apply_change,
    diff_stat,
    drop_pending,
    load_pending,
    make_room,
    pending_path,
    save_pending,
    version_files,
    version_numbers,
    versions_dir,
)
from .attempt import Change
from .cache import StepRecord
from .globs import expand, matches_any
from .keys import digest_or_none
from .names import stored
from .plan import Decision, Planner
from .policy import WRITE_FILES, needs_approval
from .spec import Intent

RAN, BLOCKED, FAILED = "ran", "blocked", "failed"


@dataclass
class ApplyContext:
    planner: Planner
    state_dir: Path
    run_id: str
    halt_on: frozenset = frozenset()
    ask: Callable[[str, str], bool] | None = None  # only on a terminal
    apply_confirmed: bool = False  # confirm-phase: asked once per run
    retirer: Retirer | None = None  # the run's: syncs applied files and drops their journals off its thread


def _outputs_after(root: Path, intent: Intent, change: Change, planner: Planner) -> dict[str, str]:
    """The digests the declared outputs will have once the change is applied."""
    digests = change.digests()
    paths = set(expand(str(root), intent.outputs))
    for rel in change.files:
        if matches_any(rel, intent.outputs):
            paths.add(rel)
    out: dict[str, str] = {}
    for rel in sorted(paths):
        if rel in digests:
            if (digest := digests[rel]) is not None:
                out[rel] = digest
        else:
            value = planner.stat.digest(str(root), rel, intent.name)
            if value is not None:
                out[rel] = value
    return out


def finish(
    ctx: ApplyContext,
    intent: Intent,
    decision: Decision,
    change: Change,
    drift: list | None = None,
    about: dict | None = None,
) -> tuple[str, dict, str | None]:
    """(status, outputs, message) for a verified change: applied, blocked pending approval, or rejected; its
    drift (runner/drift.py) goes with it into the pending entry and the step record. `about`: what its version
    records beside the change (kind, tokens, attempts, the transcript's path, feedback)."""
    planner = ctx.planner
    policy = planner.spec.policies[intent.policy]
    root = Path(planner.spec.root)
    if not change:  # verified as the project holds it: nothing to ask about, apply or make a version of
        assert decision.key is not None
        return RAN, record_unchanged(planner, intent, decision, change, ctx.run_id, drift, about), None
    ask_needed = needs_approval(WRITE_FILES, policy, ctx.halt_on) or (
        policy.approval == "confirm-phase" and not ctx.apply_confirmed
    )
    if ask_needed:
        if ctx.ask is None:
            payload = pending_payload(ctx, intent, decision, change)
            if drift:
                payload["drift"] = drift
            if about:
                payload["version"] = about
            save_pending(ctx.state_dir, intent.name, payload)
            note_answer(ctx.state_dir, ctx.run_id, intent.name, "pending", None)
            return (
                BLOCKED,
                {},
                (
                    f"a verified change to {len(change.files)} file(s) waits for approval "
                    f"(policy '{policy.name}'): `runner approve {intent.name}` applies it, "
                    f"`runner approve {intent.name} --reject` drops it"
                ),
            )
        question = f"Apply the change of {intent.name} to {len(change.files)} file(s)?"
        if not ctx.ask(question, planner.cache.mask.text(change.diff(root))):
            note_answer(ctx.state_dir, ctx.run_id, intent.name, "rejected", "terminal")
            return FAILED, {}, "you rejected the change; nothing was applied"
        note_answer(ctx.state_dir, ctx.run_id, intent.name, "approved", "terminal")
        if policy.approval == "confirm-phase":
            ctx.apply_confirmed = True
    assert decision.key is not None  # a step that ran had every dependency's outputs, so a key
    outputs = record_and_apply(
        ctx.planner,
        ctx.state_dir,
        intent,
        decision.key,
        decision.inputs,
        planner.ingredients(intent.name, decision),
        change,
        ctx.run_id,
        drift,
        about,
        ctx.retirer,
    )
    return RAN, outputs, None


def record_unchanged(
    planner: Planner, intent: Intent, decision: Decision, change: Change, run_id: str, drift, about: dict | None
) -> dict:
    """The step's result under its new key when its attempt changed nothing and its outputs verified as they are
    (its last version, or a person's kept edit): recorded in the cache and the state as any result, no version
    (no file changed)."""
    assert decision.key is not None
    root = Path(planner.spec.root)
    outputs = _outputs_after(root, intent, change, planner)
    _keep_blobs(planner, root, outputs, change)
    planner.cache.put_record(
        StepRecord(
            intent=intent.name,
            key=decision.key,
            outputs=outputs,
            created=time.time(),
            ingredients=planner.ingredients(intent.name, decision),
            run_id=run_id,
            drift=drift or None,
            attempts=(about or {}).get("attempts") or None,
            duration=(about or {}).get("seconds") or 0.0,
        )
    )
    planner.keep_result(intent.name, decision.key, outputs, decision.inputs)
    planner.state.save()
    return outputs


def _keep_blobs(planner: Planner, root: Path, outputs: dict[str, str], change: Change) -> dict[str, bytes]:
    """Every output's bytes into the cache (the change's and the unchanged ones, so a restore never misses one):
    digest -> bytes."""
    datas: dict[str, bytes] = {}
    for data in change.files.values():
        if data is not None:
            datas[hashlib.sha256(data).hexdigest()] = data
            planner.cache.put_blob(hashlib.sha256(data).hexdigest(), data)
    for rel, digest in outputs.items():
        if rel not in change.files:
            data = (root / rel).read_bytes()
            datas[digest] = data
            if not planner.cache.has_blob(digest):
                planner.cache.put_blob(digest, data)
    return datas


def record_and_apply(
    planner: Planner,
    state_dir: Path,
    intent: Intent,
    key: str,
    inputs: dict,
    ingredients: dict,
    change: Change,
    run_id: str,
    drift: list | None = None,
    about: dict | None = None,
    retirer: Retirer | None = None,
    approved_draft: bool = False,
) -> dict:
    """Record the verified change (its cache record, its version, the step's state) and apply it, in one journal.
    `approved_draft`: the change is a draft `runner approve` applies, dropped in the same journal, so that a kill
    mid-apply never leaves it waiting for approval once the change is in place."""
    root = Path(planner.spec.root)
    outputs = _outputs_after(root, intent, change, planner)
    datas = _keep_blobs(planner, root, outputs, change)
    record = version_record(planner, state_dir, intent, key, change, outputs, run_id, about or {})
    # what each file it writes held before (None: absent), and a copy of those bytes: `runner rollback --to 0`
    # puts back the project as it was before the intent's first version
    record["before"] = {}
    for rel in sorted(change.files):
        try:
            data = (root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            record["before"][rel] = None
            continue
        datas[record["before"].setdefault(rel, hashlib.sha256(data).hexdigest())] = data
    diff = planner.cache.mask.text(change.diff(root))  # against the project as it is before the apply
    record["diffstat"] = diff_stat(diff) | {"files": len(change.files)}
    transcript = _read(about.get("transcript")) if about else None
    staged: dict[str, bytes | None] = dict(
        version_files(state_dir, planner.cache.mask.obj(record), diff, transcript, datas)
    )
    if approved_draft:
        staged[pending_path(state_dir, intent.name).relative_to(state_dir).as_posix()] = None
    make_room(state_dir, staged)  # damaged state refused before the result is cached: a restore would skip its version
    planner.cache.put_record(
        StepRecord(
            intent=intent.name,
            key=key,
            outputs=outputs,
            created=time.time(),
            ingredients=ingredients,
            run_id=run_id,
            drift=drift or None,
            attempts=(about or {}).get("attempts") or None,  # what a remote hit on it spares (runner audit)
            duration=(about or {}).get("seconds") or 0.0,
        )
    )
    planner.keep_result(intent.name, key, outputs, inputs)
    state_file = Path(planner.state.path)
    if state_file.parent == state_dir:  # the state goes with the change, in its journal: one fsync for both
        staged[state_file.name] = planner.state.file_bytes()
    else:
        planner.state.save()
    apply_change(root, state_dir, change, f"{run_id}-{intent.name}", staged, retirer)
    if state_file.parent == state_dir:
        planner.state.saved_with_journal()
    for rel in change.files:
        planner.stat.written(str(root), rel, intent.name)
    if planner.spec.policies[intent.policy].checkpoint == "commit":
        checkpoint(root, state_dir, record, sorted(change.files), planner.cache.mask)
    return outputs


def version_record(
    planner: Planner,
    state_dir: Path,
    intent: Intent,
    key: str,
    change: Change,
    outputs: dict,
    run_id: str,
    about: dict,
) -> dict:
    """The version an applied change becomes: its number, run, time, key, files (the declared outputs and the
    other files it wrote, each path -> digest, None for deleted), what it cost and how it was verified."""
    root = Path(planner.spec.root)
    numbers = version_numbers(state_dir, intent.name)
    files: dict[str, str | None] = dict(outputs)
    files.update(change.digests())
    record = {
        "intent": intent.name,
        "version": (numbers[-1] if numbers else 0) + 1,
        "kind": about.get("kind", "make"),
        "run": about.get("run", run_id),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "key": key,
        "files": dict(sorted(files.items())),
        "created": sorted(rel for rel, data in change.files.items() if data is not None and not (root / rel).exists()),
        "tokens": about.get("tokens", 0),
        "attempts": about.get("attempts", 0),
        # only a change that passed every verify command is applied: verified when the intent declares some
        "verified": bool(intent.verify),
        "verify": list(intent.verify),
        "checkpoint": [],
    }
    for extra in ("feedback", "improves", "restores", "applied_by"):
        if about.get(extra) is not None:
            record[extra] = about[extra]
    return record


def checkpoint(root: Path, state_dir: Path, record: dict, paths: list[str], mask, commits: list[str] | None = None):
    """Commit the applied paths alone (checkpoint.py), naming intent, version and run; the commit goes into the
    version's record. A commit git refuses leaves the change applied and says why on stderr."""
    from .cache import atomic_write
    from .checkpoint import CheckpointError, commit_paths

    name, number, run = record["intent"], record["version"], record["run"]
    try:
        if commits is None:
            message = f"runner: {name} version {number} (run {run})\n\nThe {record['kind']} of agent intent {name}"
            if record.get("restores"):
                message += f", back to version {record['restores']}"
            message += f" (key {record['key'][:12]}).\n"
            commits = [commit_paths(root, state_dir, paths, mask.text(message))]
        record["checkpoint"] = commits
    except CheckpointError as exc:
        record["checkpoint_error"] = str(exc)
        print(f"runner: {name} version {number} is applied but not committed: {exc}", file=sys.stderr, flush=True)
    path = versions_dir(state_dir, name) / str(number) / "version.json"
    atomic_write(str(path), json.dumps(mask.obj(record), indent=2).encode())


def _read(path: str | None) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8") if path else None
    except OSError:
        return None  # its run is no longer recorded (pruned): the version keeps no transcript


def note_answer(state_dir: Path, run_id: str | None, intent: str, answer: str, by: str | None) -> None:
    """How the question before applying a verified change was answered (pending: nobody at a terminal to ask),
    as a line of the asking run's approvals.jsonl, so `runner audit` can tell approved from rejected once the
    pending change is gone. A run no longer recorded (pruned) keeps no answer."""
    run_dir = state_dir / "runs" / (run_id or "")
    if not run_id or not (run_dir / "events.jsonl").is_file():
        return
    line = {"intent": intent, "answer": answer, "by": by, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    with open(run_dir / "approvals.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def pending_payload(ctx: ApplyContext, intent: Intent, decision: Decision, change: Change) -> dict:
    blobs: dict[str, str | None] = {}
    for rel, data in change.files.items():
        if data is None:
            blobs[rel] = None
        else:
            digest = hashlib.sha256(data).hexdigest()
            ctx.planner.cache.put_blob(digest, data)
            blobs[rel] = digest
    return {
        "intent": intent.name,
        "key": decision.key,
        "run_id": ctx.run_id,
        "inputs": decision.inputs,
        "ingredients": ctx.planner.ingredients(intent.name, decision),
        "files": blobs,
        "diff": ctx.planner.cache.mask.text(change.diff(Path(ctx.planner.spec.root))),  # the blobs stay as they are
        # what each file held as the change was drafted (its diff's left side): approve refuses once one differs
        "base": {rel: digest_or_none(Path(ctx.planner.spec.root) / rel) for rel in change.files},
        "saved": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def pending_for(state_dir: Path, intent: str, key: str | None) -> dict | None:
    entry = load_pending(state_dir).get(intent)
    return entry if entry and (key is None or entry["key"] == key) else None


def approve(planner: Planner, state_dir: Path, names: list[str] | None, reject: bool, run_id: str) -> list[dict]:
    """Apply (or drop) pending changes without calling any model; returns what was done."""
    pending = load_pending(state_dir)
    chosen = names or sorted(pending)
    done = []
    for name in chosen:
        entry = pending[name]
        if reject:
            drop_pending(state_dir, name)
            note_answer(state_dir, entry.get("run_id"), name, "rejected", "runner approve")
            done.append({"intent": name, "action": "rejected", "files": sorted(entry["files"])})
            continue
        change = Change(files={rel: (planner.cache.get_blob(d) if d else None) for rel, d in entry["files"].items()})
        missing = [rel for rel, d in entry["files"].items() if d and change.files[rel] is None]
        if missing:
            done.append(
                {
                    "intent": name,
                    "action": "failed",
                    "error": f"the pending change's contents are gone from the cache ({', '.join(missing)}); "
                    f"run `runner make` to compute it again",
                }
            )
            continue
        edited = edited_since_drafted(planner, name, entry)
        if edited:
            done.append({"intent": name, "action": "failed", "error": edited_message(name, edited)})
            continue
        intent = planner.spec.intents[name]
        about = {**entry.get("version", {}), "run": entry.get("run_id") or run_id, "applied_by": "runner approve"}
        record_and_apply(
            planner,
            state_dir,
            intent,
            entry["key"],
            entry["inputs"],
            entry["ingredients"],
            change,
            run_id,
            entry.get("drift"),
            about,
            approved_draft=True,
        )
        note_answer(state_dir, entry.get("run_id"), name, "approved", "runner approve")
        done.append({"intent": name, "action": "applied", "files": sorted(entry["files"])})
    return done


def edited_since_drafted(planner: Planner, name: str, entry: dict) -> list[str]:
    """The files a pending change would write that changed since it was drafted: a person's edit, which applying
    it would destroy. An entry saved before drafts kept their base is judged by the step's last good result."""
    base = entry.get("base")
    if not isinstance(base, dict):
        last = planner.state.get(name)
        base = {rel: last[1][rel] for rel in entry["files"] if rel in last[1]} if last else {}
    return edited_since(Path(planner.spec.root), entry["files"], base)


def edited_since(root: Path, files, base: dict) -> list[str]:
    """Of `files`, those whose bytes are no longer the digest `base` holds for them."""
    return sorted(rel for rel in files if rel in base and digest_or_none(root / rel) != base[rel])


def edited_message(name: str, edited: list[str]) -> str:
    return (
        f"{', '.join(edited)} changed since the change was drafted; applying it would lose that edit. "
        f"`runner approve {name} --reject` drops the change, and the next `runner make` drafts it again from "
        f"the files as they are now"
    )


# ---- before the model is called --------------------------------------------------------------


def precall_question(policy, halt_on: frozenset, intent: Intent, confirmed_phase: bool) -> str | None:
    """Why a human must agree before this agent step calls a model, or None."""
    from .policy import RUN_SHELL

    if policy.approval == "manual":
        return f"policy '{policy.name}' (approval = manual) asks before every agent step"
    if policy.approval == "confirm-phase" and not confirmed_phase:
        return f"policy '{policy.name}' (approval = confirm-phase) asks once before the agent steps run"
    if intent.verify and needs_approval(RUN_SHELL, policy, halt_on):
        return f"policy '{policy.name}' asks before running shell commands (verify: {', '.join(intent.verify)})"
    return None


def _token(state_dir: Path, intent: str) -> Path:
    return state_dir / "approved" / stored(intent)


def grant(state_dir: Path, intent: str) -> None:
    """`runner approve INTENT` with no pending change: let the next run call the model for it, once."""
    path = _token(state_dir, intent)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(time.strftime("%Y-%m-%d %H:%M:%S"))


def take_grant(state_dir: Path, intent: str) -> bool:
    path = _token(state_dir, intent)
    if path.exists():
        path.unlink()
        return True
    return False
