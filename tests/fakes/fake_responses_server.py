#!/usr/bin/env python3
"""A scripted fake of the OpenAI Responses API on 127.0.0.1, for Codex CLI and openai-SDK tests (stdlib only).

Run:  fake_responses_server.py --port 0 [--script FILE] [--log FILE]
The first stdout line is `listening PORT`. Speaks POST /v1/responses (SSE when "stream": true, JSON otherwise),
GET /__requests (what it saw), POST /__reset (forget conversations), POST /__script (replace the scripts).

A script file is {"steps": [...]} or a list of {"match": "substring of the prompt", "steps": [...]} (first match
wins, an entry without "match" matches anything), or {"scripts": [...], "reject_models": [...]}. Models in
reject_models get 404 model_not_found without consuming a step. A conversation (one Codex thread: `session-id` /
`thread-id` header; otherwise the first user input text) takes its script on its first request and is served one
step per request; after the last step, the last step repeats (so "401 forever" is one step). Steps:

  {"shell": "cmd"}                a call of whichever shell tool the request offers (exec_command/shell_command/shell)
  {"patch": "*** Begin Patch…"}   apply_patch as a custom tool (or function) when offered, else a shell fallback
  {"message": "text"}             the final assistant message (combinable with shell/patch)
  {"output": [items…]}            raw output items
  {"error": 429, "retry_after": 1, "headers": {}, "message": "…", "code": "…", "type": "…"}   an HTTP error
  {"stream_error": {"code": "context_length_exceeded", "message": "…"}}   response.failed in the stream
  {"drop_stream": true}           response.created, then the connection closes
  {"hang": true}                  headers and response.created, then nothing until the server stops
  {"delay": 3}                    sleep first (combinable with anything)
  "usage": {"input_tokens": N, "output_tokens": M, "cached_tokens": K}    optional on any step
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_SCRIPT = [{"steps": [{"shell": "printf 'hi\\n' > hello.txt"}, {"message": "Created hello.txt containing hi."}]}]
SHELL_TOOLS = ("exec_command", "shell_command", "shell")


class State:
    """Everything the handlers share, behind one lock."""

    def __init__(self, scripts: list[dict], reject_models: list[str], log_path: str | None) -> None:
        self.lock = threading.Lock()
        self.scripts, self.reject_models = scripts, reject_models
        self.conversations: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.log_path = log_path
        self.stopping = threading.Event()

    def load(self, data) -> None:
        scripts, reject = parse_script(data)
        with self.lock:
            self.scripts, self.reject_models = scripts, reject
            self.conversations.clear()

    def record(self, entry: dict) -> None:
        with self.lock:
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")


def parse_script(data) -> tuple[list[dict], list[str]]:
    reject: list[str] = []
    if isinstance(data, dict) and "scripts" in data:
        reject = list(data.get("reject_models", []))
        data = data["scripts"]
    elif isinstance(data, dict):
        reject = list(data.get("reject_models", []))
        data = [data]
    return list(data), reject


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return out


def user_texts(body: dict) -> list[str]:
    """The user-role texts of a request, in order (a plain string input counts as one)."""
    inp = body.get("input")
    if isinstance(inp, str):
        return [inp]
    out = []
    for item in inp or []:
        if isinstance(item, dict) and item.get("role") == "user":
            out.extend(_texts(item.get("content")))
    return out


def tool_outputs(body: dict) -> list[dict]:
    inp = body.get("input")
    if not isinstance(inp, list):
        return []
    return [
        {"call_id": i.get("call_id"), "output": i.get("output")}
        for i in inp
        if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")
    ]


def offered_tools(body: dict) -> dict[str, str]:
    """name -> type ("function" | "custom") of the tools the request offers."""
    out = {}
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("name"):
            out[t["name"]] = t.get("type", "function")
    return out


def shell_call(cmd: str, tools: dict[str, str]) -> dict:
    """A function_call for `cmd` in the first shell tool the request offers."""
    name = next((n for n in SHELL_TOOLS if n in tools), "exec_command")
    if name == "exec_command":
        args = {"cmd": cmd, "yield_time_ms": 10000}
    elif name == "shell_command":
        args = {"command": cmd}
    else:
        args = {"command": ["bash", "-lc", cmd]}
    return {
        "type": "function_call",
        "id": "fc_" + uuid.uuid4().hex[:12],
        "call_id": "call_" + uuid.uuid4().hex[:12],
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


def patch_as_shell(patch: str) -> str:
    """Add/Delete hunks as a shell line, for requests that offer no apply_patch tool."""
    cmds, path, lines = [], None, []

    def flush():
        if path is not None:
            data = base64.b64encode("".join(line + "\n" for line in lines).encode()).decode()
            cmds.append(f"mkdir -p \"$(dirname '{path}')\" && printf %s {data} | base64 -d > '{path}'")

    for line in patch.splitlines():
        if m := re.match(r"\*\*\* Add File: (.+)", line):
            flush()
            path, lines = m.group(1).strip(), []
        elif m := re.match(r"\*\*\* Delete File: (.+)", line):
            flush()
            path = None
            cmds.append(f"rm -f '{m.group(1).strip()}'")
        elif m := re.match(r"\*\*\* Update File: (.+)", line):
            flush()
            path = None
            cmds.append("echo 'fake server: Update hunks need the apply_patch tool' >&2; exit 1")
        elif line.startswith("*** "):
            flush()
            path = None
        elif path is not None and line.startswith("+"):
            lines.append(line[1:])
    flush()
    return " && ".join(cmds) or "true"


def patch_call(patch: str, tools: dict[str, str]) -> dict:
    call_id = "call_" + uuid.uuid4().hex[:12]
    if tools.get("apply_patch") == "custom":
        return {
            "type": "custom_tool_call",
            "id": "ctc_" + uuid.uuid4().hex[:12],
            "call_id": call_id,
            "name": "apply_patch",
            "input": patch,
            "status": "completed",
        }
    if "apply_patch" in tools:
        return {
            "type": "function_call",
            "id": "fc_" + uuid.uuid4().hex[:12],
            "call_id": call_id,
            "name": "apply_patch",
            "arguments": json.dumps({"input": patch}),
            "status": "completed",
        }
    return shell_call(patch_as_shell(patch), tools)


def message_item(text: str) -> dict:
    return {
        "type": "message",
        "id": "msg_" + uuid.uuid4().hex[:12],
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def build_output(step: dict, tools: dict[str, str]) -> list[dict]:
    items = list(step.get("output", []))
    if "patch" in step:
        items.append(patch_call(step["patch"], tools))
    if "shell" in step:
        items.append(shell_call(step["shell"], tools))
    if "message" in step:
        items.append(message_item(step["message"]))
    return items


def usage_for(step: dict, body_len: int, items: list[dict]) -> dict:
    u = step.get("usage") or {}
    inp = int(u.get("input_tokens", body_len // 4))
    out = int(u.get("output_tokens", max(1, len(json.dumps(items)) // 4)))
    cached = int(u.get("cached_tokens", u.get("cached_input_tokens", 0)))
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


def response_obj(rid: str, model: str, status: str, output: list, usage: dict | None, error=None) -> dict:
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
        "error": error,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "text": {"format": {"type": "text"}},
    }


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: tests read /__requests or --log instead
            pass

        # ----- plumbing -----
        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                raw = gzip.decompress(raw)
            return raw

        def _json(self, status: int, obj, headers: dict | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, str(v))
            self.end_headers()
            self.wfile.write(data)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _sse(self, seq: list[int], event: dict) -> None:
            event = dict(event, sequence_number=seq[0])
            seq[0] += 1
            self._chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

        # ----- routes -----
        def do_GET(self):
            if self.path.rstrip("/") == "/__requests":
                with state.lock:
                    return self._json(200, list(state.requests))
            self._json(404, {"error": {"message": f"no route GET {self.path}", "type": "invalid_request_error"}})

        def do_POST(self):
            body = self._body()
            if self.path.rstrip("/") == "/__reset":
                with state.lock:
                    state.conversations.clear()
                    state.requests.clear()
                return self._json(200, {"ok": True})
            if self.path.rstrip("/") == "/__script":
                state.load(json.loads(body or b"{}"))
                return self._json(200, {"ok": True})
            if self.path.rstrip("/").endswith("/responses"):
                return self.serve_responses(body)
            self._json(404, {"error": {"message": f"no route POST {self.path}", "type": "invalid_request_error"}})

        def serve_responses(self, raw: bytes) -> None:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            model = body.get("model", "")
            texts = user_texts(body)
            conv_id = self.headers.get("session-id") or self.headers.get("thread-id") or (texts[0] if texts else "")
            headers = {
                k.lower(): ("[REDACTED]" if k.lower() == "authorization" else v) for k, v in self.headers.items()
            }
            entry = {
                "ts": time.time(),
                "path": self.path,
                "model": model,
                "stream": bool(body.get("stream")),
                "conversation": conv_id[:200],
                "headers": headers,
                "auth": bool(self.headers.get("Authorization")),
                "prompt": texts[-1] if texts else "",
                "tools": sorted(offered_tools(body)),
                "tool_outputs": tool_outputs(body),
                "body": body,
            }
            with state.lock:
                if model in state.reject_models:
                    step, index = (
                        {
                            "error": 404,
                            "code": "model_not_found",
                            "type": "invalid_request_error",
                            "message": f"The model `{model}` does not exist or you do not have access to it.",
                        },
                        -1,
                    )
                else:
                    conv = state.conversations.get(conv_id)
                    if conv is None:
                        joined = "\n".join(texts)
                        script = next((s for s in state.scripts if s.get("match", "") in joined), None)
                        conv = state.conversations[conv_id] = {
                            "steps": (script or {}).get("steps")
                            or [{"error": 500, "message": "fake server: no script matches this prompt"}],
                            "next": 0,
                        }
                    index = min(conv["next"], len(conv["steps"]) - 1)
                    conv["next"] += 1
                    step = conv["steps"][index]
            entry["step"] = index
            entry["step_kind"] = sorted(k for k in step if k not in ("usage", "delay"))
            state.record(entry)
            if step.get("delay"):
                state.stopping.wait(float(step["delay"]))
            self.serve_step(step, body, len(raw))

        def serve_step(self, step: dict, body: dict, body_len: int) -> None:
            model = body.get("model", "")
            if "error" in step:
                status = int(step["error"])
                hdrs = dict(step.get("headers", {}))
                if "retry_after" in step:
                    hdrs["Retry-After"] = step["retry_after"]
                err = {
                    "message": step.get("message", f"fake server error {status}"),
                    "type": step.get("type", "server_error" if status >= 500 else "invalid_request_error"),
                    "param": None,
                    "code": step.get("code"),
                }
                return self._json(status, {"error": err}, hdrs)
            tools = offered_tools(body)
            items = build_output(step, tools)
            usage = usage_for(step, body_len, items)
            rid = "resp_" + uuid.uuid4().hex[:16]
            if not body.get("stream"):
                if "stream_error" in step:
                    e = step["stream_error"]
                    return self._json(
                        500,
                        {
                            "error": {
                                "message": e.get("message", ""),
                                "type": "server_error",
                                "param": None,
                                "code": e.get("code"),
                            }
                        },
                    )
                return self._json(200, response_obj(rid, model, "completed", items, usage))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            seq = [0]
            try:
                self._sse(
                    seq, {"type": "response.created", "response": response_obj(rid, model, "in_progress", [], None)}
                )
                if step.get("hang"):
                    state.stopping.wait()
                    self.close_connection = True
                    return
                if step.get("drop_stream"):
                    self.close_connection = True  # no terminal chunk: the client sees a truncated stream
                    return
                if "stream_error" in step:
                    e = step["stream_error"]
                    error = {"code": e.get("code", "server_error"), "message": e.get("message", "failed")}
                    self._sse(
                        seq,
                        {"type": "response.failed", "response": response_obj(rid, model, "failed", [], None, error)},
                    )
                    self._chunk(b"")
                    return
                for i, item in enumerate(items):
                    self.stream_item(seq, i, item)
                self._sse(
                    seq, {"type": "response.completed", "response": response_obj(rid, model, "completed", items, usage)}
                )
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def stream_item(self, seq: list[int], i: int, item: dict) -> None:
            if item.get("type") != "message":
                self._sse(seq, {"type": "response.output_item.added", "output_index": i, "item": item})
                self._sse(seq, {"type": "response.output_item.done", "output_index": i, "item": item})
                return
            text = "".join(_texts(item["content"]))
            empty = dict(item, content=[], status="in_progress")
            part = {"type": "output_text", "text": "", "annotations": []}
            base = {"item_id": item["id"], "output_index": i, "content_index": 0}
            self._sse(seq, {"type": "response.output_item.added", "output_index": i, "item": empty})
            self._sse(seq, dict(base, type="response.content_part.added", part=part))
            for k in range(0, max(len(text), 1), 64):  # several deltas, as a real stream has
                self._sse(seq, dict(base, type="response.output_text.delta", delta=text[k : k + 64], logprobs=[]))
            self._sse(seq, dict(base, type="response.output_text.done", text=text, logprobs=[]))
            self._sse(seq, dict(base, type="response.content_part.done", part=dict(part, text=text)))
            self._sse(seq, {"type": "response.output_item.done", "output_index": i, "item": item})

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--script", help="JSON script file")
    ap.add_argument("--log", help="append one JSON line per model request here")
    args = ap.parse_args(argv)
    data = DEFAULT_SCRIPT
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            data = json.load(f)
    scripts, reject = parse_script(data)
    state = State(scripts, reject, args.log)
    # a listen backlog of 128, as a real server's: socketserver's default of 5 drops the SYNs of all but six of
    # sixteen connections opened at once (-j 16), and each dropped one is sent again only a second later
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer((args.host, args.port), make_handler(state))
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        state.stopping.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
