"""A workspace whose members read each other's sources (issue 41): a Python library whose tests import a second
library's sources, as every Python/npm/Cargo workspace links its members (an editable install; here PYTHONPATH).
The reader declares the files it reads of its dependency, which must be the dependency's own declared inputs:
an edit there runs the reader again, from the root and from its folder, and `--affected` and `explain` say so; a
file the dependency does not declare is never the reader's; a reader glob wider than what the dependency declares,
or reaching what it leaves out, or through a link out of its folder, is exit 2 by file and TOML path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import runner_cli

PY = sys.executable
ROOT = '[project]\nname = "ws"\ninclude = ["libs/*"]\n'
API = f"""
[intent.test]
run = "PYTHONPATH=src {PY} -m unittest discover -q -s tests"
inputs = ["src/**/*.py", "tests/*.py"]
"""
SDK = f"""
[intent.test]
run = "PYTHONPATH=src:../api/src {PY} -m unittest discover -q -s tests"
deps = ["libs/api:test"]
inputs = ["src/**/*.py", "tests/*.py", "../api/src/**/*.py"]
"""
GREET = 'SIGN = "!"\n\n\ndef greet(name):\n    return f"hello {name}"\n'
FILES = {
    "intents.toml": ROOT,
    ".gitignore": ".runner/\n__pycache__/\n",
    "libs/api/intents.toml": API,
    "libs/api/NOTES.md": "notes\n",
    "libs/api/src/api/__init__.py": GREET,
    "libs/api/tests/test_api.py": "import unittest\n\nimport api\n\n\nclass T(unittest.TestCase):\n"
    "    def test_greet(self):\n        self.assertEqual(api.greet('a'), 'hello a')\n",
    "libs/sdk/intents.toml": SDK,
    "libs/sdk/src/sdk/__init__.py": "import api\n\n\ndef welcome(name):\n    return api.greet(name) + api.SIGN\n",
    "libs/sdk/tests/test_sdk.py": "import unittest\n\nimport sdk\n\n\nclass T(unittest.TestCase):\n"
    "    def test_welcome(self):\n        self.assertEqual(sdk.welcome('a'), 'hello a!')\n",
}


def _git(root, *args: str) -> str:
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    return subprocess.run(["git", *who, *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def _workspace(project) -> None:
    for rel, text in FILES.items():
        project.write(rel, text)


def _made(project, where: str = "", *args: str) -> tuple[int, dict[str, str]]:
    proc = runner_cli.run(("make", "--json", *args), project.root / where, dict(os.environ), 120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, {e["intent"]: e["status"] for e in events if e["event"] == "step_finished"}


def test_an_edit_of_a_dependency_s_source_runs_the_reader_s_tests_again(project):
    _workspace(project)
    _git(project.root, "init", "-q", "-b", "main")
    _git(project.root, "add", "-A")
    _git(project.root, "commit", "-q", "-m", "base")
    assert _made(project) == (0, {"libs/api:test": "ran", "libs/sdk:test": "ran"})
    assert _made(project) == (0, {"libs/api:test": "cached", "libs/sdk:test": "cached"})
    # the library's source changed: the reader's key holds it, as its own declared input
    project.write("libs/api/src/api/__init__.py", GREET + "# edited\n")
    affected = project.run("status", "--affected", "main")
    assert affected.out.splitlines()[:2] == [
        "in    libs/api:test  input changed: libs/api/src/api/__init__.py",
        "in    libs/sdk:test  input changed: libs/api/src/api/__init__.py; depends on libs/api:test, affected",
    ]
    explained = json.loads(project.run("explain", "libs/sdk:test", "--json").out)
    assert explained["action"] == "run"
    assert sorted(explained["ingredients"]["inputs"]) == [
        "libs/api/src/api/__init__.py",
        "libs/sdk/src/sdk/__init__.py",
        "libs/sdk/tests/test_sdk.py",
    ]
    assert _made(project, "libs/sdk") == (0, {"libs/api:test": "ran", "libs/sdk:test": "ran"})  # from its folder
    project.write("libs/api/src/api/__init__.py", GREET + "# edited again\n")
    assert _made(project) == (0, {"libs/api:test": "ran", "libs/sdk:test": "ran"})  # from the root
    # the reader's tests run the library's code as it now is: an edit that breaks them (not its own) fails them
    project.write("libs/api/src/api/__init__.py", GREET.replace('"!"', '"?"'))
    assert _made(project, "libs/sdk") == (1, {"libs/api:test": "ran", "libs/sdk:test": "failed"})
    project.write("libs/api/src/api/__init__.py", GREET)  # back as the first run read it: its records hold
    assert _made(project) == (0, {"libs/api:test": "cached", "libs/sdk:test": "cached"})
    # what the library does not declare, or declares only for its own step, is not the reader's
    project.write("libs/api/NOTES.md", "more notes\n")
    assert _made(project, "libs/sdk") == (0, {"libs/api:test": "cached", "libs/sdk:test": "cached"})
    said = project.run("status", "--affected", "main")
    assert said.out.splitlines()[:2] == [
        "out   libs/api:test  nothing it reads changed since main",
        "out   libs/sdk:test  nothing it reads changed since main",
    ]
    project.write("libs/api/tests/test_api.py", FILES["libs/api/tests/test_api.py"] + "# edited\n")
    assert _made(project) == (0, {"libs/api:test": "ran", "libs/sdk:test": "cached"})


def _refused(project, command: str = "validate") -> list[str]:
    result = project.run(command)
    assert (result.code, result.out) == (2, "")
    return result.err.splitlines()


def test_a_reader_glob_wider_than_what_the_dependency_declares_is_refused(project):
    _workspace(project)
    project.write("libs/sdk/intents.toml", SDK.replace("../api/src/**/*.py", "../api/**/*.py"))
    assert _refused(project) == [
        "error: 1 problem in the spec",
        "  libs/sdk/intents.toml:5: intent.test.inputs[2]: path '../api/**/*.py' leaves libs/sdk/ and names more "
        "than the intents 'test' depends on declare there (libs/api:test reads '../api/src/**/*.py', "
        "'../api/tests/*.py'): narrow it to what they declare, or add the intent that makes or reads the rest to "
        "deps",
    ]
    # without the dependency: nothing declares it
    project.write("libs/sdk/intents.toml", SDK.replace('deps = ["libs/api:test"]\n', ""))
    assert _refused(project)[1:] == [
        "  libs/sdk/intents.toml:4: intent.test.inputs[2]: path '../api/src/**/*.py' leaves libs/sdk/ and is no "
        "declared input or output of an intent 'test' depends on: a sub-project reads another's files only as the "
        "declared inputs or outputs of an intent in its deps; add the intent that makes or reads it to deps",
    ]
    # a file the dependency declares, named by itself, is read as before
    project.write("libs/sdk/intents.toml", SDK.replace("../api/src/**/*.py", "../api/src/api/__init__.py"))
    assert project.run("validate").code == 0


def test_what_the_dependency_leaves_out_the_reader_leaves_out_too(project):
    _workspace(project)
    assert _made(project)[0] == 0  # compiled: an edit of one intent's table alone is compiled again in place
    project.write("libs/api/intents.toml", API + 'exclude = ["src/**/_generated.py"]\n')
    assert _refused(project, "make")[1:] == [
        "  libs/sdk/intents.toml:5: intent.test.inputs[2]: path '../api/src/**/*.py' leaves libs/sdk/ and reads "
        "what libs/api:test leaves out of its inputs ('../api/src/**/_generated.py'): exclude "
        "'../api/src/**/_generated.py' here too, or add the intent that makes or reads it to deps",
    ]
    literal = SDK.replace("../api/src/**/*.py", "../api/src/api/_generated.py")  # named: an exclude keeps it
    project.write("libs/sdk/intents.toml", literal + 'exclude = ["../api/src/**/_generated.py"]\n')
    assert _refused(project)[1:] == [
        "  libs/sdk/intents.toml:5: intent.test.inputs[2]: path '../api/src/api/_generated.py' leaves libs/sdk/ and "
        "reads what libs/api:test leaves out of its inputs ('../api/src/**/_generated.py'): remove it, or add the "
        "intent that makes or reads it to deps",
    ]
    project.write("libs/sdk/intents.toml", SDK + 'exclude = ["../api/src/**/_generated.py"]\n')
    assert project.run("validate").code == 0
    project.write("libs/api/src/api/_generated.py", "X = 1\n")
    assert _made(project) == (0, {"libs/api:test": "ran", "libs/sdk:test": "ran"})  # each one's exclude is in its key
    project.write("libs/api/src/api/_generated.py", "X = 2\n")  # neither one's input
    assert _made(project) == (0, {"libs/api:test": "cached", "libs/sdk:test": "cached"})


def test_a_dependency_s_input_through_a_link_out_of_its_folder_is_not_the_reader_s(project):
    """The library's sources are a link to a folder of a third sub-project's: what the library declares is not
    in its folder, and the reader may not read it through the library."""
    _workspace(project)
    project.write("libs/secret/intents.toml", '[intent.x]\nrun = "true"\n')
    project.write("libs/secret/api/__init__.py", GREET)
    os.rename(project.root / "libs/api/src", project.root / "src-was")
    os.symlink("../secret", project.root / "libs/api/src")
    secret = os.path.realpath(project.root / "libs/secret")
    assert _refused(project)[1:] == [
        "  libs/sdk/intents.toml:5: intent.test.inputs[2]: path '../api/src/**/*.py' leaves libs/sdk/ and leads "
        f"outside libs/api/ once links are followed (to {secret}): a sub-project reads another's files only where "
        "they lie (remove the link)",
    ]
    # a link below the folder the glob names, which its expansion would follow: the same
    os.unlink(project.root / "libs/api/src")
    os.rename(project.root / "src-was", project.root / "libs/api/src")
    os.symlink("../../secret/api", project.root / "libs/api/src/more")
    assert _refused(project)[1:] == [
        "  libs/sdk/intents.toml:5: intent.test.inputs[2]: path '../api/src/**/*.py' leaves libs/sdk/ and goes "
        f"through 'libs/api/src/more', which leads outside libs/api/ once links are followed (to {secret}/api): a "
        "sub-project reads another's files only where they lie (remove the link)",
    ]
    # a link that stays in the library's folder, or one the glob's expansion never follows (out of its reach, in
    # what git ignores, in what the reader excludes, as the library excludes it), is no way out
    os.unlink(project.root / "libs/api/src/more")
    os.symlink("api", project.root / "libs/api/src/alias")
    os.symlink("../secret", project.root / "libs/api/elsewhere")
    project.write(".gitignore", FILES[".gitignore"] + "node_modules/\n")
    (project.root / "libs/api/src/node_modules").mkdir()
    os.symlink("../../../secret/api", project.root / "libs/api/src/node_modules/api")
    (project.root / "libs/api/src/vendor").mkdir()
    os.symlink("../../../secret/api", project.root / "libs/api/src/vendor/api")
    project.write("libs/api/intents.toml", API + 'exclude = ["src/vendor/**"]\n')
    project.write("libs/sdk/intents.toml", SDK + 'exclude = ["../api/src/vendor/**"]\n')
    assert project.run("validate").code == 0


@pytest.mark.parametrize("below", [False, True], ids=["the-folder-named", "a-folder-below-it"])
def test_a_link_made_since_the_spec_was_checked_fails_the_reader_before_it_starts(project, below):
    """The spec was checked and compiled with the library's sources in its folder; a link swapped in since (no spec
    file changed, so nothing compiles again) takes them into a third sub-project, as the folder the glob names or
    one below it that the glob's expansion follows: the reader's step fails before it starts, as one whose output
    leads out of its folder does. The library's own step reads its own inputs as before."""
    _workspace(project)
    project.write("libs/secret/intents.toml", '[intent.x]\nrun = "true"\n')
    project.write("libs/secret/api/__init__.py", GREET + "# the secret's\n")
    project.age_all()  # the spec files' stats vouch for them: the compiled spec is used as it is, not made again
    assert _made(project, "", "libs/sdk:test") == (0, {"libs/api:test": "ran", "libs/sdk:test": "ran"})
    secret = os.path.realpath(project.root / "libs/secret")
    if below:
        os.rename(project.root / "libs/api/src/api", project.root / "api-was")
        os.symlink("../../secret/api", project.root / "libs/api/src/api")
        why = (
            f"goes through 'libs/api/src/api', which leads outside libs/api/ once links are followed (to {secret}/api)"
        )
    else:
        os.rename(project.root / "libs/api/src", project.root / "src-was")
        os.symlink("../secret", project.root / "libs/api/src")
        why = f"leads outside libs/api/ once links are followed (to {secret})"
    proc = runner_cli.run(("make", "--json", "-k", "libs/sdk:test"), project.root, dict(os.environ), 120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    finished = {e["intent"]: e for e in events if e["event"] == "step_finished"}
    assert (proc.returncode, finished["libs/api:test"]["status"]) == (1, "ran")
    assert finished["libs/sdk:test"]["status"] == "failed"
    assert finished["libs/sdk:test"]["error"] == (
        f"input 'libs/api/src/**/*.py' {why}: a step of libs/sdk/ reads another's files only where they lie "
        "(remove the link)"
    )


def test_the_root_s_files_are_read_through_a_root_intent_that_declares_them(project):
    """Test helpers at the root that every member's tests import (opentelemetry-python's tests/*-test-utils): a
    root intent declares them, and a member reads them through `:NAME` in its deps."""
    _workspace(project)
    project.write("intents.toml", ROOT + '\n[intent.helpers]\nrun = "true"\ninputs = ["testing/**/*.py"]\n')
    project.write("testing/helpers/__init__.py", "WHO = 'a'\n")
    sdk = SDK.replace('"libs/api:test"]', '"libs/api:test", ":helpers"]').replace(
        '"../api/src/**/*.py"]', '"../api/src/**/*.py", "../../testing/**/*.py"]'
    )
    project.write("libs/sdk/intents.toml", sdk)
    assert _made(project, "libs/sdk") == (0, {"libs/api:test": "ran", "helpers": "ran", "libs/sdk:test": "ran"})
    project.write("testing/helpers/__init__.py", "WHO = 'b'\n")
    assert _made(project, "libs/sdk") == (0, {"libs/api:test": "cached", "helpers": "ran", "libs/sdk:test": "ran"})
    project.write("libs/sdk/intents.toml", sdk.replace("../../testing/**/*.py", "../../**/*.py"))
    assert _refused(project)[1:] == [
        "  libs/sdk/intents.toml:5: intent.test.inputs[3]: path '../../**/*.py' leaves libs/sdk/ and names more "
        "than the intents 'test' depends on declare there (libs/api:test reads '../api/src/**/*.py', "
        "'../api/tests/*.py'; helpers reads '../../testing/**/*.py'): narrow it to what they declare, or add the "
        "intent that makes or reads the rest to deps",
    ]
