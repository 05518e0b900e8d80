"""The codex worker driving the REAL codex binary (openai-codex-cli-bin) against the fake Responses server:
edits land, transient errors recover, permanent ones stop, hangs end at the runner's timeout with the group gone.
Skipped only when the binary is absent; in CI its absence is a failure (the codex_binary fixture, tests/ci.py)."""

from __future__ import annotations

import time

import pytest
from worker_helpers import group_members, make_request, wait_gone

from runner.workers import get_worker
from runner.workers.base import PERMANENT, SETUP, TIMEOUT, TRANSIENT, WorkerConfig

pytestmark = pytest.mark.codex_cli

PATCH_ADD = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
PATCH_UPDATE = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hi\n+hello there\n*** End Patch\n"


def cfg(codex_binary, tmp_path, base_url, **kw) -> WorkerConfig:
    extra = {
        "codex_home": str(tmp_path / "codex-home"),
        "request_max_retries": "2",
        "stream_max_retries": "2",
        "kill_grace": "2",
    }
    extra.update(kw.pop("extra", {}))
    base = dict(
        kind="codex",
        model="gpt-5.5",
        fallback_models=(),
        binary=codex_binary,
        base_url=base_url,
        timeout=60,
        idle_timeout=30,
        extra=extra,
    )
    base.update(kw)
    return WorkerConfig(**base)


def run(codex_binary, tmp_path, workspace, base_url, prompt="create hello.txt containing hi", **kw):
    config = cfg(codex_binary, tmp_path, base_url, **kw)
    return get_worker(config).run(make_request(workspace, config, prompt))


def exit_event(r) -> dict:
    return next(e for e in r.events if e.get("type") == "runner.exit")


def assert_group_gone(r) -> None:
    pid = exit_event(r)["pid"]
    assert wait_gone([pid], 3) == []
    assert group_members(pid) == [], "a process of codex's group survived"


