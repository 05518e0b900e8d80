"""The openai worker: one streamed Responses API call (POST {base_url}/responses, its SSE read here), its answer in
the delimited protocol (<<MIS:START>> … FILE/JSON/ERR blocks … <<MIS:END>>) parsed by the regex library. The only
importer of `httpx2`.

Why not the openai SDK: importing it costs ~0.8 s of CPU (its pydantic models), paid before a run's first call, and
a fifth of the 4 s that 64 one-second steps at -j 16 take ideally; the worker needs one POST, its retries and the
SSE events as JSON, which httpx2 (the SDK's own HTTP client, ~0.1 s to import) gives. The request, the retries
(max_retries, the SDK's backoff and Retry-After), the error classes' names and the worker's version stay the SDK's.

Protocol: a FILE block's body is the file's whole new content (an empty body is an empty file); a JSON block
holds an object, and {"delete": ["path", …]} in it deletes files; an ERR block means the model says it cannot do
the task. Text outside START…END is ignored.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import PurePosixPath

from runner import __version__ as runner_version
from runner.redact import redact, redact_obj, secret_values
from runner.workers.base import (
    PERMANENT,
    SETUP,
    TIMEOUT,
    TRANSIENT,
    Usage,
    WorkerConfig,
    WorkerRequest,
    WorkerResult,
    failed,
)
from runner.workers.setup import Check, key_check, unreachable, url_check

PROTOCOL_VERSION = "mis-1"  # bump when PROTOCOL_INSTRUCTIONS change: it is part of the worker version (step key)
PROTOCOL_INSTRUCTIONS = """\
Answer in this exact format and nothing else:
<<MIS:START>>
<<MIS:FILE path=relative/path/of/a/file>>
(the complete new content of that file; one FILE block per file you create or change)
<<MIS:JSON>>
{"summary": "one line on what you did", "delete": ["paths to delete, if any"]}
<<MIS:END>>
Markers stand alone on their line. Paths are relative to the project root. If you cannot do the task, answer
<<MIS:START>>, then <<MIS:ERR>> followed by the reason, then <<MIS:END>>."""

_family = None
_family_lock = threading.Lock()


def protocol_family():
    """The `protocol` regex family (loaded once; the built-in library ships it). Behind a lock: -j 16 agent
    steps finish their first calls together, and each loading the whole library (~0.3 s of CPU) would queue
    them all behind one another on the GIL."""
    global _family
    if _family is None:
        with _family_lock:
            if _family is None:
                from runner.parse import builtin_dir, load_library

                _family = load_library([builtin_dir()]).family("protocol")
    return _family


@dataclass
class Answer:
    files: dict[str, str | None] = field(default_factory=dict)
    json: list = field(default_factory=list)
    err: str | None = None
    problem: str | None = None  # why the answer is malformed, or None


def _bad_path(path: str) -> bool:
    p = PurePosixPath(path)
    return p.is_absolute() or ".." in p.parts or path.startswith("~") or "\\" in path or not path.strip()


def parse_answer(text: str) -> Answer:
    """The FILE/JSON/ERR blocks of a protocol answer, or Answer.problem saying what is malformed."""
    ans = Answer()
    matches = list(protocol_family().finditer(text))
    kinds = [m.fields.get("kind") for m in matches]
    marker_starts = {m.start for m in matches}
    # A line that looks like a marker but no pattern took (e.g. FILE with no path) would silently lose content.
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("<<MIS:") and not any(pos <= s < pos + len(line) for s in marker_starts):
            ans.problem = f"unrecognised marker line {line.strip()[:80]!r} (a FILE needs path=…)"
            return ans
        pos += len(line)
    if "START" not in kinds:
        ans.problem = "no <<MIS:START>> marker: the answer is not in the protocol"
        return ans
    start = kinds.index("START")
    if "END" not in kinds[start:]:
        ans.problem = "no <<MIS:END>> marker: the answer was cut off"
        return ans
    end = start + kinds[start:].index("END")
    for m in matches[start + 1 : end]:
        kind, body = m.fields.get("kind"), m.fields.get("body") or ""
        if kind == "ERR":
            ans.err = body.strip() or "(no reason given)"
        elif kind == "FILE":
            path = (m.fields.get("path") or "").strip()
            if _bad_path(path):
                ans.problem = f"FILE path {path!r} is not a relative path inside the project"
                return ans
            ans.files[path] = body
        elif kind == "JSON":
            try:
                obj = json.loads(body)
            except ValueError as e:
                ans.problem = f"a JSON block is not valid JSON ({e})"
                return ans
            ans.json.append(obj)
            for path in (obj.get("delete") or []) if isinstance(obj, dict) else []:
                if not isinstance(path, str) or _bad_path(path):
                    ans.problem = f"delete path {path!r} is not a relative path inside the project"
                    return ans
                ans.files[path] = None
        elif kind == "START":
            ans.problem = "a second <<MIS:START>> before <<MIS:END>>"
            return ans
    return ans


_STATUS_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
INITIAL_RETRY_DELAY, MAX_RETRY_DELAY, MAX_RETRY_AFTER = 0.5, 8.0, 120.0  # the openai SDK's backoff, kept


class _StatusError(Exception):
    """An HTTP error status the retries gave up on: its status, the error object (or text) it came with, and
    the SDK's names for it (the words a user already searches for: RateLimitError, NotFoundError, …)."""

    def __init__(self, status: int, body: object, url: str) -> None:
        self.status, self.body, self.url = status, body, url
        self.name = _STATUS_NAMES.get(status, "InternalServerError" if status >= 500 else "APIStatusError")
        self.code = str(body["code"]) if isinstance(body, dict) and body.get("code") is not None else ""
        message = body.get("message") if isinstance(body, dict) else None
        self.message = f"Error code: {status}" + (f" - {message}" if isinstance(message, str) and message else "")
        super().__init__(self.message)


