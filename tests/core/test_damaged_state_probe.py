"""Every file and folder a run leaves under .runner/, damaged in each way a disk or a person damages one: a file
replaced by a folder (a folder by a file of garbage), a file's bytes replaced by garbage, emptied, and made
unreadable for real: another user's (root's) with mode 000, the CLI run as `nobody` on a copy it owns (as root it
would read anything). A cache of something else is rebuilt and the build goes on; anything else is refused (exit
2) with its path and the command that mends it, and once that command ran, the build goes on. Never exit 4, never a
traceback, and the run after is a no-op."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ci import need, need_tools
from conftest import Project

GARBAGE = bytes((i * 151 + 7) % 256 for i in range(512))
SPEC = """
[project]
name = "probe"
default = "all"

[intent.a]
run = "echo printing a; cat src/x.txt > out/a.txt"
inputs = ["src/x.txt"]
outputs = ["out/a.txt"]

[intent.b]
run = "tr a-z A-Z < out/a.txt > out/b.txt"
inputs = ["out/a.txt"]
outputs = ["out/b.txt"]
deps = ["a"]

[intent.all]
deps = ["b"]
"""

# what two runs leave under .runner/ (the first run and the last by their ids): workspace.Layout, the run record
# (record.py), the journal (workspace.InflightJournal), the indexes' logs (keys.IndexFile), the compiled spec and
# its tables (compiled.py), the proofs (freshness.PROOF); test_the_probe_meets_every_file_a_run_leaves says so
FILES = [
    ".gitignore",
    "lock",
    "inflight",
    "state",
    "state.log",
    "stat",
    "stat.log",
    "noop",
    "spec.pickle",
    "spec.pickle.tables",
    "cache/cache.db",
    "runs/FIRST/events.jsonl",
    "runs/FIRST/logs/a.log",
    "runs/LAST/events.jsonl",
    "runs/LAST/logs/a.log",
]
FOLDERS = [".", "cache", "runs", "runs/FIRST", "runs/FIRST/logs", "runs/LAST", "runs/LAST/logs"]
CASES = [(rel, form) for rel in FILES for form in ("folder", "garbage", "empty", "unreadable")] + [
    (rel, form) for rel in FOLDERS for form in ("file", "empty", "unreadable")
]


def _give_back(rel: str) -> str:
    return (
        f"error: {rel} cannot be read or written (Permission denied): give .runner back to nobody "
        "(`sudo chown -R nobody .runner && sudo chmod -R u+rwX .runner`), then run again\n"
    )


# what cannot be rebuilt (the run record, the journal of running steps, the folder holding them all), damaged so
# that the run cannot go on, is refused with the command that mends it
REFUSED = {
    (".", "file"): "error: .runner is a file, where runner keeps a folder: move it away "
    "(`mv .runner .runner.damaged`), then run again\n",
    (".", "unreadable"): _give_back(".runner"),
    ("inflight", "folder"): "error: .runner/inflight is a folder, where runner keeps a file: remove it "
    "(`rm -r .runner/inflight`), then run again\n",
    ("inflight", "unreadable"): _give_back(".runner/inflight"),
    ("runs", "file"): "error: .runner/runs is a file, where runner keeps a folder: move it away "
    "(`mv .runner/runs .runner/runs.damaged`), then run again\n",
    ("runs", "unreadable"): _give_back(".runner/runs"),
}
# the cache database, unusable, is set aside and the build goes on without it (test_damaged_state.py's rule)
SET_ASIDE = re.compile(
    r"^runner: the cache database \.runner/cache/cache\.db (is damaged|is another user's) \([^)]*\); "
    r"moved it to \.runner/cache\.damaged-\d{8}-\d{6}(-\d+)? and going on without it\n$"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The project after two runs (the second after an edit), each step's output made, its log written."""
    project = Project(tmp_path_factory.mktemp("built") / "proj")
    project.spec(SPEC)
    project.write("src/x.txt", "hello\n")
    (project.root / "out").mkdir()
    assert project.make().code == 0
    project.write("src/x.txt", "edited\n")
    project.age_all()
    assert project.make().code == 0
    return project.root


