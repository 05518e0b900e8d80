"""The JUnit XML reports Maven's Surefire and Gradle's test task write by default, read through `runner make` on
the fixture projects: the maven and gradle adapters' test commands declare them (`reports = [...]`), and a failed
step's counts and failing tests come from them, with each failure's message, ahead of the log's text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES, PARSE_FIXTURES
from ci import need, need_tools
from test_adapter_toolchains import _maven_offline_ready

pytestmark = pytest.mark.toolchain


def _make(project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runner", "make", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def _failed(done: subprocess.CompletedProcess) -> dict:
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return next(e for e in events if e.get("status") == "failed")


def test_maven_surefire_reports_give_the_counts_and_each_failure_with_its_message(tmp_path):
    need_tools("mvn", "java", how="apt-get install -y maven openjdk-17-jdk-headless")
    need("Surefire 3.2.5 and JUnit 5.10.2 in ~/.m2", _maven_offline_ready(), "mvn dependency:go-offline, once")
    project = tmp_path / "calc"
    project.mkdir()
    shutil.copy(PARSE_FIXTURES / "surefire" / "pom.xml", project / "pom.xml")
    shutil.copytree(PARSE_FIXTURES / "surefire" / "src", project / "src")
    (project / ".mvn").mkdir()
    (project / ".mvn" / "maven.config").write_text("-o\n")
    (project / "intents.toml").write_text('[intent.test]\nadapter = "maven"\nrun = "test"\ninputs = ["src/**/*"]\n')
    shown = _make(project, "test")
    assert shown.returncode == 1, shown.stderr
    block = shown.stderr[shown.stderr.index("FAILED test") :].splitlines()
    assert block[1] == "  failing tests (3):"
    assert block[2].startswith("    com.example.FailingTest.addsTable(int, int, int)[2]: ")
    assert block[3] == "    com.example.FailingTest.addsWrong: two and two ==> expected: <5> but was: <4>"
    reports = [line for line in block if line.startswith("  counts and failing tests from")]
    first = "target/surefire-reports/TEST-com.example.CalcTest.xml"
    assert reports == [f"  counts and failing tests from 2 JUnit report(s): {first} and 1 more"]
    found = _failed(_make(project, "--json", "test"))["findings"]
    assert found["summary"] == {"passed": 3, "failed": 2, "skipped": 1, "errors": 1, "total": 7}
    assert found["reports"]["files"] == [
        "target/surefire-reports/TEST-com.example.CalcTest.xml",
        "target/surefire-reports/TEST-com.example.FailingTest.xml",
    ]


def test_gradle_test_results_give_the_counts_and_each_failure(tmp_path):
    need_tools("gradle", "java", how="apt-get install -y gradle junit4 (Debian's Gradle 4.4.1)")
    need("JUnit 4 in Debian's Maven repository", Path("/usr/share/maven-repo/junit/junit/4.13.2").is_dir(), "junit4")
    project = tmp_path / "calc"
    shutil.copytree(FIXTURES / "gradle", project)
    (project / "intents.toml").write_text('[intent.test]\nadapter = "gradle"\nrun = "test"\ninputs = ["src/**/*"]\n')
    env = {"GRADLE_USER_HOME": str(tmp_path / "gradle-home")}
    done = _make(project, "--json", "test", env=env)
    assert done.returncode == 1, done.stderr
    found = _failed(done)["findings"]
    assert found["summary"] == {"passed": 1, "failed": 2, "skipped": 1, "errors": 0, "total": 4}
    assert found["failed_tests"] == ["calc.CalcTest.addsWrong", "calc.CalcTest.dividesByZero"]
    assert found["reports"]["files"] == ["build/test-results/test/TEST-calc.CalcTest.xml"]
    messages = {f["test"]: f["message"] for f in found["reports"]["failures"]}
    assert messages["calc.CalcTest.addsWrong"].startswith("java.lang.AssertionError")
