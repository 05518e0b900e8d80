"""A person's edit to an agent step's output is kept as the intent's next version, never written over (issue 35,
point 1), through the real CLI: on the quickstart (served offline by the replay worker) the edit said by
status, make -n and explain, kept by make (history, show, the dependant run), a deletion restoring the person's
version, rollback bringing the agent's back, a kill in the middle of keeping it; a shell step's edited output
still restored; and, against the fake Responses server, an edit together with an input (the step runs from the
edit, never restored over it, unless the cached answer is the edit), an edit of an output edited in place, and
`runner approve` refusing a pending change drafted before the output was edited."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

from agent_helpers import CALC, MINE, PASSING_TEST, Quickstart, make_held_in_verify, verify_that_waits


def _built(tmp_path: Path) -> tuple[Quickstart, bytes]:
    qs = Quickstart(tmp_path)
    result, _steps = qs.make()
    assert result.returncode == 0, result.stderr
    return qs, (qs.root / "tests/test_calc.py").read_bytes()


def test_an_edit_is_kept_as_the_next_version_and_rollback_brings_the_agent_s_back(tmp_path):
    qs, agents = _built(tmp_path)
    test_file = qs.root / "tests/test_calc.py"
    edited = agents + MINE.encode()
    test_file.write_bytes(edited)

    # said before it happens, in the words make will report
    kept = "output tests/test_calc.py edited: keep as version 2"
    assert qs.plan() == {
        "tests": [kept],
        "check": ["input tests/test_calc.py changed", "dependency tests produced new outputs"],
        "all": ["aggregate of 1 step"],
    }
    assert f"skip  tests  {kept}\n" in qs.run("status").stdout
    assert f"skip  tests  {kept}\n" in qs.run("make", "-n").stdout
    assert f"  would skip: {kept}\n" in qs.run("explain", "tests").stdout
    assert json.loads(qs.run("explain", "tests", "--json").stdout)["reasons"] == [kept]
    assert len(qs.history()) == 1 and test_file.read_bytes() == edited  # nothing written by looking

    result, steps = qs.make()
    assert result.returncode == 0, result.stderr
    assert steps["tests"] == {
        "event": "step_finished",
        "intent": "tests",
        "status": "kept",
        "reasons": [kept],
        "version": 2,
    }
    assert steps["check"]["status"] == "ran"  # its dependant saw new outputs
    assert (steps[""]["kept"], steps[""]["ran"], steps[""]["restored"]) == (1, 1, 0)
    assert test_file.read_bytes() == edited
    assert "Ran" in (qs.root / "build/report.txt").read_text()  # the dependant ran on the person's tests
    audit = json.loads(qs.run("audit", "--json").stdout)["figures"]
    assert audit["edits_kept"] == {"value": 1, "previous": None, "trend": None}
    assert audit["cache_hit_rate"]["of"] == 5  # tests and docs and check ran, then docs cached and check ran

    one, two = qs.history()
    assert (one["kind"], two["kind"], two["edits"], two["tokens"], two["verified"]) == ("make", "edit", 1, 0, False)
    assert two["diffstat"] == {"files": 1, "insertions": 2, "deletions": 0}
    assert two["key"] == one["key"]  # the step keeps its key: up to date with the edited bytes
    table = qs.run("history", "tests").stdout.splitlines()
    assert re.split(r"\s{2,}", table[2])[3:] == ["edit of 1", "1 file +2 -0", "0", "no: a person's edit"]
    shown = qs.run("show", "tests@2")
    assert shown.returncode == 0, shown.stderr
    assert re.fullmatch(r"tests version 2: edit of version 1, run \S+, \S+", shown.stdout.splitlines()[0])
    assert "--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n" in shown.stdout
    assert "+# a case the agent missed, added by hand\n" in shown.stdout
    assert "(no transcript: this version was not made by a model call)" in shown.stdout
    blobs = qs.root / ".runner/versions/tests/blobs"
    assert {p.read_bytes() for p in blobs.iterdir()} == {agents, edited}

    again, steps = qs.make()  # up to date with the edit: nothing to do
    assert again.returncode == 0 and steps[""]["ran"] == steps[""]["kept"] == 0, again.stdout
    assert len(qs.history()) == 2

    test_file.unlink()  # a deleted output is restored: the person's version, the step's last result
    assert qs.plan()["tests"] == ["output tests/test_calc.py missing: restore from cache"]
    restored, steps = qs.make()
    assert steps["tests"]["status"] == "restored", restored.stdout
    assert test_file.read_bytes() == edited

    back = qs.run("rollback", "tests")
    assert back.returncode == 0, back.stderr
    assert back.stdout.splitlines()[0] == "rolled tests back to version 1 as version 3: tests/test_calc.py"
    assert test_file.read_bytes() == agents
    remade, steps = qs.make()
    # up to date with the agent's bytes again; its dependant was once made from them: from the cache (restored
    # when the report's timing line differs)
    assert steps["tests"]["status"] == "cached" and steps["check"]["status"] != "ran", remade.stdout
    assert test_file.read_bytes() == agents
    assert [v["kind"] for v in qs.history()] == ["make", "edit", "rollback"]


def test_the_step_line_and_summary_say_kept(tmp_path):
    qs, agents = _built(tmp_path)
    (qs.root / "tests/test_calc.py").write_bytes(agents + MINE.encode())
    plain = qs.run("make")
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0] == "[1/2] kept tests: output tests/test_calc.py edited: keep as version 2"
    assert re.fullmatch(r"runner: 1 ran, 1 cached, 1 kept in \S+s \(run \S+\)", lines[-1])
    log = qs.run("log")
    assert "  kept     tests\n" in log.stdout and ", kept 1, " in log.stdout


def test_a_shell_step_s_edited_output_is_still_restored(tmp_path):
    qs, _agents = _built(tmp_path)
    report = qs.root / "build/report.txt"
    made = report.read_bytes()
    report.write_text("edited by hand\n")
    assert qs.plan()["check"] == ["output build/report.txt changed: restore from cache"]
    result, steps = qs.make()
    assert steps["check"]["status"] == "restored", result.stdout
    assert report.read_bytes() == made
    assert len(qs.history()) == 1


def test_an_edit_while_no_version_exists_is_kept_as_version_1(tmp_path):
    qs, agents = _built(tmp_path)
    shutil.rmtree(qs.root / ".runner/versions/tests")  # the outputs' history is gone, their result is not
    (qs.root / "tests/test_calc.py").write_bytes(agents + MINE.encode())
    assert qs.plan()["tests"] == ["output tests/test_calc.py edited: keep as version 1"]
    result, steps = qs.make()
    assert (steps["tests"]["status"], steps["tests"]["version"]) == ("kept", 1), result.stdout
    (one,) = qs.history()
    assert one["kind"] == "edit" and "edits" not in one
    assert qs.run("history", "tests").stdout.splitlines()[1].split()[3] == "edit"


def test_an_edit_of_outputs_the_shared_cache_gave_is_kept_as_version_1(tmp_path):
    """A second clone's agent outputs came from the shared cache (no version here), then were edited: kept, and
    only here: the shared cache still gives the agent's bytes for the key."""
    remote = {"RUNNER_REMOTE_CACHE": (tmp_path / "shared").as_uri()}
    first = Quickstart(tmp_path / "first")
    assert first.make(**remote)[0].returncode == 0
    agents = (first.root / "tests/test_calc.py").read_bytes()
    clone = Quickstart(tmp_path / "clone")
    result, steps = clone.make(**remote)
    assert steps["tests"]["status"] == "restored" and steps["tests"]["remote"] is True, result.stdout
    (cached,) = clone.history()  # what the shared cache brought: version 1 here, made by the first clone
    assert (cached["kind"], cached["run"]) == ("cache", first.history()[0]["run"])
    (clone.root / "tests/test_calc.py").write_bytes(agents + MINE.encode())
    result, steps = clone.make(**remote)
    assert (steps["tests"]["status"], steps["tests"]["version"]) == ("kept", 2), result.stdout
    assert [(v["kind"], v.get("edits")) for v in clone.history()] == [("cache", None), ("edit", 1)]
    third = Quickstart(tmp_path / "third")
    result, steps = third.make(**remote)
    assert steps["tests"]["status"] == "restored", result.stdout
    assert (third.root / "tests/test_calc.py").read_bytes() == agents


