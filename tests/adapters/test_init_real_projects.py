"""`runner init` on real projects, through the CLI: the project's name from its own manifest, node's own
`scripts.test` (not jest by assumption), the Makefile targets, npm scripts and tox environments offered as intents,
and a lint step that follows the project's own configuration and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES, ROOT, copy_fixture
from ci import need_tools

from runner.globs import matches_any

INIT = FIXTURES / "init"


# the suite's own interpreter first on PATH: its python3 has ruff and pytest, so what init says of them is the same
# on every machine
SUITE_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])


def runner(root: Path, *args: str, path: str = SUITE_PATH) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": path}
    return subprocess.run(
        [sys.executable, "-m", "runner", *args, "-C", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def init(root: Path, *args: str) -> dict:
    """`runner init --json` (written unless --dry-run), then `runner validate` must accept what it wrote."""
    result = runner(root, "init", "--json", *args)
    assert result.returncode == 0, result.stderr
    obj = json.loads(result.stdout)
    if obj["written"]:
        check = runner(root, "validate")
        assert check.returncode == 0, check.stderr
    return obj


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    "files,name,source",
    [
        ({"pyproject.toml": '[project]\nname = "acme-parser"\n'}, "acme-parser", "pyproject.toml [project] name"),
        (
            {"pyproject.toml": '[tool.poetry]\nname = "poetry-app"\nversion = "1"\n'},
            "poetry-app",
            "pyproject.toml [tool.poetry] name",
        ),
        ({"package.json": '{"name": "@acme/web", "version": "1.0.0"}'}, "@acme/web", "package.json name"),
        ({"Cargo.toml": '[package]\nname = "acme-cli"\nversion = "0.1.0"\n'}, "acme-cli", "Cargo.toml [package] name"),
        (
            {
                "pom.xml": '<?xml version="1.0"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
                "  <modelVersion>4.0.0</modelVersion>\n"
                "  <parent><groupId>org.acme</groupId><artifactId>acme-parent</artifactId>"
                "<version>1</version></parent>\n"
                "  <artifactId>acme-service</artifactId>\n</project>\n"
            },
            "acme-service",
            "pom.xml <artifactId>",
        ),
        (
            {"settings.gradle": "rootProject.name = 'acme-gradle'\ninclude 'app'\n", "build.gradle": ""},
            "acme-gradle",
            "settings.gradle rootProject.name",
        ),
        (
            {"settings.gradle.kts": 'rootProject.name = "acme-kts"\n', "build.gradle.kts": ""},
            "acme-kts",
            "settings.gradle.kts rootProject.name",
        ),
        ({"go.mod": "module github.com/acme/tool/v2\n\ngo 1.21\n"}, "tool", "go.mod module"),
    ],
)
def test_the_project_name_comes_from_its_manifest_not_the_folder(tmp_path, files, name, source):
    root = tree(tmp_path / "checkout-1234", files)
    obj = init(root)
    assert (obj["name"], obj["name_from"]) == (name, source)
    assert f"name = {json.dumps(name)}  # from {source}\n" in (root / "intents.toml").read_text()


def test_without_a_named_manifest_the_folder_names_the_project(tmp_path):
    root = tree(tmp_path / "my-tool", {"pyproject.toml": "[build-system]\nrequires = []\n"})
    obj = init(root, "--dry-run")
    assert (obj["name"], obj["name_from"]) == ("my-tool", None)
    assert 'name = "my-tool"\n' in obj["content"]
    assert "project name 'my-tool' from the folder" in runner(root, "init", "--dry-run").stdout


@pytest.mark.parametrize("script", ["tape test/*.js", "mocha", "node --test", "ava --verbose"])
def test_node_runs_the_package_s_own_test_script(tmp_path, script):
    package = {"name": "calc", "scripts": {"test": script}, "devDependencies": {"jest": "^30"}}
    root = tree(tmp_path / "calc", {"package.json": json.dumps(package)})
    init(root)
    text = (root / "intents.toml").read_text()
    assert 'description = "test with the node adapter: npm test"' in text
    assert "jest" not in text.split("[intent.test]")[1].split("[intent.")[0]
    shown = runner(root, "adapters", "--json")
    node = json.loads(shown.stdout)["detected"][0]
    assert node["commands"]["test"]["run"] == "npm test"
    assert f"package.json has scripts.test ({json.dumps(script)}): variant script" in " ".join(node["evidence"])


def test_node_without_a_test_script_runs_no_runner_by_assumption(tmp_path):
    root = tree(tmp_path / "bare", {"package.json": '{"name": "bare"}'})
    assert 'description = "test with the node adapter: npm test"' in init(root, "--dry-run")["content"]


def test_makefile_targets_npm_scripts_and_tox_environments_are_offered(tmp_path):
    root = copy_fixture(INIT / "python-tox", tmp_path / "acme")
    (root / "package.json").write_text((INIT / "node-script" / "package.json").read_text())
    obj = init(root)
    assert obj["offered"] == [
        "make-all",
        "make-build",
        "make-docs",
        "make-clean",
        "npm-build",
        "npm-build-docs",
        "tox-py311",
        "tox-py312",
        "tox-lint",
        "tox-docs",
    ]
    text = (root / "intents.toml").read_text()
    assert '[intent.make-build]\ndescription = "the Makefile\'s target build"\nrun = "make build"\n' in text
    assert '[intent.npm-build-docs]\ndescription = "package.json script: ' in text
    assert 'run = "npm run build:docs"' in text and 'run = "tox -e py312"' in text
    # npm's own hooks (prepare, pretest) are not tasks; `test` and `lint` are what the generated steps run
    for skipped in ("npm-prepare", "npm-pretest", "npm-test", "npm-lint"):
        assert f"[intent.{skipped}]" not in text
    plan = runner(root, "status", "--json")
    steps = {s["intent"] for s in json.loads(plan.stdout)["steps"]}
    assert "make-build" not in steps  # offered, not part of the default target


def test_tox_toml_and_pyproject_tox_tables_are_read(tmp_path):
    root = tree(
        tmp_path / "a", {"pyproject.toml": "[project]\nname = 'a'\n", "tox.toml": 'env_list = ["3.13", "type"]\n'}
    )
    assert init(root, "--dry-run")["offered"] == ["tox-3.13", "tox-type"]
    legacy = '[project]\nname = "b"\n[tool.tox]\nlegacy_tox_ini = """\n[tox]\nenvlist = py{39,310}-django{42,50}\n"""\n'
    root = tree(tmp_path / "b", {"pyproject.toml": legacy})
    assert init(root, "--dry-run")["offered"] == [
        "tox-py39-django42",
        "tox-py39-django50",
        "tox-py310-django42",
        "tox-py310-django50",
    ]


def test_init_says_which_program_a_generated_step_needs_is_not_installed(tmp_path):
    """attrs (uv.lock): init wrote `uv run pytest` where no uv is installed, and both steps failed with `uv: not
    found`; a program that is there (python3, ruff when installed) is not named."""
    pyproject = "[project]\nname = 'a'\n[tool.uv]\ndev-dependencies = []\n"
    root = tree(tmp_path / "a", {"pyproject.toml": pyproject, "uv.lock": "version = 1\n", "tests/test_a.py": ""})
    assert shutil.which("uv") is None  # the machine this runs on has no uv (as attrs' user had none)
    steps = ["lint (python: uv run python -m ruff check --output-format concise .)", "test (python: uv run pytest)"]
    assert init(root, "--dry-run")["not_installed"] == {"uv": steps}
    result = runner(root, "init")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stdout.splitlines() if line.startswith("warning:")]
    assert said == [
        f"warning: uv is not installed here, and {'; '.join(steps)} start it: install uv, or change the run "
        "line in intents.toml"
    ]
    python_only = tree(tmp_path / "b", {"pyproject.toml": "[project]\nname = 'b'\n", "tests/test_b.py": ""})
    assert "uv" not in init(python_only, "--dry-run")["not_installed"]


def test_npm_version_and_publish_hooks_are_not_offered(tmp_path):
    """minimist's `version` script (auto-changelog, run by `npm version`) was offered as the intent npm-version."""
    scripts = {
        "version": "auto-changelog && git add CHANGELOG.md",
        "postversion": "git push",
        "publish": "x",
        "tests-only": "tape test/*.js",
        "test": "npm run tests-only",
    }
    root = tree(tmp_path / "m", {"package.json": json.dumps({"name": "m", "scripts": scripts})})
    assert init(root, "--dry-run")["offered"] == ["npm-tests-only"]


