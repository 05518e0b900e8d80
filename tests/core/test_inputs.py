"""What an intent's inputs read: globs that leave out what git ignores (but declared outputs), `exclude`, a
warning for a glob that matches no file, and `env` values that read the runner's environment.

Driven through the CLI: `runner explain --json` shows the files a step's key holds, `runner make --json` what
ran and why, `validate` and `status` the warnings.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on this machine")


def _inputs(project, intent: str) -> list[str]:
    result = project.cli("explain", "--json", intent)
    assert result.code == 0, result.err
    return sorted(json.loads(result.out)["ingredients"]["inputs"])


def _git(root, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


JS = """
[intent.lint]
run = "cat src/a.js > build/lint.txt"
inputs = ["**/*.js"]
outputs = ["build/lint.txt"]
"""


def _js_project(project, git: bool = True):
    project.spec(JS)
    project.write("src/a.js", "a\n")
    project.write("node_modules/x/b.js", "b\n")
    project.write("node_modules/y/c.js", "c\n")
    project.write(".gitignore", "node_modules/\nbuild/\n")
    (project.root / "build").mkdir()
    if git:
        _git(project.root, "init", "-q")
    return project


# ---- ignored files ----------------------------------------------------------------------------------------


@needs_git
def test_an_input_glob_leaves_out_what_git_ignores(project):
    _js_project(project)
    assert _inputs(project, "lint") == ["src/a.js"]
    assert project.make().statuses() == {"lint": "ran"}
    project.write("node_modules/x/b.js", "changed\n")  # what npm install rewrites is no input
    assert project.make().statuses() == {"lint": "cached"}


def test_gitignore_rules_apply_without_a_git_repository(project):
    _js_project(project, git=False)
    assert _inputs(project, "lint") == ["src/a.js"]


@needs_git
def test_editing_gitignore_so_a_file_is_no_longer_ignored_runs_the_step_again(project):
    _js_project(project)
    assert project.make().statuses() == {"lint": "ran"}
    assert project.make().statuses() == {"lint": "cached"}
    project.write(".gitignore", "node_modules/\n!node_modules/\nnode_modules/y/\nbuild/\n")
    result = project.make()
    steps = [e for e in result.events() if e["event"] == "step_finished"]
    assert steps[0]["status"] == "ran"
    assert steps[0]["reasons"] == ["input node_modules/x/b.js added"]
    assert project.make().statuses() == {"lint": "cached"}
    project.write(".gitignore", "node_modules/\nbuild/\n")  # ignored again: the step's key is the first one's
    assert project.make().statuses() == {"lint": "cached"}


@needs_git
def test_the_expansion_agrees_with_git_on_a_tree_of_ignore_rules(project):
    """git's own answer (`git ls-files --others --exclude-standard`) over nested .gitignore files, negation,
    anchored and folder-only patterns, and .git/info/exclude: `**` reads exactly the files git would add."""
    project.spec('[intent.all]\nrun = "true"\ninputs = ["**"]\n')
    _git(project.root, "init", "-q")
    rules = {
        ".gitignore": "*.log\n!keep.log\n/top.txt\nbuild/\ndoc/*.tmp\n",
        "src/.gitignore": "gen/\n!important.log\n*.bak\n",
        "src/deep/.gitignore": "!x.bak\n",
        ".git/info/exclude": "secret.txt\n",
    }
    for rel, text in rules.items():
        project.write(rel, text)
    for rel in [
        "a.txt", "a.log", "keep.log", "top.txt", "sub/top.txt", "build/out.o", "sub/build/out.o", "build",
        "doc/a.tmp", "doc/b/a.tmp", "src/gen/x.py", "src/important.log", "src/other.log", "src/a.bak",
        "src/deep/x.bak", "src/deep/y.bak", "secret.txt", "sub/secret.txt", "intents2.toml",
    ]:  # fmt: skip
        if not (project.root / rel).exists():
            project.write(rel, rel)
    git = {p for p in _git(project.root, "ls-files", "--others", "--exclude-standard").split("\n") if p}
    visible = {p for p in git if not any(part.startswith(".") for part in p.split("/"))}  # `**` skips hidden
    assert set(_inputs(project, "all")) == visible
    assert "src/deep/x.bak" in visible and "src/important.log" in visible and "sub/top.txt" in visible


@needs_git
def test_a_project_inside_a_repository_follows_the_repository_rules(project):
    top = project.root.parent  # the repository; the project is its folder proj/
    _git(top, "init", "-q")
    (top / ".gitignore").write_text("*.gen.js\n")
    project.spec(JS)
    project.write("src/a.js", "a\n")
    project.write("src/b.gen.js", "generated\n")
    (project.root / "build").mkdir()
    assert _inputs(project, "lint") == ["src/a.js"]


def test_a_path_named_literally_is_read_even_if_ignored(project):
    _js_project(project, git=False)
    project.spec(JS.replace('inputs = ["**/*.js"]', 'inputs = ["**/*.js", "node_modules/x/b.js"]'))
    assert _inputs(project, "lint") == ["node_modules/x/b.js", "src/a.js"]


def test_an_ignored_build_folder_still_hands_declared_outputs_down(project):
    """build/ is ignored, and build/lint.txt is a declared output: the next step's glob reads it, and the
    output itself is cached and restored as any other."""
    _js_project(project, git=False)
    project.spec(
        JS
        + """
        [intent.report]
        run = "cat build/lint.txt > build/report.md"
        inputs = ["build/*.txt"]
        outputs = ["build/report.md"]
        deps = ["lint"]
        """
    )
    project.write("build/stray.txt", "ignored and declared by no one\n")
    assert project.make("report").code == 0
    assert _inputs(project, "report") == ["build/lint.txt"]
    (project.root / "build/report.md").unlink()
    assert project.make("report").statuses() == {"lint": "cached", "report": "restored"}


# ---- exclude -----------------------------------------------------------------------------------------------


def test_exclude_takes_files_out_of_the_input_globs(project):
    project.spec(
        """
        [intent.test]
        run = "true"
        inputs = ["src/**/*.py", "src/fixtures/keep.py"]
        exclude = ["src/fixtures/**", "**/*_pb2.py"]
        """
    )
    for rel in ["src/a.py", "src/api_pb2.py", "src/fixtures/big.py", "src/fixtures/keep.py", "src/x/b.py"]:
        project.write(rel, rel)
    # a literal input is read even if an exclude pattern matches it, as an ignored one is
    assert _inputs(project, "test") == ["src/a.py", "src/fixtures/keep.py", "src/x/b.py"]
    assert project.make().statuses() == {"test": "ran"}
    project.write("src/fixtures/big.py", "edited\n")
    assert project.make().statuses() == {"test": "cached"}


def test_exclude_without_an_input_glob_is_a_located_problem(project):
    project.spec(
        """
        [intent.test]
        run = "true"
        inputs = ["src/a.py"]
        exclude = ["src/b.py"]
        """
    )
    result = project.run("validate")
    assert result.code == 2
    assert result.err.strip() == (
        "error: 1 problem in the spec\n"
        "  intents.toml:5: intent.test.exclude: 'exclude' takes files out of what the input globs expand to, and "
        "this intent has no input glob; remove it, or add a glob to 'inputs'"
    )


# ---- a glob that matches no file ---------------------------------------------------------------------------


EMPTY = """
[intent.docs]
run = "true"
inputs = ["intents.toml", "docs/**/*.md"]

