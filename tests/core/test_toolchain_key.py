"""The toolchain in a step's key (runner/toolchain.py): what its runtime commands print, run once a run; the no-op
proof's witness of them (freshness.py, shortcut 13); the reason status gives; explain; the error for a failing one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import racy
import runner_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SPEC = """
[project]
name = "tc"
default = "gen"

[intent.gen]
run = "mytool > out.txt"
inputs = ["in.txt"]
outputs = ["out.txt"]
runtime = ["mytool --version"]
"""


def _tool(folder: Path, version: str, log: Path | None = None) -> None:
    """A program `mytool` in `folder` that prints its version (and notes each start in `log`)."""
    folder.mkdir(parents=True, exist_ok=True)
    note = f'echo started >> "{log}"\n' if log else ""
    path = folder / "mytool"
    path.write_text(f'#!/bin/sh\n{note}echo "mytool {version}"\n')
    path.chmod(0o755)


def _path(*folders: Path) -> dict:
    return {"PATH": os.pathsep.join([*map(str, folders), os.environ["PATH"]])}


def test_a_new_version_of_a_runtime_tool_runs_the_step_again_and_the_same_one_does_not(project, tmp_path):
    tools = tmp_path / "tools"
    _tool(tools, "1.0")
    env = _path(tools)
    project.spec(SPEC)
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make(env=env).statuses() == {"gen": "ran"}
    racy.wait_out()
    assert project.make(env=env).code == 0  # records the proof once every stat vouches
    quiet = project.make(env=env)
    assert quiet.events()[0].get("fast") is True
    assert quiet.statuses() == {"gen": "cached"}

    _tool(tools, "2.0")  # the program replaced: its stats say the toolchain may have moved
    status = project.run("status", env=env)
    assert status.out.splitlines()[0] == "run   gen  toolchain changed: mytool --version: mytool 1.0 -> mytool 2.0"
    result = project.make(env=env)
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"gen": "ran"}
    assert project.read("out.txt") == "mytool 2.0\n"

    racy.wait_out()
    _tool(tools, "2.0")  # rewritten with the same version: decided again, and up to date
    assert project.make(env=env).statuses() == {"gen": "cached"}
    racy.wait_out()
    assert project.make(env=env).code == 0
    assert project.make(env=env).events()[0].get("fast") is True


def test_another_program_first_on_path_is_not_a_no_op(project, tmp_path):
    """PATH's value is in the proof: a venv activated puts another interpreter first without any stat moving."""
    old, new = tmp_path / "old", tmp_path / "new"
    _tool(old, "1.0")
    _tool(new, "3.0")
    project.spec(SPEC)
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make(env=_path(old)).statuses() == {"gen": "ran"}
    racy.wait_out()
    assert project.make(env=_path(old)).code == 0
    assert project.make(env=_path(old)).events()[0].get("fast") is True
    result = project.make(env=_path(new, old))
    assert result.statuses() == {"gen": "ran"}
    assert project.read("out.txt") == "mytool 3.0\n"


def test_switching_to_a_venv_without_pytest_runs_the_tests_again(project, tmp_path):
    """Two real interpreters: the suite's (pytest installed) and a venv made from it without pytest. The python
    adapter's test command keys on `python3 -m pytest --version`."""
    suite_bin = Path(sys.executable).parent
    assert (suite_bin / "python3").exists()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    project.write("pyproject.toml", '[project]\nname = "x"\n')
    project.write("tests/test_a.py", "def test_a():\n    assert True\n")
    project.spec(
        """
        [project]
        name = "x"
        default = "test"

        [intent.test]
        adapter = "python"
        run = "test"
        inputs = ["**/*.py", "pyproject.toml"]
        """
    )
    project.age_all()
    with_pytest = _path(suite_bin)
    assert project.make(env=with_pytest).statuses() == {"test": "ran"}
    explained = json.loads(project.run("explain", "test", "--json", env=with_pytest).out)
    import pytest

    assert explained["toolchain"]["python3 -m pytest --version"] == f"pytest {pytest.__version__}"
    assert project.make(env=with_pytest).statuses() == {"test": "cached"}

    without = _path(venv / "bin", suite_bin)
    status = project.run("status", env=without)
    reason = status.out.splitlines()[0]
    assert reason.startswith(
        f"run   test  toolchain changed: python3 -m pytest --version: pytest {pytest.__version__} -> exit 1: "
    ), status.out
    assert reason.endswith("No module named pytest")
    failed = project.make(env=without)
    assert failed.statuses() == {"test": "failed"}