class _ConnectFailed(Exception):
    """No answer at all: the connection failed (refused, a name that does not resolve, a reset) after the
    retries. `unreachable`: it failed at this process's first request to the provider (a set-up failure)."""

    def __init__(self, cause: Exception, url: str, unreachable: bool) -> None:
        self.cause, self.url, self.unreachable = cause, url, unreachable
        super().__init__("Connection error.")


class _TimedOut(Exception):
    """No answer within the timeouts (connect, idle read, write), after the retries."""


def _status_failure(e: _StatusError) -> tuple[str, str]:
    """(failure class, advice) for an HTTP error the retries gave up on."""
    if e.status == 429:
        if e.code == "insufficient_quota":
            return PERMANENT, "the account is out of quota: add credit or use another key"
        return TRANSIENT, "rate limited: retry later or lower -j"
    if e.status in (408, 409) or e.status >= 500:
        return TRANSIENT, "the provider failed: retrying may succeed"
    if e.status == 403:
        return PERMANENT, "the key may not use this model or endpoint"
    if e.status == 404:
        return PERMANENT, "the model or endpoint does not exist: check [worker] model, fallback_models, base_url"
    if e.status == 400 and "context" in e.code:
        return PERMANENT, "the prompt is too long for the model: shrink the inputs"
    return PERMANENT, "the request was rejected: retrying the same input will not help"


