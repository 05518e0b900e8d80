"""An agent step whose input changed while it ran (runner/inputs_held.py): its change was verified in a copy made
after its key, on bytes that key may not name and the project no longer holds; it is not applied, not saved for
approval, not recorded, and the next `runner make` asks again."""

from __future__ import annotations

import json

from agent_helpers import CALC, PASSING_TEST, make_held_in_verify, verify_that_waits


def test_a_change_verified_while_its_input_was_edited_is_not_applied_and_the_next_run_asks_again(agent):
    gate = verify_that_waits(agent)
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    proc = make_held_in_verify(agent, gate)
    edited = CALC + "\n# edited while the tests step ran\n"
    (agent.root / "src/calc.py").write_text(edited)
    (gate / "go").write_text("")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    step = next(e for e in events if e["event"] == "step_finished" and e["intent"] == "tests")
    assert step["status"] == "failed" and step["inputs_changed"] == ["src/calc.py"]
    run_id = events[0]["run_id"]
    assert step["error"] == (
        "input src/calc.py changed while the step ran: its change was verified against other bytes, so it is not "
        f"applied (its diff: .runner/runs/{run_id}/attempts/tests/c1-a1/diff.patch); the next `runner make` runs "
        "the step again"
    )
    assert (agent.root / f".runner/runs/{run_id}/attempts/tests/c1-a1/diff.patch").is_file()
    assert not (agent.root / "tests/test_calc.py").exists()  # not applied
    assert (agent.root / "src/calc.py").read_text() == edited  # the person's edit stands
    assert not (agent.root / ".runner/pending").exists() or not list((agent.root / ".runner/pending").iterdir())
    assert json.loads(agent.run("history", "tests", "--json").out)["versions"] == []
    assert events[-1]["inputs_changed"] == ["tests"]

    again = agent.make()  # no record of the first change: the model is asked again, on the inputs as they are
    assert again.code == 0, again.err
    assert again.step("tests")["status"] == "ran" and "inputs_changed" not in again.step("tests")
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert len(agent.prompts()) == 2
    assert agent.make().step("tests")["status"] == "cached"
