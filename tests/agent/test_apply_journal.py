"""The journaled apply's own file layout and recovery: one journal file per change, killed processes' journals
replayed oldest first (the run's state file is in each, so the newest must win), a journal whose retirement failed
never outlived by a newer one, and the folder-per-change layout an older runner left behind still completed or
discarded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ci import need

from runner.apply import recover

APPLY = """
import sys
from pathlib import Path
from runner.apply import apply_change
from runner.attempt import Change
root, state, text, txid = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
apply_change(root, state, Change(files={"out/a.txt": text.encode()}), txid, {"state": ("state " + text).encode()})
"""


def _apply_killed(tmp_path, text: str, txid: str, point: str) -> None:
    env = dict(os.environ, RUNNER_TEST_CRASH_AT=point)
    args = [sys.executable, "-c", APPLY, str(tmp_path / "proj"), str(tmp_path / "proj/.runner"), text, txid]
    assert subprocess.run(args, env=env).returncode == -9


def test_journals_of_killed_applies_are_replayed_oldest_first(tmp_path):
    (tmp_path / "proj/.runner").mkdir(parents=True)
    # each killed after its files were written but before they were synced and its journal dropped
    _apply_killed(tmp_path, "one", "r1-a", "replaced")
    _apply_killed(tmp_path, "two", "r2-a", "replaced")
    _apply_killed(tmp_path, "three", "r3-a", "staged")  # before its commit point: never applied
    (tmp_path / "proj/out/a.txt").write_text("lost in a power cut")
    (tmp_path / "proj/.runner/state").write_text("lost in a power cut")
    done = recover(tmp_path / "proj", tmp_path / "proj/.runner")
    assert done == [
        "completed the interrupted apply r1-a (1 files)",
        "completed the interrupted apply r2-a (1 files)",
        "discarded the unfinished apply r3-a: the project was not touched",
    ]
    assert (tmp_path / "proj/out/a.txt").read_text() == "two"
    assert (tmp_path / "proj/.runner/state").read_text() == "state two"  # the newer journal's state, not the older
    assert list((tmp_path / "proj/.runner/apply").iterdir()) == []


def test_a_change_killed_between_two_files_is_completed_from_its_journal(tmp_path):
    (tmp_path / "proj/.runner").mkdir(parents=True)
    _apply_killed(tmp_path, "one", "r1-a", "file:1")  # the project file is in place, the state file is not
    assert (tmp_path / "proj/out/a.txt").read_text() == "one"
    assert not (tmp_path / "proj/.runner/state").exists()
    assert recover(tmp_path / "proj", tmp_path / "proj/.runner") == ["completed the interrupted apply r1-a (1 files)"]
    assert (tmp_path / "proj/.runner/state").read_text() == "state one"
    assert list((tmp_path / "proj/.runner/apply").iterdir()) == []


def test_an_older_runner_s_folder_per_change_is_still_recovered(tmp_path):
    root, state = tmp_path / "proj", tmp_path / "proj/.runner"
    committed, unfinished = state / "apply/r1-a", state / "apply/r2-b"
    (committed / "new").mkdir(parents=True)
    (unfinished / "new").mkdir(parents=True)
    (committed / "new/0").write_text("from the old journal")
    entries = [{"path": "out/a.txt", "new": "new/0"}, {"path": "gone.txt", "new": None}]
    (committed / "journal.json").write_text(json.dumps({"txid": "r1-a", "entries": entries}))
    (unfinished / "new/0").write_text("never committed")
    (root / "gone.txt").write_text("deleted by the change")
    assert recover(root, state) == [
        "completed the interrupted apply r1-a (2 files)",
        "discarded the unfinished apply r2-b: the project was not touched",
    ]
    assert (root / "out/a.txt").read_text() == "from the old journal"
    assert not (root / "gone.txt").exists()
    assert list((state / "apply").iterdir()) == []


RETIRE = """
import os, sys
from pathlib import Path
from runner.apply import Retirer, apply_change
from runner.attempt import Change
root, state = Path(sys.argv[1]), Path(sys.argv[2])
retirer = Retirer()
apply_change(root, state, Change(files={"notes.txt": b"older"}), "r1-a", {"state": b"state older"}, retirer)
retirer.close()  # its retirement has failed: the file it must sync cannot be opened
os.chmod(root / "notes.txt", 0o644)  # the user makes it readable again; the next change retires fine
apply_change(root, state, Change(files={"notes.txt": b"newer"}), "r1-b", {"state": b"state newer"}, retirer)
retirer.close()
"""


def _as_owner() -> list[str]:
    """What runs a command that reads files as their owner would: root reads any file, but not without these
    two capabilities."""
    if os.geteuid() != 0:
        return []
    need("setpriv", shutil.which("setpriv") is not None, "install util-linux")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def test_a_journal_whose_retirement_failed_is_never_outlived_by_a_newer_one(tmp_path):
    root, state = tmp_path / "proj", tmp_path / "proj/.runner"
    state.mkdir(parents=True)
    # a write-only file: the apply keeps its mode, so syncing the bytes it wrote (which opens it to read) fails
    (root / "notes.txt").write_text("before")
    os.chmod(root / "notes.txt", 0o200)
    done = subprocess.run([*_as_owner(), sys.executable, "-c", RETIRE, str(root), str(state)], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert (root / "notes.txt").read_text() == "newer"
    left = sorted(p.name.split("-", 1)[1] for p in (state / "apply").iterdir())

    done = recover(root, state)  # the next start
    assert (root / "notes.txt").read_text() == "newer", "the older change's bytes were put back over the newer"
    assert (state / "state").read_text() == "state newer"
    # the older journal stood, and so did the newer one: the replay ended with it
    assert left == ["r1-a.journal", "r1-b.journal"]
    assert done == ["completed the interrupted apply r1-a (1 files)", "completed the interrupted apply r1-b (1 files)"]
    assert list((state / "apply").iterdir()) == []


RECOVER = """
import sys
from pathlib import Path
from runner.apply import recover
recover(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_a_retirement_that_fails_again_at_the_next_start_leaves_the_newest_bytes(tmp_path):
    root, state = tmp_path / "proj", tmp_path / "proj/.runner"
    state.mkdir(parents=True)
    (root / "secret.txt").write_text("")
    os.chmod(root / "secret.txt", 0o200)  # write-only: the older change's retirement fails, here and at the start
    apply_secret = APPLY.replace('{"out/a.txt": text.encode()}', '{"secret.txt": b"s", "out/a.txt": text.encode()}')
    env = dict(os.environ, RUNNER_TEST_CRASH_AT="replaced")
    args = [sys.executable, "-c", apply_secret, str(root), str(state), "older", "r1-a"]
    assert subprocess.run(args, env=env).returncode == -9
    _apply_killed(tmp_path, "newer", "r2-a", "replaced")

    done = subprocess.run([*_as_owner(), sys.executable, "-c", RECOVER, str(root), str(state)], capture_output=True)
    assert done.returncode == 1 and b"PermissionError" in done.stderr  # as before: the start cannot go on
    # but every journal was replayed before any was retired: the files are the newer change's, and both
    # journals stand for the start after, which replays them in the same order
    assert (root / "out/a.txt").read_text() == "newer"
    assert (state / "state").read_text() == "state newer"
    assert len([p for p in (state / "apply").iterdir() if p.name.endswith(".journal")]) == 2


def test_a_journal_written_while_the_clock_ran_ahead_is_still_replayed_before_a_newer_one(tmp_path):
    """Journal names order the replay. One written before the clock was set back (NTP) bears a later time than
    the next change's: the newer journal must still sort after it, or the older bytes would win."""
    (tmp_path / "proj/.runner").mkdir(parents=True)
    _apply_killed(tmp_path, "one", "r1-a", "replaced")
    folder = tmp_path / "proj/.runner/apply"
    (journal,) = folder.iterdir()
    ahead = int(journal.name[:20]) + 3600 * 10**9  # as if the clock had been an hour ahead when it was written
    journal.rename(folder / f"{ahead:020d}{journal.name[20:]}")
    _apply_killed(tmp_path, "two", "r2-a", "replaced")
    done = recover(tmp_path / "proj", tmp_path / "proj/.runner")
    assert done == ["completed the interrupted apply r1-a (1 files)", "completed the interrupted apply r2-a (1 files)"]
    assert (tmp_path / "proj/out/a.txt").read_text() == "two"
    assert (tmp_path / "proj/.runner/state").read_text() == "state two"
