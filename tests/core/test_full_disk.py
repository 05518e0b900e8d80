"""A full disk, for real: a small tmpfs mounted for each test holds the project, and a step fills it (with its
output, with what it prints, or with a file it does not declare, so that the runner's own writes meet the full
disk). Each time the run says `no space left on the device (writing PATH)`, exits 1 (2 when nothing could start)
without a traceback, leaves no half-written output, and the next run, once there is room, does the right thing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

MB = 1 << 20


def _project(project, spec: str):
    project.spec(spec)
    project.write("in.txt", "1\n")
    (project.root / "out").mkdir()
    return project


def _failed(result) -> dict:
    return next(e for e in result.events() if e["event"] == "step_finished" and e["status"] == "failed")


def _clean(result) -> None:
    """What a full disk must never show."""
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err


def _half_written(project) -> list[str]:
    """Temporary files a write left beside the file it was to replace, anywhere in the project."""
    return [str(p) for p in project.root.rglob("*.tmp")]


FILLS_WITH_ITS_OUTPUT = """
[intent.big]
run = "head -c $(cat size.txt) /dev/zero > out/big.bin"
inputs = ["size.txt"]
outputs = ["out/big.bin"]
"""


def test_a_step_that_fills_the_disk_with_its_output_fails_and_leaves_no_half_of_it(small_disk):
    project = _project(small_disk(4 * MB), FILLS_WITH_ITS_OUTPUT)
    project.write("size.txt", str(6 * MB))
    result = project.make()
    assert result.code == 1, result.err
    _clean(result)
    failed = _failed(result)
    assert failed["intent"] == "big" and failed["error"] == "no space left on the device (writing out/big.bin)"
    assert not project.exists("out/big.bin")  # not the 4 MB that fitted
    assert result.finished()["status"] == "failed" and result.finished()["left"] == ["big"]
    assert _half_written(project) == []

    project.write("size.txt", str(1 * MB))  # it fits now
    again = project.make()
    assert again.code == 0, again.err
    assert again.statuses() == {"big": "ran"}
    assert (project.root / "out/big.bin").stat().st_size == 1 * MB
    assert project.make().finished()["ran"] == 0


PRINTS_A_FLOOD = """
[intent.loud]
run = "yes | head -c $(cat size.txt); echo done > out/loud.txt"
inputs = ["size.txt"]
outputs = ["out/loud.txt"]
"""


def test_a_step_whose_log_fills_the_disk_fails_and_its_log_gives_the_space_back(small_disk):
    project = _project(small_disk(4 * MB), PRINTS_A_FLOOD)
    project.write("size.txt", str(6 * MB))
    result = project.make()
    assert result.code == 1, result.err
    _clean(result)
    failed = _failed(result)
    run_id = result.events()[0]["run_id"]
    assert failed["error"] == f"no space left on the device (writing .runner/runs/{run_id}/logs/loud.log)"
    assert not project.exists("out/loud.txt")
    log = Path(failed["log"])
    assert log.read_bytes().startswith(b"$ yes | head") and log.stat().st_size <= 1 << 16  # cut to its head
    plain = project.run("make")  # as a person reads it
    assert plain.code == 1
    assert "FAILED loud: no space left on the device (writing .runner/runs/" in plain.err

    project.write("size.txt", "1000")
    again = project.make()
    assert again.code == 0, again.err
    assert again.statuses() == {"loud": "ran"} and project.read("out/loud.txt") == "done\n"


FILLS_THE_DISK_UNSEEN = """
[intent.a]
run = "head -c 100000 /dev/urandom > out/a.bin; [ ! -f fill ] || head -c 9000000 /dev/zero >filler 2>&-; true"
inputs = ["in.txt"]
outputs = ["out/a.bin"]