def test_a_make_killed_while_keeping_an_edit_completes_or_undoes_it_at_the_next_start(tmp_path):
    qs, agents = _built(tmp_path)
    edited = agents + MINE.encode()
    (qs.root / "tests/test_calc.py").write_bytes(edited)
    for point in ("staged", "journaled"):  # before the journal's commit point, and after it
        killed = qs.run("make", RUNNER_TEST_CRASH_AT=point)
        assert killed.returncode == -9, killed.stderr
        assert len(qs.history()) == 1  # the version is in the journal alone until the next start
        assert (qs.root / "tests/test_calc.py").read_bytes() == edited
    result, steps = qs.make()
    assert result.returncode == 0, result.stderr
    recovered = [e["message"] for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "recovered"]
    assert len(recovered) == 1 and recovered[0].startswith("completed the interrupted apply")
    assert steps["tests"]["status"] == "cached"  # the state index came with the version, in the same journal
    assert steps["check"]["status"] == "ran"
    assert [v["kind"] for v in qs.history()] == ["make", "edit"]  # once: the cut-short attempt left nothing
    assert (qs.root / "tests/test_calc.py").read_bytes() == edited


# ---- an edit together with an input, and in place: the openai worker against the fake Responses server ------

MARKED = CALC + "# version B\n"  # src/calc.py's contents are in the prompt: the server answers by them
SECOND_TEST = PASSING_TEST + "\n\ndef test_mean_even():\n    assert mean([2, 4]) == 3\n"