def test_a_runtime_command_shared_by_many_steps_runs_once_a_run(project, tmp_path):
    tools, log = tmp_path / "tools", tmp_path / "started.log"
    _tool(tools, "1.0", log)
    env = _path(tools)
    steps = "".join(
        f'\n[intent.s{i}]\nrun = "echo {i} > o{i}.txt"\ninputs = ["in.txt"]\noutputs = ["o{i}.txt"]\n'
        f'runtime = ["mytool --version"]\n'
        for i in range(30)
    )
    project.spec(
        '[project]\nname = "many"\ndefault = "all"\n'
        + steps
        + f"\n[intent.all]\ndeps = {json.dumps([f's{i}' for i in range(30)])}\n"
    )
    project.write("in.txt", "one\n")
    project.age_all()
    assert set(project.make(env=env).statuses().values()) == {"ran"}
    assert log.read_text().count("started") == 1
    racy.wait_out()
    project.make(env=env)
    assert project.make(env=env).events()[0].get("fast") is True
    assert log.read_text().count("started") == 1  # the no-ops stat its witness instead


def test_explain_shows_what_each_runtime_command_printed(project, tmp_path):
    tools = tmp_path / "tools"
    _tool(tools, "1.0")
    project.spec(SPEC)
    project.write("in.txt", "one\n")
    text = project.run("explain", "gen", env=_path(tools)).out
    lines = text.splitlines()
    assert "    runtime      mytool --version: mytool 1.0" in lines
    assert any(line.startswith("    toolchain    ") for line in lines)


def test_a_failing_runtime_command_of_the_intents_own_stops_the_run_before_anything_runs(project):
    project.spec(SPEC.replace('"mytool --version"', '"echo fine", "no-such-tool-here --version"'))
    project.write("in.txt", "one\n")
    result = project.run("make")
    assert result.code == 2
    assert result.err.strip() == (
        "error: intents.toml:10: intent.gen.runtime[1]: 'no-such-tool-here --version' failed (exit 127: /bin/sh: 1: "
        "no-such-tool-here: not found); step gen keys on what it prints: install the tool it names, or fix the "
        "command"
    )
    assert not project.exists("out.txt")
    assert not (project.root / ".runner" / "runs").exists() or not any((project.root / ".runner" / "runs").iterdir())


def test_runtime_on_an_aggregate_is_refused(project):
    project.spec(
        '[project]\nname = "x"\n\n[intent.a]\nrun = "true"\n\n[intent.all]\ndeps = ["a"]\nruntime = ["true"]\n'
    )
    result = project.run("validate")
    assert result.code == 2
    assert (
        "intents.toml:9: intent.all.runtime: an aggregate target (no 'run' or 'goal') runs no tool whose version "
        "could matter" in result.err
    )


def test_an_adapters_runtime_naming_no_var_is_refused(project):
    project.write(
        "adapters/mine.toml",
        'name = "mine"\nruntime = ["{tool} --version"]\n[detect]\nfiles = ["x"]\n[commands.test]\nrun = "true"\n',
    )
    project.spec('[project]\nname = "x"\n\n[intent.a]\nrun = "test"\nadapter = "mine"\n')
    result = project.run("validate")
    assert result.code == 2
    assert "runtime[0]: '{tool}' names no var; declare it under [vars] (known: none)" in result.err


