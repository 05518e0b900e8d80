"""Every file and folder a run leaves under .runner/, damaged in each way a disk or a person damages one: a file
replaced by a folder (a folder by a file of garbage), a file's bytes replaced by garbage, emptied, and made
unreadable for real: another user's (root's) with mode 000, the CLI run as `nobody` on a copy it owns (as root it
would read anything). A cache of something else is rebuilt and the build goes on; anything else is refused (exit
2) with its path and the command that mends it, and once that command ran, the build goes on. Never exit 4, never a
traceback, and the run after is a no-op."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from ci import need, need_tools
from damage import damage

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
# (record.py), the journal (workspace.InflightJournal), the indexes' logs (index_file.IndexFile), the compiled spec and
# its tables (compiled.py), the proofs (proof.PROOF); test_the_probe_meets_every_file_a_run_leaves says so
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


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def statuses(self) -> dict[str, str]:
        return {e["intent"]: e["status"] for e in self.events() if e["event"] == "step_finished"}


def _run(root: Path, *args: str, as_nobody: bool = False) -> Ran:
    """`python -m runner ARGS` in `root`; as `nobody` (who owns the copy then) when `as_nobody`."""
    command = [sys.executable, "-m", "runner", *args]
    if as_nobody:
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    return Ran(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The project after two runs (the second after an edit), each step's output made, its log written."""
    root = tmp_path_factory.mktemp("built") / "proj"
    (root / "src").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "intents.toml").write_text(SPEC)
    (root / "src/x.txt").write_text("hello\n")
    assert _run(root, "make", "--json").code == 0
    (root / "src/x.txt").write_text("edited\n")
    assert _run(root, "make", "--json").code == 0
    return root


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


def _copy(built: Path, shared: Path, rel: str, form: str) -> tuple[Path, bool]:
    """The built project copied into `shared`, `rel` under its .runner/ damaged in `form`; whether to run as
    nobody."""
    root = shared / "proj"
    shutil.copytree(built, root, symlinks=True)
    runs = _runs(root / ".runner")
    target = root / ".runner" / rel.replace("FIRST", runs["FIRST"]).replace("LAST", runs["LAST"])
    if form != "unreadable":
        damage(target, form)
        return root, False
    # another user's that no one else may read: root's, mode 000; the CLI runs as nobody, who owns the rest
    need_tools("setpriv", how="install util-linux")
    need("root, to make a file another user's", os.geteuid() == 0, "run the tests as root (CI does)")
    subprocess.run(["chown", "-R", "nobody:nogroup", str(root)], check=True)
    os.chown(target, 0, 0)
    os.chmod(target, 0)
    return root, True


def _no_bug(result: Ran, what: object) -> None:
    assert result.code != 4 and "Traceback" not in result.err and "internal error" not in result.err, (what, result)


@pytest.mark.parametrize(("rel", "form"), CASES, ids=[f"{rel}-{form}" for rel, form in CASES])
def test_damaged_state_is_rebuilt_or_named_with_the_command_that_mends_it(built, shared, rel, form):
    root, as_nobody = _copy(built, shared, rel, form)
    for reader in (("status",), ("log",), ("cache", "stats")):  # the commands that only read: never a bug either
        _no_bug(_run(root, *reader, as_nobody=as_nobody), reader)
    (root / "src/x.txt").write_text(f"{rel} {form}\n")  # so the build has work to do, not only a proof to check
    result = _run(root, "make", "--json", as_nobody=as_nobody)
    _no_bug(result, "make")
    refused = REFUSED.get((rel, form))
    if refused is not None:
        assert (result.code, result.err) == (2, refused)
        mend = re.search(r"\(`(.*)`\)", refused)[1].replace("sudo ", "")
        subprocess.run(["sh", "-c", mend], cwd=root, check=True)  # as the user (or root, for sudo) would
        result = _run(root, "make", "--json", as_nobody=as_nobody)
    assert result.code == 0, (rel, form, result.err)
    assert result.err == "" or SET_ASIDE.match(result.err), result.err
    assert result.statuses() == {"a": "ran", "b": "ran"}
    assert (root / "out/b.txt").read_text() == f"{rel} {form}\n".upper()
    again = _run(root, "make", "--json", as_nobody=as_nobody)
    assert again.code == 0 and again.events()[-1]["ran"] == 0, again.err
