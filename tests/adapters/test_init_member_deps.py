"""`runner init` at a workspace's root writes what each member's tests read of the others (issue 41), from the
members' own manifests (pyproject.toml, package.json, Cargo.toml, go.mod), through the CLI: a member's test step
depends on the test steps of the members it runs, transitively, and reads their declared sources, so an edit of
api's sources runs sdk's and exporter's tests again and `status --affected` says so; a cycle is written one way."""

from __future__ import annotations

import json
import subprocess

import pytest
from ci import need_tools
from test_init_real_projects import runner, tree

PASSING_TEST = "def test_adds():\n    assert 1 + 1 == 2\n"


def _ok(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _git(root, *args: str) -> None:
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *who, *args], cwd=root, capture_output=True, text=True, check=True)


def _made(root, *args: str) -> dict[str, str]:
    made = runner(root, "make", "--json", *args)
    assert made.returncode == 0, made.stdout + made.stderr
    events = [json.loads(line) for line in made.stdout.splitlines() if line.startswith("{")]
    return {e["intent"]: e["status"] for e in events if e["event"] == "step_finished"}


def _uv_member(name: str, project: str) -> dict[str, str]:
    return {
        f"packages/{name}/pyproject.toml": project,
        f"packages/{name}/src/{name}/__init__.py": "X = 1\n",
        f"packages/{name}/tests/test_{name}.py": PASSING_TEST,
    }


UV = {
    "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
    ".gitignore": ".runner/\n__pycache__/\n",
    **_uv_member("api", '[project]\nname = "Opentelemetry.API"\nversion = "0.1.0"\n'),
    # sdk names api as PEP 508 compares names, not as api spells it; exporter names sdk only (a dev group)
    **_uv_member("sdk", '[project]\nname = "sdk"\nversion = "0.1.0"\ndependencies = ["opentelemetry_api >= 0.1"]\n'),
    **_uv_member("exporter", '[project]\nname = "exporter"\nversion = "0.1.0"\n\n[dependency-groups]\ndev = ["SDK"]\n'),
}


def test_a_uv_member_s_tests_read_the_sources_of_the_members_they_run(tmp_path, snapshot):
    root = tree(tmp_path / "uvw", UV)
    said = _ok(runner(root, "init")).splitlines()
    assert said[5:7] == [
        "  packages/exporter/: test reads packages/sdk (pyproject.toml [dependency-groups] dev), and through them "
        "packages/api",
        "  packages/sdk/: test reads packages/api (pyproject.toml [project] dependencies)",
    ]
    assert (root / "packages/sdk/intents.toml").read_text() == snapshot(name="sdk")
    assert (root / "packages/exporter/intents.toml").read_text() == snapshot(name="exporter")
    assert 'deps = ["lint", "test"]' in (root / "packages/api/intents.toml").read_text()  # api reads no other
    assert _ok(runner(root, "validate")).startswith("ok:")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    assert set(_made(root).values()) == {"ran"}
    # api's source edited: every test that runs it is in, the others' lint (their own files only) is out
    (root / "packages/api/src/api/__init__.py").write_text("X = 2\n")
    affected = _ok(runner(root, "status", "--affected", "HEAD")).splitlines()
    assert [line.split()[:2] for line in affected if line.split()[1].endswith((":lint", ":test"))] == [
        ["in", "packages/api:lint"],
        ["in", "packages/api:test"],
        ["out", "packages/exporter:lint"],
        ["out", "packages/sdk:lint"],
        ["in", "packages/sdk:test"],
        ["in", "packages/exporter:test"],
    ]
    assert (
        "in    packages/exporter:test  input changed: packages/api/src/api/__init__.py; depends on packages/sdk:test, "
        "packages/api:test, affected"
    ) in affected
    assert _made(root) == {
        "packages/api:lint": "ran",
        "packages/api:test": "ran",
        "packages/exporter:lint": "cached",
        "packages/sdk:lint": "cached",
        "packages/sdk:test": "ran",
        "packages/exporter:test": "ran",
    }
    # what api's test leaves out of its inputs is no reader's either
    (root / "packages/api/build").mkdir()
    (root / "packages/api/build/gen.py").write_text("Y = 1\n")
    assert set(_made(root).values()) == {"cached"}