[intent.deps]
run = "cat node_modules/x/b.js > out.txt"
inputs = ["node_modules/**/*.js"]
outputs = ["out.txt"]

[intent.gen]
run = "mkdir -p gen && echo x > gen/a.c"
inputs = ["intents.toml"]
outputs = ["gen/*.c"]

[intent.compile]
run = "cat gen/a.c > a.o"
inputs = ["gen/*.c"]
outputs = ["a.o"]
deps = ["gen"]
"""

WARNINGS = [
    "warning: intents.toml:4: intent.docs.inputs[1]: 'docs/**/*.md' matches no file",
    "warning: intents.toml:8: intent.deps.inputs[0]: 'node_modules/**/*.js' matches no file; git ignores every "
    "file it could match (.gitignore, .git/info/exclude): name a file literally to read it anyway, or declare it "
    "among a step's outputs",
]


def test_a_glob_that_matches_no_file_is_a_warning_in_validate_status_and_make(project):
    """Not for one a step's declared outputs will fill (compile's gen/*.c, before gen has run)."""
    project.spec(EMPTY)
    project.write(".gitignore", "node_modules/\n")
    project.write("node_modules/x/b.js", "b\n")
    validated = project.run("validate")
    assert validated.code == 0
    assert validated.out.strip() == "ok: 4 intents, no problems, 2 warnings"
    assert validated.err.splitlines() == WARNINGS
    assert json.loads(project.run("validate", "--json").out)["warnings"] == WARNINGS
    status = project.run("status")
    assert status.code == 0 and status.err.splitlines() == WARNINGS
    assert json.loads(project.run("status", "--json").out)["warnings"] == WARNINGS
    made = project.make()
    assert made.code == 0 and made.err.splitlines() == WARNINGS
    project.write("docs/guide.md", "# guide\n")
    assert project.run("status").err.splitlines() == WARNINGS[1:]


# ---- env ---------------------------------------------------------------------------------------------------


ENV = """
[intent.greet]
run = "printf '%s|%s|%s' \\"$GREETING\\" \\"$PLAIN\\" \\"$PRICE\\" > out.txt"
inputs = ["intents.toml"]
outputs = ["out.txt"]
env = { GREETING = "hello ${WHO:-world} from $PLACE", PLAIN = "as written", PRICE = "$$5" }
"""


def test_env_values_read_the_runners_environment_and_the_key_holds_them(project):
    project.spec(ENV)
    first = project.make(env={"PLACE": "Paris"})
    assert first.code == 0, first.err
    assert project.read("out.txt") == "hello world from Paris|as written|$5"
    again = project.make(env={"PLACE": "Paris"})
    assert again.events()[0].get("fast") is True, "the warm no-op holds while the variables are the same"
    moved = project.make(env={"PLACE": "Oslo", "WHO": "Ann"})
    finished = [e for e in moved.events() if e["event"] == "step_finished"]
    assert finished[0]["status"] == "ran" and finished[0]["reasons"] == ["a variable its env reads changed"]
    assert project.read("out.txt") == "hello Ann from Oslo|as written|$5"
    back = project.make(env={"PLACE": "Paris"})  # the first key again: its output comes back from the cache
    assert back.statuses() == {"greet": "restored"}
    assert project.read("out.txt") == "hello world from Paris|as written|$5"


def test_explain_shows_env_and_cwd(project):
    project.spec(ENV.replace('outputs = ["out.txt"]', 'outputs = ["sub/out.txt"]\ncwd = "sub"'))
    (project.root / "sub").mkdir()
    result = project.run("explain", "greet", env={"PLACE": "Rome"})
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "  cwd: sub" in lines
    assert "  env: GREETING=hello ${WHO:-world} from $PLACE = hello world from Rome" in lines
    assert "  env: PLAIN=as written" in lines
    assert "  env: PRICE=$$5 = $5" in lines
    data = json.loads(project.run("explain", "--json", "greet", env={"PLACE": "Rome"}).out)
    assert data["cwd"] == "sub"
    assert data["env"]["GREETING"] == {"declared": "hello ${WHO:-world} from $PLACE", "value": "hello world from Rome"}


def test_a_variable_that_is_not_set_stops_the_run_before_anything_runs(project):
    project.spec(ENV)
    result = project.make()
    # nothing ran: no event but the error object (--json), the same words on stderr
    assert result.code == 2 and [e["event"] for e in result.events()] == ["error"]
    assert result.err.strip() == (
        "error: intents.toml:6: intent.greet.env.GREETING: $PLACE is not set in runner's environment; set it, "
        "or give a default (${PLACE:-default}, or ${PLACE:-} for empty)"
    )
    assert not project.exists("out.txt")


def test_a_dollar_that_starts_no_variable_is_a_located_problem(project):
    project.spec(ENV.replace('PRICE = "$$5"', 'PRICE = "$5"'))
    result = project.run("validate")
    assert result.code == 2
    assert result.err.strip() == (
        "error: 1 problem in the spec\n"
        "  intents.toml:6: intent.greet.env.PRICE: '$5' has a '$' that starts no variable: write $NAME, ${NAME} or "
        "${NAME:-default} for a variable of runner's environment, and $$ for a dollar sign"
    )


SECRET = """
[policy.default]
secrets = ["DEPLOY_CREDS"]

[intent.deploy]
run = "echo using $API_TOKEN and $CREDS; printf '%s' \\"$API_TOKEN\\" | sha256sum > token.txt"
inputs = ["intents.toml"]
outputs = ["token.txt"]
env = { API_TOKEN = "$UPSTREAM", CREDS = "$DEPLOY_CREDS" }
"""


def test_a_secret_an_env_value_reads_is_never_written(project):
    """API_TOKEN looks like a key and DEPLOY_CREDS is listed in secrets: their values reach the command, and no
    file under .runner/, no event and no explanation holds them."""
    env = {"UPSTREAM": "tok-1234567890", "DEPLOY_CREDS": "creds-0987654321"}
    project.spec(SECRET)
    made = project.make("-v", env=env)
    assert made.code == 0, made.err
    assert project.read("token.txt").split()[0] == hashlib.sha256(b"tok-1234567890").hexdigest()
    explained = project.run("explain", "--json", "deploy", env=env)
    values = {k: v["value"] for k, v in json.loads(explained.out)["env"].items()}
    assert values == {"API_TOKEN": "[REDACTED:API_TOKEN]", "CREDS": "[REDACTED:DEPLOY_CREDS]"}
    shown = made.out + made.err + explained.out + explained.err
    for path in (project.root / ".runner").rglob("*"):
        if path.is_file():
            shown += path.read_bytes().decode("utf-8", "replace")
    assert "tok-1234567890" not in shown and "creds-0987654321" not in shown
    logs = list((project.root / ".runner" / "runs").rglob("deploy.log"))
    assert logs and "[REDACTED:API_TOKEN] and [REDACTED:DEPLOY_CREDS]" in logs[0].read_text()


def test_a_doubled_dollar_is_a_dollar_sign_even_where_no_variable_is_read(project):
    project.spec(
        """
        [intent.price]
        run = "printf '%s' \\"$PRICE\\" > out.txt"
        inputs = ["intents.toml"]
        outputs = ["out.txt"]
        env = { PRICE = "$$5" }
        """
    )
    assert project.make().code == 0
    assert project.read("out.txt") == "$5"
