"""The agent set-up, checked before money or time is spent: `validate`, `status` and `make -n` say whether the
worker can start (binary and version, the key's variable by name, base_url, recordings) without calling a model;
at run time a refused key, a refused connection or a name that does not resolve stops the run at once, exit 2,
naming the variable or the base_url and quoting the transcript's line. Driven through the CLI."""

from __future__ import annotations

import json
import re
import socket
import time
from importlib.resources import files

import pytest
from agent_helpers import FAKE_CODEX, PASSING_TEST
from jsonschema import Draft7Validator

EVENTS = Draft7Validator(json.loads(files("runner.schemas").joinpath("events.json").read_text(encoding="utf-8")))
PROVIDER = 'base_url = "http://127.0.0.1:9/v1"\nenv_key = "FAKE_KEY"'
READY = f"""\
agent set-up (codex worker): ok
  ok    binary    {FAKE_CODEX}
  ok    version   codex-cli 0.0.0-fake
  ok    key       FAKE_KEY is set
  ok    base_url  http://127.0.0.1:9/v1
"""


def _without(env: dict, *names: str) -> dict:
    return {k: v for k, v in env.items() if k not in names}


def _line(agent, needle: str) -> int:
    lines = (agent.root / "intents.toml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_validate_checks_the_codex_set_up_and_never_calls_a_model_nor_shows_the_key(agent):
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER))
    result = agent.run("validate")
    assert result.code == 0, result.err
    assert result.out.startswith("ok: 1 intent, no problems\n")
    assert result.out.endswith(READY)
    as_json = agent.run("validate", "--json")
    assert as_json.code == 0 and json.loads(as_json.out)["agent"]["ok"] is True
    assert agent.key not in result.out + result.err + as_json.out + as_json.err
    assert agent.calls() == []  # `codex --version` only: no `codex exec`, no model


def test_validate_names_the_unset_key_variable_where_it_is_declared_and_exits_2(agent):
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER))
    result = agent.run("validate", "--agents", env=_without(agent.env(), "FAKE_KEY"))
    assert result.code == 2
    assert result.err == (
        "error: the agent set-up is not ready: the codex worker cannot start the agent steps\n"
        f"  intents.toml:{_line(agent, 'env_key')}: worker.env_key: key: the environment variable FAKE_KEY is not "
        "set: codex sends it to http://127.0.0.1:9/v1 ([worker] env_key names the variable)\n"
    )
    assert result.out.startswith("ok: 1 intent, no problems in the spec\n")
    assert "  FAIL  key       the environment variable FAKE_KEY is not set" in result.out


def test_validate_warns_of_an_unset_key_and_exits_0_unless_agents_is_asked_for(agent):
    """The agent set-up is the machine's: a spec whose shell steps run is valid without it; `runner make` stops
    on it for the agent steps it selects, `validate --agents` fails on it."""
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER), intent_extra='\n[intent.check]\nrun = "true"\n')
    env = _without(agent.env(), "FAKE_KEY")
    result = agent.run("validate", env=env)
    assert result.code == 0, result.err
    assert result.out.startswith("ok: 2 intents, no problems, 1 warning\n")
    assert "  FAIL  key       the environment variable FAKE_KEY is not set" in result.out
    assert result.err == (
        "warning: the agent set-up is not ready: the codex worker cannot start the agent steps (its agent steps "
        "would stop at their first call; `runner validate --agents` fails on this)\n"
        f"  intents.toml:{_line(agent, 'env_key')}: worker.env_key: key: the environment variable FAKE_KEY is not "
        "set: codex sends it to http://127.0.0.1:9/v1 ([worker] env_key names the variable)\n"
    )
    as_json = json.loads(agent.run("validate", "--json", env=env).out)
    assert (as_json["ok"], as_json["problems"], as_json["agent"]["ok"]) == (True, [], False)
    assert as_json["warnings"][0].startswith("warning: the agent set-up is not ready")
    strict = agent.run("validate", "--agents", "--json", env=env)
    assert strict.code == 2 and json.loads(strict.out)["ok"] is False
    assert [p["path"] for p in json.loads(strict.out)["problems"]] == ["worker.env_key"]
    check = agent.run("make", "check", env=env)  # shell steps only: the agent set-up is not looked at
    assert check.code == 0, check.err


