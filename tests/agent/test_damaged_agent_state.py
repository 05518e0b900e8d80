"""An agent intent's own state under .runner/ (the change waiting for approval, the versions with their copies of
each file, the apply journal's folder) damaged as a disk or a person damages it: a file replaced by a folder or by
garbage, emptied; a folder replaced by a file, emptied. What only reads never fails with a bug nor touches the
project; `runner approve` either applies the change and records its version, or refuses before anything is
applied or cached (exit 2, the path and the command that mends it), and once that command ran, approves. The
core's state is probed the same way by tests/core/test_damaged_state_probe.py."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import runner_cli
from agent_helpers import PASSING_TEST, AgentProject
from damage import GARBAGE, damage

MINE = PASSING_TEST + "# mine\n"  # a person's edit of the agent's output, kept as version 2
SECOND = PASSING_TEST + "\ndef test_more():\n    assert True\n"  # the change that waits for approval
TEST_FILE = "tests/test_calc.py"


def _blob(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


# what the project leaves: version 1 (the agent's), version 2 (the person's edit, kept), a change waiting
FILES = [
    "pending/tests.json",
    "versions/tests/1/version.json",
    "versions/tests/1/diff.patch",
    "versions/tests/1/transcript.jsonl",
    "versions/tests/2/version.json",
    "versions/tests/2/diff.patch",
    f"versions/tests/blobs/{_blob(PASSING_TEST)}",
    f"versions/tests/blobs/{_blob(MINE)}",
]
FOLDERS = [
    "pending",
    "apply",
    "versions",
    "versions/tests",
    "versions/tests/1",
    "versions/tests/2",
    "versions/tests/blobs",
]
CASES = [(rel, form) for rel in FILES for form in ("folder", "garbage", "empty")] + [
    (rel, form) for rel in FOLDERS for form in ("file", "empty")
]


def _folder_in_the_way(rel: str) -> str:
    return (
        f"error: .runner/{rel} is a folder, where runner keeps a file: remove it (`rm -r .runner/{rel}`), "
        "then run again\n"
    )


def _file_in_the_way(rel: str) -> str:
    return (
        f"error: .runner/{rel} is a file, where runner keeps a folder: move it away "
        f"(`mv .runner/{rel} .runner/{rel}.damaged`), then run again\n"
    )


PENDING_DAMAGED = (
    "error: .runner/pending/tests.json is damaged: it is not a change runner saved for approval; remove it "
    "(`rm .runner/pending/tests.json`), then run again (the next `runner make` drafts tests's change again)\n"
)
# approving writes the version's files (its record, its diff, a copy of each file's bytes as it was) beside the
# change: what stands in the way of one is refused before the change is applied; a damaged draft is refused
REFUSED = {
    ("pending/tests.json", "garbage"): PENDING_DAMAGED,
    ("pending/tests.json", "empty"): PENDING_DAMAGED,
    ("pending/tests.json", "folder"): _folder_in_the_way("pending/tests.json"),
    (f"versions/tests/blobs/{_blob(MINE)}", "folder"): _folder_in_the_way(f"versions/tests/blobs/{_blob(MINE)}"),
    ("apply", "file"): _file_in_the_way("apply"),
    ("versions", "file"): _file_in_the_way("versions"),
    ("versions/tests", "file"): _file_in_the_way("versions/tests"),
    ("versions/tests/blobs", "file"): _file_in_the_way("versions/tests/blobs"),
    ("versions/tests/2", "file"): _file_in_the_way("versions/tests/2"),
}
# the draft is gone (its folder emptied, or a file stands there): nothing waits, so approving allows one more call
DRAFT_GONE = {("pending", "empty"), ("pending", "file")}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> AgentProject:
    base = tmp_path_factory.mktemp("agent-state")
    (base / "home").mkdir()
    agent = AgentProject(base / "proj", base / "home")
    agent.spec(agent.fake_codex_worker({"files": {TEST_FILE: PASSING_TEST}}))
    assert agent.make().code == 0  # version 1
    (agent.root / TEST_FILE).write_text(MINE)
    agent.spec(agent.fake_codex_worker({"files": {TEST_FILE: SECOND}}), policy='[policy.default]\nwrite_files = "ask"')
    (agent.root / "src/calc.py").write_text((agent.root / "src/calc.py").read_text() + "# edited\n")
    waits = agent.make()  # the edit kept as version 2; the change drafted from it waits (no terminal to ask)
    assert waits.code == 3 and waits.step("tests")["status"] == "blocked", waits.out + waits.err
    return agent


def test_the_probe_meets_every_file_of_an_agent_intent(built):
    state = built.root / ".runner"
    found = {str(p.relative_to(state)) for part in ("pending", "apply", "versions") for p in (state / part).rglob("*")}
    assert found | {"pending", "apply", "versions"} == set(FILES) | set(FOLDERS)


def _no_bug(result: subprocess.CompletedProcess, what: object) -> None:
    assert result.returncode != 4 and "Traceback" not in result.stderr, (what, result.stderr)
    assert "internal error" not in result.stderr, (what, result.stderr)


@pytest.mark.parametrize(("rel", "form"), CASES, ids=[f"{rel.split('/blobs/')[0]}-{form}" for rel, form in CASES])
def test_damaged_agent_state_is_approved_through_or_refused_before_anything_is_applied(built, tmp_path, rel, form):
    root = tmp_path / "proj"
    shutil.copytree(built.root, root, symlinks=True)
    env = built.env()

    def run(*args: str) -> subprocess.CompletedProcess:
        return runner_cli.run(args, root, env, 120)

    damage(root / ".runner" / rel, form)
    for reader in (("status",), ("log",), ("history", "tests"), ("show", "tests"), ("approve", "--show")):
        _no_bug(run(*reader), reader)
        assert (root / TEST_FILE).read_text() == MINE, reader  # what only reads never writes

    approved = run("approve", "tests")
    _no_bug(approved, "approve")
    refused = REFUSED.get((rel, form))
    if refused is not None:
        assert (approved.returncode, approved.stderr) == (2, refused)
        assert (root / TEST_FILE).read_text() == MINE  # nothing applied
        if not rel.startswith("pending"):  # nothing cached either: the change still waits, never restored unasked
            assert run("status").stdout.startswith("wait  tests  waiting for approval: ")
            _no_bug(run("make"), "make")
            assert (root / TEST_FILE).read_text() == MINE
        mend = re.search(r"\(`(.*)`\)", refused)[1]
        subprocess.run(["sh", "-c", mend], cwd=root, check=True)
        approved = run("approve", "tests")
    assert approved.returncode == 0, approved.stderr
    if rel.startswith("pending") and (rel, form) in REFUSED or (rel, form) in DRAFT_GONE:
        # the draft was dropped: the step may call the model once more, nothing was applied
        assert approved.stdout == "allowed tests: its next `runner make` may call the model once\n"
        assert (root / TEST_FILE).read_text() == MINE
        return
    assert approved.stdout == f"applied tests: {TEST_FILE}\n"
    assert (root / TEST_FILE).read_text() == SECOND
    history = run("history", "tests", "--json")
    _no_bug(history, "history")
    if history.returncode == 0:  # a damaged version record is named by history (its own test), not mended here
        latest = json.loads(history.stdout)["versions"][-1]  # numbered after what is left of the history
        assert (latest["kind"], latest["diffstat"]["files"]) == ("make", 1), latest


def _approved_to_the_commit_point(built: AgentProject, tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of the project whose `runner approve` was killed just after its journal was committed (before any
    file was put in place): the next start finishes the change from the journal."""
    root = tmp_path / "proj"
    shutil.copytree(built.root, root, symlinks=True)
    killed = runner_cli.run(("approve", "tests"), root, dict(built.env(), RUNNER_TEST_CRASH_AT="journaled"), 120)
    assert killed.returncode == -9, killed.stderr
    (journal,) = (root / ".runner/apply").glob("*.journal")
    return root, journal, built.env()