def _retry_after(headers) -> float | None:
    """The server's own wait in seconds (retry-after-ms, then retry-after as seconds or an HTTP date), or None."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    try:
        parsed = email.utils.parsedate_tz(headers.get("retry-after"))
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def _should_retry(status: int, headers) -> bool:
    """The SDK's rule: a server's x-should-retry decides; else 408, 409, 429 and 5xx, unless the server asks for
    a wait longer than two minutes."""
    wait = _retry_after(headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER:
        return False
    told = headers.get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status in (408, 409, 429) or status >= 500


def _backoff(retries_taken: int, headers=None) -> float:
    """Seconds before the next try: the server's Retry-After (up to two minutes), else 0.5 s doubling to 8 s,
    less up to a quarter (jitter, so that sixteen rate-limited steps do not come back at once)."""
    wait = _retry_after(headers) if headers is not None else None
    if wait is not None and math.isfinite(wait) and 0 < wait <= MAX_RETRY_AFTER:
        return wait
    return min(INITIAL_RETRY_DELAY * 2.0**retries_taken, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def _sse_events(lines):
    """The JSON objects of a server-sent event stream's `data:` fields, one per event (several data lines of one
    event joined by newlines, as the SSE format says); comments, `event:`, `id:` and `retry:` lines are not
    needed (every Responses event names its own `type`); a `[DONE]` ends the stream."""
    data: list[str] = []
    for line in lines:
        if line:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
            continue
        if not data:
            continue
        text, data = "\n".join(data), []
        if text.startswith("[DONE]"):
            return
        yield json.loads(text)
    if data and not "\n".join(data).startswith("[DONE]"):
        yield json.loads("\n".join(data))


_httpx_lock = threading.Lock()
_httpx = None


def _http():
    """httpx2, imported at the first model call (~0.1 s; a run that only plans needs none of it)."""
    global _httpx
    with _httpx_lock:
        if _httpx is None:
            import httpx2

            _httpx = httpx2
        return _httpx


_sdk_version: str | None = None


def _base_url(cfg: WorkerConfig) -> str:
    """As the SDK did: [worker] base_url, else OPENAI_BASE_URL, else the OpenAI API."""
    return cfg.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"


def sdk_version() -> str:
    """The installed openai SDK's version, from its distribution's metadata, never imported: the worker's
    version string kept its name when the worker left the SDK for its own client, so that no step's key
    changed (the request the model sees is the one the SDK sent)."""
    global _sdk_version
    if _sdk_version is None:  # a metadata look-up reads sys.path's folders (~5 ms); asked for every step
        try:
            _sdk_version = distribution_version("openai")
        except PackageNotFoundError:
            _sdk_version = "none"
    return _sdk_version


def _error_line(e: _StatusError | _ConnectFailed) -> str:
    """The transcript's line for an error that ended the call before any event streamed: what came back."""
    if isinstance(e, _StatusError):
        line = {"type": "http.error", "status": e.status, "url": e.url, "body": e.body}
    else:
        line = {"type": "connect.error", "url": e.url, "error": f"{type(e.cause).__name__}: {e.cause}"}
    return json.dumps(line, ensure_ascii=False)


def _is_model_missing(e: Exception) -> bool:
    return isinstance(e, _StatusError) and (e.status == 404 or e.code == "model_not_found")


