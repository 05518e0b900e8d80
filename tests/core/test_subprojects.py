"""Sub-projects (issue 41): the spec errors a person can act on (exit 2, by file and line), a sub-project's reach
kept to its folder and its dependencies' declared files, qualified names typed anywhere, names that cannot escape or
collide under .runner/, and the compiled spec noticing every sub-project file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import runner_cli

from runner.names import stored, unstored

ROOT = """
[project]
name = "mono"
include = ["a", "b", "nothing/*"]

[intent.top]
deps = ["test"]

[intent.claim]
run = "true"
outputs = ["b/out.txt"]
"""
A = """
[project]
default = "test"
name = "x"

[cache]
remote = "file:///tmp/x"

[intent.test]
run = "true"
outputs = ["out.txt"]
deps = ["b:test", "bild"]

[intent.w]
run = "true"
outputs = ["../b/out.txt", "../../x"]
inputs = ["../c/y.txt"]
cwd = ".."
"""
B = """
[intent.test]
run = "true"
deps = ["a:test"]
outputs = ["out.txt"]
"""


def test_every_spec_error_by_file_and_line(project):
    project.spec(ROOT)
    project.write("a/intents.toml", A)
    project.write("b/intents.toml", B)
    project.write("nothing/.keep", "")
    for args in (("validate",), ("make",), ("list",)):
        result = project.run(*args)
        assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        "error: 11 problems in the spec",
        "  intents.toml:4: project.include[2]: 'nothing/*' matches no folder holding an intents.toml; create one "
        "there, or remove the pattern",
        "  intents.toml:7: intent.top.deps[0]: 'test' is an intent of 2 sub-projects (a:test, b:test) and not of the "
        "root: name the one meant",
        "  a/intents.toml:4: project.name: a sub-project's [project] holds only 'default'; 'name' is the root's "
        "(intents.toml) to set",
        "  a/intents.toml:6: cache: [cache] is set once for the whole repository, in the root's intents.toml; "
        "remove it here",
        "  a/intents.toml:12: intent.test.deps[1]: unknown intent 'bild' in a/: a bare name is an intent of this "
        "sub-project; write :NAME for the root's, PATH:NAME for another sub-project's",
        "  a/intents.toml:12: intent.test.deps[0]: dependency cycle: a:test -> b:test -> a:test (each depends on "
        "the next); remove one of these deps",
        "  a/intents.toml:16: intent.w.outputs[0]: path '../b/out.txt' leaves a/: a sub-project declares outputs "
        "inside its own folder",
        "  a/intents.toml:16: intent.w.outputs[1]: path '../../x' leaves a/: a sub-project declares outputs inside "
        "its own folder",
        "  a/intents.toml:17: intent.w.inputs[0]: path '../c/y.txt' leaves a/ and is no declared input or output "
        "of an intent 'w' depends on: a sub-project reads another's files only as the declared inputs or outputs of "
        "an intent in its deps; add the intent that makes or reads it to deps",
        "  a/intents.toml:18: intent.w.cwd: folder '..' leaves a/; keep it inside a/",
        "  b/intents.toml:5: intent.test.outputs[0]: 'b/out.txt' is also an output of intent 'claim': a file has "
        "one producer; remove it from one of them",
    ]


LIB = """
[intent.build]
run = "mkdir -p dist && cp src.txt dist/lib.txt"
inputs = ["src.txt"]
outputs = ["dist/lib.txt"]

[intent.test]
run = "true"
"""
APP = """
[project]
default = "app"

[intent.app]
run = "cat ../lib/dist/lib.txt > app.txt"
deps = ["lib:build"]
inputs = ["../lib/dist/lib.txt"]
outputs = ["app.txt"]

