"""The fake Responses server itself: tool forms, script matching, conversations, the request log."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest


def post(srv, body: dict, headers: dict | None = None):
    req = urllib.request.Request(
        srv.base_url + "/responses",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-secret-x", **(headers or {})},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers, r.read().decode()


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def tool(name, kind="function"):
    return {"type": kind, "name": name}


@pytest.mark.parametrize(
    "tools,name,args",
    [
        ([tool("exec_command")], "exec_command", {"cmd": "ls", "yield_time_ms": 10000}),
        ([tool("shell_command")], "shell_command", {"command": "ls"}),
        ([tool("shell")], "shell", {"command": ["bash", "-lc", "ls"]}),
    ],
)
def test_shell_step_uses_the_offered_tool(fake_server, tools, name, args):
    srv = fake_server({"steps": [{"shell": "ls"}]})
    _, _, body = post(srv, {"model": "m", "stream": False, "input": "go", "tools": tools})
    (item,) = json.loads(body)["output"]
    assert item["type"] == "function_call" and item["name"] == name and json.loads(item["arguments"]) == args


def test_patch_is_a_custom_tool_when_offered_else_a_shell_fallback(fake_server):
    patch = "*** Begin Patch\n*** Add File: d/a.txt\n+one\n+two\n*** Delete File: b.txt\n*** End Patch\n"
    srv = fake_server({"steps": [{"patch": patch}]})
    _, _, body = post(
        srv,
        {"model": "m", "stream": False, "input": "a", "tools": [tool("apply_patch", "custom"), tool("exec_command")]},
    )
    (item,) = json.loads(body)["output"]
    assert item["type"] == "custom_tool_call" and item["input"] == patch
    _, _, body = post(srv, {"model": "m", "stream": False, "input": "b", "tools": [tool("exec_command")]})
    (item,) = json.loads(body)["output"]
    cmd = json.loads(item["arguments"])["cmd"]
    assert "base64 -d > 'd/a.txt'" in cmd and "rm -f 'b.txt'" in cmd


def test_streaming_event_order_and_usage(fake_server):
    srv = fake_server(
        {
            "steps": [
                {"shell": "ls", "message": "done", "usage": {"input_tokens": 7, "output_tokens": 2, "cached_tokens": 1}}
            ]
        }
    )
    status, headers, text = post(srv, {"model": "m", "stream": True, "input": "x", "tools": [tool("shell")]})
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    types = [e["type"] for e in sse_events(text)]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types and types.count("response.output_item.done") == 2
    usage = sse_events(text)[-1]["response"]["usage"]
    assert usage["input_tokens"] == 7 and usage["input_tokens_details"]["cached_tokens"] == 1


def test_scripts_match_prompts_and_conversations_advance(fake_server):
    srv = fake_server(
        [{"match": "alpha", "steps": [{"message": "A1"}, {"message": "A2"}]}, {"steps": [{"message": "default"}]}]
    )

    def ask(prompt, session=None):
        _, _, body = post(
            srv,
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]},
            {"session-id": session} if session else None,
        )
        return json.loads(body)["output"][0]["content"][0]["text"]

    assert [ask("do alpha"), ask("do alpha"), ask("do alpha")] == ["A1", "A2", "A2"]  # the last step repeats
    assert ask("do alpha", session="s1") == "A1"  # a new thread starts its script again
    assert ask("something else") == "default"
    srv.reset()
    assert ask("do alpha") == "A1" and len(srv.requests()) == 1


def test_http_error_with_retry_after_and_rejected_models(fake_server):
    srv = fake_server(
        {
            "scripts": [{"steps": [{"error": 429, "retry_after": 2, "code": "rate_limit_exceeded"}]}],
            "reject_models": ["nope"],
        }
    )
    with pytest.raises(urllib.error.HTTPError) as e:
        post(srv, {"model": "m", "input": "x"})
    assert e.value.code == 429 and e.value.headers["Retry-After"] == "2"
    assert json.loads(e.value.read())["error"]["code"] == "rate_limit_exceeded"
    with pytest.raises(urllib.error.HTTPError) as e:
        post(srv, {"model": "nope", "input": "x"})
    assert e.value.code == 404 and json.loads(e.value.read())["error"]["code"] == "model_not_found"


def test_stream_error_and_unmatched_prompt(fake_server):
    srv = fake_server([{"match": "ctx", "steps": [{"stream_error": {"code": "context_length_exceeded"}}]}])
    _, _, text = post(srv, {"model": "m", "stream": True, "input": "ctx please"})
    last = sse_events(text)[-1]
    assert last["type"] == "response.failed" and last["response"]["error"]["code"] == "context_length_exceeded"
    with pytest.raises(urllib.error.HTTPError) as e:
        post(srv, {"model": "m", "input": "unrelated"})
    assert e.value.code == 500 and b"no script matches" in e.value.read()


def test_log_redacts_authorization(fake_server):
    srv = fake_server()
    post(srv, {"model": "m", "stream": False, "input": "hello", "tools": [tool("exec_command")]})
    (entry,) = [json.loads(line) for line in srv.log.read_text().splitlines()]
    assert entry["headers"]["authorization"] == "[REDACTED]" and entry["auth"] is True
    assert "sk-secret-x" not in srv.log.read_text() and entry["prompt"] == "hello"
    assert entry["step_kind"] == ["shell"]  # the default script: shell, then the message
