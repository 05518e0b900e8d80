"""An agent intent's version record (.runner/versions/<intent>/<n>/version.json) damaged: history, show and rollback
name the file and what to do (exit 2), never an internal error; once that version is taken out of the history as
the message says, the others are listed and shown as before. A record cannot be made again: it is the history."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from agent_helpers import Run
from ci import need, need_tools
from test_agent_versions import _two_versions

VERSION_2 = ".runner/versions/tests/2/version.json"


def _message(why: str) -> str:
    return (
        f"error: {VERSION_2} is damaged ({why}): the versions of 'tests' cannot be read without it; put it back "
        "from a copy, or take version 2 out of the history (`rm -r .runner/versions/tests/2`)\n"
    )


def _version_1(agent) -> str:
    return (agent.root / ".runner/versions/tests/1/version.json").read_text()


DAMAGE = {
    "garbage": (
        lambda agent: b"\x07\xff garbage",
        "not JSON: 'utf-8' codec can't decode byte 0xff in position 1: invalid start byte",
    ),
    "empty": (lambda agent: b"", "not JSON: Expecting value: line 1 column 1 (char 0)"),
    "a list": (lambda agent: b"[]", "a JSON list, not an object"),
    "no files": (
        lambda agent: json.dumps({**json.loads(_version_1(agent)), "version": 2, "files": None}).encode(),
        "its files is not a dict",
    ),
    "version 1's": (lambda agent: _version_1(agent).encode(), "it records version 1 of 'tests'"),
    "a folder": (None, "a folder stands there"),
}


@pytest.mark.parametrize("form", list(DAMAGE))
def test_a_damaged_version_record_is_named_with_the_way_out(agent, server, form):
    _two_versions(agent, server)
    path = agent.root / VERSION_2
    make, why = DAMAGE[form]
    if make is None:
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(make(agent))
    for command in (("history", "tests"), ("show", "tests@1"), ("show", "tests"), ("rollback", "tests")):
        result = agent.run(*command)
        assert (result.code, result.err) == (2, _message(why)), command
    assert (agent.root / "tests/test_calc.py").read_text().count("def test_") == 2  # the rollback changed nothing

    subprocess.run(["rm", "-r", ".runner/versions/tests/2"], cwd=agent.root, check=True)  # the way out it named
    listed = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [(v["version"], v["kind"]) for v in listed] == [(1, "make")]
    assert agent.run("show", "tests@1").code == 0


def test_a_version_record_another_user_made_unreadable_is_named_with_the_command_that_gives_it_back(agent, server):
    """Root's, mode 000, read by `nobody` (as root, chmod stops no read), on a copy of the project it owns."""
    need_tools("setpriv", how="install util-linux")
    need("root, to make a file another user's", os.geteuid() == 0, "run the tests as root (CI does)")
    _two_versions(agent, server)
    shared = Path(tempfile.mkdtemp(prefix="runner-versions-"))
    try:
        os.chmod(shared, 0o755)
        root = shared / "proj"
        shutil.copytree(agent.root, root, symlinks=True)
        subprocess.run(["chown", "-R", "nobody:nogroup", str(root)], check=True)
        os.chown(root / VERSION_2, 0, 0)
        os.chmod(root / VERSION_2, 0)
        for command in (("history", "tests"), ("show", "tests"), ("rollback", "tests")):
            proc = subprocess.run(
                [
                    "setpriv",
                    "--reuid=nobody",
                    "--regid=nogroup",
                    "--clear-groups",
                    sys.executable,
                    "-m",
                    "runner",
                    *command,
                ],
                cwd=root,
                capture_output=True,
                text=True,
                env=agent.env(),
                timeout=120,
            )
            result = Run(proc.returncode, proc.stdout, proc.stderr)
            assert (result.code, result.err) == (
                2,
                f"error: {VERSION_2} cannot be read or written (Permission denied): give .runner back to nobody "
                "(`sudo chown -R nobody .runner && sudo chmod -R u+rwX .runner`), then run again\n",
            ), command
        mend = re.search(r"\(`(.*)`\)", result.err)[1].replace("sudo ", "")
        subprocess.run(["sh", "-c", mend], cwd=root, check=True)
        proc = subprocess.run(
            [
                "setpriv",
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                sys.executable,
                "-m",
                "runner",
                "history",
                "tests",
                "--json",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            env=agent.env(),
            timeout=120,
        )
        assert [v["version"] for v in json.loads(proc.stdout)["versions"]] == [1, 2], proc.stderr
    finally:
        shutil.rmtree(shared)
