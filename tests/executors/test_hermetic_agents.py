"""Agent attempts on hermetic Dask workers (a LocalCluster whose workers do not run in the project): each attempt's
copy is made from the step's manifest, carried by a file:// remote cache; the verified change comes back and is
applied here; the openai worker talks to the fake Responses server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from agent_helpers import PASSING_TEST, AgentProject
from test_dask_agents import _answer, _worker

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"

# the test reads a data file beside the sources: the verify needs it, and only a declaration carries it
READS_DATA = PASSING_TEST + (
    "\n\ndef test_cases():\n"
    "    import pathlib\n"
    "    text = (pathlib.Path(__file__).parents[1] / 'data' / 'cases.txt').read_text()\n"
    "    assert text == '1 3\\n'\n"
)


def _hermetic(agent: AgentProject, shared: Path, verify: str = PYTEST) -> None:
    """A remote cache in the spec, and the verify command `test`."""
    with open(agent.root / "intents.toml", "a") as f:
        f.write(f'\n[cache]\nremote = "{shared.as_uri()}"\n')
    (agent.root / "adapters/local.toml").write_text(f'name = "local"\n[commands.test]\nrun = "{verify}"\n')


def _clone(agent: AgentProject, dest: Path) -> AgentProject:
    """A second checkout of the project's sources: no .runner/, no outputs."""
    clone = AgentProject(dest, agent.home)
    clone.key = agent.key
    for rel in ("intents.toml", "adapters/local.toml", "src/calc.py"):
        shutil.copyfile(agent.root / rel, clone.root / rel)
    return clone


def test_a_hermetic_agent_step_gives_the_local_bytes_and_no_second_model_call(cluster, agent, server, tmp_path):
    address, workers = cluster
    srv = server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])
    here = AgentProject(tmp_path / "here", agent.home)
    here.key = agent.key
    for project in (here, agent):
        project.spec(_worker(srv))
    (agent.root / "src/unused.txt").write_text("not declared\n")
    # the verify notes where it runs and what it finds there (cheap: pytest runs in the slow test below)
    note = f"pwd > {agent.home}/where.txt; find . -type f | sort > {agent.home}/seen.txt; test -s tests/test_calc.py"
    _hermetic(agent, tmp_path / "shared", note)
    local = here.make("tests")
    assert local.code == 0, local.err
    assert len(srv.requests()) == 1

    remote = agent.make("tests", "--executor", address, "--hermetic")
    assert remote.code == 0, remote.err
    step = remote.step("tests")
    assert step["status"] == "ran" and step["worker"] in workers
    assert (agent.root / "tests/test_calc.py").read_bytes() == (here.root / "tests/test_calc.py").read_bytes()
    # the verify ran outside the project, in a copy of what the step declared and what the agent wrote
    where = (agent.home / "where.txt").read_text().strip()
    assert "runner-tests-" in where and not where.startswith(str(agent.root))
    assert (agent.home / "seen.txt").read_text() == "./src/calc.py\n./tests/test_calc.py\n"
    assert not Path(where).exists()  # the attempt's copy and the scratch folder are gone
    assert len(srv.requests()) == 2
    assert not agent.leaks()

    again = agent.make("tests", "--executor", address, "--hermetic")
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    clone = _clone(agent, tmp_path / "clone")
    second = clone.make("tests", "--executor", address, "--hermetic")
    assert second.code == 0, second.err
    assert second.step("tests")["status"] in ("cached", "restored")
    assert (clone.root / "tests/test_calc.py").read_bytes() == (here.root / "tests/test_calc.py").read_bytes()
    assert len(srv.requests()) == 2  # neither the no-op nor the second checkout asked the model


# the pytest verify finds the file through an absolute path in the attempt's copy (two runs of it: ~12 s)
@pytest.mark.parametrize("verify", ["cat", pytest.param("pytest", marks=pytest.mark.slow)])
def test_a_verify_that_needs_an_undeclared_file_fails_naming_it(cluster, agent, server, tmp_path, verify):
    address, workers = cluster
    srv = server([{"steps": [{"message": _answer({"tests/test_calc.py": READS_DATA})}]}])
    agent.spec(_worker(srv))
    (agent.root / "data").mkdir()
    (agent.root / "data/cases.txt").write_text("1 3\n")
    # cat reads the file itself, relative to the copy's root; pytest's test opens it by an absolute path there
    _hermetic(agent, tmp_path / "shared", "cat data/cases.txt" if verify == "cat" else PYTEST)
    result = agent.make("tests", "--executor", address, "--hermetic")
    assert result.code == 1
    step = result.step("tests")
    assert step["error"] == (
        "the verification of step tests read 'data/cases.txt', which is not among its inputs: add it to inputs "
        "(hermetic steps see only what they declare)"
    )
    [finished] = [e for e in result.events() if e["event"] == "attempt_finished"]  # no retry: it cannot declare
    assert finished["kind"] == "config" and finished["worker"] in workers
    assert len(srv.requests()) == 1
    assert not (agent.root / "tests/test_calc.py").exists()

    # declared, it passes there
    spec = (agent.root / "intents.toml").read_text()
    (agent.root / "intents.toml").write_text(
        spec.replace('inputs = ["src/calc.py"]', 'inputs = ["src/calc.py", "data/*"]')
    )
    fixed = agent.make("tests", "--executor", address, "--hermetic")
    assert fixed.code == 0, fixed.err
    assert (agent.root / "tests/test_calc.py").read_text() == READS_DATA