[intent.test]
run = "true"
deps = ["app"]
"""


def _two(project) -> None:
    project.spec(
        '[project]\nname = "two"\ninclude = ["lib", "app"]\ndefault = "all"\n\n[intent.all]\ndeps = ["app:test"]\n'
    )
    project.write("lib/intents.toml", LIB)
    project.write("lib/src.txt", "lib\n")
    project.write("app/intents.toml", APP)


def test_a_dependency_s_output_is_what_a_sub_project_may_read_of_another(project):
    _two(project)
    assert project.make().statuses() == {"lib:build": "ran", "app:app": "ran", "app:test": "ran"}
    assert project.read("app/app.txt") == "lib\n"
    # the same input without the dependency that makes it: refused, by file and line
    project.write("app/intents.toml", APP.replace('deps = ["lib:build"]\n', ""))
    refused = project.run("validate")
    assert (refused.code, refused.err.splitlines()[1:]) == (
        2,
        [
            "  app/intents.toml:7: intent.app.inputs[0]: path '../lib/dist/lib.txt' leaves app/ and is no declared "
            "input or output of an intent 'app' depends on: a sub-project reads another's files only as the declared "
            "inputs or outputs of an intent in its deps; add the intent that makes or reads it to deps"
        ],
    )
    # a sub-project inside another's folder holds its own files: the outer one's paths stay out of it
    project.spec('[project]\nname = "two"\ninclude = ["lib", "lib/inner"]\n')
    project.write("lib/inner/intents.toml", '[intent.x]\nrun = "true"\n')
    project.write("lib/intents.toml", LIB.replace('outputs = ["dist/lib.txt"]', 'outputs = ["inner/lib.txt"]'))
    nested = project.run("validate")
    assert nested.err.splitlines()[1:] == [
        "  lib/intents.toml:5: intent.build.outputs[0]: path 'inner/lib.txt' lies in lib/inner/, a sub-project of "
        "its own: a sub-project declares outputs inside its own folder"
    ]


def test_names_typed_anywhere(project):
    _two(project)
    assert project.make("app:app").statuses() == {"lib:build": "ran", "app:app": "ran"}
    # a bare name at the root: the root's, else the one sub-project intent of that name; two: say which
    assert project.make("build").statuses() == {"lib:build": "cached"}
    both = project.run("make", "test")
    assert (both.code, both.err) == (
        2,
        "error: 'test' is an intent of 2 sub-projects (app:test, lib:test) and not of the root; name the one meant "
        "(PATH:NAME)\n",
    )
    assert project.run("make", "lib:bild").err == (
        "error: unknown target 'lib:bild' (did you mean 'lib:build'?): no intent has that name and none declares it "
        "among its outputs; `runner list` lists the targets\n"
    )
    assert project.run("make", ":al").err == (
        "error: unknown target ':al' (did you mean 'all'?): the root's intents.toml has no intent 'al'; `runner "
        "list` lists the targets\n"
    )
    assert project.run("make", "libz:").err.startswith("error: unknown target 'libz:': 'libz' is no sub-project")
    # an output path typed inside a sub-project is its own; PATH: is a sub-project's default
    assert project.make("lib:dist/lib.txt").statuses() == {"lib:build": "cached"}
    assert project.make("app:").statuses() == {"lib:build": "cached", "app:app": "cached"}
    graph = json.loads(project.run("graph", "--json", "app:test").out)
    assert graph == {
        "target": "app:test",
        "nodes": ["lib:build", "app:app", "app:test"],
        "edges": [["app:app", "app:test"], ["lib:build", "app:app"]],
    }


def test_an_intent_s_name_is_one_file_name_under_runner(project):
    """A '/' or ':' in PATH:NAME neither escapes the run's folder nor makes two intents share a log."""
    assert [stored(n) for n in ("test", "a/b:c", "a%2Fb:c", "a:b%3Ac")] == [
        "test",
        "a%2Fb%3Ac",
        "a%252Fb%3Ac",
        "a%3Ab%253Ac",
    ]
    assert all(unstored(stored(n)) == n for n in ("a/b:c", "a%2Fb:c", "x/../y:z"))
    project.spec('[project]\nname = "n"\ninclude = ["a/*", "a%2Fb"]\n')
    project.write("a/b/intents.toml", '[intent.c]\nrun = "echo from a/b"\n')
    project.write("a%2Fb/intents.toml", '[intent.c]\nrun = "echo from a%2Fb"\n')
    made = project.make()
    assert made.statuses() == {"a%2Fb:c": "ran", "a/b:c": "ran"}
    logs = project.root / ".runner/runs" / made.finished()["run_id"] / "logs"
    assert sorted(p.name for p in logs.rglob("*")) == ["a%252Fb%3Ac.log", "a%2Fb%3Ac.log"]
    assert (logs / "a%2Fb%3Ac.log").read_text() == "$ echo from a/b\nfrom a/b\n"
    logged = project.run("log", "a/b:c")  # its last log
    assert logged.out == "$ echo from a/b\nfrom a/b\n"
    inside = runner_cli.run(("log", "c"), project.root / "a/b", dict(os.environ), 60)  # typed in its folder
    assert inside.stdout == logged.out


