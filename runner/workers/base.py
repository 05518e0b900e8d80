"""The worker interface's data: what a worker is asked (WorkerRequest) and what it answers (WorkerResult)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from runner.process import Journal
    from runner.workers.setup import Check

# The failure classes a worker may report; the agent step decides what to do with each.
TRANSIENT = "transient"  # retry the attempt (rate limit, overload, dropped stream, malformed answer once)
PERMANENT = "permanent"  # retrying the same input will not help (auth, bad request, context window, ERR)
TIMEOUT = "timeout"  # killed by the runner's wall-clock or idle timeout
CONFIG = "config"  # the worker's configuration is wrong (a flag unknown, no recording)
# the worker cannot start or reach its model at all (binary missing, key variable unset, the key refused with a
# 401, base_url refused or not resolving at the first request): no retry helps and every agent step of the run
# would fail the same way, so the run stops at once with exit 2
SETUP = "setup"
FAILURES = (TRANSIENT, PERMANENT, TIMEOUT, CONFIG, SETUP)

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class WorkerConfig:
    """The `[worker]` table of intents.toml. Part of every agent step's key (with the worker's version)."""

    kind: str = "codex"  # codex | openai | replay
    model: str = "gpt-5.3-codex"
    fallback_models: tuple[str, ...] = ("gpt-5-codex",)
    base_url: str | None = None  # a custom provider (e.g. the fake server) when set
    env_key: str | None = None  # NAME of the env var holding the key; never the key itself
    binary: str | None = None  # codex binary path
    timeout: float = 900.0  # wall-clock seconds per attempt
    idle_timeout: float | None = 300.0  # no event for this many seconds -> killed
    replays_dir: str = "replays"  # relative to the project root, or absolute
    extra: Mapping[str, str] = field(default_factory=lambda: _EMPTY, hash=False)
    # extra keys understood today: codex: request_max_retries, stream_max_retries, stream_idle_timeout_ms
    # (provider), codex_home (a private CODEX_HOME for the child), sandbox (default workspace-write),
    # kill_grace (seconds between SIGTERM and SIGKILL); openai: max_retries, stream ("false"),
    # reasoning_effort; replay: match = "intent", project_root.
    # the names the policies list in `secrets`: their values are masked in what the worker records (not
    # in key_fields: which values are hidden in a record does not change what the worker produces)
    secret_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # TOML gives lists and dicts: normalise so the config stays immutable and hashable.
        object.__setattr__(self, "fallback_models", tuple(self.fallback_models or ()))
        object.__setattr__(self, "secret_names", tuple(self.secret_names or ()))
        object.__setattr__(self, "extra", MappingProxyType({str(k): str(v) for k, v in (self.extra or {}).items()}))

    def key_fields(self) -> dict:
        """The fields that change a worker's output, for the step key (timeouts and paths do not)."""
        return {
            "kind": self.kind,
            "model": self.model,
            "fallback_models": list(self.fallback_models),
            "base_url": self.base_url,
        }


@dataclass(frozen=True)
class WorkerRequest:
    prompt: str
    workspace: Path  # the attempt's isolated workspace; the worker's cwd
    intent: str
    step_key: str
    config: WorkerConfig = field(default_factory=WorkerConfig)
    attempt: int = 1
    env: Mapping[str, str] | None = None  # the child's environment; None = os.environ
    cancel: threading.Event | None = None  # set it to stop the attempt (returns failure="timeout", "cancelled…")
    # where a worker that starts a process records it while it runs, so a crashed runner's next start kills it
    journal: Journal | None = field(default=None, compare=False, repr=False)


@dataclass
class Usage:
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict:
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def from_json(cls, d: Mapping | None) -> Usage:
        d = d or {}
        return cls(
            int(d.get("input_tokens") or 0), int(d.get("cached_input_tokens") or 0), int(d.get("output_tokens") or 0)
        )


@dataclass
class WorkerResult:
    ok: bool
    final_message: str
    events: list[dict]  # parsed events (codex JSONL, SSE events), redacted
    transcript: str  # raw JSONL / SSE text, REDACTED
    usage: Usage
    duration_s: float
    model: str  # the model that answered (may be a fallback)
    failure: str | None = None  # None | transient | permanent | timeout | config | setup
    error: str | None = None  # what happened and what to do about it
    files: dict[str, str | None] | None = None  # openai/replay: path -> content (None = delete)
    worker_version: str = ""  # e.g. "codex-cli 0.163.0"; part of the step key

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "final_message": self.final_message,
            "usage": self.usage.to_json(),
            "duration_s": round(self.duration_s, 3),
            "model": self.model,
            "failure": self.failure,
            "error": self.error,
            "files": self.files,
            "worker_version": self.worker_version,
        }


def failed(
    kind: str,
    error: str,
    *,
    model: str = "",
    duration_s: float = 0.0,
    transcript: str = "",
    events: list[dict] | None = None,
    worker_version: str = "",
    usage: Usage | None = None,
) -> WorkerResult:
    """A failed WorkerResult with the few fields that matter filled in."""
    assert kind in FAILURES, kind
    return WorkerResult(
        ok=False,
        final_message="",
        events=events or [],
        transcript=transcript,
        usage=usage or Usage(),
        duration_s=duration_s,
        model=model,
        failure=kind,
        error=error,
        worker_version=worker_version,
    )


@runtime_checkable
class Worker(Protocol):
    kind: str

    def version(self, config: WorkerConfig) -> str:
        """A short version string (cheap, cached per process); part of the step key."""
        ...

    def run(self, request: WorkerRequest) -> WorkerResult:
        """Run one attempt. Never raises for model/provider/setup trouble: returns a classified result."""
        ...

    def check(
        self, config: WorkerConfig, environ: Mapping[str, str], steps: list[tuple[str, str | None]]
    ) -> list[Check]:
        """What the worker needs to start, found or not, without calling a model (validate, status, make -n).
        steps: the agent steps to serve, (intent, replay key or None when not known yet)."""
        ...