def test_validate_says_when_the_codex_binary_is_missing(agent, tmp_path):
    agent.spec(f'[worker]\nkind = "codex"\nbinary = "{tmp_path}/no/codex"\n')
    result = agent.run("validate", "--agents")
    assert result.code == 2
    assert result.err.splitlines()[1] == (
        f"  intents.toml:{_line(agent, 'binary')}: worker.binary: binary: worker.binary = '{tmp_path}/no/codex' "
        "is not an executable file; fix [worker] binary in intents.toml or remove it to use `codex` from PATH"
    )


def test_a_key_no_line_declares_is_reported_at_the_worker_table(agent):
    agent.spec(agent.fake_codex_worker({}, extra=f'extra = {{ codex_home = "{agent.home}/codex-home" }}'))
    result = agent.run("validate", "--agents", env=_without(agent.env(), "CODEX_API_KEY", "CODEX_HOME"))
    assert result.code == 2
    assert result.err.splitlines()[1].startswith(
        f"  intents.toml:{_line(agent, '[worker]')}: worker: key: the environment variable CODEX_API_KEY is not set"
    )


def test_make_n_checks_the_worker_the_run_would_use(agent):
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER))
    result = agent.run("make", "-n", "--worker", "replay", env=_without(agent.env(), "FAKE_KEY"))
    assert result.code == 2
    assert "recordings: no recording in" in result.err and "FAKE_KEY" not in result.err  # replay's check


def test_the_builtin_provider_needs_codex_api_key_or_a_login(agent):
    agent.spec(agent.fake_codex_worker({}, extra=f'extra = {{ codex_home = "{agent.home}/codex-home" }}'))
    env = _without(agent.env(), "CODEX_API_KEY", "CODEX_HOME")
    result = agent.run("validate", "--agents", env=env)
    assert result.code == 2
    assert (
        f"key: the environment variable CODEX_API_KEY is not set and there is no login in "
        f"{agent.home}/codex-home/auth.json: codex's built-in provider reads it (`codex exec` does not use "
        "OPENAI_API_KEY); export it, run `codex login`, or set [worker] base_url and env_key"
    ) in result.err
    (agent.home / "codex-home").mkdir()
    (agent.home / "codex-home/auth.json").write_text("{}")
    assert agent.run("validate", "--agents", env=env).code == 0


@pytest.mark.parametrize(
    "url,why",
    [
        ("http://:8080/v1", "names no host (expected http://HOST[:PORT]/v1)"),
        ("http://localhost:99999/v1", "is not a valid URL (Port out of range 0-65535)"),
    ],
)
def test_an_openai_base_url_that_is_no_url_is_refused(agent, url, why):
    agent.spec(f'[worker]\nkind = "openai"\nbase_url = "{url}"\n')
    result = agent.run("validate", "--agents")
    assert result.code == 2
    assert f"worker.base_url: base_url: [worker] base_url = '{url}' {why}" in result.err


def test_the_replay_worker_needs_a_recording_of_each_step(agent):
    agent.spec('[worker]\nkind = "replay"\n')
    result = agent.run("validate", "--agents")
    assert result.code == 2
    assert (
        f"recordings: no recording in {agent.root}/replays/ for tests: run once with a live worker and "
        "`runner make --record`"
    ) in result.err


BUDGETED = "[policy.default]\nbudget = { tokens = 1000, attempts = 2 }\nrun_budget = { tokens = 5000, attempts = 3 }"


