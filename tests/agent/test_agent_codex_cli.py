"""The agent step with the real Codex CLI against the fake Responses server: the whole loop, counted in requests."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.codex_cli

FIRST = (
    "*** Begin Patch\n*** Add File: tests/test_calc.py\n+import sys, pathlib\n"
    "+sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'src'))\n+from calc import mean\n+\n"
    "+def test_mean():\n+    assert mean([1, 2]) == 2\n*** End Patch\n"
)
FIX = (
    "*** Begin Patch\n*** Update File: tests/test_calc.py\n@@\n-    assert mean([1, 2]) == 2\n"
    "+    assert mean([1, 3]) == 2\n*** End Patch\n"
)


def _worker(srv, binary, home) -> str:
    return f"""[worker]
kind = "codex"
model = "gpt-5.5"
binary = "{binary}"
base_url = "{srv.base_url}"
env_key = "FAKE_KEY"
timeout = 90
extra = {{ request_max_retries = 1, stream_max_retries = 1, codex_home = "{home}/codex-home" }}
"""


def _user_text(request: dict) -> str:
    return json.dumps(request.get("body", request))


def test_retry_apply_then_no_requests_for_a_hit_or_a_restore(agent, server, codex_binary):
    srv = server(
        [
            {"match": "What the last attempt got wrong", "steps": [{"patch": FIX}, {"message": "Fixed."}]},
            {"steps": [{"patch": FIRST}, {"message": "Wrote tests."}]},
        ]
    )
    agent.spec(_worker(srv, codex_binary, agent.home))
    result = agent.make()
    assert result.code == 0, result.err + result.out
    assert result.step("tests")["agent"]["attempts"] == 2
    assert "mean([1, 3]) == 2" in (agent.root / "tests/test_calc.py").read_text()
    requests = srv.requests()
    second_attempt = [r for r in requests if "What the last attempt got wrong" in _user_text(r)]
    assert second_attempt, "the second attempt's prompt carries the feedback"
    assert "tests/test_calc.py::test_mean" in _user_text(second_attempt[0])
    count = len(requests)

    assert agent.make().step("tests")["status"] == "cached"
    (agent.root / "tests/test_calc.py").unlink()
    assert agent.make().step("tests")["status"] == "restored"
    assert len(srv.requests()) == count
    assert not agent.leaks()


def test_a_symlink_made_by_the_real_agent_is_refused(agent, server, codex_binary):
    srv = server(
        [
            {
                "steps": [
                    {"shell": "ln -s /etc tests_link && mkdir -p tests && echo x > tests/test_calc.py"},
                    {"message": "done"},
                ]
            }
        ]
    )
    agent.spec(_worker(srv, codex_binary, agent.home))
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    assert "tests_link: a symlink (-> /etc) is never applied" in result.step("tests")["error"]
    assert agent.files() == before
