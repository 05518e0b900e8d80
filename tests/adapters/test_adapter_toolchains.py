"""Each built-in adapter run for real on a fixture project with passing and failing tests, its output parsed.

Locally a test skips when its toolchain is absent; in CI (tests/ci.py says when) an absent toolchain fails it.
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES, PARSE_FIXTURES, VENV_BIN, copy_fixture, run_adapter_command
from ci import need, need_tools

from runner.adapters import detect

pytestmark = pytest.mark.toolchain


def _detected(project: Path, adapters, name: str, variants: tuple = ()):
    found = detect(project, adapters)
    assert found and found[0].adapter == name, found
    assert found[0].variants == variants, found[0]
    return found[0]


def _has_module(module: str) -> bool:
    return subprocess.run([str(VENV_BIN / "python3"), "-c", f"import {module}"], capture_output=True).returncode == 0


# ---- python ----------------------------------------------------------------------------------


@pytest.fixture
def python_project(tmp_path, adapters):
    need(
        "the repository's .venv with pytest", _has_module("pytest"), "python3 -m venv .venv && pip install -e '.[test]'"
    )
    project = copy_fixture(FIXTURES / "python", tmp_path / "calc")
    _detected(project, adapters, "python", ("pytest",))  # its pyproject.toml names pytest
    return project


def test_python_test_runs_pytest_and_reads_its_summary(python_project, adapters, library):
    ran = run_adapter_command(python_project, adapters["python"], "test", library)
    assert ran.command == "python3 -m pytest"
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["passed"], f.summary["failed"], f.summary["skipped"]) == (2, 2, 1), ran
    assert f.failed_tests == ["tests/test_calc.py::test_adds_wrong", "tests/test_calc.py::test_raises"], ran
    assert f.complete is True


def test_python_smoke_collects_without_running(python_project, adapters, library):
    ran = run_adapter_command(python_project, adapters["python"], "smoke", library)
    assert ran.code == 0, ran
    assert ran.findings.failed_tests == [] and ran.findings.cause is None


def test_python_build_byte_compiles_and_locates_a_syntax_error(python_project, adapters, library):
    (python_project / "broken.py").write_text("def (\n")
    (python_project / ".venv").mkdir()
    (python_project / ".venv" / "ignored.py").write_text("def (\n")  # hidden folders are not the project's code
    ran = run_adapter_command(python_project, adapters["python"], "build", library)
    assert ran.code == 1, ran
    assert ran.findings.cause == "syntax error: invalid syntax", ran
    assert "./broken.py" in ran.output and "ignored.py" not in ran.output
    # not yet located: the diagnostics family's python-syntax-error wants `File "..."` at the start of the
    # line, and compileall indents it, as tracebacks do


def test_python_lint_runs_ruff_and_locates_the_problem(python_project, adapters, library):
    need("ruff", _has_module("ruff"), ".venv/bin/pip install ruff")
    ran = run_adapter_command(python_project, adapters["python"], "lint", library)
    assert ran.code == 1, ran
    assert [(d["file"], d["line"], d["column"], d.get("code")) for d in ran.findings.diagnostics] == [
        ("calc.py", 2, 8, "F401")
    ], ran


def test_python_typecheck_runs_mypy_and_locates_the_error(python_project, adapters, library):
    need("mypy", _has_module("mypy"), ".venv/bin/pip install mypy")
    ran = run_adapter_command(python_project, adapters["python"], "typecheck", library)
    assert ran.code == 1, ran
    errors = [d for d in ran.findings.diagnostics if d.get("severity") == "error"]
    assert [(d["file"], d["line"]) for d in errors] == [("calc.py", 10)], ran
    assert "Incompatible return value type" in errors[0]["message"]


# ---- node: npm + jest + eslint, npm + vitest + tsc -------------------------------------------


def _npm_installed(factory, name: str, adapters, library):
    need_tools("node", "npm", how="apt-get install -y nodejs npm (Node 20)")
    project = copy_fixture(FIXTURES / name, factory.mktemp("node") / name)
    ran = run_adapter_command(project, adapters["node"], "install", library, timeout=600)
    need("the npm registry", ran.code == 0, f"npm install failed: {ran.output[-500:]}")
    return project


# the node tests on one xdist worker: each npm-installed project (a module's fixture) is installed once, not on
# every worker that runs one of its tests
ONE_INSTALL = pytest.mark.xdist_group("npm-installed")


@pytest.fixture(scope="module")
def jest_project(tmp_path_factory, adapters, library):
    return _npm_installed(tmp_path_factory, "node-jest", adapters, library)


@pytest.fixture(scope="module")
def vitest_project(tmp_path_factory, adapters, library):
    return _npm_installed(tmp_path_factory, "node-vitest", adapters, library)


@ONE_INSTALL
def test_node_jest_test_reads_counts_and_failing_tests(jest_project, adapters, library):
    # npm install wrote package-lock.json: the npm variant (npm ci) is now detected as well; no scripts.test, but
    # jest among the dependencies runs it; eslint.config.js says how the project lints
    _detected(jest_project, adapters, "node", ("npm", "jest", "eslint"))
    ran = run_adapter_command(jest_project, adapters["node"], "test", library)
    assert ran.command == "npx --no -- jest --ci"
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["passed"], f.summary["failed"], f.summary["skipped"]) == (1, 2, 1), ran
    assert f.failed_tests == ["add › adds wrong", "throws"], ran
    assert f.complete is True


@ONE_INSTALL
def test_node_eslint_lint_locates_the_unused_variable(jest_project, adapters, library):
    ran = run_adapter_command(jest_project, adapters["node"], "lint", library)
    assert ran.code == 1, ran
    assert [(Path(d["file"]).name, d["line"], d["column"], d.get("code")) for d in ran.findings.diagnostics] == [
        ("calc.js", 2, 9, "no-unused-vars")
    ], ran


@ONE_INSTALL
def test_node_vitest_variant_is_detected_and_parsed(vitest_project, adapters, library):
    _detected(vitest_project, adapters, "node", ("npm", "vitest"))
    ran = run_adapter_command(vitest_project, adapters["node"], "test", library)
    assert ran.command == "npx --no -- vitest run"
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["passed"], f.summary["failed"], f.summary["skipped"]) == (1, 2, 1), ran
    assert f.failed_tests == ["test/calc.test.js > add > adds wrong", "test/calc.test.js > throws"], ran
    assert f.complete is True


@ONE_INSTALL
def test_node_tsc_typecheck_locates_the_type_error(vitest_project, adapters, library):
    ran = run_adapter_command(vitest_project, adapters["node"], "typecheck", library)
    assert ran.code != 0, ran
    assert [(d["file"], d["line"], d["column"], d.get("code")) for d in ran.findings.diagnostics] == [
        ("src/calc.ts", 5, 37, "TS2345")
    ], ran


@ONE_INSTALL
def test_node_smoke_lists_the_installed_packages(jest_project, adapters, library):
    ran = run_adapter_command(jest_project, adapters["node"], "smoke", library)
    assert ran.code == 0, ran
    assert ran.findings.cause is None


# ---- go --------------------------------------------------------------------------------------

GO_ENV = {"GOPROXY": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}


@pytest.fixture
def go_project(tmp_path, adapters):
    need_tools("go", how="apt-get install -y golang-go")
    project = copy_fixture(FIXTURES / "go", tmp_path / "calc")
    _detected(project, adapters, "go")
    return project


def test_go_test_counts_tests_and_subtests(go_project, adapters, library, tmp_path):
    ran = run_adapter_command(
        go_project, adapters["go"], "test", library, env={**GO_ENV, "GOCACHE": str(tmp_path / "gocache")}
    )
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["passed"], f.summary["failed"], f.summary["skipped"]) == (2, 3, 1), ran
    # go prints a parent's --- FAIL line before its subtests' lines
    assert f.failed_tests == ["TestAddsWrong", "TestTable", "TestTable/bad"], ran
    assert f.complete is True


def test_go_vet_lint_locates_the_unreachable_code(go_project, adapters, library, tmp_path):
    ran = run_adapter_command(
        go_project, adapters["go"], "lint", library, env={**GO_ENV, "GOCACHE": str(tmp_path / "gocache")}
    )
    assert ran.code != 0, ran
    assert [(d["file"], d["line"], d["column"], d["message"]) for d in ran.findings.diagnostics] == [
        ("report/report.go", 8, 2, "unreachable code")
    ], ran


def test_go_build_passes(go_project, adapters, library, tmp_path):
    ran = run_adapter_command(
        go_project, adapters["go"], "build", library, env={**GO_ENV, "GOCACHE": str(tmp_path / "gocache")}
    )
    assert ran.code == 0, ran
    assert ran.findings.diagnostics == []


# ---- rust ------------------------------------------------------------------------------------


@pytest.fixture
def rust_project(tmp_path, adapters):
    need_tools("cargo", how="rustup (https://rustup.rs) or apt-get install -y cargo")
    project = copy_fixture(FIXTURES / "rust", tmp_path / "calc")
    _detected(project, adapters, "rust")
    return project


RUST_ENV = {"CARGO_NET_OFFLINE": "true", "CARGO_TERM_COLOR": "never"}


def test_rust_cargo_test_reads_libtest_results(rust_project, adapters, library, tmp_path):
    ran = run_adapter_command(
        rust_project, adapters["rust"], "test", library, env={**RUST_ENV, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    )
    assert ran.code == 101, ran
    f = ran.findings
    assert (f.summary["passed"], f.summary["failed"], f.summary["skipped"]) == (1, 2, 1), ran
    # libtest runs tests on parallel threads: the order of their lines varies from run to run
    assert sorted(f.failed_tests) == ["tests::adds_wrong", "tests::panics"], ran
    assert sorted((d["file"], d["line"]) for d in f.diagnostics) == [("src/lib.rs", 18), ("src/lib.rs", 24)], ran
    assert f.complete is True


def test_rust_clippy_lint_locates_the_needless_return(rust_project, adapters, library, tmp_path):
    has_clippy = (
        shutil.which("cargo-clippy") is not None
        or subprocess.run(["cargo", "clippy", "--version"], capture_output=True).returncode == 0
    )
    need("cargo clippy", has_clippy, "rustup component add clippy")
    ran = run_adapter_command(
        rust_project, adapters["rust"], "lint", library, env={**RUST_ENV, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    )
    assert ran.code != 0, ran
    assert ("src/lib.rs", 4) in [(d["file"], d["line"]) for d in ran.findings.diagnostics], ran


# ---- maven -----------------------------------------------------------------------------------

M2 = Path.home() / ".m2" / "repository"


def _maven_offline_ready() -> bool:
    return (M2 / "org/apache/maven/plugins/maven-surefire-plugin/3.2.5").is_dir() and (
        M2 / "org/junit/jupiter/junit-jupiter-api/5.10.2"
    ).is_dir()


@pytest.fixture
def maven_project(tmp_path, adapters):
    need_tools("mvn", "java", how="apt-get install -y maven openjdk-17-jdk-headless")
    need(
        "Surefire 3.2.5 and JUnit 5.10.2 in ~/.m2",
        _maven_offline_ready(),
        "once, with network: mvn -B -f tests/parse/fixtures/surefire/pom.xml dependency:go-offline",
    )
    src = PARSE_FIXTURES / "surefire"
    project = tmp_path / "calc"
    project.mkdir()
    shutil.copy(src / "pom.xml", project / "pom.xml")
    shutil.copytree(src / "src", project / "src")
    # Maven reads .mvn/maven.config from the project: offline here, without changing the adapter's command
    (project / ".mvn").mkdir()
    (project / ".mvn" / "maven.config").write_text("-o\n")
    _detected(project, adapters, "maven")
    return project


def test_maven_surefire_totals_and_failing_methods(maven_project, adapters, library):
    ran = run_adapter_command(maven_project, adapters["maven"], "test", library)
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["total"], f.summary["failed"], f.summary["errors"], f.summary["skipped"]) == (7, 2, 1, 1), ran
    assert f.failed_tests == [
        "com.example.FailingTest.addsTable(int, int, int)[2]",
        "com.example.FailingTest.addsWrong",
        "com.example.FailingTest.dividesByZero",
    ], ran
    assert f.complete is True


# ---- gradle ----------------------------------------------------------------------------------


@pytest.fixture
def gradle_project(tmp_path, adapters):
    need_tools("gradle", "java", how="apt-get install -y gradle junit4 (Debian's Gradle 4.4.1)")
    need(
        "JUnit 4 in Debian's Maven repository",
        Path("/usr/share/maven-repo/junit/junit/4.13.2").is_dir(),
        "apt-get install -y junit4",
    )
    project = copy_fixture(FIXTURES / "gradle", tmp_path / "calc")
    _detected(project, adapters, "gradle")
    return project


def test_gradle_test_reads_failed_tests_and_counts(gradle_project, adapters, library, tmp_path):
    env = {"GRADLE_USER_HOME": str(tmp_path / "gradle-home")}  # no daemon, no cache left behind
    ran = run_adapter_command(gradle_project, adapters["gradle"], "test", library, env=env)
    assert ran.code == 1, ran
    f = ran.findings
    assert (f.summary["total"], f.summary["failed"], f.summary["skipped"]) == (4, 2, 1), ran
    assert f.failed_tests == ["calc.CalcTest > addsWrong", "calc.CalcTest > dividesByZero"], ran
    assert f.complete is True