def test_status_and_make_n_show_the_projected_calls_the_budgets_and_the_set_up(agent):
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER), policy=BUDGETED, intent_extra="candidates = 2")
    status = agent.run("status")
    assert status.code == 0, status.err
    assert status.out == (
        "run   tests  no cache entry\n"
        "1 to run, 0 up to date\n"
        "agent steps: up to 3 model calls (codex worker, model gpt-5.3-codex)\n"
        "  tests  2 attempts x 2 candidates = 4 calls; at most 1,000 tokens per candidate (policy default)\n"
        "  the run's budget (policy default run_budget): 5,000 tokens, 3 attempts\n" + READY
    )
    plan = agent.run("make", "-n", "--json")
    assert plan.code == 0, plan.err
    (event,) = [json.loads(line) for line in plan.out.splitlines()]
    assert not list(EVENTS.iter_errors(event))
    assert event["agent"]["steps"] == [
        {
            "intent": "tests",
            "policy": "default",
            "candidates": 2,
            "attempts": 2,
            "calls": 4,
            "budget": {"tokens": 1000, "attempts": 2, "seconds": None},
        }
    ]
    assert event["agent"]["calls"] == 3 and event["agent"]["run_budget"]["tokens"] == 5000
    assert [c["what"] for c in event["agent"]["checks"]] == ["binary", "version", "key", "base_url"]
    assert json.loads(agent.run("status", "--json").out)["agent"] == event["agent"]
    assert agent.key not in status.out + plan.out
    assert agent.calls() == []


def test_status_exits_2_when_a_step_that_would_run_cannot_start_but_not_once_it_is_cached(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}, extra=PROVIDER))
    no_key = _without(agent.env(), "FAKE_KEY")
    for args in (["status"], ["make", "-n"], ["make", "-n", "--json"]):
        result = agent.run(*args, env=no_key)
        assert result.code == 2, args
        assert result.err.startswith("error: the agent set-up is not ready: the codex worker cannot start")
        assert "tests" in result.out  # the plan is shown first
    assert agent.make().code == 0
    cached = agent.run("status", "--json", env=no_key)
    assert cached.code == 0 and "agent" not in json.loads(cached.out)  # nothing would call a model


# ---- at run time -------------------------------------------------------------------------------------------

TWO_STEPS = """
[intent.docs]
goal = "Write docs/calc.md"
inputs = ["src/calc.py"]
outputs = ["docs/calc.md"]
"""


