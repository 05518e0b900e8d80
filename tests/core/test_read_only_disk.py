"""A project on a file system mounted read-only, for real (a tmpfs remounted read-only): a command that must
write runner's state says so in the user's words and exits 2, never a traceback; the commands that only read
(status, explain, make -n, log, a no-op make) still answer, as they would from any read-only checkout."""

from __future__ import annotations

import subprocess

READ_ONLY = (
    "error: .runner cannot be written: the file system it is on is mounted read-only; run runner on a writable "
    "copy of the project, or mount it read-write\n"
)
CACHE_UNREAD = (
    "runner: the cache database .runner/cache/cache.db is on a read-only file system (unable to open database "
    "file); read as empty\n"
)
SPEC = """
[project]
name = "ro"

[intent.a]
run = "cat src/x.txt > out/a.txt"
inputs = ["src/x.txt"]
outputs = ["out/a.txt"]
"""


def _read_only(project) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(project.root)], check=True)


def _built(small_disk):
    project = small_disk(4 << 20)
    project.spec(SPEC)
    project.write("src/x.txt", "hello\n")
    (project.root / "out").mkdir()
    assert project.make().finished()["ran"] == 1
    return project


def test_a_build_with_work_to_do_on_a_read_only_disk_is_refused_in_the_user_s_words(small_disk):
    project = _built(small_disk)
    project.write("src/x.txt", "edited\n")
    _read_only(project)
    for command in (("make",), ("make", "a"), ("clean",), ("cache", "gc")):
        result = project.run(*command)
        assert (result.code, result.err) == (2, READ_ONLY), command
    assert project.read("out/a.txt") == "hello\n"


def test_what_only_reads_still_answers_on_a_read_only_disk(small_disk):
    project = _built(small_disk)
    project.write("src/x.txt", "edited\n")
    _read_only(project)
    status = project.run("status")  # the cache cannot be opened (sqlite writes beside it): read as empty
    said = "run   a  no cache entry\n1 to run, 0 up to date\n"
    assert (status.code, status.out, status.err) == (0, said, CACHE_UNREAD)
    explain = project.run("explain", "a")
    assert (explain.code, explain.err) == (0, CACHE_UNREAD) and "no cache entry" in explain.out
    assert project.run("make", "-n").out == status.out
    assert project.run("log").code == 0


def test_a_no_op_on_a_read_only_disk_is_still_a_no_op(small_disk):
    project = _built(small_disk)
    _read_only(project)
    result = project.run("make")
    assert (result.code, result.err) == (0, "") and result.out.startswith("runner: nothing to do: 1 cached"), result


def test_a_fresh_project_on_a_read_only_disk_is_refused_before_anything_starts(small_disk):
    project = small_disk(1 << 20)
    project.spec(SPEC)
    project.write("src/x.txt", "hello\n")
    _read_only(project)
    result = project.run("make", "--json")
    assert (result.code, result.err) == (2, READ_ONLY)
    assert result.events()[-1] == {
        "event": "error",
        "code": 2,
        "message": READ_ONLY[len("error: ") : -1],
        "problems": [],
    }