def test_a_target_without_a_proof_runs_its_runtime_commands_only_when_their_witness_moved(project, tmp_path):
    """Input globs leave a target without a proof: every run decides its steps. What a runtime command printed is
    kept with its witness's stats (.runner/toolchain) and taken again while they vouch."""
    tools, log = tmp_path / "tools", tmp_path / "started.log"
    _tool(tools, "1.0", log)
    env = _path(tools)
    project.spec(
        SPEC.replace('inputs = ["in.txt"]', 'inputs = ["in*.txt"]').replace("mytool > out.txt", "cat in.txt > out.txt")
    )
    project.write("in.txt", "one\n")
    project.age_all()
    racy.wait_out()
    assert project.make(env=env).statuses() == {"gen": "ran"}
    for _ in range(3):
        quiet = project.make(env=env)
        assert quiet.statuses() == {"gen": "cached"}
        assert quiet.events()[0].get("fast") is None  # no proof: decided
    assert log.read_text().count("started") == 1
    racy.wait_out()
    _tool(tools, "2.0", log)
    assert project.make(env=env).statuses() == {"gen": "ran"}
    assert log.read_text().count("started") == 2


def test_a_secret_the_steps_env_reads_is_never_written_with_its_versions(project, tmp_path):
    """The kept versions (.runner/toolchain) stand for the step's env by a digest: a key it reads stays off disk."""
    tools = tmp_path / "tools"
    _tool(tools, "1.0")
    project.spec(
        SPEC.replace(
            'runtime = ["mytool --version"]', 'runtime = ["mytool --version"]\nenv = { API_TOKEN = "$OPENAI_API_KEY" }'
        )
    )
    project.write("in.txt", "one\n")
    assert project.make(env=_path(tools)).statuses() == {"gen": "ran"}
    kept = (project.root / ".runner" / "toolchain").read_bytes()
    assert b"mytool --version" in kept
    assert os.environ["OPENAI_API_KEY"].encode() not in kept


def test_a_run_line_of_ones_own_that_starts_as_an_adapter_command_keys_on_its_tools(project):
    """attrs (uv.lock) where no uv is installed: init said to change the run line, and `python3 -m pytest -q` then
    keyed on `uv run --no-sync python --version` alone, which fails the same way whatever python3 is."""
    project.write("pyproject.toml", '[project]\nname = "a"\n[tool.uv]\ndev-dependencies = []\n')
    project.write("uv.lock", "version = 1\n")
    project.write("tests/test_a.py", "def test_a():\n    assert True\n")
    project.spec(
        """
        [project]
        name = "a"

        [intent.test]
        adapter = "python"
        run = "python3 -m pytest -q"
        inputs = ["**/*.py", "pyproject.toml"]
        """
    )
    explained = json.loads(project.run("explain", "test", "--json", env=_path(Path(sys.executable).parent)).out)
    assert list(explained["toolchain"]) == ["python3 --version", "python3 -m pytest --version"]


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("first"), st.sampled_from("ab")),  # that folder first on PATH (a venv activated)
        st.tuples(st.just("install"), st.sampled_from("ab"), st.sampled_from(["1", "2", "3"])),  # a new version
        st.tuples(st.just("make")),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_whatever_moves_on_path_the_step_ran_with_the_tool_found_first_and_only_when_it_changed(tmp_path, ops):
    """In the differential test's spirit: programs installed and folders put first on PATH in any order; after each
    `runner make`, the output is what the program first on PATH prints, and the step ran exactly when that differs
    from what it printed at the step's last run (the no-op's witness, PATH in the proof, the kept versions)."""
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    folders = {name: base / name for name in "ab"}
    installed = {"a": "1", "b": "1"}
    for name, folder in folders.items():
        _tool(folder, installed[name])
    root = base / "proj"
    root.mkdir()
    (root / "intents.toml").write_text(SPEC)
    (root / "in.txt").write_text("one\n")
    first, last = "a", None
    for op in [*ops, ("make",)]:
        if op[0] == "first":
            first = op[1]
        elif op[0] == "install":
            installed[op[1]] = op[2]
            _tool(folders[op[1]], op[2])
        else:
            env = dict(os.environ, **_path(folders[first], folders["b" if first == "a" else "a"]))
            done = runner_cli.run(["make", "--json"], root, env, 120)
            assert done.returncode == 0, done.stderr
            ran = any(json.loads(line).get("status") == "ran" for line in done.stdout.splitlines() if '"gen"' in line)
            assert ran == (installed[first] != last), (op, first, installed, last)
            assert (root / "out.txt").read_text() == f"mytool {installed[first]}\n"
            last = installed[first]
