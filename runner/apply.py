"""The journaled apply of a verified change to the project, the version record it commits, its crash recovery,
and changes awaiting approval.

Applying: the change's new bytes, with every path, go into one journal file beside the project (under
<state>/apply/); writing and syncing it, then renaming it to its final name, is the commit point (one fsync for
the whole change, however many files it holds). Then each file is written to a staging name under the same
folder and renamed into place (atomic per file). A crash before the commit point leaves the project as it was
(the unfinished journal is discarded at the next start); a crash after it is rolled forward from the journal
at the next start. The project never holds half of a change. A journal is deleted only once the files it
wrote are synced: at once, or by a Retirer's thread (a run with many agent steps keeps the fsyncs off its
scheduler's thread), and never while an older journal stands: the next start replays every journal in the
order they were written, so whatever a failed retirement left, the newest change is the one replayed last.
Files of runner's own state that belong to the change (an agent intent's version record under
.runner/versions/, runner/plans/versions.py reads them; the run's state file) are committed in the same
journal: a version is recorded exactly when its change is applied.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from collections.abc import Mapping
from pathlib import Path

from .attempt import Change
from .background import Background
from .errors import UserError
from .names import stored, unstored

CRASH_ENV = "RUNNER_TEST_CRASH_AT"  # test hook: SIGKILL ourselves at a named point of the apply
JOURNAL = ".journal"  # <state>/apply/<number>-<txid>.journal: committed; the number orders the replay (_next_number)
UNFINISHED = ".tmp"  # a journal being written, or a file being staged: never part of a committed change


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def apply_change(
    root: Path,
    state_dir: Path,
    change: Change,
    txid: str,
    state_files: Mapping[str, bytes | None] | None = None,
    retirer: Retirer | None = None,
) -> list[str]:
    """Apply `change` to the project under root, and write `state_files` (paths under state_dir: the change's
    version record) in the same transaction; returns the project paths written or deleted. With a `retirer`,
    the written files are synced and the journal deleted by its thread, later; without, before returning."""
    folder = make_room(state_dir, state_files or {})
    entries: list[dict] = []
    payload: list[bytes] = []
    for rel, data in sorted(change.files.items()):
        entry: dict = {"path": rel, "size": None if data is None else len(data)}
        if data is not None:
            target = root / rel
            if target.is_file():  # the file keeps its mode (an executable script stays one)
                entry["mode"] = target.stat().st_mode & 0o7777
            payload.append(data)
        entries.append(entry)
    for rel, data in sorted((state_files or {}).items()):  # None: deleted (a draft the change approves)
        entries.append({"path": rel, "size": None if data is None else len(data), "state": True})
        if data is not None:
            payload.append(data)
    name = f"{_next_number(folder):020d}-{stored(txid)}"  # a sub-project's PATH:NAME is in it: one file name
    tmp = folder / (name + JOURNAL + UNFINISHED)
    with open(tmp, "wb") as f:
        f.write(json.dumps({"txid": txid, "entries": entries}).encode() + b"\n")
        f.writelines(payload)
        f.flush()
        os.fsync(f.fileno())
    _crash_point("staged")
    journal = folder / (name + JOURNAL)
    os.replace(tmp, journal)  # the commit point
    _crash_point("journaled")
    written = _roll_forward(root, journal, entries, b"".join(payload))
    _crash_point("replaced")
    if retirer is not None:
        retirer.retire(journal, written)
    else:
        _retire(journal, written)
    return sorted(change.files)


def make_room(state_dir: Path, state_files: Mapping[str, bytes | None]) -> Path:
    """The journal's folder, and each state file's, made; a folder standing where a state file goes refused
    (OSError, which damaged.py names with its mend): all before the commit point, so that state damaged under
    .runner/ stops a change before any of it is applied or its result cached, never halfway through."""
    folder = state_dir / "apply"
    folder.mkdir(parents=True, exist_ok=True)
    for rel, data in state_files.items():
        if data is None:
            continue
        target = state_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    return folder


def _next_number(folder: Path) -> int:
    """A new journal's number: the clock's nanoseconds, but past every journal that stands (one written while
    the clock ran ahead, before a step back of NTP's): the replay goes by the names, which must sort as the
    changes were made, whatever the clock does. A journal already retired orders nothing."""
    standing = (int(name[:20]) for name in os.listdir(folder) if name[:20].isdigit())
    return max(time.time_ns(), max(standing, default=0) + 1)


def _roll_forward(root: Path, journal: Path, entries: list[dict], payload: bytes) -> list[Path]:
    """Put each entry's bytes in place (or delete its file); returns the files written. Safe to repeat: the
    journal holds every byte, so an interrupted roll-forward is done again whole."""
    folder = journal.parent
    state_dir = folder.parent  # <state>/apply/<journal>
    written: list[Path] = []
    offset = 0
    for n, entry in enumerate(entries, start=1):
        target = (state_dir if entry.get("state") else root) / entry["path"]
        size = entry["size"]
        if size is None:
            try:
                target.unlink()
            except FileNotFoundError:
                pass
        else:
            staged = folder / f"{journal.stem}.{n}{UNFINISHED}"
            with open(staged, "wb") as f:
                f.write(payload[offset : offset + size])
            offset += size
            if entry.get("mode") is not None:
                os.chmod(staged, entry["mode"])
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)
            written.append(target)
        _crash_point(f"file:{n}")
    return written


def _retire(journal: Path, written: list[Path]) -> None:
    """The change's files are synced: only then may its journal go (a power cut before that replays it). Not
    while an older journal stands (one whose retirement failed, or is not done yet): the next start replays
    that one, and a later change to the same files must be replayed after it, or the older bytes would stay."""
    for path in written:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # replaced or deleted since by a later change, whose journal covers it
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    if not _older_journal(journal):
        journal.unlink(missing_ok=True)


def _older_journal(journal: Path) -> bool:
    """Does a committed journal older than `journal` stand beside it? (Their names sort as they were written.)"""
    return any(name.endswith(JOURNAL) and name < journal.name for name in os.listdir(journal.parent))


class Retirer(Background):
    """Syncs applied changes' files and deletes their journals on a thread of its own, oldest first, so the
    applies of a run's agent steps cost their scheduler one fsync each. A retirement that fails leaves its
    journal, and every later journal stays with it (_retire), so the next start replays them all in the order
    they were written and the files end as the newest change left them. close() waits for every journal."""

    def __init__(self) -> None:
        super().__init__(_retire, "apply-retirer", (OSError,))

    def retire(self, journal: Path, written: list[Path]) -> None:
        self.put(journal, written)


def _read_journal(journal: Path) -> tuple[str, list[dict], bytes]:
    """A committed journal's txid, entries and bytes; one that is not what apply_change wrote (cut short, garbage,
    a path leading out of its folder) is the user's error: replaying it could write anything anywhere, and
    dropping it could leave the project with part of a change, so a person decides."""
    data = journal.read_bytes()
    header, _newline, payload = data.partition(b"\n")
    try:
        parsed = json.loads(header)
        txid, entries = parsed["txid"], parsed["entries"]
        sizes = [entry["size"] for entry in entries]
        sound = isinstance(txid, str) and all(_journal_entry(entry) for entry in entries)
        sound = sound and sum(size or 0 for size in sizes) == len(payload)
    except (ValueError, TypeError, KeyError):  # not JSON, not UTF-8, or not its shape
        sound = False
    if not sound:
        shown = os.path.relpath(journal, journal.parent.parent.parent)
        raise UserError(
            f"error: {shown} is damaged: the change it was applying cannot be finished, and the project may hold "
            f"part of it; move the journal away (`mv {shown} {shown}.damaged`), run again, and check the files "
            "(`runner history INTENT` lists an agent step's versions, `runner rollback INTENT` puts one back)"
        )
    return txid, entries, payload


def _journal_entry(entry: object) -> bool:
    """A journal entry as apply_change writes it: a relative path that stays in its folder, a size (None: deleted)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return False
    size, parts = entry.get("size"), Path(entry["path"]).parts
    sized = size is None or (isinstance(size, int) and not isinstance(size, bool) and size >= 0)
    return sized and bool(parts) and not Path(entry["path"]).is_absolute() and ".." not in parts


