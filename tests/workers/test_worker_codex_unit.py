"""The codex worker's subprocess handling, driven by the fake codex executable (fast, no real CLI)."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import pytest
from worker_helpers import alive, group_members, make_request, wait_gone

from runner.workers import get_worker
from runner.workers.base import CONFIG, PERMANENT, SETUP, TIMEOUT, TRANSIENT, WorkerConfig
from runner.workers.codex import build_argv, classify

STARTED = [{"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"}]
DONE = {"type": "turn.completed", "usage": {"input_tokens": 120, "cached_input_tokens": 20, "output_tokens": 7}}


def msg(text):
    return {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": text}}


def failed_turn(text):
    return [*STARTED, {"type": "error", "message": text}, {"type": "turn.failed", "error": {"message": text}}]


def cfg(fake_codex, **kw) -> WorkerConfig:
    base = dict(binary=fake_codex.binary, timeout=20, idle_timeout=10, extra={"kill_grace": "0.5"})
    base.update(kw)
    return WorkerConfig(**base)


def run(fake_codex, workspace, config=None, **env):
    config = config or cfg(fake_codex)
    return get_worker(config).run(make_request(workspace, config, env=fake_codex.env(**env)))


def test_success_parses_message_usage_and_files(fake_codex, workspace, assert_no_leak):
    fake_codex.scenario(lines=[*STARTED, msg("Created hello.txt"), DONE], files={"hello.txt": "hi\n"})
    r = run(fake_codex, workspace)
    assert r.ok, r.error
    assert r.failure is None and r.final_message == "Created hello.txt"
    assert (r.usage.input_tokens, r.usage.cached_input_tokens, r.usage.output_tokens) == (120, 20, 7)
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert r.worker_version == "codex-cli 0.0.0-fake"
    assert r.transcript.count("\n") == 4 and '"turn.completed"' in r.transcript
    assert r.events[-1]["type"] == "runner.exit" and r.events[-1]["exit_code"] == 0


def test_stdin_closed_own_session_and_no_key_in_argv(fake_codex, workspace, assert_no_leak):
    r = run(
        fake_codex,
        workspace,
        cfg(
            fake_codex,
            base_url="http://127.0.0.1:9/v1",
            env_key="CODEX_API_KEY",
            extra={"request_max_retries": "1", "stream_max_retries": "2"},
        ),
    )
    assert r.ok, r.error
    (call,) = fake_codex.records()
    assert call["stdin"] == "eof"  # never an inherited, never-closed stdin
    # a session of its own (start_new_session=True), whose group is the one runner.exit names and runner kills
    # (led by process.TETHER's shell when no journal records it, as here)
    assert call["sid"] == call["pgid"] == r.events[-1]["pid"] != os.getsid(0)
    assert call["cwd"] == str(workspace)
    argv = " ".join(call["argv"])
    assert assert_no_leak not in argv
    assert "CODEX_API_KEY" in call["env_names"]  # the key travels in the env, by name
    assert "model_providers.runner.env_key=CODEX_API_KEY" in call["argv"]
    assert 'model_providers.runner.base_url="http://127.0.0.1:9/v1"' in call["argv"]
    assert "model_providers.runner.request_max_retries=1" in call["argv"]
    assert call["argv"][-2:] == ["--", "create hello.txt containing hi"]
    for flag in ("--json", "--ephemeral", "--skip-git-repo-check", "unbounded_connection_retries", "shell_snapshot"):
        assert flag in call["argv"]


def test_argv_without_provider_uses_builtin():
    argv = build_argv(
        "codex", make_request(__import__("pathlib").Path("/w"), WorkerConfig(model="m1"), "-starts-with-dash"), "m1"
    )
    assert "model_provider=runner" not in argv
    assert argv[argv.index("-m") + 1] == "m1" and argv[-2:] == ["--", "-starts-with-dash"]


def test_missing_env_key_is_a_setup_failure_before_codex_starts(fake_codex, workspace, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    r = run(fake_codex, workspace, cfg(fake_codex, base_url="http://127.0.0.1:9/v1", env_key="MY_KEY"))
    assert r.failure == SETUP
    assert r.error == (
        "the environment variable MY_KEY is not set: codex sends it to http://127.0.0.1:9/v1 "
        "([worker] env_key names the variable)"
    )
    assert fake_codex.records() == []  # codex never started


def test_no_key_for_the_builtin_provider_is_a_setup_failure_unless_logged_in(fake_codex, workspace, tmp_path):
    home = tmp_path / "codex-home"
    config = cfg(fake_codex, extra={"kill_grace": "0.5", "codex_home": str(home)})
    env = {k: v for k, v in fake_codex.env().items() if k not in ("CODEX_API_KEY", "CODEX_HOME")}
    r = get_worker(config).run(make_request(workspace, config, env=env))
    assert r.failure == SETUP and r.error.startswith(
        f"the environment variable CODEX_API_KEY is not set and there is no login in {home}/auth.json: "
        "codex's built-in provider reads it (`codex exec` does not use OPENAI_API_KEY)"
    )
    assert fake_codex.records() == []
    (home / "auth.json").write_text("{}")  # `codex login` wrote one: the login stands in for the key
    assert get_worker(config).run(make_request(workspace, config, env=env)).ok


def test_a_401_stops_codex_at_its_first_report_instead_of_its_retries(fake_codex, workspace):
    line = {"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 Unauthorized: bad key, url: x)"}
    fake_codex.scenario(lines=[*STARTED, line], hang=True)  # codex would go on retrying
    t0 = time.monotonic()
    r = run(fake_codex, workspace, cfg(fake_codex, base_url="http://127.0.0.1:9/v1", env_key="CODEX_API_KEY"))
    assert r.failure == SETUP and time.monotonic() - t0 < 5
    assert r.error == (
        "the key in CODEX_API_KEY was refused (401 Unauthorized) by [worker] base_url http://127.0.0.1:9/v1: "
        "check CODEX_API_KEY ([worker] env_key names it)\n"
        f"  the transcript's line: {json.dumps(line)}"
    )
    (call,) = fake_codex.records()
    assert wait_gone([call["pid"]], 3) == []


def test_no_connection_before_any_answer_is_setup_after_one_it_is_transient(fake_codex, workspace, closed_port):
    refused = "Connection failed: error sending request"
    config = cfg(fake_codex, base_url=f"http://127.0.0.1:{closed_port}/v1", env_key="CODEX_API_KEY")
    fake_codex.scenario(lines=failed_turn(refused), exit=1)
    r = run(fake_codex, workspace, config)
    assert r.failure == SETUP
    assert r.error.startswith(
        f"nothing answered at 127.0.0.1:{closed_port} ([worker] base_url http://127.0.0.1:{closed_port}/v1): "
        "the connection was refused or failed; is the server up?\n  the transcript's line: "
    )
    assert refused in r.error
    answered = {"type": "item.completed", "item": {"id": "r", "type": "reasoning", "text": "thinking"}}
    fake_codex.scenario(lines=[*STARTED, answered, *failed_turn(refused)[2:]], exit=1)
    assert run(fake_codex, workspace, config).failure == TRANSIENT  # the provider was reached: a dropped network


def test_a_name_that_does_not_resolve_is_said_so(fake_codex, workspace):
    fake_codex.scenario(lines=failed_turn("Connection failed: error sending request"), exit=1)
    config = cfg(fake_codex, base_url="http://no-such-host.invalid/v1", env_key="CODEX_API_KEY")
    r = run(fake_codex, workspace, config)
    assert r.failure == SETUP and r.error.startswith(
        "the name no-such-host.invalid of [worker] base_url http://no-such-host.invalid/v1 does not resolve: "
        "check the URL, or the network and DNS"
    )


def test_exit_zero_without_turn_completed_fails(fake_codex, workspace):
    fake_codex.scenario(lines=[*STARTED, msg("I did it")])
    r = run(fake_codex, workspace)
    assert not r.ok and r.failure == TRANSIENT
    assert "without a turn.completed" in r.error


def test_nonzero_exit_with_turn_completed_fails(fake_codex, workspace):
    fake_codex.scenario(lines=[*STARTED, DONE], exit=1)
    assert not run(fake_codex, workspace).ok


def test_output_stopping_mid_line(fake_codex, workspace):
    fake_codex.scenario(lines=STARTED, partial='{"type":"item.comp', exit=1)
    r = run(fake_codex, workspace)
    assert not r.ok and r.failure == TRANSIENT
    assert "mid-line" in r.error
    assert r.transcript.endswith('{"type":"item.comp')


def test_killed_by_signal(fake_codex, workspace):
    fake_codex.scenario(lines=STARTED, signal="SIGKILL")
    r = run(fake_codex, workspace)
    assert not r.ok and r.failure == TRANSIENT and "signal 9" in r.error


def _assert_group_killed(fake_codex, r, kind, started, limit):
    assert not r.ok and r.failure == TIMEOUT, r.error
    assert kind in r.error
    (call,) = fake_codex.records()
    pids = [call["pid"], call["child_pid"]]
    assert wait_gone(pids, 1.0) == [], "the codex process or its grandchild survived"
    assert group_members(call["pgid"]) == []
    assert time.monotonic() - started < limit


def test_wall_clock_timeout_kills_the_process_group(fake_codex, workspace):
    fake_codex.scenario(lines=STARTED, spawn_child=True, line_delay=0.0, hang=True)
    # events keep flowing? no: hang after two lines; idle is long, so the wall clock fires first
    t0 = time.monotonic()
    r = run(fake_codex, workspace, cfg(fake_codex, timeout=2.0, idle_timeout=30))
    _assert_group_killed(fake_codex, r, "wall-clock timeout", t0, 5)


def test_idle_timeout_kills_the_process_group(fake_codex, workspace):
    fake_codex.scenario(lines=STARTED, spawn_child=True, hang=True)
    t0 = time.monotonic()
    r = run(fake_codex, workspace, cfg(fake_codex, timeout=30, idle_timeout=1.5))
    _assert_group_killed(fake_codex, r, "idle timeout", t0, 5)


def test_sigterm_ignored_then_sigkill(fake_codex, workspace):
    fake_codex.scenario(lines=STARTED, spawn_child=True, ignore_sigterm=True, hang=True)
    t0 = time.monotonic()
    r = run(fake_codex, workspace, cfg(fake_codex, timeout=2.0, idle_timeout=None))
    _assert_group_killed(fake_codex, r, "wall-clock timeout", t0, 5)


def test_steady_events_do_not_trip_idle_but_wall_clock_does(fake_codex, workspace):
    lines = STARTED + [{"type": "item.completed", "item": {"type": "reasoning", "text": "."}}] * 80
    fake_codex.scenario(lines=lines, line_delay=0.1, hang=True)
    # idle is generous against a slow interpreter start on a loaded machine; events come every 0.1 s
    r = run(fake_codex, workspace, cfg(fake_codex, timeout=4, idle_timeout=2))
    assert r.failure == TIMEOUT and "wall-clock" in r.error


def test_stray_grandchild_is_reaped_after_success(fake_codex, workspace):
    fake_codex.scenario(lines=[*STARTED, DONE], spawn_child=True)
    r = run(fake_codex, workspace)
    assert r.ok
    (call,) = fake_codex.records()
    assert wait_gone([call["child_pid"]], 1.0) == []


def test_missing_binary_is_a_setup_failure(workspace, tmp_path):
    config = WorkerConfig(binary=str(tmp_path / "nope" / "codex"))
    r = get_worker(config).run(make_request(workspace, config))
    assert not r.ok and r.failure == SETUP
    assert "binary" in r.error and "intents.toml" in r.error


def test_missing_binary_everywhere_says_how_to_install(workspace, monkeypatch):
    import runner.workers.codex as codex

    monkeypatch.setattr(codex.shutil, "which", lambda name: None)
    monkeypatch.setitem(__import__("sys").modules, "codex_cli_bin", None)  # import fails
    config = WorkerConfig()
    r = get_worker(config).run(make_request(workspace, config))
    assert r.failure == SETUP and "pip install openai-codex-cli-bin" in r.error


def test_usage_error_exit_2_is_config(fake_codex, workspace):
    fake_codex.scenario(lines=[], stderr="error: unexpected argument '--full-auto' found\n", exit=2)
    r = run(fake_codex, workspace)
    assert r.failure == CONFIG and "--full-auto" in r.error


def test_untrusted_directory_is_config(fake_codex, workspace):
    fake_codex.scenario(
        lines=[], stderr="Not inside a trusted directory and --skip-git-repo-check was not specified.\n", exit=1
    )
    assert run(fake_codex, workspace).failure == CONFIG


@pytest.mark.parametrize(
    "text,kind",
    [
        ("exceeded retry limit, last status: 429 Too Many Requests", TRANSIENT),
        ("We're currently experiencing high demand, which may cause temporary errors.", TRANSIENT),
        ("stream disconnected before completion: error sending request", TRANSIENT),
        ("Connection failed: error sending request for url (http://127.0.0.1:40123/v1/responses)", TRANSIENT),
        ("Reconnecting... 2/5 (stream disconnected before completion)", TRANSIENT),
        ("unexpected status 401 Unauthorized: bad key, url: http://127.0.0.1:42911/v1/responses", PERMANENT),
        ("exceeded retry limit, last status: 401 Unauthorized", PERMANENT),
        ("unexpected status 403 Forbidden", PERMANENT),
        (
            "Codex ran out of room in the model's context window. Start a new thread or clear earlier history.",
            PERMANENT,
        ),
        ('unexpected status 400 Bad Request: {"error":{"type":"invalid_request_error"}}', PERMANENT),
        ('`wire_api = "chat"` is no longer supported', CONFIG),
        ("Not inside a trusted directory and --skip-git-repo-check was not specified.", CONFIG),
        ("error: unexpected argument '--full-auto' found", CONFIG),
        ('Error finding codex home: CODEX_HOME points to "/x", but that path does not exist', CONFIG),
        ("something nobody has seen before", None),
    ],
)
def test_classify_error_texts(text, kind):
    assert classify(text) == kind


def test_url_ports_do_not_classify():
    assert classify("stream error at http://127.0.0.1:40100/v1/responses") is None


@pytest.mark.parametrize(
    "text,kind",
    [
        ("exceeded retry limit, last status: 429 Too Many Requests", TRANSIENT),
        ("unexpected status 401 Unauthorized: Incorrect API key", SETUP),
        ("Codex ran out of room in the model's context window.", PERMANENT),
    ],
)
def test_turn_failed_is_classified(fake_codex, workspace, text, kind):
    fake_codex.scenario(lines=failed_turn(text), exit=1)
    r = run(fake_codex, workspace)
    assert not r.ok and r.failure == kind and text in r.error


def test_model_not_found_falls_back(fake_codex, workspace, tmp_path):
    # the fake can't tell models apart, so a model-missing failure is tried once per model then reported
    fake_codex.scenario(lines=failed_turn("unexpected status 404 Not Found: model_not_found"), exit=1)
    r = run(fake_codex, workspace, cfg(fake_codex, model="m-new", fallback_models=("m-old",)))
    assert r.failure == PERMANENT
    models = [c["argv"][c["argv"].index("-m") + 1] for c in fake_codex.records()]
    assert models == ["m-new", "m-old"] and r.model == "m-old"


def test_secrets_are_redacted_from_transcript_and_error(fake_codex, workspace, assert_no_leak):
    key = assert_no_leak
    fake_codex.scenario(
        lines=failed_turn("401 Unauthorized: Incorrect API key provided: ${ENV:CODEX_API_KEY}"),
        stderr="debug: key=" + "${ENV:OPENAI_API_KEY}",
        exit=1,
    )
    r = run(fake_codex, workspace)
    blob = r.transcript + r.error + repr(r.events)
    assert key not in blob and "[REDACTED:OPENAI_API_KEY]" in blob


def test_version_is_cached(fake_codex):
    w = get_worker("codex")
    c = cfg(fake_codex)
    assert w.version(c) == "codex-cli 0.0.0-fake"
    assert alive(__import__("os").getpid())


def test_a_huge_prompt_goes_through_a_closed_stdin(fake_codex, workspace):
    config = cfg(fake_codex)
    prompt = "x" * 300_000  # over Linux's 128 KiB limit for one argv string
    r = get_worker(config).run(make_request(workspace, config, prompt, env=fake_codex.env()))
    assert r.ok, r.error
    (call,) = fake_codex.records()
    assert call["argv"][-1] == "-" and call["stdin_prompt_len"] == 300_000 and call["stdin"] == "eof"


def test_cancel_event_stops_the_group(fake_codex, workspace):
    import threading

    fake_codex.scenario(lines=STARTED, spawn_child=True, hang=True)
    config = cfg(fake_codex, timeout=30, idle_timeout=None)
    cancel = threading.Event()
    req = dataclasses.replace(make_request(workspace, config, env=fake_codex.env()), cancel=cancel)
    threading.Timer(1.5, cancel.set).start()
    t0 = time.monotonic()
    r = get_worker(config).run(req)
    assert r.failure == TIMEOUT and r.error.startswith("cancelled")
    _assert_group_killed(fake_codex, r, "cancelled", t0, 6)


def test_interrupt_in_the_runner_kills_the_group_and_propagates(fake_codex, workspace, monkeypatch):
    from runner.workers.codex import CodexWorker

    fake_codex.scenario(lines=STARTED, spawn_child=True, hang=True)

    def interrupted(proc, lines, raw_lines, cfg, deadline, cancel, *watch):
        end = time.monotonic() + 5
        while not fake_codex.records() and time.monotonic() < end:
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(CodexWorker, "_pump", staticmethod(interrupted))
    with pytest.raises(KeyboardInterrupt):
        run(fake_codex, workspace)
    (call,) = fake_codex.records()
    assert wait_gone([call["pid"], call["child_pid"]], 3) == []
    assert group_members(call["pgid"]) == []
