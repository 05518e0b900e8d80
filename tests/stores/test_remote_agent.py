"""An agent step's verified change through the shared cache: the first clone pays for the model call, a second
clone with the same remote gets the change with no request to the model (the fake Responses server's log), and
no record or blob holds the API key."""

from __future__ import annotations

import json
import shutil
import textwrap

from agent_helpers import PASSING_TEST, AgentProject


def _answer(text: str) -> str:
    summary = json.dumps({"summary": "tests"})
    return f"<<MIS:START>>\n<<MIS:FILE path=tests/test_calc.py>>\n{text}<<MIS:JSON>>\n{summary}\n<<MIS:END>>\n"


SCRIPT = [{"steps": [{"message": _answer(PASSING_TEST), "usage": {"input_tokens": 30, "output_tokens": 7}}]}]


def test_a_second_clone_gets_the_agent_step_with_no_model_request(agent, server, tmp_path, shared):
    srv = server(SCRIPT)
    worker = textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{srv.base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        """)
    agent.spec(worker)
    with open(agent.root / "intents.toml", "a") as f:
        f.write(f'\n[cache]\nremote = "{shared.as_uri()}"\n')
    first = agent.make("tests")
    assert first.code == 0, first.err
    assert len(srv.requests()) == 1
    assert first.events()[-1]["remote"]["uploaded"] == 1

    clone = AgentProject(tmp_path / "clone", agent.home)
    shutil.copy(agent.root / "intents.toml", clone.root / "intents.toml")
    clone.key = agent.key
    second = clone.make("tests")
    assert second.code == 0, second.err
    assert len(srv.requests()) == 1  # no request from the second clone
    assert second.step("tests")["status"] == "restored"
    finished = second.events()[-1]
    assert finished["attempts"] == 0
    assert finished["remote"]["hits"] == 1 and finished["remote"]["saved_attempts"] == 1
    assert (clone.root / "tests/test_calc.py").read_bytes() == (agent.root / "tests/test_calc.py").read_bytes()
    audit = json.loads(clone.run("audit", "--json").out)["figures"]
    assert audit["remote_saved_model_calls"]["value"] == 1
    stored = b"".join(p.read_bytes() for p in shared.rglob("*") if p.is_file())
    assert agent.key.encode() not in stored