def test_init_s_json_says_what_each_member_reads(tmp_path):
    root = tree(tmp_path / "uvw", UV)
    obj = json.loads(_ok(runner(root, "init", "--dry-run", "--json")))
    reads = {m["folder"]: m["reads"] for m in obj["workspace"]["members"]}
    assert reads == {
        "packages/api": [],
        "packages/exporter": ["packages/sdk", "packages/api"],
        "packages/sdk": ["packages/api"],
    }
    assert not (root / "packages/sdk/intents.toml").exists()


def test_an_npm_member_that_names_another_reads_it(tmp_path, snapshot):
    files = {"package.json": json.dumps({"name": "web", "private": True, "workspaces": ["packages/*"]})}
    for name, deps in (("a", {}), ("b", {"devDependencies": {"@web/a": "workspace:*"}})):
        package = {"name": f"@web/{name}", "scripts": {"test": "node --test"}, **deps}
        files[f"packages/{name}/package.json"] = json.dumps(package)
        files[f"packages/{name}/index.js"] = "module.exports = 1;\n"
    root = tree(tmp_path / "web", files)
    said = _ok(runner(root, "init")).splitlines()
    assert "  packages/b/: test reads packages/a (package.json devDependencies)" in said
    assert (root / "packages/b/intents.toml").read_text() == snapshot
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_npm_members_that_depend_on_each_other_are_written_one_way_and_said(tmp_path):
    files = {"package.json": json.dumps({"name": "web", "private": True, "workspaces": ["packages/*"]})}
    for name, other in (("a", "b"), ("b", "a")):
        package = {"name": name, "scripts": {"test": "node --test"}, "dependencies": {other: "*"}}
        files[f"packages/{name}/package.json"] = json.dumps(package)
    root = tree(tmp_path / "web", files)
    said = _ok(runner(root, "init")).splitlines()
    assert "  packages/a/: test reads packages/b (package.json dependencies)" in said
    assert (
        "warning: packages/b's dependency on packages/a (package.json dependencies names a) closes a cycle, and "
        "runner's deps cannot go round: packages/b's tests do not read packages/a's sources; edit "
        "packages/b/intents.toml if that is the one that matters"
    ) in said
    assert "deps = [\n" not in (root / "packages/b/intents.toml").read_text()
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_cargo_member_s_path_and_workspace_dependencies_are_read(tmp_path, snapshot):
    crate = '[package]\nname = "{0}"\nversion = "0.1.0"\nedition = "2021"\n'
    root = tree(
        tmp_path / "rs",
        {
            "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n\n[workspace.dependencies]\nutils = { path = '
            '"crates/util" }\n',
            "crates/core/Cargo.toml": crate.format("core"),
            "crates/core/src/lib.rs": "pub fn one() -> i32 { 1 }\n",
            # util reaches core by a path under another name; cli names util through the workspace's table
            "crates/util/Cargo.toml": crate.format("util") + '\n[dependencies]\nbase = { path = "../core", package = '
            '"core" }\n',
            "crates/util/src/lib.rs": "pub fn two() -> i32 { base::one() + 1 }\n",
            # the workspace's table names util 'utils' (by its path): cli's dev-dependency is util all the same
            "crates/cli/Cargo.toml": crate.format("cli") + "\n[dev-dependencies]\nutils = { workspace = true }\n",
            "crates/cli/src/lib.rs": "\n",
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert [line for line in said if " reads " in line] == [
        "  crates/cli/: test reads crates/util (Cargo.toml [dev-dependencies]), and through them crates/core",
        "  crates/util/: test reads crates/core (Cargo.toml [dependencies])",
    ]
    assert (root / "crates/cli/intents.toml").read_text() == snapshot
    assert _ok(runner(root, "validate")).startswith("ok:")


@pytest.mark.toolchain
def test_a_go_module_that_requires_another_member_is_run_again_when_it_changes(tmp_path):
    need_tools("go", how="apt-get install -y golang-go")
    files = {
        "go.work": "go 1.21\n\nuse (\n\t./api\n\t./cli\n)\n",
        ".gitignore": ".runner/\n",
        "api/go.mod": "module example.com/api\n\ngo 1.21\n",
        "api/api.go": "package api\n\nfunc One() int { return 1 }\n",
        "cli/go.mod": "module example.com/cli\n\ngo 1.21\n\nrequire (\n\texample.com/api v0.0.0 // go.work's\n)\n",
        "cli/cli.go": 'package cli\n\nimport "example.com/api"\n\nfunc Two() int { return api.One() + 1 }\n',
        "cli/cli_test.go": 'package cli\n\nimport "testing"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n'
        "\t\tt.Fatal(Two())\n\t}\n}\n",
    }
    root = tree(tmp_path / "gw", files)
    said = _ok(runner(root, "init")).splitlines()
    assert "  cli/: test reads api (go.mod require)" in said
    assert 'deps = [\n    "api:test",  # example.com/api (go.mod require)\n]' in (root / "cli/intents.toml").read_text()
    assert _made(root, "cli:test") == {"api:test": "ran", "cli:test": "ran"}
    (root / "api/api.go").write_text("package api\n\nfunc One() int { return 2 }\n")
    failed = runner(root, "make", "cli:test")  # api's edit breaks cli's test: it runs again, and fails
    assert failed.returncode == 1, failed.stdout + failed.stderr


def test_in_a_cycle_what_a_member_needs_to_run_is_kept_before_an_extra(tmp_path):
    # opentelemetry-python's shape: sdk names configuration in an extra, configuration names sdk to run
    root = tree(
        tmp_path / "uvw",
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
            **_uv_member(
                "a_sdk", '[project]\nname = "sdk"\n\n[project.optional-dependencies]\nfile = ["configuration"]\n'
            ),
            **_uv_member("b_conf", '[project]\nname = "configuration"\ndependencies = ["sdk"]\n'),
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert "  packages/b_conf/: test reads packages/a_sdk (pyproject.toml [project] dependencies)" in said
    assert (
        "warning: packages/a_sdk's dependency on packages/b_conf (pyproject.toml [project.optional-dependencies] "
        "file names configuration) closes a cycle, and runner's deps cannot go round: packages/a_sdk's tests do not "
        "read packages/b_conf's sources; edit packages/a_sdk/intents.toml if that is the one that matters"
    ) in said
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_kept_member_s_own_test_step_is_read_and_one_without_is_said(tmp_path):
    api_spec = '[project]\ndefault = "unit"\n\n[intent.unit]\nrun = "true"\n\n[intent.test]\nrun = "true"\n'
    root = tree(
        tmp_path / "uvw",
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
            **_uv_member("api", '[project]\nname = "api"\n'),
            "packages/api/intents.toml": api_spec + 'inputs = ["src/**/*.py"]\n',
            **_uv_member("core", '[project]\nname = "core"\n'),
            "packages/core/intents.toml": api_spec,  # its test declares no inputs: nothing to read
            **_uv_member("sdk", '[project]\nname = "sdk"\ndependencies = ["api", "core"]\n'),
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert (
        "warning: packages/sdk depends on packages/core, which has no test step declaring its sources: an edit "
        "there does not re-run packages/sdk's tests; declare them in packages/sdk/intents.toml by hand"
    ) in said
    text = (root / "packages/sdk/intents.toml").read_text()
    assert '    "../api/src/**/*.py",\n]' in text and '    "packages/api:test",  # api (' in text
    assert "packages/core:test" not in text
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_member_of_two_toolchains_reads_another_in_the_step_of_the_manifest_s_toolchain(tmp_path):
    root = tree(
        tmp_path / "w",
        {
            "package.json": json.dumps({"name": "w", "private": True, "workspaces": ["packages/*"]}),
            "packages/a/package.json": json.dumps({"name": "a", "scripts": {"test": "node --test"}}),
            "packages/a/index.js": "module.exports = 1;\n",
            "packages/b/package.json": json.dumps(
                {"name": "b", "scripts": {"test": "node --test"}, "dependencies": {"a": "*"}}
            ),
            "packages/b/index.js": "module.exports = 2;\n",
            "packages/b/pyproject.toml": '[project]\nname = "b"\n',
            "packages/b/tests/test_b.py": PASSING_TEST,
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert "  packages/b/: test-node reads packages/a (package.json dependencies)" in said
    text = (root / "packages/b/intents.toml").read_text()
    python_step = text[text.index("[intent.test-python]") :].split("\n\n")[0]
    assert '"packages/a:test",  # a (package.json dependencies)' in text and "deps" not in python_step
    assert _ok(runner(root, "validate")).startswith("ok:")