[intent.b]
run = "cp out/a.bin out/b.bin"
inputs = ["out/a.bin"]
outputs = ["out/b.bin"]
deps = ["a"]
"""


def test_a_cache_write_that_finds_the_disk_full_fails_the_step_and_keeps_nothing_unrecorded(small_disk):
    """The step succeeds, then fills the disk with a file it does not declare: storing its 100 KB output in the
    cache (a file of its own under .runner/cache) finds no room."""
    project = _project(small_disk(4 * MB), FILLS_THE_DISK_UNSEEN)
    project.write("fill", "")
    result = project.make()
    assert result.code == 1, result.err
    _clean(result)
    failed = {
        e["intent"]: e["error"] for e in result.events() if e["event"] == "step_finished" and e["status"] == "failed"
    }
    # b started on a's output before a's record was stored, and met the full disk too; a's output stays until
    # b ends (b reads it), then goes: no output is kept without its record
    assert failed == {
        "a": "no space left on the device (writing .runner/cache/cache.db)",
        "b": "no space left on the device (writing out/b.bin)",
    }
    assert not project.exists("out/a.bin") and not project.exists("out/b.bin")
    # no value file the rolled-back transaction would never name, no half-written index beside its file
    assert sorted(p.name for p in (project.root / ".runner/cache").rglob("*") if p.is_file()) == ["cache.db"]
    assert _half_written(project) == []

    (project.root / "fill").unlink()
    (project.root / "filler").unlink()
    again = project.make()
    assert again.code == 0, again.err
    assert again.statuses() == {"a": "ran", "b": "ran"}
    assert (project.root / "out/b.bin").read_bytes() == (project.root / "out/a.bin").read_bytes()
    (project.root / "out/a.bin").unlink()
    restored = project.make()
    assert restored.statuses() == {"a": "restored", "b": "cached"}, restored.err


USES_THE_LAST_INODES = """
[intent.a]
run = "echo made > out/a.txt; mkdir -p fill; i=0; while touch fill/$i 2>/dev/null; do i=$((i+1)); done"
inputs = ["in.txt"]
outputs = ["out/a.txt"]
"""


def test_the_state_file_written_at_the_end_of_a_run_on_a_full_disk(small_disk):
    """The step takes every inode left: its record goes into the cache database (no new file), and the state
    index, written whole into a new file at the end of the run, finds the disk full."""
    project = _project(small_disk(8 * MB, inodes=64), USES_THE_LAST_INODES)
    result = project.make()
    _clean(result)
    assert result.code == 1, result.err
    assert result.err == "error: no space left on the device (writing .runner/state): free some space and run again\n"
    assert result.statuses() == {"a": "ran"}
    assert result.events()[-2]["event"] == "run_finished" and result.events()[-2]["status"] == "failed"
    assert result.events()[-1] == {
        "event": "error",
        "code": 1,
        "message": "no space left on the device (writing .runner/state): free some space and run again",
        "problems": [],
    }
    assert _half_written(project) == []

    subprocess.run(["rm", "-rf", str(project.root / "fill")], check=True)
    again = project.make()
    assert again.code == 0, again.err
    assert again.statuses() == {"a": "cached"}  # its record was stored: the output stands, nothing runs again
    assert project.read("out/a.txt") == "made\n"
    assert project.make().finished()["ran"] == 0


def test_a_disk_full_before_anything_starts_is_exit_2(small_disk):
    project = _project(small_disk(1 * MB), FILLS_WITH_ITS_OUTPUT)
    project.write("size.txt", "10")
    subprocess.run(["sh", "-c", f"head -c {2 * MB} /dev/zero > {project.root}/filler"], check=False)
    result = project.make()
    _clean(result)
    assert result.code == 2, result.err
    assert result.err == ("error: no space left on the device (writing .runner): free some space and run again\n")
    assert json.loads(result.out.splitlines()[-1])["code"] == 2
    (project.root / "filler").unlink()
    assert project.make().code == 0


def test_the_run_record_keeps_every_event_a_full_disk_held_back(small_disk):
    """One step fills the disk and holds it full for a while, as the others start and end beside it: the run's
    events that the disk refused wait for the next write (the filling step fails, its output goes, the room comes
    back), and the run's record ends up holding every event, whole and in order, as --json printed them."""
    many = "".join(f'\n[intent.c{i:03d}]\nrun = "true"\ndeps = ["first"]\n' for i in range(60))
    project = _project(
        small_disk(2 * MB),
        f"""
[intent.first]
run = "true"
inputs = ["in.txt"]

[intent.fill]
run = "head -c {4 * MB} /dev/zero > out/fill.bin; sleep 2; exit 1"
inputs = ["in.txt"]
outputs = ["out/fill.bin"]
{many}
""",
    )
    result = project.make("-j", "2", "-k")
    _clean(result)
    assert result.code == 1, result.err
    assert not project.exists("out/fill.bin")
    run_id = result.events()[0]["run_id"]
    recorded = (project.root / ".runner/runs" / run_id / "events.jsonl").read_text()
    assert recorded == result.out  # every line --json printed, none torn, none lost, in the same order


def test_no_file_of_the_runners_is_left_half_written_when_the_disk_is_full(small_disk):
    """The spec edited on a disk already full: the compiled spec (.runner/spec.pickle), written beside its file to be
    put in place whole, finds no room, and leaves no piece of it; then the journal of running steps cannot take its
    first line (the run's token, by which the next start finds what a kill left running), so nothing starts: exit 2.
    Once there is room, the next run compiles and builds."""
    project = _project(small_disk(1 * MB), FILLS_WITH_ITS_OUTPUT)
    project.write("size.txt", "10")
    assert project.make().code == 0
    project.spec(FILLS_WITH_ITS_OUTPUT.replace("/dev/zero", "/dev/urandom"))
    subprocess.run(["sh", "-c", f"head -c {2 * MB} /dev/zero > {project.root}/filler"], check=False)
    result = project.make()
    _clean(result)
    assert (result.code, result.err) == (
        2,
        "error: no space left on the device (writing .runner/inflight): free some space and run again\n",
    )
    assert _half_written(project) == []
    (project.root / "filler").unlink()
    again = project.make()
    assert again.code == 0 and again.statuses() == {"big": "ran"}, again.err