def _answer(path: str, text: str) -> str:
    summary = json.dumps({"summary": "done"})
    return f"<<MIS:START>>\n<<MIS:FILE path={path}>>\n{text}<<MIS:JSON>>\n{summary}\n<<MIS:END>>\n"


def _worker(server, script: list) -> str:
    srv = server(script)
    return srv, textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{srv.base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        """)


TESTS_SCRIPT = [
    {"match": "# version B", "steps": [{"message": _answer("tests/test_calc.py", SECOND_TEST)}]},
    {"steps": [{"message": _answer("tests/test_calc.py", PASSING_TEST)}]},
]


def _tests_project(agent, server):
    srv, worker = _worker(server, TESTS_SCRIPT)
    agent.spec(worker)
    assert agent.make().code == 0  # version 1, of src/calc.py as CALC
    return srv


def _status(agent) -> dict:
    return {s["intent"]: s for s in json.loads(agent.run("status", "--json").out)["steps"]}


def test_an_edit_with_an_input_changed_is_kept_and_the_step_runs_from_it(agent, server):
    srv = _tests_project(agent, server)
    test_file = agent.root / "tests/test_calc.py"
    test_file.write_text(PASSING_TEST + "# mine\n")
    (agent.root / "src/calc.py").write_text(MARKED)
    assert _status(agent)["tests"] == {
        "intent": "tests",
        "action": "run",
        "reasons": ["output tests/test_calc.py edited: keep as version 2", "input src/calc.py changed"],
    }
    result = agent.make()
    assert result.code == 0, result.err
    assert result.step("tests")["status"] == "ran" and len(srv.requests()) == 2
    assert test_file.read_text() == SECOND_TEST
    one, two, three = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in (one, two, three)] == ["make", "edit", "make"]
    assert two["key"] == one["key"] != three["key"]
    edit = json.loads(agent.run("show", "tests@2", "--json").out)
    assert edit["diff"].endswith("     assert mean([1, 3]) == 2\n+# mine\n")
    blobs = agent.root / ".runner/versions/tests/blobs"
    assert (blobs / edit["files"]["tests/test_calc.py"]).read_text() == PASSING_TEST + "# mine\n"
    # the agent's change was made from the project with the edit in it: its diff takes the edit out
    made = json.loads(agent.run("show", "tests@3", "--json").out)["diff"]
    assert "-# mine\n" in made and "+def test_mean_even():\n" in made


def test_a_cached_answer_for_the_new_inputs_is_never_written_over_an_edit(agent, server):
    srv = _tests_project(agent, server)
    test_file, source = agent.root / "tests/test_calc.py", agent.root / "src/calc.py"
    source.write_text(MARKED)
    assert agent.make().step("tests")["status"] == "ran"  # version 2, the answer for B, in the cache
    source.write_text(CALC)
    assert agent.make().step("tests")["status"] == "restored"  # A's answer, as version 3 (kind "cache")
    assert test_file.read_text() == PASSING_TEST
    calls = len(srv.requests())

    test_file.write_text(PASSING_TEST + "# mine\n")
    source.write_text(MARKED)  # B again: its cached answer would replace the edit
    assert _status(agent)["tests"]["reasons"] == [
        "output tests/test_calc.py edited: keep as version 4",
        "the cached result for these inputs would overwrite tests/test_calc.py: run instead",
        "input src/calc.py changed",
    ]
    result = agent.make()
    assert result.code == 0, result.err
    assert result.step("tests")["status"] == "ran" and len(srv.requests()) == calls + 1
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in versions] == ["make", "make", "cache", "edit", "make"]
    assert versions[3]["edits"] == 3  # the bytes it edited were those the cache restored (version 1's, again)
    edit = json.loads(agent.run("show", "tests@4", "--json").out)
    assert edit["diff"].endswith("     assert mean([1, 3]) == 2\n+# mine\n")


def test_an_edit_that_is_the_cached_answer_for_the_new_inputs_calls_no_model(agent, server):
    srv = _tests_project(agent, server)
    test_file, source = agent.root / "tests/test_calc.py", agent.root / "src/calc.py"
    source.write_text(MARKED)
    assert agent.make().code == 0
    source.write_text(CALC)
    assert agent.make().step("tests")["status"] == "restored"
    calls = len(srv.requests())

    test_file.write_text(SECOND_TEST)  # by hand, exactly the answer B's inputs have in the cache
    source.write_text(MARKED)
    assert _status(agent)["tests"]["reasons"] == [
        "output tests/test_calc.py edited: keep as version 4",
        "inputs match an earlier cached run",
    ]
    result = agent.make()
    assert result.code == 0, result.err
    assert (result.step("tests")["status"], result.step("tests")["version"]) == ("kept", 4)
    assert len(srv.requests()) == calls and test_file.read_text() == SECOND_TEST
    assert agent.make().step("tests")["status"] == "cached"


IN_PLACE = """
[intent.tidy]
goal = "Tidy src/calc.py"
inputs = ["src/calc.py"]
outputs = ["src/calc.py"]
prompt = "refactor"
adapter = "local"
verify = ["test"]
"""
TIDIED = CALC + "# tidied\n"


def test_an_edit_of_an_output_edited_in_place_is_kept_and_the_step_stays_up_to_date(agent, server):
    """The output is also the step's input: while it holds the step's result the input counts as the bytes it
    had before the step ran. Kept as the result, the edit leaves the key as it was: no model call, and the agent
    is not run on its own output again; rollback brings its version back, still up to date."""
    srv, worker = _worker(server, [{"steps": [{"message": _answer("src/calc.py", TIDIED)}]}])
    (agent.root / "tests").mkdir()
    (agent.root / "tests/test_calc.py").write_text(PASSING_TEST)  # what verify runs: no output of the step
    (agent.root / "intents.toml").write_text(f'[project]\nname = "inplace"\n{worker}\n{IN_PLACE}')
    first = agent.make()
    assert first.code == 0, first.err
    source = agent.root / "src/calc.py"
    assert source.read_text() == TIDIED and len(srv.requests()) == 1

    source.write_text(TIDIED + "# mine\n")
    assert _status(agent)["tidy"]["reasons"] == ["output src/calc.py edited: keep as version 2"]
    result = agent.make()
    assert result.code == 0, result.err
    assert (result.step("tidy")["status"], result.step("tidy")["version"]) == ("kept", 2)
    assert source.read_text() == TIDIED + "# mine\n" and len(srv.requests()) == 1
    assert agent.make().step("tidy")["status"] == "cached"
    assert [v["kind"] for v in json.loads(agent.run("history", "tidy", "--json").out)["versions"]] == ["make", "edit"]

    assert agent.run("rollback", "tidy").code == 0
    assert source.read_text() == TIDIED
    assert agent.make().step("tidy")["status"] == "cached" and len(srv.requests()) == 1


# ---- a pending change (approval asked) and an edit made after it was drafted -----------------------------------


def test_approve_refuses_a_change_drafted_before_the_output_was_edited(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    assert agent.make().code == 0  # version 1
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": SECOND_TEST}}),
        policy='[policy.default]\nwrite_files = "ask"',
    )
    (agent.root / "src/calc.py").write_text(MARKED)
    blocked = agent.make()
    assert blocked.code == 3 and blocked.step("tests")["status"] == "blocked", blocked.out
    test_file = agent.root / "tests/test_calc.py"
    mine = PASSING_TEST + "# mine\n"
    test_file.write_text(mine)  # after the change was drafted, before it is approved
    shown = agent.run("approve", "tests", "--show").out.splitlines()
    assert "edited since it was drafted: tests/test_calc.py (approving it would be refused)" in shown, shown
    assert json.loads(agent.run("approve", "tests", "--show", "--json").out)["waiting"][0]["edited"] == [
        "tests/test_calc.py"
    ]

    said = (
        "failed tests: tests/test_calc.py changed since the change was drafted; applying it would lose that edit. "
        "`runner approve tests --reject` drops the change, and the next `runner make` drafts it again from the "
        "files as they are now\n"
    )
    refused = agent.run("approve", "tests")
    assert (refused.code, refused.out) == (1, said), refused.err
    assert test_file.read_text() == mine
    pending = agent.root / ".runner/pending/tests.json"
    assert pending.is_file()  # nothing dropped: the person chooses
    entry = json.loads(pending.read_text())
    del entry["base"]  # a change drafted before drafts kept their base: judged by the step's last result
    pending.write_text(json.dumps(entry))
    assert agent.run("approve", "tests").out == said
    assert test_file.read_text() == mine

    assert agent.run("approve", "tests", "--reject").code == 0
    again = agent.make()  # the edit kept as version 2, the change drafted again from it
    assert again.code == 3 and again.step("tests")["status"] == "blocked", again.out
    assert test_file.read_text() == mine
    applied = agent.run("approve", "tests")
    assert applied.code == 0 and applied.out == "applied tests: tests/test_calc.py\n", applied.out + applied.err
    assert test_file.read_text() == SECOND_TEST
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in versions] == ["make", "edit", "make"]
    assert json.loads(agent.run("show", "tests@2", "--json").out)["diff"].endswith("+# mine\n")


# ---- an edit made while the agent works: its change was made in a copy, from the bytes before the edit --------


def test_an_output_edited_while_the_agent_step_runs_is_not_written_over(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    assert agent.make().code == 0  # version 1
    gate = verify_that_waits(agent)
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": SECOND_TEST}}))
    (agent.root / "src/calc.py").write_text(MARKED)
    proc = make_held_in_verify(agent, gate)
    test_file = agent.root / "tests/test_calc.py"
    mine = PASSING_TEST + "# mine, while the agent worked\n"
    test_file.write_text(mine)
    (gate / "go").write_text("")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    step = next(e for e in events if e["event"] == "step_finished" and e["intent"] == "tests")
    run_id = events[0]["run_id"]
    assert (step["status"], step["error"]) == (
        "failed",
        "output tests/test_calc.py edited while the step ran: its change is not applied, so the edit stands (its "
        f"diff: .runner/runs/{run_id}/attempts/tests/c1-a1/diff.patch); the next `runner make` keeps the edit and "
        "runs the step again",
    )
    assert test_file.read_text() == mine
    assert len(json.loads(agent.run("history", "tests", "--json").out)["versions"]) == 1

    again = agent.make()  # the edit kept as version 2, then the step runs from it
    assert again.code == 0, again.err
    assert again.step("tests")["status"] == "ran" and test_file.read_text() == SECOND_TEST
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in versions] == ["make", "edit", "make"]
    assert json.loads(agent.run("show", "tests@2", "--json").out)["diff"].endswith("+# mine, while the agent worked\n")


def test_a_result_the_cache_brings_back_is_a_version_and_a_deleted_output_restored_is_none(agent):
    """An input changed back: the cache restores the step's older result, which the history then shows (kind
    "cache", the run that made it) and a rollback goes back over; a deleted output restored is no new version."""
    agent.spec(
        agent.fake_codex_worker(
            {
                "by_prompt": [
                    {"match": "# version B", "files": {"tests/test_calc.py": SECOND_TEST}},
                    {"files": {"tests/test_calc.py": PASSING_TEST}},
                ]
            }
        )
    )
    test_file, calc = agent.root / "tests/test_calc.py", agent.root / "src/calc.py"
    first = agent.make()
    assert first.code == 0 and test_file.read_text() == PASSING_TEST
    calc.write_text(MARKED)
    assert agent.make().step("tests")["status"] == "ran" and test_file.read_text() == SECOND_TEST
    calc.write_text(CALC)  # back as it was: the cache holds the first answer
    back = agent.make()
    assert back.step("tests")["status"] == "restored" and test_file.read_text() == PASSING_TEST
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [(v["version"], v["kind"], v["run"]) for v in versions] == [
        (1, "make", first.events()[0]["run_id"]),
        (2, "make", versions[1]["run"]),
        (3, "cache", first.events()[0]["run_id"]),  # made by the first run, brought back by the third
    ]
    assert "+def test_mean_even" not in agent.run("show", "tests@3").out
    test_file.unlink()
    assert agent.make().step("tests")["status"] == "restored"
    assert len(json.loads(agent.run("history", "tests", "--json").out)["versions"]) == 3  # nothing new
    assert agent.run("rollback", "tests").code == 0
    assert test_file.read_text() == SECOND_TEST
    assert len(agent.prompts()) == 2  # two model calls in all: the restore and the rollback paid nothing
