"""A worker's transcript (the JSON lines `runner show` keeps) read as a conversation: the commands the agent
ran with their exit, the files it changed, the patch it sent, its final message, the answer once and the tokens.
Two kinds of line are read: Codex's `exec --json` events, and the Responses API's (streamed or one response)."""

from __future__ import annotations

import json

OUTPUT_LINES = 5  # of a command's output shown under it: the rest is in the raw transcript (`--raw`)
WORKSPACE = "ws"  # the folder of an attempt's copy of the project (attempt.make_workspace)


def conversation(text: str) -> list[str]:
    """The transcript as lines a person reads; the raw lines when none of them is a known event."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    if any(str(e.get("type", "")).startswith(("response", "item.", "turn.", "thread.")) for e in events):
        out = _codex(events) + _responses(events)
        if out:
            return out
    return text.rstrip("\n").splitlines()


def _codex(events: list[dict]) -> list[str]:
    out: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "item.completed":
            out += _codex_item(event.get("item") or {})
        elif kind == "turn.completed":
            out.append(_usage(event.get("usage") or {}))
        elif kind in ("turn.failed", "error"):
            error = event.get("error") or {}
            out.append(f"error: {error.get('message') if isinstance(error, dict) else error or event.get('message')}")
    return out


def _codex_item(item: dict) -> list[str]:
    kind = item.get("type")
    if kind == "command_execution":
        lines = [f"$ {item.get('command', '')}", f"  exit {item.get('exit_code')}"]
        output = (item.get("aggregated_output") or "").rstrip("\n").splitlines()
        lines[1:1] = ["  " + line for line in output[-OUTPUT_LINES:]]
        return lines
    if kind == "file_change":
        return [f"changed {_in_project(str(c.get('path')))} ({c.get('kind')})" for c in item.get("changes") or []]
    if kind == "agent_message":
        return ["agent:", *_indented(item.get("text") or "")]
    if kind == "reasoning":
        return [f"(thinking) {line}" for line in (item.get("text") or "").splitlines() if line.strip()]
    if kind == "error":
        return [f"error: {item.get('message')}"]
    if kind:
        return [f"{kind}: {json.dumps({k: v for k, v in item.items() if k not in ('id', 'type')})[:200]}"]
    return []


def _responses(events: list[dict]) -> list[str]:
    """A Responses exchange: the finished response's output items (its streamed deltas and repeats skipped)."""
    finished = [e["response"] for e in events if isinstance(e.get("response"), dict) and e["response"].get("output")]
    finished += [e for e in events if e.get("object") == "response"]  # a call that did not stream
    out: list[str] = []
    if finished:
        response = finished[-1]
        for item in response.get("output") or []:
            out += _response_item(item)
        if response.get("usage"):
            out.append(_usage(response["usage"]))
    else:  # the stream broke before the response was complete: what it said so far, once
        for event in events:
            if event.get("type") == "response.output_text.done":
                out += ["answer:", *_indented(event.get("text") or "")]
    for event in events:
        if event.get("type") == "response.failed":
            error = (event.get("response") or {}).get("error") or event.get("error") or event
            out.append(f"error: {error.get('message') if isinstance(error, dict) else error}")
    return out


def _response_item(item: dict) -> list[str]:
    kind = item.get("type")
    if kind == "message":
        text = "".join(c.get("text") or "" for c in item.get("content") or [] if isinstance(c, dict))
        return ["answer:", *_indented(text)]
    if kind in ("function_call", "custom_tool_call"):
        body = item.get("input") if kind == "custom_tool_call" else item.get("arguments")
        title = "patch:" if item.get("name") == "apply_patch" else f"call {item.get('name')}:"
        return [title, *_indented(str(body or ""))]
    if kind == "reasoning":
        summary = " ".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
        return [f"(thinking) {summary}"] if summary.strip() else []
    return [f"{kind}: {json.dumps({k: v for k, v in item.items() if k not in ('id', 'type')})[:200]}"] if kind else []


def _usage(usage: dict) -> str:
    cached = usage.get("cached_input_tokens")
    if cached is None:
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    return (
        f"tokens: {usage.get('input_tokens', 0):,} input ({cached or 0:,} cached), "
        f"{usage.get('output_tokens', 0):,} output"
    )


def _in_project(path: str) -> str:
    """A path Codex reported under the attempt's copy of the project (an absolute `.../ws/...`, attempt.py), as
    the project names it."""
    return path.rsplit(f"/{WORKSPACE}/", 1)[1] if path.startswith("/") and f"/{WORKSPACE}/" in path else path


def _indented(text: str) -> list[str]:
    return ["  " + line for line in text.rstrip("\n").splitlines()]