class OpenAIWorker:
    kind = "openai"
    reads_workspace = False  # the answer's files are written into it afterwards: the step may make it meanwhile

    def __init__(self) -> None:
        self._answered: set[str] = set()  # providers (base_url) that answered a request of this process
        self._lock = threading.Lock()
        # one HTTP client per provider, key and limits, for the process: a new one costs ~50 ms of CPU (its TLS
        # context loads the CA bundle) and a new connection, per step; httpx2's client is thread-safe
        self._clients: dict[tuple, object] = {}

    def _client(self, cfg: WorkerConfig, key: str, base_url: str):
        httpx2 = _http()
        ident = (base_url, key, cfg.timeout, cfg.idle_timeout)
        with self._lock:
            client = self._clients.get(ident)
            if client is None:
                headers = {"Authorization": f"Bearer {key}", "User-Agent": f"runner/{runner_version}"}
                # the SDK's other two credentials, from the same variables it read
                for header, name in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
                    if os.environ.get(name):
                        headers[header] = os.environ[name]
                timeout = httpx2.Timeout(
                    cfg.timeout,
                    connect=min(10.0, cfg.timeout),
                    read=min(cfg.idle_timeout or cfg.timeout, cfg.timeout),
                )
                limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)  # the SDK's
                # no TLS to a plain http:// base_url (a local proxy, a fake): no CA bundle to load (~50 ms of CPU
                # before the first call); the client follows no redirect, so it never reaches another host
                plain = base_url.startswith("http://")
                client = self._clients[ident] = httpx2.Client(
                    headers=headers, timeout=timeout, limits=limits, verify=not plain
                )
            return client

    def warm(self, config: WorkerConfig | None = None, ready=None) -> None:
        """Load the HTTP client and the answer's regex family ahead of the first call (AgentHandoff starts it as
        the first attempts are handed out); `ready()` once the client is in, the part a call needs before it is
        sent (the regexes are needed only once an answer is back). With the run's `config` and its key in the
        environment, the client for it is made here too (~50 ms of CPU, which the first sixteen calls would
        otherwise wait for behind the lock that makes it)."""
        _http()
        key = os.environ.get(config.env_key or "OPENAI_API_KEY") if config is not None else None
        if config is not None and key:
            self._client(config, key, _base_url(config))
        if ready is not None:
            ready()
        protocol_family()

    def version(self, config: WorkerConfig) -> str:
        return f"openai-python {sdk_version()} {PROTOCOL_VERSION}"

    def check(self, config: WorkerConfig, environ: Mapping[str, str], steps=()) -> list[Check]:
        """The key variable (by name) and base_url's form; the worker's version. No request is sent."""
        why = "the openai worker sends it to " + (config.base_url or "the OpenAI API") + " ([worker] env_key names it)"
        return [
            Check("version", True, self.version(config)),
            key_check((config.env_key or "OPENAI_API_KEY",), environ, why),
            url_check(config.base_url),
        ]

    def run(self, request: WorkerRequest) -> WorkerResult:
        cfg = request.config
        t0 = time.monotonic()
        env = os.environ if request.env is None else request.env
        key_name = cfg.env_key or "OPENAI_API_KEY"
        secrets = secret_values([cfg.env_key, *cfg.secret_names], environ=env)
        version = self.version(cfg)
        problems = [c.detail for c in self.check(cfg, env) if not c.ok]
        if problems:
            return failed(SETUP, "; ".join(problems), model=cfg.model, worker_version=version)
        provider = cfg.base_url or ""
        base_url = _base_url(cfg)
        client = self._client(cfg, env[key_name], base_url)
        call = _Call(self, client, request, base_url.rstrip("/") + "/responses", provider, t0, secrets)
        tried: list[str] = []
        models = list(dict.fromkeys((cfg.model, *cfg.fallback_models)))
        for i, model in enumerate(models):
            tried.append(model)
            try:
                result = call.run(model)
            except _ConnectFailed as e:
                if e.unreachable:
                    line = redact(_error_line(e), secrets)
                    result = failed(
                        SETUP,
                        f"{unreachable(cfg.base_url)}\n  the transcript's line: {line}",
                        model=model,
                        transcript=line + "\n",
                    )
                else:
                    result = failed(
                        TRANSIENT,
                        redact(
                            f"could not reach the Responses API at {cfg.base_url or 'api.openai.com'}: {e}", secrets
                        ),
                        model=model,
                    )
            except _StatusError as e:
                if e.status == 401:
                    line = redact(_error_line(e), secrets)
                    where = f"[worker] base_url {cfg.base_url}" if cfg.base_url else "the OpenAI API"
                    result = failed(
                        SETUP,
                        f"the key in {key_name} was refused (401 Unauthorized) by {where}: check {key_name} "
                        f"([worker] env_key names it)\n  the transcript's line: {line}",
                        model=model,
                        transcript=line + "\n",
                    )
                elif _is_model_missing(e) and i < len(models) - 1:
                    continue  # try the next fallback model
                else:
                    kind, advice = _status_failure(e)
                    result = failed(
                        kind,
                        redact(
                            f"{e.name} {e.status} from the Responses API "
                            f"(model {model}; tried {', '.join(tried)}): {e.message}. {advice}",
                            secrets,
                        ),
                        model=model,
                    )
            except _TimedOut:
                result = failed(
                    TIMEOUT,
                    f"the Responses API did not answer within {cfg.timeout:g}s (after "
                    f"{call.max_retries} retries); raise [worker] timeout or check the provider",
                    model=model,
                )
            break
        result.worker_version = version
        result.duration_s = time.monotonic() - t0
        return result

    def answered(self, provider: str) -> bool:
        with self._lock:
            return provider in self._answered

    def note_answer(self, provider: str) -> None:
        with self._lock:
            self._answered.add(provider)


