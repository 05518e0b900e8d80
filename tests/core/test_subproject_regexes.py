"""A sub-project's own regexes/ (issue 41): a log of one of its steps is read with its folder's families first, then
the root's, then the built-in ones, everywhere a step's log is read (the failure excerpt and findings of
`runner make`, `runner parse` typed in its folder, the key's regex part); the root's steps and another
sub-project's never see them; a broken file there is a spec error naming it."""

from __future__ import annotations

import json

ROOT = """
[project]
name = "mono"
include = ["services/*", "libs/*"]

[intent.check]
run = "sh check.sh"
inputs = ["check.sh"]
"""
SUB = """
[intent.check]
run = "sh check.sh"
inputs = ["check.sh"]

[intent.probe]
run = "sh probe.sh"
inputs = ["probe.sh"]
"""
# `sh check.sh` is read by its tool's own family, `check` (identify.tool_name); `sh probe.sh` by `probe`
CHECK_ROOT = """
family = "check"

[[pattern]]
name = "gear"
regex = 'GEAR (?P<what>\\w+)'
fields = ["what"]
kind = "cause"
cause = "root's gear: {what}"

[[pattern]]
name = "bolt"
regex = 'BOLT (?P<what>\\w+)'
fields = ["what"]
kind = "cause"
cause = "root's bolt: {what}"
"""
CHECK_API = """
family = "check"

[[pattern]]
name = "gear"
regex = 'GEAR (?P<what>\\w+)'
fields = ["what"]
kind = "cause"
cause = "the api's gear: {what}"
"""
PROBE_API = """
family = "probe"

[[pattern]]
name = "probe"
regex = 'PROBE (?P<what>\\w+)'
fields = ["what"]
kind = "cause"
cause = "the api's probe: {what}"
"""


def _mono(project, *, fail: bool = True):
    project.spec(ROOT)
    for folder in ("services/api", "libs/core"):
        project.write(f"{folder}/intents.toml", SUB)
    for folder in ("", "services/api/", "libs/core/"):
        exit_code = 1 if fail else 0
        project.write(f"{folder}check.sh", f"echo 'GEAR stuck'; echo 'BOLT loose'; exit {exit_code}\n")
        project.write(f"{folder}probe.sh", f"echo 'PROBE hot'; exit {exit_code}\n")
    project.write("regexes/check.toml", CHECK_ROOT)
    project.write("services/api/regexes/check.toml", CHECK_API)
    project.write("services/api/regexes/probe.toml", PROBE_API)
    # the root's own `probe` family is not declared: only services/api has one
    project.spec(ROOT + '\n[intent.probe]\nrun = "sh probe.sh"\ninputs = ["probe.sh"]\n')
    return project


def _causes(result) -> dict[str, str | None]:
    return {
        e["intent"]: (e.get("findings") or {}).get("cause")
        for e in result.events()
        if e.get("event") == "step_finished" and e.get("status") == "failed"
    }


def test_a_sub_projects_own_family_and_override_read_its_steps_logs_only(project):
    _mono(project)
    result = project.make("-k")
    assert result.code == 1, result.err
    assert _causes(result) == {
        "check": "root's gear: stuck",  # the root's steps: the root's library
        "probe": None,  # the root has no `probe` family: services/api's is not read for the root's steps
        "services/api:check": "the api's gear: stuck",  # its own `gear` overrides the root's, in place
        "services/api:probe": "the api's probe: hot",  # a family only it has
        "libs/core:check": "root's gear: stuck",  # another sub-project: the root's
        "libs/core:probe": None,
    }
    shown = project.run("make", "-k", "services/api:probe", "probe")
    assert shown.code == 1
    block = shown.err[shown.err.index("FAILED services/api:probe") :].splitlines()
    assert block[1] == "  cause: the api's probe: hot"
    root_block = shown.err[shown.err.index("FAILED probe") :].splitlines()
    assert not any(line.startswith("  cause:") for line in root_block[1:3])