def test_tox_numeric_ranges_are_counted_out_as_tox_does(tmp_path):
    """attrs' `py3{9-14}-tests` became one intent `tox -e py39-14-tests`, an environment tox does not have."""
    ini = "[tox]\nenv_list = py3{9-14}-tests, py3{8-9, 11}-lint\n"
    root = tree(tmp_path / "a", {"pyproject.toml": "[project]\nname = 'a'\n", "tox.ini": ini})
    assert init(root, "--dry-run")["offered"] == [
        *(f"tox-py3{n}-tests" for n in range(9, 15)),
        "tox-py38-lint",
        "tox-py39-lint",
        "tox-py311-lint",
    ]


@pytest.mark.parametrize(
    "files,says,line",
    [
        (
            {"pyproject.toml": "[project]\nname = 'a'\n[tool.ruff]\nline-length = 99\n"},
            "pyproject.toml has tool.ruff",
            "ruff",
        ),
        ({"pyproject.toml": "[project]\nname = 'a'\n", "ruff.toml": ""}, "ruff.toml found", "ruff"),
        ({"pyproject.toml": "[project]\nname = 'a'\n", ".flake8": "[flake8]\n"}, ".flake8 found", "flake8 ."),
        ({"setup.cfg": "[flake8]\nmax-line-length = 99\n"}, "setup.cfg mentions [flake8]", "flake8 ."),
        (
            {"pyproject.toml": "[project]\nname = 'a'\n[tool.pylint.main]\njobs = 2\n"},
            "pyproject.toml has tool.pylint",
            "pylint",
        ),
        (
            {"package.json": '{"name": "w", "scripts": {"lint": "biome check ."}}'},
            'package.json has scripts.lint ("biome check .")',
            "npm run lint",
        ),
        (
            {"package.json": '{"name": "w"}', "eslint.config.mjs": "export default [];\n"},
            "eslint.config.mjs found",
            "eslint",
        ),
        ({"Cargo.toml": "[package]\nname = 'c'\n", "clippy.toml": "msrv = '1.70'\n"}, "clippy.toml found", "clippy"),
        ({"go.mod": "module x\n", ".golangci.yml": "linters: {}\n"}, ".golangci.yml found", "golangci-lint run"),
    ],
)
def test_the_lint_step_follows_the_project_s_own_configuration_and_says_so(tmp_path, files, says, line):
    root = tree(tmp_path / "p", files)
    init(root)
    text = (root / "intents.toml").read_text()
    assert f"# lint follows the project's own configuration: {says}\n[intent.lint]\n" in text
    lint = tomllib.loads(text)["intent"]["lint"]
    assert lint["description"].endswith(f"{line_of(lint)}, with the project's own configuration ({says})")
    assert line in lint["description"]
    config = next(f for f in files if f in says)
    assert matches_any(config, lint["inputs"])  # an edit to the configuration re-runs the lint


