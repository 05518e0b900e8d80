"""The journaled apply of a verified change to the project, the version record it commits, its crash recovery,
and changes awaiting approval.

Applying: every new file is staged beside the journal first; writing journal.json is the commit point; then
each file is renamed into place (atomic per file). A crash before the commit point leaves the project as it
was (the staging is discarded at the next start); a crash after it is rolled forward at the next start. The
project never holds half of a change. Files of runner's own state that belong to the change (an agent intent's
version record under .runner/versions/, runner/plans/versions.py reads them) are staged and committed in the
same journal: a version is recorded exactly when its change is applied.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

from .attempt import Change

CRASH_ENV = "RUNNER_TEST_CRASH_AT"  # test hook: SIGKILL ourselves at a named point of the apply


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def apply_change(
    root: Path, state_dir: Path, change: Change, txid: str, state_files: dict[str, bytes] | None = None
) -> list[str]:
    """Apply `change` to the project under root, and write `state_files` (paths under state_dir: the change's
    version record) in the same transaction; returns the project paths written or deleted."""
    tx = state_dir / "apply" / txid
    shutil.rmtree(tx, ignore_errors=True)
    (tx / "new").mkdir(parents=True)
    entries: list[dict[str, str | bool | None]] = []
    for i, (rel, data) in enumerate(sorted(change.files.items())):
        staged = None
        if data is not None:
            staged = f"new/{i}"
            _fsync_write(tx / staged, data)
            mode = (root / rel).stat().st_mode & 0o7777 if (root / rel).is_file() else None
            if mode is not None:
                os.chmod(tx / staged, mode)
        entries.append({"path": rel, "new": staged})
    for i, (rel, data) in enumerate(sorted((state_files or {}).items())):
        _fsync_write(tx / f"new/s{i}", data)
        entries.append({"path": rel, "new": f"new/s{i}", "state": True})
    _crash_point("staged")
    tmp = tx / "journal.json.tmp"
    _fsync_write(tmp, json.dumps({"txid": txid, "entries": entries}).encode())
    os.replace(tmp, tx / "journal.json")  # the commit point
    _crash_point("journaled")
    _roll_forward(root, tx, entries)
    return sorted(change.files)


def _roll_forward(root: Path, tx: Path, entries: list[dict]) -> None:
    state_dir = tx.parent.parent  # <state>/apply/<txid>
    for n, entry in enumerate(entries, start=1):
        target = (state_dir if entry.get("state") else root) / entry["path"]
        if entry["new"] is None:
            try:
                target.unlink()
            except FileNotFoundError:
                pass
        else:
            staged = tx / entry["new"]
            if staged.exists():  # gone if an earlier, interrupted roll-forward already moved it
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, target)
        _crash_point(f"file:{n}")
    _crash_point("replaced")
    shutil.rmtree(tx, ignore_errors=True)


def recover(root: Path, state_dir: Path) -> list[str]:
    """Finish or discard applies a crash interrupted; returns what was done, for the log."""
    folder = state_dir / "apply"
    done: list[str] = []
    if not folder.is_dir():
        return done
    for tx in sorted(folder.iterdir()):
        journal = tx / "journal.json"
        if journal.is_file():
            entries = json.loads(journal.read_text())["entries"]
            _roll_forward(root, tx, entries)
            files = sum(1 for entry in entries if not entry.get("state"))  # the project's: what the user sees
            done.append(f"completed the interrupted apply {tx.name} ({files} files)")
        else:
            shutil.rmtree(tx, ignore_errors=True)
            done.append(f"discarded the unfinished apply {tx.name}: the project was not touched")
    return done


# ---- the version record of an applied agent change -------------------------------------------------------

VERSIONS = "versions"  # under the state folder: versions/<intent>/<n>/ and versions/<intent>/blobs/<digest>


def versions_dir(state_dir: Path, intent: str) -> Path:
    return state_dir / VERSIONS / intent


def version_numbers(state_dir: Path, intent: str) -> list[int]:
    """The recorded versions of `intent`, oldest first."""
    folder = versions_dir(state_dir, intent)
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and (p / "version.json").is_file())


def version_files(
    state_dir: Path, record: dict, diff: str, transcript: str | None, blobs: dict[str, bytes]
) -> dict[str, bytes]:
    """The files (relative to state_dir) that record version record["version"] of record["intent"]: its
    version.json, its diff, the winning attempt's transcript, and a copy of each file's bytes it does not hold
    yet (so a rollback never depends on the cache, which `runner cache gc` prunes)."""
    intent, number = record["intent"], record["version"]
    base = f"{VERSIONS}/{intent}"
    out = {
        f"{base}/{number}/version.json": json.dumps(record, indent=2).encode(),
        f"{base}/{number}/diff.patch": diff.encode(),
    }
    if transcript is not None:
        out[f"{base}/{number}/transcript.jsonl"] = transcript.encode()
    for digest, data in blobs.items():
        if not (state_dir / base / "blobs" / digest).is_file():
            out[f"{base}/blobs/{digest}"] = data
    return out


def diff_stat(diff: str) -> dict:
    """files changed, lines inserted and deleted, as `git diff --stat` counts them, from a unified diff."""
    files = insertions = deletions = 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            files += 1
        elif line.startswith("+") and not line.startswith("+++"):
            insertions += 1
        elif line.startswith("-") and not line.startswith("---"):
            deletions += 1
    return {"files": files, "insertions": insertions, "deletions": deletions}


# ---- changes waiting for approval ------------------------------------------------------------


def pending_dir(state_dir: Path) -> Path:
    return state_dir / "pending"


def save_pending(state_dir: Path, intent: str, payload: dict) -> Path:
    folder = pending_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{intent}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, path)
    return path


def load_pending(state_dir: Path) -> dict[str, dict]:
    folder = pending_dir(state_dir)
    if not folder.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def drop_pending(state_dir: Path, intent: str) -> None:
    (pending_dir(state_dir) / f"{intent}.json").unlink(missing_ok=True)