def test_the_compiled_spec_notices_every_sub_project_file(project):
    _two(project)
    assert project.make().code == 0
    # a new folder the include pattern takes in
    project.spec('[project]\nname = "two"\ninclude = ["lib", "app", "more/*"]\n\n[intent.all]\ndeps = ["app:test"]\n')
    project.write("more/m/intents.toml", '[intent.m]\nrun = "true"\n')
    assert "more/m:m" in project.run("list").out
    project.write("more/n/intents.toml", '[intent.n]\nrun = "true"\n')
    assert "more/n:n" in project.run("list").out
    # a sub-project's table edited: that step runs again, by its key
    project.write("lib/intents.toml", LIB.replace("cp src.txt", "cp -p src.txt"))
    assert project.make("app:app").statuses() == {"lib:build": "ran", "app:app": "cached"}
    # its own adapter, found once made
    project.write("lib/adapters/sh.toml", 'name = "sh"\n[commands.check]\nrun = "echo checked"\n')
    project.write("lib/intents.toml", LIB + '\n[intent.check]\nadapter = "sh"\nrun = "check"\n')
    assert project.make("lib:check").statuses() == {"lib:check": "ran"}


def test_completion_inside_a_sub_project_offers_its_own_names_first(project):
    _two(project)
    env = {"_RUNNER_COMPLETE": "bash_complete", "COMP_WORDS": "runner make ", "COMP_CWORD": "2"}
    proc = runner_cli.run((), project.root / "app", dict(os.environ, **env), 60)
    assert [line.split(",", 1)[1] for line in proc.stdout.splitlines()] == [
        "app",
        "test",
        "all",
        "app:app",
        "app:test",
        "lib:build",
        "lib:test",
    ]


def test_a_sub_project_s_own_policy_and_worker(project):
    _two(project)
    project.write(
        "lib/intents.toml",
        LIB + '\n[policy.mine]\nscope = ["gen/**", "../app/x"]\n\n[intent.fix]\ngoal = "g"\noutputs = ["gen/a.py"]\n'
        'policy = "mine"\n',
    )
    refused = project.run("validate")
    assert (refused.code, refused.err.splitlines()[1:]) == (
        2,
        ["  lib/intents.toml:11: policy.mine.scope[1]: path '../app/x' leaves lib/; keep it inside lib/"],
    )
    mine = '\n[policy.mine]\nscope = ["gen/**"]\nbudget = {attempts = 1}\n'
    worker = '\n[worker]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "RUNNER_TEST_UNSET_KEY"\n'
    fix = '\n[intent.fix]\ngoal = "g"\noutputs = ["gen/a.py"]\npolicy = "mine"\n'
    project.write("lib/intents.toml", LIB + mine + worker + fix)
    # its agent step's budget is its own policy's, its worker its own, each checked and said where it is declared
    status = project.run("status", "lib:fix")
    assert status.code == 2
    assert status.out.splitlines()[2:5] == [
        "agent steps: up to 1 model call (openai worker, model gpt-5.3-codex)",
        "  lib:fix  1 attempt x 1 candidate = 1 call; no token budget (policy lib:mine)",
        "agent set-up (openai worker): NOT READY",
    ]
    assert status.err.splitlines() == [
        "error: the agent set-up is not ready: the openai worker cannot start the agent steps",
        "  lib/intents.toml:17: worker.env_key: key: lib/'s openai worker: the environment variable "
        "RUNNER_TEST_UNSET_KEY is not set: the openai worker sends it to http://127.0.0.1:9/v1 ([worker] env_key "
        "names it)",
    ]


