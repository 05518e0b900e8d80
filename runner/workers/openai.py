"""The openai worker: one streamed Responses API call with the official SDK, its answer in the delimited protocol
(<<MIS:START>> … FILE/JSON/ERR blocks … <<MIS:END>>) parsed by the regex library. The only importer of `openai`.

Protocol: a FILE block's body is the file's whole new content (an empty body is an empty file); a JSON block
holds an object, and {"delete": ["path", …]} in it deletes files; an ERR block means the model says it cannot do
the task. Text outside START…END is ignored.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    import openai

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


def _status_failure(e: openai.APIStatusError) -> tuple[str, str]:
    """(failure class, advice) for an HTTP error the SDK gave up on (it already retried what it retries)."""
    import openai

    code = getattr(e, "code", None) or ""
    if isinstance(e, openai.RateLimitError):
        if code == "insufficient_quota":
            return PERMANENT, "the account is out of quota: add credit or use another key"
        return TRANSIENT, "rate limited: retry later or lower -j"
    if isinstance(e, openai.InternalServerError) or e.status_code in (408, 409) or e.status_code >= 500:
        return TRANSIENT, "the provider failed: retrying may succeed"
    if isinstance(e, openai.PermissionDeniedError):
        return PERMANENT, "the key may not use this model or endpoint"
    if isinstance(e, openai.NotFoundError):
        return PERMANENT, "the model or endpoint does not exist: check [worker] model, fallback_models, base_url"
    if e.status_code == 400 and "context" in code:
        return PERMANENT, "the prompt is too long for the model: shrink the inputs"
    return PERMANENT, "the request was rejected: retrying the same input will not help"


_sdk_lock = threading.Lock()
_sdk_classes: tuple | None = None
_sdk_version: str | None = None


def _sdk() -> tuple:
    """(openai, Unreachable, _Client), made at the first model call: importing the SDK costs ~0.6 s, and a
    run that only plans (a no-op, `status`, `make -n`) needs the worker's version alone (`version`)."""
    global _sdk_classes
    with _sdk_lock:
        if _sdk_classes is None:
            import openai

            class Unreachable(openai.APIConnectionError):
                """No connection at all before the provider ever answered: a set-up failure, raised from inside
                the SDK's retry loop (which lets an OpenAIError through as it is) so that no retry is spent on
                it."""

            class _Client(openai.OpenAI):
                """The SDK's client, told whether the provider has answered this process yet. Until it has, a
                failed connection (refused, or a name that does not resolve) is Unreachable at once instead of
                retried with backoff. `_send_request` is where the SDK sends every attempt (openai 3.x); without
                it nothing changes."""

                def __init__(self, *args, first_request: bool = False, **kwargs):  # the SDK's copy() omits it
                    super().__init__(*args, **kwargs)
                    self.first_request = first_request
                    self.answered = False

                def _send_request(self, request, *args, **kwargs):
                    try:
                        response = super()._send_request(request, *args, **kwargs)
                    except Exception as exc:
                        # ConnectError: refused or not resolved; a timeout (the provider is slow) is no set-up
                        # failure
                        if self.first_request and not self.answered and type(exc).__name__ == "ConnectError":
                            raise Unreachable(message=f"Connection error: {exc}", request=request) from exc
                        raise
                    self.answered = True
                    return response

            _sdk_classes = (openai, Unreachable, _Client)
        return _sdk_classes


def sdk_version() -> str:
    """The installed SDK's version, from its distribution's metadata (the same string as openai.__version__)
    without importing it."""
    global _sdk_version
    if _sdk_version is None:  # a metadata look-up reads sys.path's folders (~5 ms); asked for every step
        try:
            _sdk_version = distribution_version("openai")
        except PackageNotFoundError:  # not installed as a distribution: ask the module itself
            _sdk_version = _sdk()[0].__version__
    return _sdk_version


def _error_line(e: openai.APIError, base_url: str | None) -> str:
    """The transcript's line for an error that ended the call before any event streamed: what came back."""
    import openai

    if isinstance(e, openai.APIStatusError):
        line = {"type": "http.error", "status": e.status_code, "url": str(e.request.url), "body": e.body}
    else:
        cause = e.__cause__
        error = f"{type(cause).__name__}: {cause}" if cause else str(e)
        line = {"type": "connect.error", "url": str(e.request.url) if e.request else base_url, "error": error}
    return json.dumps(line, ensure_ascii=False)