@pytest.fixture
def shared():
    """A folder `nobody` may walk into (pytest's own are root's alone)."""
    folder = tempfile.mkdtemp(prefix="runner-probe-")
    os.chmod(folder, 0o755)
    yield Path(folder)
    shutil.rmtree(folder)


def _runs(state: Path) -> dict[str, str]:
    ids = sorted(p.name for p in (state / "runs").iterdir())
    return {"FIRST": ids[0], "LAST": ids[-1]}


def _listed(root: Path) -> set[str]:
    state = root / ".runner"
    named = {v: k for k, v in _runs(state).items()}
    found = set()
    for path in state.rglob("*"):
        parts = [named.get(part, part) for part in path.relative_to(state).parts]
        found.add("/".join(parts))
    return found


def test_the_probe_meets_every_file_a_run_leaves(built):
    assert _listed(built) == (set(FILES) | set(FOLDERS)) - {"."}


def _damage(path: Path, form: str) -> None:
    if form == "folder":
        path.unlink()
        path.mkdir()
        (path / "inside").write_bytes(GARBAGE)
    elif form == "file":
        shutil.rmtree(path)
        path.write_bytes(GARBAGE)
    elif form == "garbage":
        path.write_bytes(GARBAGE)
    elif path.is_dir():  # emptied
        shutil.rmtree(path)
        path.mkdir()
    else:
        path.write_bytes(b"")


class Copy(Project):
    """The project copied, run as `nobody` when `as_nobody` (which owns the copy then)."""

    as_nobody = False

    def run(self, *args: str, timeout: float = 120, env: dict | None = None):
        from conftest import Result

        command = [sys.executable, "-m", "runner", *args]
        if self.as_nobody:
            command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
        proc = subprocess.run(command, cwd=self.root, capture_output=True, text=True, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)


def _copy(built: Path, shared: Path, rel: str, form: str) -> tuple[Copy, Path]:
    """The built project copied into `shared`, `rel` under its .runner/ damaged in `form`."""
    root = shared / "proj"
    shutil.copytree(built, root, symlinks=True)
    project = Copy(root)
    runs = _runs(root / ".runner")
    target = root / ".runner" / rel.replace("FIRST", runs["FIRST"]).replace("LAST", runs["LAST"])
    if form == "unreadable":  # another user's that no one else may read: root's, mode 000; the CLI runs as nobody
        need_tools("setpriv", how="install util-linux")
        need("root, to make a file another user's", os.geteuid() == 0, "run the tests as root (CI does)")
        subprocess.run(["chown", "-R", "nobody:nogroup", str(root)], check=True)
        project.as_nobody = True
        os.chown(target, 0, 0)
        os.chmod(target, 0)
    else:
        _damage(target, form)
    return project, target


def _no_bug(result, what: str) -> None:
    assert result.code != 4 and "Traceback" not in result.err and "internal error" not in result.err, (what, result)


@pytest.mark.parametrize(("rel", "form"), CASES, ids=[f"{rel}-{form}" for rel, form in CASES])
def test_damaged_state_is_rebuilt_or_named_with_the_command_that_mends_it(built, shared, rel, form):
    project, _target = _copy(built, shared, rel, form)
    for reader in (("status",), ("log",), ("cache", "stats")):  # the commands that only read: never a bug either
        _no_bug(project.run(*reader), reader)
    project.write("src/x.txt", f"{rel} {form}\n")
    if project.as_nobody:
        os.chown(project.root / "src/x.txt", 65534, 65534)
    result = project.make()
    _no_bug(result, "make")
    refused = REFUSED.get((rel, form))
    if refused is not None:
        assert (result.code, result.err) == (2, refused)
        mend = re.search(r"\(`(.*)`\)", refused)[1].replace("sudo ", "")
        subprocess.run(["sh", "-c", mend], cwd=project.root, check=True)  # as the user (or root, for sudo) would
        result = project.make()
    assert result.code == 0, (rel, form, result.err)
    assert result.err == "" or SET_ASIDE.match(result.err), result.err
    assert result.statuses() == {"a": "ran", "b": "ran"}
    assert project.read("out/b.txt") == f"{rel} {form}\n".upper()
    again = project.make()
    assert again.code == 0 and again.finished()["ran"] == 0, again.err
