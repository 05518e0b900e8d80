"""The codex worker: `codex exec --json` as a subprocess in its own process group, its JSONL events parsed and
its failures classified (transient / permanent / timeout / config / setup)."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from runner import process
from runner.redact import redact, redact_obj, secret_values
from runner.workers.base import (
    CONFIG,
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
from runner.workers.setup import Check, codex_home, key_check, unreachable, url_check

PROVIDER = "runner"  # the id of our custom provider in codex's config
PROVIDER_KEYS = ("request_max_retries", "stream_max_retries", "stream_idle_timeout_ms")
STDERR_KEEP = 64 * 1024  # bytes of stderr kept for the error message
ARGV_PROMPT_MAX = 100_000  # bytes; see prompt_via_stdin
_EOF = object()

# Ordered: the first class whose pattern matches wins, so "exceeded retry limit, last status: 401" is permanent.
# `codex exec` gives only English text (codex-cli.md §2, §6.3); URLs are blanked first so a port can't match.
CLASSIFY: list[tuple[str, re.Pattern]] = [
    (
        CONFIG,
        re.compile(
            r"no longer supported|Not inside a trusted directory|unexpected argument|"
            r"unrecognized subcommand|Error loading config|invalid value .* for|"
            r"error: the argument|Missing environment variable|config profile .* not found|"
            r"Error finding codex home|CODEX_HOME points to",
            re.I,
        ),
    ),
    (
        PERMANENT,
        re.compile(
            r"\b401\b|Unauthorized|\b403\b|Forbidden|ran out of room|context window|"
            r"context_length_exceeded|\b400\b|Bad Request|invalid_request_error|\b404\b|"
            r"model_not_found|does not exist|\b422\b|insufficient_quota|exceeded your current quota",
            re.I,
        ),
    ),
    (
        TRANSIENT,
        re.compile(
            r"\b429\b|Too Many Requests|rate.?limit|high demand|stream disconnected|"
            r"Connection failed|connection (refused|reset|closed)|error sending request|"
            r"Reconnecting|timed? ?out|\b5\d\d\b|overloaded|server_error|exceeded retry limit",
            re.I,
        ),
    ),
]
MODEL_MISSING = re.compile(r"model_not_found|model .* (does not exist|not found)|unknown model", re.I)

# Set-up failures, read from codex's `error` and `turn.failed` lines as they arrive (codex-cli.md §1: codex
# retries a 401 like a 5xx and a refused connection five times, so waiting for its exit wastes those retries).
# A refused key is one whatever came before; a connection that fails is one only before any answer came back.
SETUP_AUTH = re.compile(r"\b401\b|Unauthorized", re.I)
SETUP_KEY = re.compile(r"Missing environment variable", re.I)
SETUP_CONNECT = re.compile(
    r"Connection failed|error sending request|failed to lookup address|Name does not resolve|"
    r"Name or service not known|dns error|Connection refused|tcp connect error",
    re.I,
)


def classify(text: str) -> str | None:
    """The failure class a codex error text names, or None when nothing matches."""
    text = re.sub(r"https?://\S+", "<url>", text or "")
    for kind, pattern in CLASSIFY:
        if pattern.search(text):
            return kind
    return None


def _message(ev: dict) -> str:
    """The text of a top-level `error` or `turn.failed` event; "" for any other event."""
    if ev.get("type") == "error":
        return str(ev.get("message") or "")
    if ev.get("type") == "turn.failed":
        return str((ev.get("error") or {}).get("message") or "")
    return ""


class SetupWatch:
    """Reads codex's events as they arrive and says when one shows a set-up failure: the key refused, the key
    variable missing, or no connection before any answer came back (the first request)."""

    def __init__(self, answered: bool = False) -> None:
        self.answered = answered  # an item or a finished turn came back: the provider was reached
        self.kind: str | None = None  # auth | key | connect
        self.line = ""  # the transcript line that shows it

    def saw(self, line: str) -> bool:
        """True when `line` shows a set-up failure (the caller stops codex)."""
        try:
            ev = json.loads(line)
        except ValueError:
            return False
        if not isinstance(ev, dict):
            return False
        kind = ev.get("type")
        if kind == "turn.completed" or (
            kind in ("item.started", "item.completed") and (ev.get("item") or {}).get("type") != "error"
        ):
            self.answered = True  # ("error" items are codex's own warnings, such as a websocket fallback)
            return False
        text = re.sub(r"https?://\S+|wss?://\S+", "<url>", _message(ev))  # a port must not read as a status
        if not text:
            return False
        if SETUP_AUTH.search(text):
            self.kind = "auth"
        elif SETUP_KEY.search(text):
            self.kind = "key"
        elif SETUP_CONNECT.search(text) and not self.answered:
            self.kind = "connect"
        else:
            return False
        self.line = line.strip()
        return True


def key_names(config: WorkerConfig) -> tuple[str, ...]:
    """The variable codex reads its key from: the custom provider's env_key, else the built-in provider's."""
    return (config.env_key or "OPENAI_API_KEY",) if config.base_url else ("CODEX_API_KEY",)


def setup_message(kind: str, config: WorkerConfig, line: str) -> str:
    """A set-up failure in the user's words: which variable or base_url, what to do, the transcript's line."""
    where = f"[worker] base_url {config.base_url}" if config.base_url else "the OpenAI API (no [worker] base_url)"
    if kind == "auth":
        var = key_names(config)[0]
        if not config.base_url:
            how = "export the right key, or run `codex login`"
        else:
            how = "[worker] env_key names it" if config.env_key else "the default; [worker] env_key names another"
        text = f"the key in {var} was refused (401 Unauthorized) by {where}: check {var} ({how})"
    elif kind == "key":
        text = f"codex found no key variable for {where}: set {key_names(config)[0]} ([worker] env_key names it)"
    else:
        text = unreachable(config.base_url)
    return f"{text}\n  the transcript's line: {line}"


def resolve_binary(config: WorkerConfig) -> tuple[str | None, str]:
    """(path, "") or (None, what the user should do)."""
    if config.binary:
        p = shutil.which(config.binary) or (config.binary if os.access(config.binary, os.X_OK) else None)
        if p and os.path.isfile(p):
            return p, ""
        return None, (
            f"worker.binary = {config.binary!r} is not an executable file; fix [worker] binary in "
            "intents.toml or remove it to use `codex` from PATH"
        )
    p = shutil.which("codex")
    if p:
        return p, ""
    try:
        import codex_cli_bin  # the PyPI wheel `openai-codex-cli-bin`, optional

        return str(codex_cli_bin.bundled_codex_path()), ""
    except (ImportError, OSError):
        pass
    return None, (
        "the codex binary was not found: install it with `pip install openai-codex-cli-bin` (or "
        "`npm install -g @openai/codex`), put `codex` on PATH, or set [worker] binary in intents.toml"
    )


def _bundled_path_dir() -> str | None:
    try:
        import codex_cli_bin

        d = codex_cli_bin.bundled_path_dir()
        return str(d) if d else None
    except (ImportError, OSError, AttributeError):
        return None


def build_argv(binary: str, request: WorkerRequest, model: str) -> list[str]:
    """The codex command line. Never holds a key: the provider names the env var that carries it."""
    cfg = request.config
    argv = [
        binary,
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "-C",
        str(request.workspace),
        "-s",
        cfg.extra.get("sandbox", "workspace-write"),
        # Without this a refused connection is retried forever ("waiting for network").
        "--disable",
        "unbounded_connection_retries",
        # The shell snapshot dumps the whole environment, keys included, to $CODEX_HOME/shell_snapshots/
        # and is only deleted on a clean exit: a timeout kill would leave our secrets on disk.
        "--disable",
        "shell_snapshot",
        "-m",
        model,
    ]
    if cfg.base_url:
        p = f"model_providers.{PROVIDER}"
        argv += [
            "-c",
            f"model_provider={PROVIDER}",
            "-c",
            f"{p}.name={PROVIDER}",
            "-c",
            f"{p}.base_url={json.dumps(cfg.base_url)}",  # a TOML basic string
            "-c",
            f"{p}.env_key={cfg.env_key or 'OPENAI_API_KEY'}",
        ]
        for k in PROVIDER_KEYS:
            if k in cfg.extra:
                argv += ["-c", f"{p}.{k}={int(cfg.extra[k])}"]
    if prompt_via_stdin(request.prompt):
        return argv + ["-"]
    return argv + ["--", request.prompt]


def prompt_via_stdin(prompt: str) -> bool:
    """Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN): longer prompts go through a closed stdin pipe."""
    return len(prompt.encode("utf-8")) > ARGV_PROMPT_MAX


def child_env(request: WorkerRequest, binary: str) -> dict[str, str]:
    env = dict(os.environ if request.env is None else request.env)
    if request.config.extra.get("codex_home"):
        # Only when configured: the default CODEX_HOME (~/.codex) holds the user's login.
        home = Path(request.config.extra["codex_home"])
        home.mkdir(parents=True, exist_ok=True)
        env["CODEX_HOME"] = str(home)
    extra_dir = _bundled_path_dir()
    if extra_dir and Path(binary).resolve().is_relative_to(Path(extra_dir).resolve().parent):
        env["PATH"] = extra_dir + os.pathsep + env.get("PATH", "")  # the wheel's bundled rg
    return env


class CodexWorker:
    kind = "codex"
    # `codex --version` per (binary path, mtime): a replaced binary is asked again
    _versions: dict[tuple[str, int], str] = {}
    _lock = threading.Lock()
    # providers (base_url, "" for the built-in one) that answered an attempt of this process: after that, a
    # connection that fails is the network's trouble (transient), not the set-up's
    _answered: set[str] = set()

    def version(self, config: WorkerConfig) -> str:
        binary, _ = resolve_binary(config)
        if not binary:
            return "codex-missing"
        try:
            key = (binary, os.stat(binary).st_mtime_ns)
        except OSError:
            return "codex-unknown"
        with self._lock:
            if key not in self._versions:
                try:
                    out = subprocess.run(
                        [binary, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
                    )
                    self._versions[key] = (out.stdout.strip().splitlines() or ["codex-unknown"])[0]
                except (OSError, subprocess.SubprocessError):
                    self._versions[key] = "codex-unknown"
            return self._versions[key]

    def check(self, config: WorkerConfig, environ: Mapping[str, str], steps=()) -> list[Check]:
        """The binary (and its version), the key variable (by name), base_url's form; no model is called."""
        binary, why = resolve_binary(config)
        checks = [Check("binary", binary is not None, binary or why)]
        if binary:
            version = self.version(config)
            ok = version not in ("codex-unknown", "codex-missing")
            checks.append(Check("version", ok, version if ok else f"`{binary} --version` failed: is it codex?"))
        if config.base_url:
            why = f"codex sends it to {config.base_url} ([worker] env_key names the variable)"
            checks.append(key_check(key_names(config), environ, why))
        else:
            why = (
                "codex's built-in provider reads it (`codex exec` does not use OPENAI_API_KEY); "
                "export it, run `codex login`, or set [worker] base_url and env_key"
            )
            home = codex_home(config.extra, environ)
            checks.append(key_check(key_names(config), environ, why, login=home / "auth.json"))
        checks.append(url_check(config.base_url))
        return checks

    def run(self, request: WorkerRequest) -> WorkerResult:
        cfg = request.config
        t0 = time.monotonic()
        binary, why = resolve_binary(cfg)
        if not binary:
            return failed(SETUP, why, model=cfg.model)
        env = child_env(request, binary)
        secrets = secret_values([cfg.env_key, *cfg.secret_names], environ=env)
        problems = [c.detail for c in self.check(cfg, env) if not c.ok and c.what in ("key", "base_url")]
        if problems:  # codex would start, then retry a request that cannot succeed
            return failed(SETUP, "; ".join(problems), model=cfg.model)
        version = self.version(cfg)
        for model in (cfg.model, *cfg.fallback_models):
            result = self._attempt(request, binary, env, model, secrets)
            result.worker_version = version
            if result.ok or not MODEL_MISSING.search(result.error or ""):
                break
        result.duration_s = time.monotonic() - t0
        return result

    def _attempt(self, request: WorkerRequest, binary: str, env: dict, model: str, secrets) -> WorkerResult:
        cfg = request.config
        t0 = time.monotonic()
        grace = float(cfg.extra.get("kill_grace", 5.0))
        via_stdin = prompt_via_stdin(request.prompt)
        try:
            # stdin is never left open: codex reads a non-TTY stdin to EOF even with a prompt argument.
            group = process.start(
                build_argv(binary, request, model),
                cwd=request.workspace,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                journal=request.journal,
                label=f"{request.intent} codex",
                stdin_pipe=via_stdin,
            )
        except OSError as e:
            return failed(CONFIG, f"could not start {binary}: {e}", model=model)
        proc = group.proc
        stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr  # pipes as asked: stdin only with via_stdin
        assert stdout is not None and stderr is not None
        err_fd = stderr.fileno()
        if stdin is not None:

            def feed():
                try:
                    stdin.write(request.prompt.encode("utf-8"))
                except OSError:
                    pass  # codex died early: its exit status tells the story
                finally:
                    try:
                        stdin.close()
                    except OSError:
                        pass

            threading.Thread(target=feed, daemon=True).start()
        lines: queue.Queue = queue.Queue()
        err_buf = bytearray()

        def read_out():
            for raw in iter(stdout.readline, b""):
                lines.put(raw)
            lines.put(_EOF)

        def read_err():
            for chunk in iter(lambda: os.read(err_fd, 4096), b""):
                err_buf.extend(chunk)
                del err_buf[:-STDERR_KEEP]

        readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
        for t in readers:
            t.start()
        deadline = t0 + cfg.timeout
        raw_lines: list[str] = []
        provider = cfg.base_url or ""
        watch = SetupWatch(answered=provider in self._answered)
        try:
            killed = self._pump(group, lines, raw_lines, cfg, deadline, request.cancel, watch)
        except BaseException:
            # Ctrl-C or an error in the runner: codex is in its own session, so no terminal signal reaches
            # it; stop its group before letting the exception go on.
            group.kill(min(grace, 2.0))
            group.reap(5)
            raise
        # Whatever is left of the group (commands the agent left running) goes too, before the leader is
        # reaped; a codex that is still running gets its grace first.
        pumped = len(raw_lines)
        if watch.answered:
            with self._lock:
                self._answered.add(provider)
        group.kill(grace if killed else 0)
        code = group.reap()
        for t in readers:
            t.join(timeout=2)
        while not lines.empty():  # lines that arrived after we stopped listening
            item = lines.get_nowait()
            if item is not _EOF:
                raw_lines.append(item.decode("utf-8", "replace"))
        err_text = redact(err_buf.decode("utf-8", "replace"), secrets)
        result = self._result(
            request, model, raw_lines, code, killed, err_text, secrets, time.monotonic() - t0, proc.pid
        )
        if watch.kind is None and not result.ok:
            for line in raw_lines[pumped:]:  # what arrived as codex exited, after the pump stopped
                if watch.saw(line):
                    break
        if watch.kind is not None:
            message = redact(setup_message(watch.kind, cfg, watch.line), secrets)
            result = failed(
                SETUP,
                message,
                events=result.events,
                transcript=result.transcript,
                usage=result.usage,
                duration_s=result.duration_s,
                model=model,
            )
        return result

    @staticmethod
    def _pump(
        group: process.Group,
        lines: queue.Queue,
        raw_lines: list[str],
        cfg: WorkerConfig,
        deadline: float,
        cancel,
        watch: SetupWatch | None = None,
    ) -> str | None:
        """Collect stdout lines until codex is done; returns None, or why it must be killed:
        "timeout" (wall clock), "idle" (no line for idle_timeout), "cancelled" (request.cancel was set) or
        "setup" (a line showed a set-up failure: the key refused, no connection at the first request).
        The idle clock runs on codex's output lines, which only this loop sees: process.Group.wait watches
        the exit alone."""
        last = time.monotonic()
        exited_at = None
        while True:
            now = time.monotonic()
            wait = deadline - now
            if cfg.idle_timeout:
                wait = min(wait, last + cfg.idle_timeout - now)
            if wait <= 0:
                return "timeout" if now >= deadline else "idle"
            if cancel is not None and cancel.is_set():
                return "cancelled"
            try:
                item = lines.get(timeout=min(wait, 0.1))
            except queue.Empty:
                # A command the agent left running may hold stdout open after codex exits: stop reading
                # once codex is gone and the pipe has been quiet for a moment.
                if exited_at is None and group.exited():
                    exited_at = time.monotonic()
                if exited_at is not None and time.monotonic() - exited_at > 0.3:
                    break
                continue
            if item is _EOF:
                break
            last = time.monotonic()
            raw_lines.append(item.decode("utf-8", "replace"))
            if watch is not None and watch.saw(raw_lines[-1]):
                return "setup"
        # stdout is closed: wait for the exit within what is left of the wall clock.
        return group.wait(max(0.0, deadline - time.monotonic()), cancel)

    def _result(self, request, model, raw_lines, code, killed, stderr, secrets, duration, pid) -> WorkerResult:
        cfg = request.config
        events: list[dict] = []
        final, usage, completed, turn_failed, errors, partial = "", Usage(), False, None, [], None
        for i, line in enumerate(raw_lines):
            try:
                ev = json.loads(line)
            except ValueError:
                if not line.endswith("\n") and i == len(raw_lines) - 1:
                    partial = line
                continue
            if not isinstance(ev, dict):
                continue
            events.append(ev)
            kind = ev.get("type")
            item = ev.get("item") or {}
            if kind == "item.completed" and item.get("type") == "agent_message":
                final = item.get("text") or ""
            elif kind == "turn.completed":
                completed, usage = True, Usage.from_json(ev.get("usage"))
            elif kind == "turn.failed":
                turn_failed = (ev.get("error") or {}).get("message") or "turn failed"
            elif kind == "error":
                errors.append(ev.get("message") or "")
        transcript = redact("".join(raw_lines), secrets)
        events = redact_obj(events, secrets)
        tail = stderr.strip()[-2000:]
        # pid is also the process group id (own session): lets tests and audits check nothing survived
        events.append({"type": "runner.exit", "pid": pid, "exit_code": code, "killed": killed, "stderr": tail})
        base = dict(events=events, transcript=transcript, usage=usage, duration_s=duration, model=model)
        if killed == "cancelled":
            return failed(TIMEOUT, "cancelled by the runner: codex was stopped with its process group", **base)
        if killed == "setup":  # the caller words it (setup_message)
            return failed(SETUP, "set-up failure", **base)
        if killed:
            limit = cfg.timeout if killed == "timeout" else cfg.idle_timeout
            what = "wall-clock timeout" if killed == "timeout" else "idle timeout (no event)"
            hint = f"; last codex message: {redact(errors[-1], secrets)}" if errors else ""
            return failed(
                TIMEOUT,
                f"codex hit the {what} of {limit:g}s and was killed with its process group"
                f"{hint}. Raise [worker] {'timeout' if killed == 'timeout' else 'idle_timeout'} if the "
                "step needs longer, or check the provider is reachable.",
                **base,
            )
        if code == 0 and completed:
            return WorkerResult(ok=True, final_message=redact(final, secrets), failure=None, error=None, **base)
        if turn_failed:
            text = turn_failed
        elif code == 2:
            return failed(
                CONFIG,
                f"codex rejected its command line (exit 2): {tail[-800:]}. The installed codex "
                "may be too old or too new for runner; check `codex --version`.",
                **base,
            )
        elif code == 0:
            text = "codex exited 0 without a turn.completed event: the turn did not finish"
        elif code < 0:
            text = f"codex was killed by signal {-code} (not by the runner)"
        else:
            text = errors[-1] if errors else (tail.splitlines()[-1] if tail else f"codex exited {code}")
        if partial is not None:
            text += f"; its output stopped mid-line: {partial[:200]!r}"
        kind = classify(text) or (classify(tail) if code != 0 else None) or TRANSIENT
        return failed(kind, f"codex failed ({kind}, exit {code}): {redact(text, secrets)}" + _advice(kind), **base)


def _advice(kind: str) -> str:
    return {
        TRANSIENT: ". Retrying the step may succeed.",
        PERMANENT: ". Retrying will not help: check the key, the model, the provider, or shrink the prompt.",
        CONFIG: ". Fix the codex setup ([worker] in intents.toml) and run again.",
    }.get(kind, "")
