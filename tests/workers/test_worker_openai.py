"""The openai worker against the fake Responses server: retries, fallback models, timeouts, classification and
the delimited protocol parsed by the regex library."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from worker_helpers import make_request

from runner.workers import get_worker
from runner.workers.base import PERMANENT, SETUP, TIMEOUT, TRANSIENT, WorkerConfig
from runner.workers.openai import OpenAIWorker, parse_answer

GOOD = (
    "Here you go.\n<<MIS:START>>\n<<MIS:FILE path=src/app.py>>\nprint('hi')\n"
    '<<MIS:FILE path="docs/read me.md">>\n# Title\n<<MIS:JSON>>\n{"summary": "added app", '
    '"delete": ["old.txt"]}\n<<MIS:END>>\n'
)


def cfg(server, **kw) -> WorkerConfig:
    base = dict(
        kind="openai",
        model="gpt-5.5",
        fallback_models=(),
        base_url=server.base_url,
        timeout=10,
        idle_timeout=10,
        extra={"max_retries": "2"},
    )
    base.update(kw)
    return WorkerConfig(**base)


def run(server, workspace, prompt="write the app", **kw):
    config = cfg(server, **kw)
    return get_worker(config).run(make_request(workspace, config, prompt))


def test_success_parses_files_json_and_usage(fake_server, workspace, assert_no_leak):
    srv = fake_server(
        {"steps": [{"message": GOOD, "usage": {"input_tokens": 50, "output_tokens": 20, "cached_tokens": 5}}]}
    )
    r = run(srv, workspace)
    assert r.ok, r.error
    assert r.files == {"src/app.py": "print('hi')\n", "docs/read me.md": "# Title\n", "old.txt": None}
    assert (r.usage.input_tokens, r.usage.cached_input_tokens, r.usage.output_tokens) == (50, 5, 20)
    assert r.final_message == GOOD and r.model == "gpt-5.5"
    assert r.worker_version.startswith("openai-python ")
    assert "response.completed" in r.transcript
    (req,) = srv.requests()
    assert req["auth"] and req["stream"] and "<<MIS:START>>" in req["body"]["instructions"]
    assert not list(workspace.iterdir()), "the worker never writes the files itself"


def test_a_call_never_imports_the_openai_sdk(fake_server, workspace):
    srv = fake_server({"steps": [{"message": GOOD}]})
    code = (
        "import sys; from pathlib import Path; from runner.workers.openai import OpenAIWorker; "
        "from runner.workers.base import WorkerConfig, WorkerRequest; "
        f"c = WorkerConfig(kind='openai', base_url={srv.base_url!r}, timeout=10); "
        f"r = OpenAIWorker().run(WorkerRequest('p', Path({str(workspace)!r}), 'i', 'k', c)); "
        "assert r.ok, r.error; assert 'openai' not in sys.modules, 'the SDK was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_non_streaming_mode(fake_server, workspace):
    srv = fake_server({"steps": [{"message": GOOD}]})
    r = run(srv, workspace, extra={"stream": "false"})
    assert r.ok and r.files["src/app.py"] == "print('hi')\n"
    assert srv.requests()[0]["stream"] is False


def test_429_then_200_is_retried(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 429, "retry_after": 0, "code": "rate_limit_exceeded"}, {"message": GOOD}]})
    r = run(srv, workspace)
    assert r.ok, r.error
    reqs = srv.requests()
    assert len(reqs) == 2 and reqs[0]["body"] == reqs[1]["body"] and all(q["auth"] for q in reqs)


def test_the_server_s_retry_after_ms_sets_the_wait(fake_server, workspace):
    # the backoff of its own would wait 0.375-0.5 s before the first retry
    srv = fake_server({"steps": [{"error": 503, "headers": {"retry-after-ms": "20"}}, {"message": GOOD}]})
    assert run(srv, workspace).ok
    first, second = srv.requests()
    assert second["ts"] - first["ts"] < 0.3


def test_the_server_s_x_should_retry_false_is_obeyed(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 500, "headers": {"x-should-retry": "false"}}, {"message": GOOD}]})
    r = run(srv, workspace)
    assert r.failure == TRANSIENT and "InternalServerError 500" in r.error
    assert len(srv.requests()) == 1


def test_429_forever_is_transient(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 429, "retry_after": 0}]})
    r = run(srv, workspace, extra={"max_retries": "1"})
    assert r.failure == TRANSIENT and "RateLimitError 429" in r.error
    assert len(srv.requests()) == 2


def test_500_then_200_is_retried(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 500}, {"message": GOOD}]})
    assert run(srv, workspace).ok


def test_fallback_model_on_model_not_found(fake_server, workspace):
    srv = fake_server({"scripts": [{"steps": [{"message": GOOD}]}], "reject_models": ["gpt-missing"]})
    r = run(srv, workspace, model="gpt-missing", fallback_models=("gpt-5.5",))
    assert r.ok, r.error
    assert r.model == "gpt-5.5"
    assert [q["model"] for q in srv.requests()] == ["gpt-missing", "gpt-5.5"]


def test_all_models_missing_is_permanent(fake_server, workspace):
    srv = fake_server({"scripts": [{"steps": [{"message": GOOD}]}], "reject_models": ["a", "b"]})
    r = run(srv, workspace, model="a", fallback_models=("b",))
    assert r.failure == PERMANENT and "tried a, b" in r.error


def test_timeout_when_the_server_is_slower(fake_server, workspace):
    srv = fake_server({"steps": [{"delay": 3, "message": GOOD}]})
    t0 = time.monotonic()
    r = run(srv, workspace, timeout=0.5, idle_timeout=0.5, extra={"max_retries": "0"})
    assert r.failure == TIMEOUT and "0.5s" in r.error
    assert time.monotonic() - t0 < 2.5


def test_hung_stream_times_out(fake_server, workspace):
    srv = fake_server({"steps": [{"hang": True}]})
    t0 = time.monotonic()
    r = run(srv, workspace, timeout=0.7, idle_timeout=0.7, extra={"max_retries": "0"})
    assert r.failure == TIMEOUT
    assert time.monotonic() - t0 < 3


def test_a_refused_connection_at_the_first_request_is_a_setup_failure_without_retries(closed_port, workspace):
    url = f"http://127.0.0.1:{closed_port}/v1"
    config = WorkerConfig(kind="openai", base_url=url, timeout=5, extra={"max_retries": "5"})
    t0 = time.monotonic()
    r = OpenAIWorker().run(make_request(workspace, config))  # a fresh worker: no provider has answered it yet
    assert r.failure == SETUP and time.monotonic() - t0 < 1.5, r.error  # the SDK's 5 retries would back off ~8 s
    assert r.error == (
        f"nothing answered at 127.0.0.1:{closed_port} ([worker] base_url {url}): the connection was refused or "
        "failed; is the server up?\n"
        f'  the transcript\'s line: {{"type": "connect.error", "url": "{url}/responses", '
        '"error": "ConnectError: [Errno 111] Connection refused"}'
    )
    assert r.transcript.startswith('{"type": "connect.error"')


def test_a_name_that_does_not_resolve_is_a_setup_failure(workspace):
    config = WorkerConfig(kind="openai", base_url="http://no-such-host.invalid/v1", timeout=5)
    r = OpenAIWorker().run(make_request(workspace, config))
    assert r.failure == SETUP and r.error.startswith(
        "the name no-such-host.invalid of [worker] base_url http://no-such-host.invalid/v1 does not resolve"
    )


def test_once_the_provider_answered_a_refused_connection_is_transient(fake_server, workspace):
    srv = fake_server({"steps": [{"message": GOOD}]})
    worker = OpenAIWorker()
    config = cfg(srv, extra={"max_retries": "0"})
    assert worker.run(make_request(workspace, config)).ok
    srv.stop()  # the same base_url, nobody listening now: the network dropped, the set-up is fine
    r = worker.run(make_request(workspace, config))
    assert r.failure == TRANSIENT and "could not reach" in r.error


def test_a_401_is_a_setup_failure_naming_the_variable(fake_server, workspace, monkeypatch):
    srv = fake_server({"steps": [{"error": 401, "code": "invalid_api_key", "message": "Incorrect API key"}]})
    config = cfg(srv, env_key="MY_OPENAI_KEY")
    monkeypatch.setenv("MY_OPENAI_KEY", "sk-" + "x" * 20)
    r = get_worker(config).run(make_request(workspace, config))
    assert r.failure == SETUP
    assert r.error.startswith(
        f"the key in MY_OPENAI_KEY was refused (401 Unauthorized) by [worker] base_url {srv.base_url}: "
        "check MY_OPENAI_KEY ([worker] env_key names it)\n"
        f'  the transcript\'s line: {{"type": "http.error", "status": 401, "url": "{srv.base_url}/responses", '
    )
    assert "Incorrect API key" in r.error and "x" * 20 not in r.error
    assert len(srv.requests()) == 1


@pytest.mark.parametrize(
    "step,kind,text",
    [
        ({"error": 400, "code": "invalid_value", "message": "bad field"}, PERMANENT, "BadRequestError"),
        ({"error": 403}, PERMANENT, "PermissionDeniedError"),
        ({"error": 422}, PERMANENT, "UnprocessableEntityError"),
        (
            {"error": 429, "code": "insufficient_quota", "type": "insufficient_quota", "retry_after": 0},
            PERMANENT,
            "out of quota",
        ),
        ({"error": 409}, TRANSIENT, "ConflictError"),
        (
            {"stream_error": {"code": "context_length_exceeded", "message": "too long"}},
            PERMANENT,
            "context_length_exceeded",
        ),
        ({"stream_error": {"code": "server_error", "message": "oops"}}, TRANSIENT, "server_error"),
        ({"drop_stream": True}, TRANSIENT, ""),
    ],
)
def test_classification(fake_server, workspace, step, kind, text):
    srv = fake_server({"steps": [step]})
    r = run(srv, workspace, extra={"max_retries": "0"})
    assert not r.ok and r.failure == kind, r.error
    assert text in r.error


def test_a_cancelled_step_stops_while_it_waits_to_retry(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 429, "retry_after": 30}]})  # the server asks for 30 s
    config = cfg(srv)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    r = get_worker(config).run(make_request(workspace, config, cancel=cancel))
    assert r.failure == TIMEOUT and r.error == "cancelled by the runner while the call waited to retry"
    assert time.monotonic() - t0 < 3 and len(srv.requests()) == 1


def test_a_cancelled_step_stops_while_the_answer_streams(fake_server, workspace):
    srv = fake_server({"steps": [{"message": GOOD}]})
    config = cfg(srv)
    cancel = threading.Event()
    cancel.set()
    r = get_worker(config).run(make_request(workspace, config, cancel=cancel))
    assert r.failure == TIMEOUT and r.error == "cancelled by the runner while the answer was streaming"
    assert r.transcript.startswith('{"type": "response.created"') and len(r.events) == 1


def test_permanent_errors_are_not_retried(fake_server, workspace):
    srv = fake_server({"steps": [{"error": 401}]})
    run(srv, workspace)
    assert len(srv.requests()) == 1


def test_missing_key_is_a_setup_failure(fake_server, workspace, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    srv = fake_server({"steps": [{"message": GOOD}]})
    r = run(srv, workspace, env_key="NO_SUCH_KEY")
    assert r.failure == SETUP and r.error == (
        f"the environment variable NO_SUCH_KEY is not set: the openai worker sends it to {srv.base_url} "
        "([worker] env_key names it)"
    )
    assert srv.requests() == []


def test_err_block_is_permanent(fake_server, workspace):
    srv = fake_server({"steps": [{"message": "<<MIS:START>>\n<<MIS:ERR>>\nthe file does not exist\n<<MIS:END>>"}]})
    r = run(srv, workspace)
    assert r.failure == PERMANENT and "the file does not exist" in r.error


@pytest.mark.parametrize(
    "answer,problem",
    [
        ("<<MIS:START>>\n<<MIS:FILE path=a.py>>\nx = 1\n", "cut off"),
        ("<<MIS:START>>\n<<MIS:FILE>>\nx = 1\n<<MIS:END>>", "FILE needs path"),
        ("I made the change.", "not in the protocol"),
        ("<<MIS:START>>\n<<MIS:FILE path=../../etc/passwd>>\nx\n<<MIS:END>>", "not a relative path"),
        ("<<MIS:START>>\n<<MIS:FILE path=/etc/passwd>>\nx\n<<MIS:END>>", "not a relative path"),
        ("<<MIS:START>>\n<<MIS:JSON>>\n{not json\n<<MIS:END>>", "not valid JSON"),
    ],
)
def test_malformed_answers_are_transient(fake_server, workspace, answer, problem):
    srv = fake_server({"steps": [{"message": answer}]})
    r = run(srv, workspace)
    assert r.failure == TRANSIENT and problem in r.error and "malformed" in r.error


def test_malformed_then_good_on_the_next_attempt(fake_server, workspace):
    # the same prompt is one conversation on the fake server: attempt 2 gets the next step
    srv = fake_server({"steps": [{"message": "no protocol"}, {"message": GOOD}]})
    assert run(srv, workspace).failure == TRANSIENT
    assert run(srv, workspace).ok


def test_parse_answer_keeps_content_exactly():
    ans = parse_answer("<<MIS:START>>\n<<MIS:FILE path=a.txt>>\nno newline at end<<MIS:END>>")
    # a marker must stand alone on its line: this END is part of the content, so the answer is cut off
    assert ans.problem and "cut off" in ans.problem
    ans = parse_answer("<<MIS:START>>\n<<MIS:FILE path=empty.txt>>\n<<MIS:FILE path=b.txt>>\n\n\nx\n<<MIS:END>>")
    assert ans.problem is None and ans.files == {"empty.txt": "", "b.txt": "\n\nx\n"}


def test_key_never_reaches_disk(fake_server, workspace, assert_no_leak, tmp_path):
    srv = fake_server()  # the script holds the key, so it goes over HTTP rather than into tmp_path
    srv.script({"steps": [{"message": GOOD.replace("print('hi')", "KEY = '" + assert_no_leak + "'")}]})
    r = run(srv, workspace)
    assert r.ok
    assert assert_no_leak not in r.transcript + r.final_message + repr(r.files) + repr(r.events)
    (tmp_path / "transcript.jsonl").write_text(r.transcript)