def _is_model_missing(e: Exception) -> bool:
    import openai

    return isinstance(e, openai.APIStatusError) and (
        e.status_code == 404 or getattr(e, "code", None) == "model_not_found"
    )


class OpenAIWorker:
    kind = "openai"
    reads_workspace = False  # the answer's files are written into it afterwards: the step may make it meanwhile

    def __init__(self) -> None:
        self._answered: set[str] = set()  # providers (base_url) that answered a request of this process
        self._lock = threading.Lock()
        # one client per provider, key and limits, for the process: a new one costs ~50 ms of CPU (its TLS
        # context loads the CA bundle) and a new connection, per step; httpx's client is thread-safe
        self._clients: dict[tuple, object] = {}

    def _client(self, cfg: WorkerConfig, key: str, timeout: openai.Timeout, provider: str):
        _openai, _unreachable, client_class = _sdk()
        max_retries = int(cfg.extra.get("max_retries", 2))
        ident = (provider, key, cfg.timeout, cfg.idle_timeout, max_retries)
        with self._lock:
            client = self._clients.get(ident)
            if client is None:
                client = self._clients[ident] = client_class(
                    api_key=key,
                    timeout=timeout,
                    max_retries=max_retries,
                    base_url=cfg.base_url or None,  # None: the SDK's default (OPENAI_BASE_URL, then api.openai.com)
                    first_request=provider not in self._answered,
                )
            return client

    def warm(self, ready=None) -> None:
        """Load the SDK and the answer's regex family ahead of the first call (AgentHandoff starts it as the first
        attempts are handed out); `ready()` once the SDK is in, the part a call needs before it is sent (the
        regexes are needed only once an answer is back)."""
        _sdk()
        if ready is not None:
            ready()
        protocol_family()

    def version(self, config: WorkerConfig) -> str:
        return f"openai-python {sdk_version()} {PROTOCOL_VERSION}"

    def check(self, config: WorkerConfig, environ: Mapping[str, str], steps=()) -> list[Check]:
        """The key variable (by name) and base_url's form; the SDK's version. No request is sent."""
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
        openai, Unreachable, _client_class = _sdk()
        timeout = openai.Timeout(
            cfg.timeout, connect=min(10.0, cfg.timeout), read=min(cfg.idle_timeout or cfg.timeout, cfg.timeout)
        )
        provider = cfg.base_url or ""
        client = self._client(cfg, env[key_name], timeout, provider)
        tried: list[str] = []
        models = list(dict.fromkeys((cfg.model, *cfg.fallback_models)))
        try:
            for i, model in enumerate(models):
                tried.append(model)
                try:
                    result = self._call(client, request, model, t0, secrets)
                except Unreachable as e:
                    line = redact(_error_line(e, cfg.base_url), secrets)
                    result = failed(
                        SETUP,
                        f"{unreachable(cfg.base_url)}\n  the transcript's line: {line}",
                        model=model,
                        transcript=line + "\n",
                    )
                except openai.AuthenticationError as e:
                    line = redact(_error_line(e, cfg.base_url), secrets)
                    where = f"[worker] base_url {cfg.base_url}" if cfg.base_url else "the OpenAI API"
                    result = failed(
                        SETUP,
                        f"the key in {key_name} was refused (401 Unauthorized) by {where}: check {key_name} "
                        f"([worker] env_key names it)\n  the transcript's line: {line}",
                        model=model,
                        transcript=line + "\n",
                    )
                except openai.APIStatusError as e:
                    if _is_model_missing(e) and i < len(models) - 1:
                        continue  # try the next fallback model
                    kind, advice = _status_failure(e)
                    result = failed(
                        kind,
                        redact(
                            f"{type(e).__name__} {e.status_code} from the Responses API "
                            f"(model {model}; tried {', '.join(tried)}): {e.message}. "
                            f"{advice}",
                            secrets,
                        ),
                        model=model,
                    )
                except openai.APITimeoutError:
                    result = failed(
                        TIMEOUT,
                        f"the Responses API did not answer within {cfg.timeout:g}s (after "
                        f"{client.max_retries} retries); raise [worker] timeout or check the provider",
                        model=model,
                    )
                except openai.APIConnectionError as e:
                    result = failed(
                        TRANSIENT,
                        redact(
                            f"could not reach the Responses API at {cfg.base_url or 'api.openai.com'}: {e}", secrets
                        ),
                        model=model,
                    )
                break
        finally:
            if client.answered:
                with self._lock:
                    self._answered.add(provider)
        result.worker_version = version
        result.duration_s = time.monotonic() - t0
        return result

    def _call(self, client, request: WorkerRequest, model: str, t0: float, secrets) -> WorkerResult:
        openai = _sdk()[0]
        cfg = request.config
        kwargs: dict[str, object] = {"model": model, "input": request.prompt, "instructions": PROTOCOL_INSTRUCTIONS}
        if cfg.extra.get("reasoning_effort"):
            kwargs["reasoning"] = {"effort": cfg.extra["reasoning_effort"]}
        events: list[dict] = []
        text_parts: list[str] = []
        completed = None
        stream_error = None
        # cast_to=object: the SDK sends, retries and decodes the SSE as usual, but hands back each event's JSON
        # as it came instead of building pydantic models (their schemas cost ~2 s the first time in a process,
        # and model_dump per event after that); the events are kept as plain JSON anyway
        if str(cfg.extra.get("stream", "true")).lower() == "false":
            resp = client.post("/responses", body=kwargs, cast_to=object)
            resp = resp if isinstance(resp, dict) else {}
            events.append(resp)
            completed, text_parts = resp, [_output_text(resp)]
        else:
            stream = client.post(
                "/responses",
                body=dict(kwargs, stream=True),
                cast_to=object,
                stream=True,
                stream_cls=openai.Stream[object],
            )
            with stream:
                for ev in stream:
                    d = ev if isinstance(ev, dict) else {}
                    events.append(d)
                    kind = d.get("type")
                    if kind == "response.output_text.delta":
                        text_parts.append(str(d.get("delta") or ""))
                    elif kind == "response.completed":
                        completed = d.get("response") or {}
                    elif kind in ("response.failed", "error", "response.incomplete"):
                        stream_error = d
                    if request.cancel is not None and request.cancel.is_set():
                        return failed(
                            TIMEOUT,
                            "cancelled by the runner while the answer was streaming",
                            model=model,
                            events=redact_obj(events, secrets),
                            transcript=_transcript(events, secrets),
                        )
                    if time.monotonic() - t0 > cfg.timeout:
                        return failed(
                            TIMEOUT,
                            f"the answer was still streaming after the {cfg.timeout:g}s wall-clock timeout",
                            model=model,
                            events=redact_obj(events, secrets),
                            transcript=_transcript(events, secrets),
                        )
        transcript = _transcript(events, secrets)
        base = dict(model=model, events=redact_obj(events, secrets), transcript=transcript)
        if completed is None:
            kind, why = TRANSIENT, "the stream ended before response.completed"
            if stream_error:
                err = (stream_error.get("response") or {}).get("error") or stream_error
                code = err.get("code") or ""
                kind = (
                    PERMANENT
                    if code in ("context_length_exceeded", "invalid_prompt", "insufficient_quota")
                    else TRANSIENT
                )
                why = f"the provider reported {code or 'an error'}: {err.get('message', '')}"
            return failed(kind, redact(why, secrets), **base)
        u = completed.get("usage") or {}
        usage = Usage(
            input_tokens=u.get("input_tokens") or 0,
            cached_input_tokens=(u.get("input_tokens_details") or {}).get("cached_tokens") or 0,
            output_tokens=u.get("output_tokens") or 0,
        )
        text = "".join(text_parts) or _output_text(completed)
        ans = parse_answer(text)
        message = redact(text, secrets)
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
            r = failed(PERMANENT, redact(f"the model says it cannot do this: {ans.err}", secrets), usage=usage, **base)
            r.final_message = message
            return r
        return WorkerResult(
            ok=True,
            final_message=message,
            usage=usage,
            duration_s=0.0,
            failure=None,
            error=None,
            files=redact_obj(ans.files, secrets),
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