def test_a_folder_in_the_way_of_a_journal_s_file_is_named_and_the_change_finished_once_it_is_gone(built, tmp_path):
    root, journal, env = _approved_to_the_commit_point(built, tmp_path)
    header = json.loads(journal.read_bytes().partition(b"\n")[0])
    (blob,) = [e["path"] for e in header["entries"] if "/blobs/" in e["path"]]  # SECOND's copy, new to the history
    (root / ".runner" / blob).mkdir()
    blocked = runner_cli.run(("make",), root, env, 120)
    assert (blocked.returncode, blocked.stderr) == (2, _folder_in_the_way(blob))
    (root / ".runner" / blob).rmdir()
    finished = runner_cli.run(("make",), root, env, 120)
    assert finished.returncode == 0, finished.stderr
    assert finished.stderr == "runner: completed the interrupted apply " + header["txid"] + " (1 files)\n"
    assert (root / TEST_FILE).read_text() == SECOND
    latest = json.loads(runner_cli.run(("history", "tests", "--json"), root, env, 120).stdout)["versions"][-1]
    assert (latest["version"], latest["kind"]) == (3, "make")


@pytest.mark.parametrize("damage", ["garbage", "empty", "cut short", "a path out of the project"])
def test_a_damaged_journal_is_refused_never_replayed_and_moving_it_away_lets_the_build_go_on(built, tmp_path, damage):
    root, journal, env = _approved_to_the_commit_point(built, tmp_path)
    data = journal.read_bytes()
    if damage == "garbage":
        journal.write_bytes(GARBAGE)
    elif damage == "empty":
        journal.write_bytes(b"")
    elif damage == "cut short":
        journal.write_bytes(data[:-10])
    else:  # the same bytes, sent one folder up: outside the project
        journal.write_bytes(data.replace(f'"path": "{TEST_FILE}"'.encode(), f'"path": "../{TEST_FILE}"'.encode()))
    shown = str(journal.relative_to(root))
    said = (
        f"error: {shown} is damaged: the change it was applying cannot be finished, and the project may hold part "
        f"of it; move the journal away (`mv {shown} {shown}.damaged`), run again, and check the files "
        "(`runner history INTENT` lists an agent step's versions, `runner rollback INTENT` puts one back)\n"
    )
    for command in (("make",), ("approve", "tests"), ("rollback", "tests")):
        refused = runner_cli.run(command, root, env, 120)
        assert (refused.returncode, refused.stderr) == (2, said), command
    assert (root / TEST_FILE).read_text() == MINE and not (tmp_path / TEST_FILE).exists()
    subprocess.run(["sh", "-c", re.search(r"\(`(mv .*?)`\)", said)[1]], cwd=root, check=True)
    _no_bug(runner_cli.run(("make",), root, env, 120), "make")


def test_an_approve_killed_after_its_commit_point_is_finished_by_the_next_command_and_waits_no_more(built, tmp_path):
    root, journal, env = _approved_to_the_commit_point(built, tmp_path)
    txid = json.loads(journal.read_bytes().partition(b"\n")[0])["txid"]
    again = runner_cli.run(("approve", "tests"), root, env, 120)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"runner: completed the interrupted apply {txid} (1 files)\n"  # the draft went with it
    assert (root / TEST_FILE).read_text() == SECOND
    assert runner_cli.run(("status",), root, env, 120).stdout.splitlines()[0] == "skip  tests  up to date"
    assert runner_cli.run(("approve", "--show"), root, env, 120).stdout == "nothing waits for approval\n"
    versions = json.loads(runner_cli.run(("history", "tests", "--json"), root, env, 120).stdout)["versions"]
    assert [(v["version"], v["kind"]) for v in versions] == [(1, "make"), (2, "edit"), (3, "make")]