def test_warnings_and_events_speak_of_the_sub_project(project):
    _two(project)
    project.write("lib/intents.toml", LIB + '\n[intent.globbed]\nrun = "true"\ninputs = ["docs/*.md"]\n')
    status = project.run("status", "lib:globbed")
    assert status.err == ("warning: lib/intents.toml:12: intent.globbed.inputs[0]: 'lib/docs/*.md' matches no file\n")
    made = project.make()
    schema = json.loads((Path(__file__).parents[2] / "runner/schemas/events.json").read_text())
    for event in made.events():
        jsonschema.validate(event, schema)
    assert made.finished()["target"] is None and made.statuses()["app:app"] == "ran"
    inside = project.run("make", "--json", "app", "lib:build")
    assert inside.events()[-1]["target"] == ["app", "lib:build"]  # as typed at the root
    jsonschema.validate(inside.events()[-1], schema)


def test_a_link_out_of_a_sub_project_s_folder_is_no_way_out(project):
    """Its outputs and cwd stay in its folder once links are followed: a link to another sub-project's folder is
    refused as '..' is."""
    project.spec('[project]\nname = "l"\ninclude = ["a", "b"]\n')
    project.write(
        "a/intents.toml",
        '[intent.x]\nrun = "true"\noutputs = ["into/b.txt"]\n\n[intent.y]\nrun = "true"\ncwd = "into"\n',
    )
    project.write("b/intents.toml", '[intent.z]\nrun = "true"\n')
    (project.root / "a/into").symlink_to("../b")
    refused = project.run("validate")
    assert (refused.code, refused.err.splitlines()[1:]) == (
        2,
        [
            "  a/intents.toml:3: intent.x.outputs[0]: path 'into/b.txt' leads out of a/ once links are followed: a "
            "sub-project declares outputs inside its own folder",
            "  a/intents.toml:7: intent.y.cwd: folder 'into' leads out of a/ once links are followed; keep it inside "
            "a/",
        ],
    )


def test_a_sub_project_s_junit_report_is_read_from_its_folder(project):
    """`reports` are relative to the step's cwd, which is its sub-project's folder: read there, not one level
    deeper."""
    project.spec('[project]\nname = "r"\ninclude = ["svc"]\n')
    report = (
        '<testsuite name="t" tests="1" failures="1"><testcase classname="c" name="test_sum">'
        '<failure message="expected 3, got 4">boom</failure></testcase></testsuite>'
    )
    project.write("svc/fail.sh", f"cat > report.xml <<'EOF'\n{report}\nEOF\nexit 1\n")
    project.write("svc/intents.toml", '[intent.test]\nrun = "sh fail.sh"\nreports = ["report.xml"]\n')
    failed = project.make()
    assert failed.code == 1
    (step,) = [e for e in failed.events() if e["event"] == "step_finished"]
    assert "test_sum" in json.dumps(step)


def test_a_folder_name_no_record_could_carry_is_refused(project):
    project.spec('[project]\nname = "q"\ninclude = ["*"]\n')
    (project.root / 'we"ird').mkdir(parents=True)
    project.write('we"ird/intents.toml', '[intent.x]\nrun = "true"\n')
    refused = project.run("make")
    assert (refused.code, refused.err) == (
        2,
        "error: 1 problem in the spec\n  intents.toml:3: project.include[0]: 'we\"ird' holds a '\"', a '\\' or a "
        "control character, which no intent's name may: rename the folder\n",
    )