class _Cancelled(Exception):
    """The runner set the request's cancel event while the call waited to retry."""


class _Call:
    """One step's request to POST {base_url}/responses, sent and retried as the SDK did (max_retries, its
    backoff and Retry-After, a failed connection at the process's first request to a provider never retried),
    its SSE events read as the JSON they came as."""

    def __init__(self, worker: OpenAIWorker, client, request: WorkerRequest, url: str, provider: str, t0, secrets):
        self.worker, self.client, self.request, self.url, self.provider = worker, client, request, url, provider
        self.t0, self.secrets = t0, secrets
        self.max_retries = int(request.config.extra.get("max_retries", 2))
        self.stream = str(request.config.extra.get("stream", "true")).lower() != "false"

    def _send(self, body: dict):
        """The response whose status is below 400 (its body not read yet), after the retries; else raises."""
        httpx2 = _http()
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if self.stream else "application/json",
        }
        for retries_taken in range(self.max_retries + 1):
            last = retries_taken == self.max_retries
            req = self.client.build_request("POST", self.url, content=data, headers=headers)
            try:
                response = self.client.send(req, stream=True)
            except httpx2.TimeoutException as exc:  # ConnectTimeout too: a slow provider is no set-up failure
                if last:
                    raise _TimedOut() from exc
                self._sleep(_backoff(retries_taken))
                continue
            except httpx2.RequestError as exc:
                # refused or not resolved before this provider ever answered this process: every step would
                # fail the same way, so no retry is spent on it
                if isinstance(exc, httpx2.ConnectError) and not self.worker.answered(self.provider):
                    raise _ConnectFailed(exc, self.url, unreachable=True) from exc
                if last:
                    raise _ConnectFailed(exc, self.url, unreachable=False) from exc
                self._sleep(_backoff(retries_taken))
                continue
            self.worker.note_answer(self.provider)
            if response.status_code < 400:
                return response
            if not last and _should_retry(response.status_code, response.headers):
                response.close()
                self._sleep(_backoff(retries_taken, response.headers))
                continue
            try:
                text = response.read().decode("utf-8", "replace").strip()
            except httpx2.RequestError:
                text = ""
            finally:
                response.close()
            body_obj: object = text
            try:
                parsed = json.loads(text)
                body_obj = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
            except ValueError:
                pass
            raise _StatusError(response.status_code, body_obj, self.url)
        raise AssertionError("unreachable: the last try returns or raises")

    def _sleep(self, seconds: float) -> None:
        cancel = self.request.cancel
        if cancel is None:
            time.sleep(seconds)
        elif cancel.wait(seconds):
            raise _Cancelled()

    def _stopped(self, model: str, events: list[dict]) -> WorkerResult | None:
        """A TIMEOUT result when the runner cancelled the step or the wall-clock timeout passed, else None."""
        cfg = self.request.config
        if self.request.cancel is not None and self.request.cancel.is_set():
            why = "cancelled by the runner while the answer was streaming"
        elif time.monotonic() - self.t0 > cfg.timeout:
            why = f"the answer was still streaming after the {cfg.timeout:g}s wall-clock timeout"
        else:
            return None
        return failed(
            TIMEOUT,
            why,
            model=model,
            events=redact_obj(events, self.secrets),
            transcript=_transcript(events, self.secrets),
        )

    def run(self, model: str) -> WorkerResult:
        httpx2 = _http()
        cfg = self.request.config
        body: dict[str, object] = {"model": model, "input": self.request.prompt, "instructions": PROTOCOL_INSTRUCTIONS}
        if cfg.extra.get("reasoning_effort"):
            body["reasoning"] = {"effort": cfg.extra["reasoning_effort"]}
        if self.stream:
            body["stream"] = True
        events: list[dict] = []
        text_parts: list[str] = []
        completed = None
        stream_error = None
        broken = None  # why the stream stopped early (a dropped connection, an event that is not JSON)
        try:
            response = self._send(body)
        except _Cancelled:
            return failed(TIMEOUT, "cancelled by the runner while the call waited to retry", model=model)
        try:
            if not self.stream:
                resp = json.loads(response.read() or b"{}")
                resp = resp if isinstance(resp, dict) else {}
                events.append(resp)
                completed, text_parts = resp, [_output_text(resp)]
            else:
                for ev in _sse_events(response.iter_lines()):
                    d = ev if isinstance(ev, dict) else {}
                    events.append(d)
                    kind = d.get("type")
                    if kind == "response.output_text.delta":
                        text_parts.append(str(d.get("delta") or ""))
                    elif kind == "response.completed":
                        completed = d.get("response") or {}
                    elif kind in ("response.failed", "error", "response.incomplete") or isinstance(
                        d.get("error"), dict
                    ):
                        stream_error = d
                    stopped = self._stopped(model, events)
                    if stopped is not None:
                        return stopped
        except httpx2.TimeoutException as exc:
            if not events:
                raise _TimedOut() from exc
            return failed(
                TIMEOUT,
                f"the answer stopped streaming for {cfg.idle_timeout or cfg.timeout:g}s (the idle timeout); "
                "raise [worker] idle_timeout or check the provider",
                model=model,
                events=redact_obj(events, self.secrets),
                transcript=_transcript(events, self.secrets),
            )
        except httpx2.RequestError as exc:
            broken = f"the connection broke off ({type(exc).__name__}: {exc})"
        except ValueError as exc:
            broken = f"the provider sent an event that is not JSON ({exc})"
        finally:
            response.close()
        transcript = _transcript(events, self.secrets)
        base = dict(model=model, events=redact_obj(events, self.secrets), transcript=transcript)
        if completed is None:
            kind, why = TRANSIENT, "the stream ended before response.completed" + (f": {broken}" if broken else "")
            if stream_error:
                err = (stream_error.get("response") or {}).get("error") or stream_error.get("error") or stream_error
                code = err.get("code") or ""
                kind = (
                    PERMANENT
                    if code in ("context_length_exceeded", "invalid_prompt", "insufficient_quota")
                    else TRANSIENT
                )
                why = f"the provider reported {code or 'an error'}: {err.get('message', '')}"
            return failed(kind, redact(why, self.secrets), **base)
        u = completed.get("usage") or {}
        usage = Usage(
            input_tokens=u.get("input_tokens") or 0,
            cached_input_tokens=(u.get("input_tokens_details") or {}).get("cached_tokens") or 0,
            output_tokens=u.get("output_tokens") or 0,
        )
        text = "".join(text_parts) or _output_text(completed)
        ans = parse_answer(text)
        message = redact(text, self.secrets)
        if ans.problem:
            r = failed(
                TRANSIENT,
                f"malformed answer from {model}: {ans.problem}. Retrying once with the same prompt usually fixes it.",
                usage=usage,
                **base,
            )
            r.final_message = message
            return r
        if ans.err is not None:
            r = failed(
                PERMANENT, redact(f"the model says it cannot do this: {ans.err}", self.secrets), usage=usage, **base
            )
            r.final_message = message
            return r
        return WorkerResult(
            ok=True,
            final_message=message,
            usage=usage,
            duration_s=0.0,
            failure=None,
            error=None,
            files=redact_obj(ans.files, self.secrets),
            **base,
        )


def _output_text(response: dict) -> str:
    """The text of a response's assistant messages (the SDK's `output_text`, from the JSON)."""
    return "".join(
        part.get("text") or ""
        for item in response.get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    )


def _transcript(events: list[dict], secrets) -> str:
    return redact("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), secrets)