def test_a_refused_key_stops_the_run_at_once_with_exit_2(agent):
    line = {"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 Unauthorized: bad key, url: u)"}
    scenario = {"lines": [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"}, line], "hang": True}
    agent.spec(agent.fake_codex_worker(scenario, extra=PROVIDER), intent_extra=TWO_STEPS)
    before = agent.files()
    t0 = time.monotonic()
    result = agent.make("-k", "-j", "1")
    assert result.code == 2 and time.monotonic() - t0 < 30, result.err
    assert result.err == (
        "error: agent step docs: the codex worker failed (setup): the key in FAKE_KEY was refused "
        "(401 Unauthorized) by [worker] base_url http://127.0.0.1:9/v1: check FAKE_KEY ([worker] env_key names it)"
        f"\n  the transcript's line: {json.dumps(line)}\n"
        "The run stopped at once: no retry can mend the agent set-up. `runner validate` checks it without "
        "calling a model.\n"
    )
    events = result.events()
    assert all(not list(EVENTS.iter_errors(e)) for e in events)
    assert result.step("docs")["status"] == "failed" and result.step("docs")["attempts"] == 1
    assert result.step("tests")["status"] == "skipped"  # not started, even with -k
    assert events[-1]["status"] == "failed" and events[-1]["left"] == ["docs", "tests"]
    assert len(agent.prompts()) == 1  # one attempt, no retry
    assert agent.files() == before and not agent.leaks()


def test_an_unset_key_variable_stops_the_run_before_codex_starts(agent):
    agent.spec(agent.fake_codex_worker({}, extra=PROVIDER))
    result = agent.make(env=_without(agent.env(), "FAKE_KEY"))
    assert result.code == 2
    assert result.err.startswith(
        "error: agent step tests: the codex worker failed (setup): the environment variable FAKE_KEY is not set"
    )
    assert agent.calls() == []


# ---- the real Codex CLI against the fake Responses server ---------------------------------------------------


def _real_worker(base_url: str, binary: str, home) -> str:
    return f"""[worker]
kind = "codex"
model = "gpt-5.5"
binary = "{binary}"
base_url = "{base_url}"
env_key = "FAKE_KEY"
timeout = 90
extra = {{ codex_home = "{home}/codex-home" }}
"""


@pytest.mark.codex_cli
def test_real_codex_a_401_is_exit_2_after_one_request(agent, server, codex_binary):
    srv = server([{"steps": [{"error": 401, "code": "invalid_api_key", "message": "Incorrect API key"}]}])
    agent.spec(_real_worker(srv.base_url, codex_binary, agent.home))
    t0 = time.monotonic()
    result = agent.make()
    assert result.code == 2 and time.monotonic() - t0 < 30, result.err
    assert result.err.startswith(
        "error: agent step tests: the codex worker failed (setup): the key in FAKE_KEY was refused (401 "
        f"Unauthorized) by [worker] base_url {srv.base_url}: check FAKE_KEY ([worker] env_key names it)\n"
        '  the transcript\'s line: {"type":"error","message":"Reconnecting... 1/'
    )
    assert "401 Unauthorized: Incorrect API key" in result.err
    assert len(srv.requests()) == 1  # codex's own retries of the 401 were cut short
    assert not agent.leaks()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.codex_cli
@pytest.mark.parametrize("host", ["refused", "unresolvable"])
def test_real_codex_an_unreachable_base_url_is_exit_2_naming_it(agent, codex_binary, host):
    url = f"http://127.0.0.1:{_closed_port()}/v1" if host == "refused" else "http://no-such-host.invalid/v1"
    agent.spec(_real_worker(url, codex_binary, agent.home))
    t0 = time.monotonic()
    result = agent.make()
    assert result.code == 2 and time.monotonic() - t0 < 30, result.err
    first = result.err.splitlines()[0]
    if host == "refused":
        port = url.split(":")[2].split("/")[0]
        assert first.endswith(
            f"nothing answered at 127.0.0.1:{port} ([worker] base_url {url}): the connection was refused or "
            "failed; is the server up?"
        )
    else:
        assert first.endswith(
            f"the name no-such-host.invalid of [worker] base_url {url} does not resolve: check the URL, or the "
            "network and DNS"
        )
    assert re.match(r"  the transcript's line: \{.*Connection failed", result.err.splitlines()[1])


@pytest.mark.codex_cli
def test_real_codex_the_checks_send_no_request(agent, server, codex_binary):
    srv = server([{"steps": [{"message": "never asked"}]}])
    agent.spec(_real_worker(srv.base_url, codex_binary, agent.home))
    for args in (["validate"], ["status"], ["make", "-n"]):
        result = agent.run(*args)
        assert result.code == 0, result.err
        assert re.search(r"  ok    version   codex-cli \d+\.\d+", result.out), result.out
        assert "  ok    key       FAKE_KEY is set" in result.out
    assert srv.requests() == []  # not one model call


# ---- the openai worker: one Responses call per attempt -------------------------------------------------------


def _openai_worker(base_url: str) -> str:
    return (
        f'[worker]\nkind = "openai"\nmodel = "gpt-5.5"\nbase_url = "{base_url}"\nenv_key = "FAKE_KEY"\ntimeout = 30\n'
    )


def test_openai_a_401_is_exit_2_naming_the_variable(agent, server):
    srv = server([{"steps": [{"error": 401, "code": "invalid_api_key", "message": "Incorrect API key"}]}])
    agent.spec(_openai_worker(srv.base_url))
    result = agent.make()
    assert result.code == 2, result.err
    assert result.err.startswith(
        "error: agent step tests: the openai worker failed (setup): the key in FAKE_KEY was refused (401 "
        f"Unauthorized) by [worker] base_url {srv.base_url}: check FAKE_KEY ([worker] env_key names it)\n"
        f'  the transcript\'s line: {{"type": "http.error", "status": 401, "url": "{srv.base_url}/responses", '
    )
    assert len(srv.requests()) == 1
    assert not agent.leaks()


def test_openai_a_refused_connection_is_exit_2_without_the_sdk_s_retries(agent):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    agent.spec(_openai_worker(url))
    t0 = time.monotonic()
    result = agent.make()
    assert result.code == 2 and time.monotonic() - t0 < 10, result.err
    port = url.split(":")[2].split("/")[0]
    assert (
        f"nothing answered at 127.0.0.1:{port} ([worker] base_url {url}): the connection was refused or failed; "
        "is the server up?\n"
        f'  the transcript\'s line: {{"type": "connect.error", "url": "{url}/responses", '
        '"error": "ConnectError: [Errno 111] Connection refused"}'
    ) in result.err