def test_runner_parse_typed_in_a_sub_project_reads_with_its_regexes_first(project, tmp_path):
    _mono(project)
    log = tmp_path / "saved.log"
    log.write_text("GEAR stuck\nBOLT loose\nPROBE hot\n")
    for where, family, cause in (
        ("services/api", "check", "the api's gear: stuck"),
        ("services/api/sub/deeper", "check", "the api's gear: stuck"),  # a folder below it: the same
        (".", "check", "root's gear: stuck"),
        ("libs/core", "check", "root's gear: stuck"),
        ("services/api", "probe", "the api's probe: hot"),
    ):
        (project.root / where).mkdir(parents=True, exist_ok=True)
        result = project.run("-C", where, "parse", "--json", "--family", family, str(log))
        assert (result.code, json.loads(result.out)["cause"]) == (0, cause), (where, result.err)
    # its own adapter, whose command's `parse` names its own family: found and read from its folder
    project.write(
        "services/api/adapters/local.toml", 'name = "local"\n[commands.probe]\nrun = "sh probe.sh"\nparse = ["probe"]\n'
    )
    result = project.run("-C", "services/api", "parse", "--adapter", "local", "--command", "probe", str(log))
    assert result.code == 0, result.err
    assert result.out.splitlines()[:3] == [
        "parsed with probe (adapter local, command probe: sh probe.sh)",
        "summary: no counts reported (run did not finish)",
        "cause: the api's probe: hot",
    ]
    unknown = project.run("parse", "--family", "probe", str(log))
    assert unknown.code == 2
    assert unknown.err.startswith("error: unknown regex family 'probe'")


def _decided(project) -> dict[str, str]:
    result = project.run("status", "--json")
    assert result.code == 0, result.err
    return {s["intent"]: s["action"] for s in json.loads(result.out)["steps"]}


CHANGED = ["regexes changed"]


def _reasons(project) -> dict[str, list[str]]:
    """The steps that would run, with why."""
    result = project.run("status", "--json")
    return {s["intent"]: s["reasons"] for s in json.loads(result.out)["steps"] if s["action"] == "run"}


def test_editing_a_sub_projects_regexes_re_keys_only_its_steps_that_read_them(project):
    _mono(project, fail=False)
    assert project.make().code == 0
    project.age_all()
    assert set(_decided(project).values()) == {"skip"}

    # its override of `gear`: services/api's `check` steps alone (its probe reads another family)
    project.write("services/api/regexes/check.toml", CHECK_API.replace("the api's gear", "the api's own gear"))
    project.age_all()
    assert _reasons(project) == dict.fromkeys(["services/api:check"], CHANGED)
    assert project.make().code == 0
    project.age_all()

    # the root's `gear`, which services/api overrides: the root's and libs/core's steps, not services/api's
    project.write("regexes/check.toml", CHECK_ROOT.replace("root's gear", "the root's gear"))
    project.age_all()
    assert _reasons(project) == dict.fromkeys(("check", "libs/core:check"), CHANGED)
    assert project.make().code == 0
    project.age_all()

    # the root's `bolt`, which every `check` family holds: every `check` step
    edited = CHECK_ROOT.replace("root's gear", "the root's gear").replace("root's bolt", "the root's bolt")
    project.write("regexes/check.toml", edited)
    project.age_all()
    assert _reasons(project) == dict.fromkeys(["check", "libs/core:check", "services/api:check"], CHANGED)
    assert project.make().code == 0
    project.age_all()

    # a new family file in libs/core for its `probe`: its probe step alone
    project.write("libs/core/regexes/probe.toml", PROBE_API)
    project.age_all()
    assert _reasons(project) == dict.fromkeys(["libs/core:probe"], CHANGED)


def test_a_broken_regex_file_in_a_sub_project_is_a_spec_error_naming_it(project):
    _mono(project)
    project.write("services/api/regexes/probe.toml", PROBE_API.replace("PROBE (?P<what>\\w+)", "(a+)+"))
    for args in (("make",), ("status",), ("validate",)):
        result = project.run(*args)
        assert (result.code, result.out) == (2, ""), args
        assert result.err.splitlines()[:2] == [
            "error: 1 problem in the spec",
            "  services/api/regexes/probe.toml:6: pattern[0].regex: pattern 'probe' refused: the group '(a+)+' "
            "repeats without bound a part that itself repeats without bound (star height 2); that backtracks "
            "catastrophically in any backtracking engine (exponential time on a line that almost matches). "
            "Rewrite it without nested repetition, e.g. (\\w+\\s?)+ as [\\w\\s]+",
        ], args


def test_the_learning_loop_mines_a_sub_projects_steps_with_its_own_regexes(project):
    """What services/api's own family reads is no miss of its steps; the root's step that prints the same lines
    has them unexplained (the loop proposes into the root's library only)."""
    from runner.learn.gather import mine
    from runner.learn.mine import FAILURE_UNEXPLAINED

    _mono(project)
    assert project.make("-k", "probe", "services/api:probe").code == 1
    unexplained = {m.step for m in mine(project.root).misses if m.kind == FAILURE_UNEXPLAINED}
    assert unexplained == {"probe"}