def recover(root: Path, state_dir: Path) -> list[str]:
    """Finish or discard applies a crash interrupted, oldest first; returns what was done, for the log."""
    folder = state_dir / "apply"
    done: list[str] = []
    if not folder.is_dir():
        return done
    rolled: list[tuple[Path, list[Path]]] = []
    for path in sorted(folder.iterdir()):
        if path.is_dir():  # the layout before one journal file held the bytes: <txid>/journal.json and new/
            done.append(_recover_folder(root, path))
        elif path.name.endswith(JOURNAL):
            txid, entries, payload = _read_journal(path)
            rolled.append((path, _roll_forward(root, path, entries, payload)))
            files = sum(1 for entry in entries if not entry.get("state"))  # the project's: what the user sees
            done.append(f"completed the interrupted apply {txid} ({files} files)")
    # every journal replayed before any is retired: one whose retirement fails again leaves the files as the
    # newest change made them, with every journal still there for the next start
    for path, written in rolled:
        _retire(path, written)
    for path in sorted(folder.iterdir()):
        if path.name.endswith(JOURNAL + UNFINISHED):
            txid = unstored(path.name.removesuffix(JOURNAL + UNFINISHED).split("-", 1)[-1])
            done.append(f"discarded the unfinished apply {txid}: the project was not touched")
        if path.name.endswith(UNFINISHED):
            path.unlink(missing_ok=True)
    return done


