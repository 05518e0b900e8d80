"""`runner init` in a monorepo, through the CLI: in a folder a root's `include` takes in, a sub-project's file; at
a workspace's root (uv, npm/yarn, pnpm, Cargo, Go), the root's file taking the members in, with an `all` intent,
and a sub-project's file in each member; a workspace file that does not parse is named in a warning."""

from __future__ import annotations

import json

import pytest
from ci import need_tools
from test_init_real_projects import runner, tree

PASSING_TEST = "def test_adds():\n    assert 1 + 1 == 2\n"
NODE_TEST = (
    "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.ok(1));\n"
)


GO_TEST = "func TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal()\n\t}\n}\n"


def _python_member(name: str) -> dict[str, str]:
    return {
        f"packages/{name}/pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1.0"\n',
        f"packages/{name}/tests/test_{name}.py": PASSING_TEST,
    }


def _ok(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_init_in_a_folder_the_root_includes_writes_a_sub_project_s_file(tmp_path, snapshot):
    root = tree(
        tmp_path / "mono",
        {
            "intents.toml": '[project]\nname = "mono"\ninclude = ["libs/*"]\n\n[intent.hello]\nrun = "true"\n',
            **{k.replace("packages/", "libs/"): v for k, v in _python_member("calc").items()},
        },
    )
    before = (root / "intents.toml").read_bytes()
    said = _ok(runner(root / "libs" / "calc", "init"))
    assert said.splitlines()[:2] == [
        f"wrote {root / 'libs/calc/intents.toml'} (python detected): intents lint, test, check, write-tests",
        "a sub-project of ../../intents.toml: its [project] holds only its default; the name is the root's",
    ]
    written = (root / "libs/calc/intents.toml").read_text()
    assert written == snapshot
    assert written.startswith("# A sub-project of ../../intents.toml, whose [project] include takes in this folder.")
    assert (root / "intents.toml").read_bytes() == before  # the root's file is never touched
    listed = _ok(runner(root, "list")).splitlines()
    assert "  libs/calc:check        Everything CI checks (default of libs/calc/)" in listed
    assert _ok(runner(root, "validate")).startswith("ok:")
    made = runner(root, "make", "libs/calc:test")
    assert made.returncode == 0, made.stdout + made.stderr


def test_init_at_a_uv_workspace_root_takes_in_its_members_and_make_builds_them(tmp_path, snapshot):
    root = tree(
        tmp_path / "uvw",
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\nexclude = ["packages/seeds"]\n',
            **_python_member("alpha"),
            **_python_member("beta"),
            **_python_member("seeds"),
        },
    )
    said = _ok(runner(root, "init"))
    assert said.splitlines() == [
        f"wrote {root / 'intents.toml'} (a workspace: pyproject.toml [tool.uv.workspace]): include packages/*",
        "intent all (the default): packages/alpha:check, packages/beta:check",
        "  packages/alpha/: wrote packages/alpha/intents.toml (python detected): lint, test, check, write-tests",
        "  packages/beta/: wrote packages/beta/intents.toml (python detected): lint, test, check, write-tests",
        "  packages/seeds/: left out, excluded by the workspace",
    ]
    assert (root / "intents.toml").read_text() == snapshot(name="root")
    assert (root / "packages/alpha/intents.toml").read_text() == snapshot(name="member")
    assert not (root / "packages/seeds/intents.toml").exists()
    listed = _ok(runner(root, "list")).splitlines()
    assert listed[:2] == [
        "Targets of uvw (intents.toml); `runner make TARGET` builds one:",
        "  all                         Every member's check (default)",
    ]
    made = runner(root, "make", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    ran = {
        e["intent"]
        for e in map(json.loads, made.stdout.splitlines())
        if e.get("event") == "step_finished" and e["status"] == "ran"
    }
    assert ran == {"packages/alpha:lint", "packages/alpha:test", "packages/beta:lint", "packages/beta:test"}
    inside = runner(root / "packages/beta", "make")  # typed in a member: its own check, from the one root
    assert inside.returncode == 0 and "nothing to do" in inside.stdout + inside.stderr, inside.stdout + inside.stderr


def test_a_member_with_its_own_intents_toml_is_kept_and_said(tmp_path):
    root = tree(
        tmp_path / "uvw",
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
            **_python_member("alpha"),
            **_python_member("beta"),
            "packages/beta/intents.toml": '[project]\ndefault = "unit"\n\n[intent.unit]\nrun = "true"\n',
        },
    )
    kept = (root / "packages/beta/intents.toml").read_bytes()
    obj = json.loads(_ok(runner(root, "init", "--json")))
    assert obj["workspace"]["all"] == ["packages/alpha:check", "packages/beta:unit"]
    assert [(m["folder"], m["status"]) for m in obj["workspace"]["members"]] == [
        ("packages/alpha", "wrote"),
        ("packages/beta", "kept"),
    ]
    assert (root / "packages/beta/intents.toml").read_bytes() == kept


