"""A person's edit in a team mate's fresh clone (no .runner/ yet) sharing a remote cache: the work tree's bytes are
the only version there is, so the cached agent output is never restored over bytes git does not hold (issue 35,
point 1). Through the real CLI on the quickstart (replay worker, no key) in real git clones of a team's repository
that commits the agent's tests, with a file:// remote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agent_helpers import MINE, Quickstart

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}


def _git(where: Path, *args: str) -> str:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(where), **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, env=env, check=True)
    return done.stdout


def _team(tmp_path: Path) -> tuple[Quickstart, dict[str, str], bytes]:
    """The first clone: built once (the agent's tests pushed to the shared cache), its tests committed."""
    remote = {"RUNNER_REMOTE_CACHE": (tmp_path / "shared").as_uri()}
    first = Quickstart(tmp_path / "first")
    ignore = first.root / ".gitignore"
    ignore.write_text(ignore.read_text().replace("/tests/\n", ""))  # this team commits the agent's tests
    result, steps = first.make(**remote)
    assert result.returncode == 0 and steps["tests"]["status"] == "ran", result.stdout + result.stderr
    _git(first.root, "init", "-q")
    _git(first.root, "add", "-A")
    _git(first.root, "commit", "-qm", "the quickstart, with the agent's tests")
    return first, remote, (first.root / "tests/test_calc.py").read_bytes()


def _clone(team: Quickstart, where: Path) -> Quickstart:
    _git(where.parent, "clone", "-q", str(team.root), str(where))
    assert not (where / ".runner").exists()
    return Quickstart(where.parent, root=where)


def test_an_edit_in_a_fresh_clone_is_kept_not_restored_over(tmp_path):
    team, remote, agents = _team(tmp_path)
    clone = _clone(team, tmp_path / "mate")
    test_file = clone.root / "tests/test_calc.py"
    edited = agents + MINE.encode()
    test_file.write_bytes(edited)  # before the first `runner make` of this clone

    kept = "output tests/test_calc.py edited: keep as version 2"  # version 1: the agent's, as the cache holds it
    status = clone.run("status", "--json", **remote)
    assert status.returncode == 0, status.stderr
    tests = next(s for s in json.loads(status.stdout)["steps"] if s["intent"] == "tests")
    assert (tests["action"], tests["reasons"]) == ("skip", [kept])
    assert test_file.read_bytes() == edited  # nothing written by looking

    result, steps = clone.make(**remote)
    assert result.returncode == 0, result.stderr
    assert (steps["tests"]["status"], steps["tests"]["version"], steps["tests"]["reasons"]) == ("kept", 2, [kept])
    assert steps["check"]["status"] == "ran"  # its dependant ran on the person's tests
    assert test_file.read_bytes() == edited
    cached, edit = clone.history()
    assert (cached["kind"], cached["tokens"], cached["verified"]) == ("cache", 0, True)
    assert (edit["kind"], edit["edits"], edit["diffstat"]) == ("edit", 1, {"files": 1, "insertions": 2, "deletions": 0})
    shown = clone.run("show", "tests@2")
    assert "+# a case the agent missed, added by hand\n" in shown.stdout, shown.stdout + shown.stderr

    again, steps = clone.make(**remote)  # up to date with the edit
    assert (steps["tests"]["status"], steps[""]["ran"]) == ("cached", 0), again.stdout
    assert test_file.read_bytes() == edited
    back = clone.run("rollback", "tests")  # the agent's version back, from the cache's bytes kept as version 1
    assert back.returncode == 0, back.stderr
    assert test_file.read_bytes() == agents
    assert clone.run("rollback", "tests", "--to", "2").returncode == 0  # and the edit back again: nothing lost
    assert test_file.read_bytes() == edited

    # the edit stays in this clone: another fresh clone still gets the agent's bytes from the shared cache
    other = _clone(team, tmp_path / "other")
    result, steps = other.make(**remote)
    assert result.returncode == 0 and steps["tests"]["status"] == "cached", result.stdout
    assert (other.root / "tests/test_calc.py").read_bytes() == agents
    assert other.history() == []


def test_a_new_untracked_file_in_a_fresh_clone_is_kept(tmp_path):
    """The team's repository does not hold the output (the quickstart ignores tests/): a file a person wrote
    there before the first make is theirs alone."""
    remote = {"RUNNER_REMOTE_CACHE": (tmp_path / "shared").as_uri()}
    first = Quickstart(tmp_path / "first")
    assert first.make(**remote)[0].returncode == 0
    _git(first.root, "init", "-q")
    _git(first.root, "add", "-A")
    _git(first.root, "commit", "-qm", "the quickstart")
    clone = _clone(first, tmp_path / "mate")
    assert not (clone.root / "tests").exists()
    mine = b"# my own tests, written before the agent's\n"
    (clone.root / "tests").mkdir()
    (clone.root / "tests/test_calc.py").write_bytes(mine)
    result, steps = clone.make(**remote)
    assert result.returncode == 0, result.stderr
    assert (steps["tests"]["status"], steps["tests"]["version"]) == ("kept", 2), result.stdout
    assert (clone.root / "tests/test_calc.py").read_bytes() == mine


def test_a_committed_output_that_differs_from_the_cache_is_restored(tmp_path):
    """Bytes git holds as committed are no loss: the cache's answer for the inputs is restored, as make would."""
    team, remote, agents = _team(tmp_path)
    (team.root / "tests/test_calc.py").write_bytes(agents + b"# committed by a team mate\n")
    _git(team.root, "commit", "-qam", "a hand-made case, committed")
    clone = _clone(team, tmp_path / "mate")
    result, steps = clone.make(**remote)
    assert result.returncode == 0, result.stderr
    assert steps["tests"]["status"] == "restored", result.stdout
    assert (clone.root / "tests/test_calc.py").read_bytes() == agents
    # the restore is the intent's version 1 here, made by the first clone's run; rollback brings the committed
    # bytes back over it
    (restored,) = clone.history()
    first_run = json.loads((team.root / ".runner/versions/tests/1/version.json").read_text())["run"]
    assert (restored["kind"], restored["run"], restored["verified"]) == ("cache", first_run, True)
    assert clone.run("rollback", "tests", "--to", "0").returncode == 0
    assert (clone.root / "tests/test_calc.py").read_bytes() == agents + b"# committed by a team mate\n"


def test_outside_git_an_output_that_differs_from_the_cache_is_kept(tmp_path):
    """No repository to say the bytes are kept elsewhere: they may be the only copy there is."""
    remote = {"RUNNER_REMOTE_CACHE": (tmp_path / "shared").as_uri()}
    first = Quickstart(tmp_path / "first")
    assert first.make(**remote)[0].returncode == 0
    agents = (first.root / "tests/test_calc.py").read_bytes()
    copy = Quickstart(tmp_path / "copy")  # a copy of the project's files, no .runner/, no git
    (copy.root / "tests").mkdir()
    (copy.root / "tests/test_calc.py").write_bytes(agents + MINE.encode())
    result, steps = copy.make(**remote)
    assert (steps["tests"]["status"], steps["tests"]["version"]) == ("kept", 2), result.stdout
    assert (copy.root / "tests/test_calc.py").read_bytes() == agents + MINE.encode()
    assert steps["docs"]["status"] == "restored" and steps["docs"]["remote"] is True  # no file there: restored