def _recover_folder(root: Path, tx: Path) -> str:
    journal = tx / "journal.json"
    if not journal.is_file():
        shutil.rmtree(tx, ignore_errors=True)
        return f"discarded the unfinished apply {tx.name}: the project was not touched"
    entries = json.loads(journal.read_text())["entries"]
    state_dir = tx.parent.parent
    for entry in entries:
        target = (state_dir if entry.get("state") else root) / entry["path"]
        if entry["new"] is None:
            target.unlink(missing_ok=True)
        elif (tx / entry["new"]).exists():  # gone if an earlier, interrupted roll-forward already moved it
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tx / entry["new"], target)
    shutil.rmtree(tx, ignore_errors=True)
    files = sum(1 for entry in entries if not entry.get("state"))
    return f"completed the interrupted apply {tx.name} ({files} files)"


# ---- the version record of an applied agent change -------------------------------------------------------

VERSIONS = "versions"  # under the state folder: versions/<intent>/<n>/ and versions/<intent>/blobs/<digest>


def versions_dir(state_dir: Path, intent: str) -> Path:
    return state_dir / VERSIONS / stored(intent)


def version_numbers(state_dir: Path, intent: str) -> list[int]:
    """The recorded versions of `intent`, oldest first."""
    folder = versions_dir(state_dir, intent)
    if not folder.is_dir():
        return []
    # a version.json that is not a file is a damaged version (plans/versions.py says so), not one never made
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and (p / "version.json").exists())


def version_files(
    state_dir: Path, record: dict, diff: str, transcript: str | None, blobs: dict[str, bytes]
) -> dict[str, bytes]:
    """The files (relative to state_dir) that record version record["version"] of record["intent"]: its
    version.json, its diff, the winning attempt's transcript, and a copy of each file's bytes it does not hold
    yet (so a rollback never depends on the cache, which `runner cache gc` prunes)."""
    intent, number = record["intent"], record["version"]
    base = f"{VERSIONS}/{stored(intent)}"
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


def pending_path(state_dir: Path, intent: str) -> Path:
    return pending_dir(state_dir) / f"{stored(intent)}.json"


def save_pending(state_dir: Path, intent: str, payload: dict) -> Path:
    pending_dir(state_dir).mkdir(parents=True, exist_ok=True)
    path = pending_path(state_dir, intent)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, path)
    return path


def load_pending(state_dir: Path) -> dict[str, dict]:
    """Every change waiting for approval, by intent. One that is not what save_pending wrote (a disk's or a
    person's damage) is the user's error, named with the command that mends it: a draft waits for a person's
    decision, so it is neither guessed at nor dropped (and the model paid again) behind their back."""
    folder = pending_dir(state_dir)
    if not folder.is_dir():
        return {}
    waiting = {}
    for path in sorted(folder.glob("*.json")):
        try:
            entry = json.loads(path.read_bytes())
        except ValueError:  # not JSON, or not UTF-8
            entry = None
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or not _tables(entry):
            shown = os.path.relpath(path, state_dir.parent)
            raise UserError(
                f"error: {shown} is damaged: it is not a change runner saved for approval; remove it "
                f"(`rm {shown}`), then run again (the next `runner make` drafts {path.stem}'s change again)"
            )
        waiting[unstored(path.stem)] = entry
    return waiting


def _tables(entry: dict) -> bool:
    return all(isinstance(entry.get(table), dict) for table in ("files", "inputs", "ingredients"))  # approve's


def drop_pending(state_dir: Path, intent: str) -> None:
    pending_path(state_dir, intent).unlink(missing_ok=True)