@pytest.mark.toolchain
def test_init_at_an_npm_workspaces_root_then_make_runs_each_package_s_tests(tmp_path, snapshot):
    need_tools("node", "npm", how="apt-get install -y nodejs npm (Node 20)")
    files = {"package.json": json.dumps({"name": "web", "private": True, "workspaces": ["packages/*"]})}
    for name in ("a", "b"):
        scripts = {"test": "node --test", "lint": f"node --check test/{name}.test.js"}
        files[f"packages/{name}/package.json"] = json.dumps({"name": f"@web/{name}", "scripts": scripts})
        files[f"packages/{name}/test/{name}.test.js"] = NODE_TEST
    root = tree(tmp_path / "web", files)
    obj = json.loads(_ok(runner(root, "init", "--json")))
    assert obj["workspace"]["include"] == ["packages/*"] and obj["intents"] == ["all"]
    assert (root / "intents.toml").read_text() == snapshot(name="root")
    assert (root / "packages/a/intents.toml").read_text() == snapshot(name="member")
    made = runner(root, "make")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "4 ran" in made.stderr + made.stdout


def test_a_root_package_keeps_its_own_intents_beside_include(tmp_path, snapshot):
    package = {"name": "web", "scripts": {"test": "node --test"}, "workspaces": {"packages": ["packages/*"]}}
    root = tree(
        tmp_path / "web",
        {
            "package.json": json.dumps(package),
            "packages/a/package.json": json.dumps({"name": "a", "scripts": {"test": "node --test"}}),
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert said[:3] == [
        f"wrote {root / 'intents.toml'} (a workspace: package.json workspaces): include packages/*",
        "the root is a package too (package.json scripts): its own intents as for any project, `check` its default",
        "intent all: packages/a:check",
    ]
    text = (root / "intents.toml").read_text()
    assert text == snapshot
    assert 'default = "check"' in text and 'deps = ["check", "packages/a:check"]' in text
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_pnpm_workspace_s_exclusion_is_read_by_hand(tmp_path):
    yaml = "# the packages\npackages:\n  - 'packages/*'\n  - \"tools/cli\"  # the CLI\n  - '!packages/legacy'\n"
    root = tree(
        tmp_path / "pn",
        {
            "pnpm-workspace.yaml": yaml,
            "package.json": '{"name": "pn", "private": true}',
            "packages/app/package.json": '{"name": "app", "scripts": {"test": "node --test"}}',
            "packages/legacy/package.json": '{"name": "legacy", "scripts": {"test": "node --test"}}',
            "tools/cli/package.json": '{"name": "cli", "scripts": {"test": "node --test"}}',
        },
    )
    obj = json.loads(_ok(runner(root, "init", "--dry-run", "--json")))
    ws = obj["workspace"]
    assert (ws["tools"], ws["include"], ws["excluded"]) == (["pnpm"], ["packages/*", "tools/cli"], ["packages/legacy"])
    assert obj["written"] is False and not (root / "intents.toml").exists()
    assert 'include = ["packages/*", "tools/cli"]  # the members of pnpm-workspace.yaml packages\n' in obj["content"]


def test_an_excluded_member_that_has_an_intents_toml_makes_include_name_the_members(tmp_path):
    root = tree(
        tmp_path / "pn",
        {
            "pnpm-workspace.yaml": "packages: ['packages/*', '!packages/legacy']\n",
            "packages/app/package.json": '{"name": "app", "scripts": {"test": "node --test"}}',
            "packages/legacy/package.json": '{"name": "legacy", "scripts": {"test": "node --test"}}',
            "packages/legacy/intents.toml": '[project]\nname = "legacy"\n\n[intent.x]\nrun = "true"\n',
        },
    )
    obj = json.loads(_ok(runner(root, "init", "--json")))
    assert obj["workspace"]["include"] == ["packages/app"]  # 'packages/*' would take the excluded one in
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_cargo_workspace_with_a_root_package(tmp_path, snapshot):
    root = tree(
        tmp_path / "rs",
        {
            "Cargo.toml": '[package]\nname = "rs"\nversion = "0.1.0"\n\n[workspace]\nmembers = ["crates/*"]\n'
            'exclude = ["crates/old"]\n',
            "src/main.rs": "fn main() {}\n",
            **{
                f"crates/{c}/Cargo.toml": f'[package]\nname = "{c}"\nversion = "0.1.0"\n'
                for c in ("core", "util", "old")
            },
        },
    )
    obj = json.loads(_ok(runner(root, "init", "--json")))
    ws = obj["workspace"]
    assert (ws["include"], ws["excluded"], ws["all"]) == (
        ["crates/*"],
        ["crates/old"],
        ["crates/core:check", "crates/util:check"],
    )
    assert obj["content"] == snapshot
    assert _ok(runner(root, "validate")).startswith("ok:")


@pytest.mark.toolchain
def test_a_go_work_s_modules_are_members_and_build(tmp_path):
    need_tools("go", how="apt-get install -y golang-go")
    files = {"go.work": "go 1.21\n\nuse (\n\t./api\n\t./cli // the command\n)\n"}
    for mod in ("api", "cli"):
        files[f"{mod}/go.mod"] = f"module example.com/{mod}\n\ngo 1.21\n"
        files[f"{mod}/{mod}.go"] = f"package {mod}\n\nfunc One() int {{ return 1 }}\n"
        files[f"{mod}/{mod}_test.go"] = f'package {mod}\n\nimport "testing"\n\n{GO_TEST}'
    root = tree(tmp_path / "gw", files)
    obj = json.loads(_ok(runner(root, "init", "--json")))
    assert obj["workspace"]["include"] == ["api", "cli"] and obj["workspace"]["tools"] == ["go"]
    made = runner(root, "make", "api:test", "cli:test")
    assert made.returncode == 0, made.stdout + made.stderr


@pytest.mark.parametrize(
    "files,warning",
    [
        (
            {"package.json": '{"name": "w",\n "workspaces": ["packages/*"]\n "x": 1}'},
            "warning: package.json:3: Expecting ',' delimiter: not read as a workspace; fix it, or write [project] "
            "include by hand",
        ),
        (
            {"pyproject.toml": '[tool.uv.workspace]\nmembers = ["a"\n'},
            "warning: pyproject.toml:2: Unclosed array: not read as a workspace; fix it, or write [project] include "
            "by hand",
        ),
        (
            {"pnpm-workspace.yaml": "packages:\n  - 'a'\n  - {b: 1}\n", "package.json": "{}"},
            "warning: pnpm-workspace.yaml:3: not a list item of 'packages:' ('- {b: 1}'): not read as a workspace; "
            "fix it, or write [project] include by hand",
        ),
    ],
)
def test_a_workspace_file_that_does_not_parse_is_named_in_a_warning(tmp_path, files, warning):
    root = tree(tmp_path / "w", files)
    result = runner(root, "init", "--dry-run")
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    assert warning in (result.stdout + result.stderr).splitlines()


def test_a_workspace_of_many_members_is_written_one_member_a_line(tmp_path):
    names = [f"library-number-{n}" for n in range(1, 8)]
    members = ", ".join(f'"{n}"' for n in names)
    files = {"pyproject.toml": f"[tool.uv.workspace]\nmembers = [{members}]\n"}
    for n in names:
        files[f"{n}/pyproject.toml"] = f'[project]\nname = "{n}"\n'
    root = tree(tmp_path / "many", files)
    said = _ok(runner(root, "init")).splitlines()
    assert said[0].endswith(
        "include library-number-1, library-number-2, library-number-3, library-number-4, library-number-5 and 2 more"
    )
    text = (root / "intents.toml").read_text()
    assert "include = [  # the members of pyproject.toml [tool.uv.workspace]\n" in text
    assert '    "library-number-7",\n]\n' in text
    assert _ok(runner(root, "validate")).startswith("ok:")


def test_a_kept_member_file_a_sub_project_may_not_hold_is_said_with_what_to_fix(tmp_path):
    """A member's whole-project file from an earlier `runner init` typed in it: kept, and the fix said at once."""
    root = tree(
        tmp_path / "k",
        {
            "pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n',
            **_python_member("a"),
            **_python_member("b"),
            "packages/b/intents.toml": '[project]\nname = "b"\ndefault = "check"\n\n[intent.check]\nrun = "true"\n',
        },
    )
    said = _ok(runner(root, "init")).splitlines()
    assert said[3:] == [
        "  packages/b/: has an intents.toml already, kept as it is; packages/b:check in all",
        "warning: `runner validate` finds problems to fix by hand:",
        "error: 1 problem in the spec",
        "  packages/b/intents.toml:2: project.name: a sub-project's [project] holds only 'default'; 'name' is the "
        "root's (intents.toml) to set",
    ]


def test_init_typed_in_a_member_before_the_root_says_where_the_workspace_is(tmp_path):
    root = tree(
        tmp_path / "uvw",
        {"pyproject.toml": '[tool.uv.workspace]\nmembers = ["packages/*"]\n', **_python_member("alpha")},
    )
    said = _ok(runner(root / "packages/alpha", "init", "--dry-run")).splitlines()
    assert (
        "note: this folder is a member of the workspace at ../.. (pyproject.toml [tool.uv.workspace]): `runner init` "
        "typed there writes its intents.toml, with `include`, and makes each member a sub-project; this file is a "
        "whole project's, so once a root includes this folder, keep only `default` in its [project]"
    ) in said
    alone = tree(tmp_path / "alone", _python_member("beta"))  # no workspace above: nothing said
    assert "note:" not in _ok(runner(alone / "packages/beta", "init", "--dry-run"))


def test_a_member_s_dependencies_installed_at_the_workspace_s_root_are_found(tmp_path):
    member = {"name": "a", "scripts": {"test": "node --test"}, "dependencies": {"left-pad": "^1.3.0"}}
    files = {
        "package.json": json.dumps({"name": "web", "private": True, "workspaces": ["packages/*"]}),
        "packages/a/package.json": json.dumps(member),
    }
    root = tree(tmp_path / "web", files)
    said = _ok(runner(root, "init", "--dry-run")).splitlines()
    assert (
        "warning: package.json's dependencies are not installed here (no node_modules): run `npm install` (at the "
        "workspace's root, for a workspace) first (in packages/a/)"
    ) in said
    (root / "node_modules/left-pad").mkdir(parents=True)  # where `npm install` at the root puts them
    assert "no node_modules" not in _ok(runner(root, "init", "--dry-run"))


@pytest.mark.toolchain
def test_a_virtual_cargo_workspace_s_crates_build_and_test_from_the_root(tmp_path):
    need_tools("cargo", how="install Rust (rustup or apt-get install -y cargo)")
    files = {"Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n'}
    for crate in ("core", "util"):
        files[f"crates/{crate}/Cargo.toml"] = f'[package]\nname = "{crate}"\nversion = "0.1.0"\nedition = "2021"\n'
        files[f"crates/{crate}/src/lib.rs"] = (
            "pub fn one() -> i32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one() {\n"
            "        assert_eq!(super::one(), 1);\n    }\n}\n"
        )
    root = tree(tmp_path / "rs", files)
    obj = json.loads(_ok(runner(root, "init", "--json")))
    assert obj["intents"] == ["all"] and obj["workspace"]["include"] == ["crates/*"]
    made = runner(root, "make", "crates/core:test", "crates/util:test")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "2 ran" in made.stdout + made.stderr


def test_a_member_s_lint_says_the_root_configures_it(tmp_path):
    """opentelemetry-python: ruff is configured in the root's pyproject.toml alone; a member's lint said the linter
    ran with its defaults, though ruff finds the root's configuration from the member's folder."""
    pyproject = '[tool.uv.workspace]\nmembers = ["packages/*"]\n\n[tool.ruff]\nline-length = 100\n'
    root = tree(tmp_path / "uvw", {"pyproject.toml": pyproject, **_python_member("alpha")})
    obj = json.loads(_ok(runner(root, "init", "--json")))
    text = obj["workspace"]["members"][0]["content"]
    assert (
        "# lint: no lint configuration in this folder; the root has one (pyproject.toml has tool.ruff), which a "
        "linter that\n# looks in the folders above finds; an edit of it does not re-run this step (a sub-project's\n"
        "# inputs stay in its folder)\n[intent.lint]\n"
    ) in text
    assert "(no lint configuration in this folder; the root's: pyproject.toml has tool.ruff)" in text