def test_a_change_outside_its_scope_is_refused_on_a_hermetic_worker(cluster, agent, server, tmp_path):
    address, _workers = cluster
    answer = _answer({"tests/test_calc.py": PASSING_TEST, "src/calc.py": "broken = True\n"})
    agent.spec(_worker(server([{"steps": [{"message": answer}]}])))
    _hermetic(agent, tmp_path / "shared")
    before = agent.files()
    result = agent.make("tests", "--executor", address, "--hermetic")
    assert result.code == 1
    assert result.step("tests")["error"] == (
        "refused: src/calc.py: outside the scope of policy 'default' and the intent's outputs (tests/test_calc.py)"
    )
    assert agent.files() == before


SHELL_STEP = (
    '\n[intent.upper]\nrun = "tr a-z A-Z < src/calc.py > upper.txt"\ninputs = ["src/calc.py"]\n'
    'outputs = ["upper.txt"]\n'
)


def test_a_shell_target_runs_hermetically_beside_an_agent_step_only_a_selected_replay_step_is_refused(
    cluster, agent, tmp_path
):
    address, workers = cluster
    agent.spec("")
    with open(agent.root / "intents.toml", "a") as f:
        f.write(SHELL_STEP)
    _hermetic(agent, tmp_path / "shared")
    # the replay worker cannot run there (its recordings are the project's): refused, but only when selected
    shell = agent.make("upper", "--executor", address, "--hermetic", "--worker", "replay")
    assert shell.code == 0, shell.err
    assert shell.step("upper")["status"] == "ran" and shell.step("upper")["worker"] in workers
    assert (agent.root / "upper.txt").read_text() == (agent.root / "src/calc.py").read_text().upper()

    refused = agent.run("make", "tests", "--executor", address, "--hermetic", "--worker", "replay")
    assert (refused.code, refused.err) == (
        2,
        "error: agent steps (tests) use the replay worker, which reads its recordings from the project's replays/ "
        "folder, which hermetic workers do not have: give [worker] replays_dir as an absolute path the workers "
        "mount, run without --hermetic (a shared filesystem) or with --executor local\n",
    )
    assert not (agent.root / "tests/test_calc.py").exists()


def test_a_dependency_output_reaches_the_attempt_undeclared_as_an_input(cluster, agent, server, tmp_path):
    address, _workers = cluster
    srv = server([{"steps": [{"message": _answer({"tests/test_calc.py": PASSING_TEST})}]}])
    agent.spec(_worker(srv), intent_extra='deps = ["cases"]')
    with open(agent.root / "intents.toml", "a") as f:
        f.write('\n[intent.cases]\nrun = "mkdir -p data && echo 1 3 > data/cases.txt"\noutputs = ["data/cases.txt"]\n')
    _hermetic(agent, tmp_path / "shared", "cat data/cases.txt")
    result = agent.make("tests", "--executor", address, "--hermetic")
    assert result.code == 0, result.err
    assert result.step("cases")["status"] == "ran" and result.step("tests")["status"] == "ran"
    attempt = agent.root / ".runner/runs" / result.events()[0]["run_id"] / "attempts/tests/c1-a1"
    assert "1 3" in (attempt / "verify.log").read_text()  # the worker's copy held the dependency's output
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST


def test_a_sub_projects_own_regexes_read_its_verify_output_on_a_hermetic_worker(cluster, agent, server, tmp_path):
    """The root's regexes/ and the sub-project's own travel with the attempt: its retry prompt says what a family
    only the sub-project has found in the verify's output on the worker."""
    address, _workers = cluster
    bad, good = (
        _answer({"svc/tests/test_calc.py": "# BAD\n" + PASSING_TEST}),
        _answer({"svc/tests/test_calc.py": PASSING_TEST}),
    )
    srv = server([
        {"match": "What the last attempt got wrong", "steps": [{"message": good}]},
        {"steps": [{"message": bad}, {"message": good}]},
    ])  # fmt: skip
    agent.spec(_worker(srv))
    head, intent = (agent.root / "intents.toml").read_text().split("[intent.tests]")
    head = head.replace("[project]\n", '[project]\ninclude = ["svc"]\n')
    (agent.root / "intents.toml").write_text(f'{head}\n[cache]\nremote = "{(tmp_path / "shared").as_uri()}"\n')
    svc = agent.root / "svc"
    for folder in ("adapters", "regexes", "src"):
        (svc / folder).mkdir(parents=True)
    (svc / "intents.toml").write_text("[intent.tests]" + intent)
    (svc / "src/calc.py").write_text((agent.root / "src/calc.py").read_text())
    (svc / "regexes/widgets.toml").write_text(
        'family = "widgets"\n[[pattern]]\nname = "widget"\nregex = \'WIDGET-FAIL: (?P<what>.+)\'\n'
        'fields = ["what"]\nkind = "cause"\ncause = "the widget failed: {what}"\n'
    )
    (agent.root / "regexes").mkdir()
    (agent.root / "regexes/unused.toml").write_text('family = "unused"\n')  # the root's travel too
    (svc / "adapters/local.toml").write_text(
        'name = "local"\n[commands.test]\n'
        "run = \"if grep -q BAD tests/test_calc.py; then echo 'WIDGET-FAIL: gear stuck'; exit 1; fi\"\n"
        'parse = ["widgets"]\n'
    )
    result = agent.make("svc:tests", "--executor", address, "--hermetic")
    assert result.code == 0, result.err
    assert result.step("svc:tests")["status"] == "ran"
    assert (svc / "tests/test_calc.py").read_text() == PASSING_TEST
    first, second = srv.requests()
    assert "Cause: the widget failed: gear stuck" in json.dumps(second) and "WIDGET" not in json.dumps(first)