def line_of(lint: dict) -> str:
    return lint["description"].split(": ", 1)[1].split(", with the project")[0]


def test_a_lint_step_without_configuration_says_it_runs_the_defaults(tmp_path):
    root = tree(tmp_path / "p", {"pyproject.toml": "[project]\nname = 'a'\n"})
    text = init(root, "--dry-run")["content"]
    assert "# lint: no lint configuration was found here, so the linter runs with its defaults\n" in text


def test_the_written_file_for_a_real_python_project(tmp_path, snapshot):
    root = copy_fixture(INIT / "python-tox", tmp_path / "acme")
    result = runner(root, "init")
    assert result.returncode == 0, result.stderr
    assert (root / "intents.toml").read_text() == snapshot
    assert result.stdout.splitlines()[1:] == [
        "project name 'acme-parser' from pyproject.toml [project] name",
        "offered what the project already runs: make-all, make-build, make-docs, make-clean, tox-py311, tox-py312, "
        "tox-lint, tox-docs",
        "lint (python) follows the project's own configuration: pyproject.toml has tool.ruff",
    ]


def test_the_example_agent_step_is_commented_out_while_the_worker_cannot_start(tmp_path):
    root = copy_fixture(INIT / "python-tox", tmp_path / "acme")
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_API_KEY", "CODEX_HOME")}
    result = subprocess.run(
        [sys.executable, "-m", "runner", "init", "--json"],
        cwd=root,
        env={**env, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    obj = json.loads(result.stdout)
    assert obj["agent_example"] is False
    assert "the codex worker cannot start: key: the environment variable CODEX_API_KEY is not set" in obj["note"]
    assert "\n# [intent.write-tests]\n" in (root / "intents.toml").read_text()


@pytest.mark.toolchain
def test_init_then_make_runs_node_s_own_test_script(tmp_path):
    need_tools("node", "npm", how="apt-get install -y nodejs npm (Node 20)")
    root = copy_fixture(INIT / "node-script", tmp_path / "calc")
    init(root)
    first = runner(root, "make", "test")
    assert first.returncode == 0, first.stderr + first.stdout
    (root / "test" / "calc.test.js").write_text(
        (root / "test" / "calc.test.js").read_text().replace("add(1, 2), 3", "add(1, 2), 4")
    )
    failed = runner(root, "make", "test")
    assert failed.returncode == 1
    # node --test's TAP, run by `npm test` (no jest anywhere), read by the tap family: the failing test named
    assert "failing tests (1):\n    adds\n" in failed.stderr


def test_minimist_no_lint_step_beside_a_test_script_that_lints_and_the_test_reads_the_whole_tree(tmp_path):
    """minimist (npm pack: no .gitignore): `npm test` runs `pretest` (`npm run lint`), so a lint step beside it ran
    eslint twice; lint's inputs left out example/, which `eslint .` reads, and an error there left `runner make` at
    nothing to do. Its un-ignored node_modules is no input, and never walked (globs._pruned)."""
    root = copy_fixture(INIT / "minimist", tmp_path / "minimist")
    tree(root, {"node_modules/tape/index.js": "module.exports = 1;\n", "node_modules/.bin/tape": ""})
    result = runner(root, "init")
    assert result.returncode == 0, result.stderr
    assert "no lint step (node): `npm test` lints already (pretest: npm run lint)" in result.stdout.splitlines()
    intents = tomllib.loads((root / "intents.toml").read_text())["intent"]
    assert "lint" not in intents
    assert intents["check"]["deps"] == ["test"]
    assert intents["test"]["exclude"] == ["**/node_modules/**", "coverage/**"]
    explained = json.loads(runner(root, "explain", "test", "--json").stdout)
    inputs = sorted(explained["ingredients"]["inputs"])
    assert inputs == [".eslintrc", ".nycrc", "example/parse.js", "index.js", "package.json", "test/parse.js"]
    (root / "example" / "parse.js").write_text("var argv = require('../')(process.argv.slice(2))\n")
    again = json.loads(runner(root, "explain", "test", "--json").stdout)
    assert again["key"] != explained["key"]  # an edit there is the test step's (its pretest lints it)


def test_more_itertools_tests_run_with_unittest_as_its_makefile_and_tox_run_them(tmp_path):
    """more-itertools: the project's Makefile and tox run `python -m unittest -v` and pytest is in none of its
    requirements; init wrote `python3 -m pytest`. A broken test is named from unittest's own report."""
    root = copy_fixture(INIT / "more-itertools", tmp_path / "more-itertools")
    obj = init(root)
    assert obj["detected"][0]["variants"] == ["unittest", "ruff"]
    test = tomllib.loads(obj["content"])["intent"]["test"]
    assert test["description"] == "test with the python adapter: python3 -m unittest -v"
    assert test["inputs"] == ["**/*.py", "**/*.pyi", "pyproject.toml", "tox.ini"]
    first = runner(root, "make", "test")
    assert first.returncode == 0, first.stderr + first.stdout
    broken = root / "tests" / "test_more.py"
    broken.write_text(broken.read_text().replace("range(4)), 0)", "range(4)), 1)"))
    failed = runner(root, "make", "test")
    assert failed.returncode == 1
    assert "failing tests (1):\n    test_many (tests.test_more.FirstTests.test_many)\n" in failed.stderr


def test_a_project_that_names_pytest_keeps_pytest_beside_a_makefile_that_mentions_unittest(tmp_path):
    root = copy_fixture(INIT / "more-itertools", tmp_path / "p")
    (root / "requirements" / "testing.txt").write_text("coverage\npytest\n")
    obj = init(root, "--dry-run")
    assert obj["detected"][0]["variants"] == ["pytest", "ruff"]
    assert 'description = "test with the python adapter: python3 -m pytest"' in obj["content"]


def test_init_says_which_python_module_a_generated_step_runs_is_not_installed(tmp_path):
    """more-itertools' lint runs `python3 -m ruff`, and the python3 here had no ruff: lint failed with `No module
    named ruff` on the first `runner make`. The interpreter the step will start is asked."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    root = copy_fixture(INIT / "more-itertools", tmp_path / "more-itertools")
    result = runner(root, "init", path=os.pathsep.join([str(venv / "bin"), os.environ["PATH"]]))
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("warning:")] == [
        "warning: ruff is not installed here, and lint (python: python3 -m ruff check --output-format concise .) "
        "starts it: install ruff, or change the run line in intents.toml"
    ]
    (root / "intents.toml").unlink()
    assert "warning:" not in runner(root, "init").stdout  # the suite's python3 has ruff


def test_init_says_to_install_a_node_project_s_dependencies_first(tmp_path):
    """minimist from `npm pack`: no node_modules, and its test step failed with `eslint: not found`."""
    root = copy_fixture(INIT / "minimist", tmp_path / "minimist")
    obj = init(root, "--dry-run")
    assert obj["install_first"] == "npm install"
    said = runner(root, "init").stdout.splitlines()
    assert (
        "warning: package.json's dependencies are not installed here (no node_modules): run `npm install` before "
        "`runner make`"
    ) in said
    (root / "intents.toml").unlink()
    (root / "node_modules").mkdir()
    assert init(root, "--dry-run")["install_first"] is None
