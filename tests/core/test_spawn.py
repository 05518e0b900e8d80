"""A plain command runs without /bin/sh; whatever it does, it must do what the shell line would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.steps.spawn import plain_command


@pytest.mark.parametrize(
    "line, expected",
    [
        ("md5sum src/a.txt src/b.txt > out/c.md5", (["md5sum", "src/a.txt", "src/b.txt"], "out/c.md5", False)),
        ("cat a >> log.txt", (["cat", "a"], "log.txt", True)),
        ("python3 -m pytest -q tests/unit", (["python3", "-m", "pytest", "-q", "tests/unit"], None, False)),
        ("gcc -O2 -o build/app src/main.c", (["gcc", "-O2", "-o", "build/app", "src/main.c"], None, False)),
    ],
)
def test_plain_lines(line, expected):
    assert plain_command(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "echo hi > out.txt",  # a builtin: the shell's echo is not /bin/echo
        "cd sub && make",  # a builtin, and &&
        "X=1 make",  # an assignment
        "cat *.txt > all.txt",  # a glob
        "cat a | wc -l > n.txt",  # a pipe
        "cat 'a b' > c",  # quotes
        "echo $HOME",  # expansion
        "cat a > b > c",  # two redirects
        "cat a 2> err.txt",  # a redirect of another stream
        "cat a >out.txt",  # a redirect without its space: left to the shell
        "cat a\ncat b",  # two commands
        "cat ~/x > y",  # tilde expansion
        "if true; then :; fi",
        "cat a > ",
    ],
)
def test_lines_that_need_the_shell(line):
    assert plain_command(line) is None


def _spec(run: str, outputs=()) -> str:
    return f'[intent.step]\nrun = "{run}"\ninputs = ["in.txt"]\noutputs = {list(outputs)!r}\n'.replace("'", '"')


def test_redirect_truncates_and_appends_as_the_shell_does(project):
    project.write("in.txt", "hello\n")
    project.write("out.txt", "old content that is longer\n")
    project.spec(_spec("cat in.txt > out.txt", ["out.txt"]))
    assert project.make().code == 0
    assert project.read("out.txt") == "hello\n"
    project.spec(_spec("cat in.txt in.txt >> out.txt", ["out.txt"]))
    assert project.make().code == 0
    assert project.read("out.txt") == "hello\nhello\nhello\n"


@pytest.mark.parametrize(
    "line, output, exit_code, message",
    [
        ("no-such-program-here in.txt > out.txt", "out.txt", 127, "no-such-program-here: not found"),
        ("cat in.txt > nowhere/out.txt", "nowhere/out.txt", 2, "cannot create nowhere/out.txt"),
    ],
)
def test_a_spawn_error_fails_as_in_the_shell(project, line, output, exit_code, message):
    project.write("in.txt", "x\n")
    project.spec(_spec(line, [output]))
    failed = next(e for e in project.make().events() if e.get("status") == "failed")
    assert failed["exit_code"] == exit_code
    assert message in failed["log_tail"]


def test_the_command_gets_default_signals_and_the_project_root_as_its_folder(project):
    project.write("in.txt", "x\n")
    project.spec(
        _spec("cat /proc/self/status > status.txt", ["status.txt"])
        + '\n[intent.where]\nrun = "pwd"\ninputs = ["in.txt"]\n'
    )
    here = os.getcwd()
    result = project.cli("make", "--json")  # in this process, started from elsewhere: -C the project
    assert result.code == 0, result.err
    assert os.getcwd() == here, "the caller's folder is restored"
    ignored = int(
        next(line for line in project.read("status.txt").splitlines() if line.startswith("SigIgn:")).split()[1], 16
    )
    assert not ignored & (1 << (13 - 1)), "SIGPIPE must not be ignored in the step"  # 13 = SIGPIPE
    log = next(e for e in result.events() if e.get("intent") == "where" and e["event"] == "step_finished")["log"]
    assert Path(log).read_text().splitlines()[-1] == str(project.root.resolve())


def test_only_a_plain_line_in_the_current_folder_skips_the_shell(tmp_path):
    import subprocess

    from runner.steps.spawn import SpawnedChild, start_process

    read_end, write_end = os.pipe()
    try:
        here = os.getcwd()
        direct = start_process("sleep 0", here, os.environb, write_end)
        shell = start_process("sleep 0 && sleep 0", here, os.environb, write_end)
        elsewhere = start_process("sleep 0", str(tmp_path), os.environb, write_end)
        other_path = start_process("sleep 0", here, {**os.environb, b"PATH": b"/nowhere"}, write_end)
        assert isinstance(direct, SpawnedChild)
        assert all(isinstance(p, subprocess.Popen) for p in (shell, elsewhere, other_path))
        assert [p.wait(10) for p in (direct, shell, elsewhere)] == [0, 0, 0]
        assert other_path.wait(10) == 127
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_program_is_the_first_executable_on_path_as_in_the_shell(project, tmp_path, monkeypatch):
    # looked up by the runner rather than by posix_spawnp: it must pick what /bin/sh would pick
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "greet").write_text("#!/bin/sh\necho not executable\n")  # no x bit: skipped
    (first / "greet").chmod(0o644)
    (second / "greet").mkdir()  # a folder of that name is not a program either
    third = tmp_path / "third"
    third.mkdir()
    (third / "greet").write_text('#!/bin/sh\necho from third "$@"\n')
    (third / "greet").chmod(0o755)
    project.write("in.txt", "x\n")
    project.spec(_spec("greet in.txt > out.txt", ["out.txt"]))
    path = os.pathsep.join([str(first), str(second), str(third), os.environ["PATH"]])
    result = project.make(env={"PATH": path})
    assert result.code == 0, result.err
    assert project.read("out.txt") == "from third in.txt\n"
    # the run above would pass through /bin/sh's own lookup too if runner's picked a file it cannot
    # start: the lookup itself must land on the program
    from runner.steps.spawn import _program

    monkeypatch.setenv("PATH", path)
    assert _program("greet") == str(third / "greet")


def test_a_step_that_never_starts_leaves_no_file_and_no_truncated_file(project):
    # while `first` runs, the next steps are decided and their `> file` created ahead (spawn.CreatedAhead);
    # `first` fails, the run stops, and neither a new empty file nor a truncated old one may remain
    project.write("in.txt", "new\n")
    project.write("kept.txt", "from the last run\n")
    project.spec(
        '[intent.first]\nrun = "sleep 0.5 && exit 1"\ninputs = ["in.txt"]\n'
        '[intent.second]\nrun = "cat in.txt > fresh.txt"\ninputs = ["in.txt"]\noutputs = ["fresh.txt"]\n'
        '[intent.third]\nrun = "cat in.txt > kept.txt"\ninputs = ["in.txt"]\noutputs = ["kept.txt"]\n'
    )
    result = project.make("-j1")
    assert result.code == 1
    assert result.statuses() == {"first": "failed", "second": "skipped", "third": "skipped"}
    assert not project.exists("fresh.txt")
    assert project.read("kept.txt") == "from the last run\n"
    project.spec(
        '[intent.second]\nrun = "cat in.txt > fresh.txt"\ninputs = ["in.txt"]\noutputs = ["fresh.txt"]\n'
        '[intent.third]\nrun = "cat in.txt > kept.txt"\ninputs = ["in.txt"]\noutputs = ["kept.txt"]\n'
    )
    assert project.make("-j1").code == 0
    assert project.read("fresh.txt") == project.read("kept.txt") == "new\n"


def test_the_lookup_follows_a_changed_path_within_one_process(project, tmp_path, monkeypatch):
    # in-process runs (click's CliRunner, an embedding tool) share the looked-up programs: keyed by PATH
    original = os.environ["PATH"]
    for word in ("one", "two"):
        (tmp_path / word).mkdir()
        (tmp_path / word / "greet").write_text(f"#!/bin/sh\necho {word}\n")
        (tmp_path / word / "greet").chmod(0o755)
    project.write("in.txt", "x\n")
    project.spec(_spec("greet in.txt > out.txt", ["out.txt"]))
    monkeypatch.setenv("PATH", f"{tmp_path / 'one'}{os.pathsep}{original}")
    assert project.cli("make", "--json").code == 0
    assert project.read("out.txt") == "one\n"
    project.write("in.txt", "y\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'two'}{os.pathsep}{original}")
    assert project.cli("make", "--json").code == 0
    assert project.read("out.txt") == "two\n"
