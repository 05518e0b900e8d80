"""The journaled apply's own file layout and recovery: one journal file per change, killed processes' journals
replayed oldest first (the run's state file is in each, so the newest must win), and the folder-per-change
layout an older runner left behind still completed or discarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
