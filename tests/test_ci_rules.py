"""The test suite's own reliability: one rule for "in CI" (tests/ci.py), a missing tool fails there instead of
skipping, and every folder's tests collect beside every other folder's.

The suite is run by pytest in a subprocess here, on real test modules, with the tool made absent: PATH
emptied, and the `codex_cli_bin` wheel shadowed by a module that refuses to import.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ci import in_ci

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", False),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("no", False),
        (" No ", False),
        ("1", True),
        ("true", True),
        ("True", True),
        ("yes", True),
        ("github-actions", True),
    ],
)
def test_what_counts_as_ci(value, expected):
    environ = {} if value is None else {"CI": value}
    assert in_ci(environ) is expected


# (test node, the tool it needs): each reaches its tool check before doing anything else
NEEDS_A_TOOL = {
    "codex worker": "tests/workers/test_worker_codex_cli.py::test_apply_patch_edits_land",
    "codex agent step": "tests/agent/test_agent_codex_cli.py::test_retry_apply_then_no_requests_for_a_hit_or_a_restore",
    "go toolchain": "tests/adapters/test_adapter_toolchains.py::test_go_test_counts_tests_and_subtests",
}


def _pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "CI", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    }
    full_env.update(env or {})
    return subprocess.run(
        # its own basetemp: pytest prunes old temp folders, and must not prune this run's
        # one process: the few tests it runs are not worth xdist's workers (the suite's addopts start them)
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "--basetemp",
            str(tmp_path / "basetemp"),
            *args,
        ],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _without_tools(tmp_path: Path) -> dict[str, str]:
    """An environment in which no tool is found: an empty PATH, and the codex wheel hidden from Python."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "codex_cli_bin.py").write_text('raise ImportError("hidden by tests/test_ci_rules.py")\n')
    pythonpath = os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH", "")) if p)
    return {"PATH": str(empty), "PYTHONPATH": pythonpath}


@pytest.mark.parametrize("tool", sorted(NEEDS_A_TOOL))
@pytest.mark.parametrize(("ci", "fails"), [("1", True), ("yes", True), ("0", False)])
def test_a_missing_tool_fails_in_ci_and_skips_elsewhere(tool: str, ci: str, fails: bool, tmp_path: Path):
    result = _pytest(tmp_path, "-q", NEEDS_A_TOOL[tool], env={**_without_tools(tmp_path), "CI": ci})
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    # a check in a fixture fails the setup: pytest counts that as an error rather than a failure
    expected = r"1 (failed|error)" if fails else r"1 skipped"
    assert re.match(rf"^{expected} in ", summary), result.stdout[-3000:] + result.stderr[-3000:]
    if fails:
        assert f"CI={ci!r} but " in result.stdout and " is missing: " in result.stdout


@pytest.mark.parametrize("other", ["tests/core", "tests/workers", "tests/adapters", "tests/parse"])
def test_agent_tests_collect_beside_another_folder_with_its_own_conftest(other: str, tmp_path: Path):
    result = _pytest(tmp_path, "--collect-only", "-q", "tests/agent", other)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    # the exit code is no use here: syrupy fails a collect-only run for the snapshots it did not use
    assert re.match(r"^\d+ tests collected in ", summary), result.stdout[-3000:] + result.stderr[-3000:]
    assert "tests/agent/test_agent_steps.py::" in result.stdout
    assert f"{other}/" in result.stdout


def test_nothing_but_tests_ci_reads_the_ci_variable():
    """One rule, one place: a second reader would bring back the three spellings this replaced."""
    reads = re.compile(r"""\.get\(\s*["']CI["']|\[\s*["']CI["']\s*\]|getenv\(\s*["']CI["']""")
    readers = sorted(
        str(path.relative_to(ROOT))
        for path in TESTS.rglob("*.py")
        if "fixtures" not in path.parts and reads.search(path.read_text(encoding="utf-8"))
    )
    assert readers == ["tests/ci.py"]


def test_no_test_imports_a_conftest_by_name():
    """`from conftest import` gets whichever conftest pytest imported last: helpers live in *_helpers.py."""
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in TESTS.rglob("*.py")
        if "fixtures" not in path.parts
        and re.search(r"^\s*(from conftest import|import conftest)", path.read_text(encoding="utf-8"), re.M)
    )
    assert importers == []


LEAKS = """\
import os


def test_writes_the_key(tmp_path):
    (tmp_path / "note.txt").write_text(os.environ["OPENAI_API_KEY"])
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_test_that_writes_the_session_key_fails_the_session_in_one_process_or_on_xdist_workers(tmp_path, workers):
    """tests/conftest.py as the plugin of a session of one test that writes the key into its temp folder: the
    session fails, with its workers too (each takes the key of the controller that looks at their files)."""
    (tmp_path / "test_leak.py").write_text(LEAKS)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env |= {"PYTHONPATH": str(TESTS)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", "-n", workers]
        + ["--basetemp", str(tmp_path / "basetemp"), "test_leak.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "SECRET LEAK: the session's API key was written to 1 file(s): [" in result.stdout
    assert "1 passed" in result.stdout