def test_apply_patch_edits_land(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server(
        {
            "steps": [
                {"patch": PATCH_ADD},
                {"patch": PATCH_UPDATE},
                {"message": "Created hello.txt", "usage": {"input_tokens": 1000, "output_tokens": 30}},
            ]
        }
    )
    r = run(codex_binary, tmp_path, workspace, srv.base_url)
    assert r.ok, r.error
    assert (workspace / "hello.txt").read_text() == "hello there\n"
    assert r.final_message == "Created hello.txt"
    assert any(e.get("item", {}).get("type") == "file_change" for e in r.events)
    assert r.usage.input_tokens >= 1000 and r.usage.output_tokens >= 30
    assert r.worker_version.startswith("codex-cli ")
    reqs = srv.requests()
    assert "apply_patch" in reqs[0]["tools"] and reqs[1]["tool_outputs"], "the patch output went back"
    assert all(q["auth"] for q in reqs)
    assert_group_gone(r)


def test_shell_edit_lands(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server({"steps": [{"shell": "printf 'hi\\n' > hello.txt"}, {"message": "done"}]})
    r = run(codex_binary, tmp_path, workspace, srv.base_url)
    assert r.ok, r.error
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert any(e.get("item", {}).get("type") == "command_execution" for e in r.events)


@pytest.mark.parametrize("error", [{"error": 429, "retry_after": 0}, {"error": 500}])
def test_transient_http_error_then_200_recovers(codex_binary, fake_server, tmp_path, workspace, error):
    srv = fake_server({"steps": [error, {"shell": "printf 'hi\\n' > hello.txt"}, {"message": "done"}]})
    r = run(codex_binary, tmp_path, workspace, srv.base_url)
    assert r.ok, r.error
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert "error" in srv.requests()[0]["step_kind"] and len(srv.requests()) == 3


def test_a_401_is_a_setup_failure_at_the_first_request(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server({"steps": [{"error": 401, "code": "invalid_api_key", "message": "Incorrect API key"}]})
    t0 = time.monotonic()
    r = run(codex_binary, tmp_path, workspace, srv.base_url)  # codex itself would retry it (request_max_retries)
    assert not r.ok and r.failure == SETUP, r.error
    assert r.error.startswith(
        f"the key in OPENAI_API_KEY was refused (401 Unauthorized) by [worker] base_url {srv.base_url}: "
        "check OPENAI_API_KEY (the default; [worker] env_key names another)\n"
        '  the transcript\'s line: {"type":"error","message":"Reconnecting... 1/'
    )
    assert "401 Unauthorized: Incorrect API key" in r.error
    assert time.monotonic() - t0 < 15 and len(srv.requests()) == 1
    assert_group_gone(r)


def test_context_window_is_permanent(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server(
        {
            "steps": [
                {
                    "stream_error": {
                        "code": "context_length_exceeded",
                        "message": "Your input exceeds the context window.",
                    }
                }
            ]
        }
    )
    r = run(
        codex_binary, tmp_path, workspace, srv.base_url, extra={"request_max_retries": "1", "stream_max_retries": "1"}
    )
    assert not r.ok and r.failure == PERMANENT, r.error
    assert len(srv.requests()) == 1


def test_exhausted_500_is_transient(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server({"steps": [{"error": 500}]})
    r = run(
        codex_binary, tmp_path, workspace, srv.base_url, extra={"request_max_retries": "1", "stream_max_retries": "1"}
    )
    assert not r.ok and r.failure == TRANSIENT, r.error


def test_a_refused_connection_is_a_setup_failure_without_codex_retrying(codex_binary, closed_port, tmp_path, workspace):
    t0 = time.monotonic()
    url = f"http://127.0.0.1:{closed_port}/v1"
    r = run(codex_binary, tmp_path, workspace, url, extra={"request_max_retries": "4", "stream_max_retries": "5"})
    assert not r.ok and r.failure == SETUP, r.error
    assert r.error.startswith(
        f"nothing answered at 127.0.0.1:{closed_port} ([worker] base_url {url}): the connection was refused or "
        "failed; is the server up?\n  the transcript's line: "
    )
    assert "Connection failed" in r.error
    assert time.monotonic() - t0 < 10  # codex's own five reconnects take about 25 s
    assert_group_gone(r)


def test_a_name_that_does_not_resolve_is_a_setup_failure(codex_binary, tmp_path, workspace):
    r = run(codex_binary, tmp_path, workspace, "http://no-such-host.invalid/v1")
    assert not r.ok and r.failure == SETUP, r.error
    assert r.error.startswith("the name no-such-host.invalid of [worker] base_url http://no-such-host.invalid/v1 ")
    assert_group_gone(r)


def test_a_stream_that_never_answers_ends_at_the_wall_clock_timeout(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server({"steps": [{"hang": True}]})
    t0 = time.monotonic()
    r = run(codex_binary, tmp_path, workspace, srv.base_url, timeout=4, idle_timeout=None)
    took = time.monotonic() - t0
    assert not r.ok and r.failure == TIMEOUT and "wall-clock timeout of 4s" in r.error, r.error
    assert 3.5 < took < 12
    assert_group_gone(r)


def test_hung_stream_ends_at_the_idle_timeout(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server({"steps": [{"hang": True}]})
    t0 = time.monotonic()
    r = run(codex_binary, tmp_path, workspace, srv.base_url, timeout=30, idle_timeout=3)
    assert not r.ok and r.failure == TIMEOUT and "idle" in r.error, r.error
    assert time.monotonic() - t0 < 15
    assert len(srv.requests()) == 1
    assert_group_gone(r)


def test_record_then_replay_a_codex_exchange(codex_binary, fake_server, tmp_path, workspace):
    from runner.workers.replay import record_exchange

    srv = fake_server({"steps": [{"patch": PATCH_ADD}, {"message": "Created hello.txt"}]})
    config = cfg(codex_binary, tmp_path, srv.base_url)
    req = make_request(workspace, config, intent="hello", step_key="c0ffee" * 6)
    live = get_worker(config).run(req)
    assert live.ok, live.error
    record_exchange(tmp_path / "replays", req, live, {"hello.txt": (workspace / "hello.txt").read_text()})
    seen = len(srv.requests())
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    replay = WorkerConfig(kind="replay", replays_dir=str(tmp_path / "replays"))
    r = get_worker(replay).run(make_request(ws2, replay, intent="hello", step_key="c0ffee" * 6))
    assert r.ok and r.final_message == "Created hello.txt" and (ws2 / "hello.txt").read_text() == "hi\n"
    assert r.usage == live.usage and any(e.get("type") == "turn.completed" for e in r.events)
    assert len(srv.requests()) == seen


def test_a_prompt_over_the_argv_limit_goes_through_stdin(codex_binary, fake_server, tmp_path, workspace):
    srv = fake_server([{"match": "BIGPROMPT", "steps": [{"shell": "printf 'hi\\n' > hello.txt"}, {"message": "done"}]}])
    prompt = "BIGPROMPT create hello.txt\n" + "context line\n" * 12_000  # ~156 KB
    r = run(codex_binary, tmp_path, workspace, srv.base_url, prompt=prompt)
    assert r.ok, r.error
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert "context line" in srv.requests()[0]["prompt"]
