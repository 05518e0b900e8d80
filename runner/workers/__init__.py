"""The worker registry: how an agent step reaches a model (codex subprocess, one Responses call, recorded replay)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from runner.workers.base import (
    CONFIG,
    FAILURES,
    PERMANENT,
    SETUP,
    TIMEOUT,
    TRANSIENT,
    Usage,
    Worker,
    WorkerConfig,
    WorkerRequest,
    WorkerResult,
)

if TYPE_CHECKING:
    from runner.spec import Spec

# kind -> "module:Class". Imported lazily so that only workers/openai.py ever imports its HTTP client,
# and a codex-only project never pays for it.
WORKERS: dict[str, str] = {
    "codex": "runner.workers.codex:CodexWorker",
    "openai": "runner.workers.openai:OpenAIWorker",
    "replay": "runner.workers.replay:ReplayWorker",
}

_instances: dict[str, Worker] = {}


def worker_class(kind: str) -> type:
    try:
        target = WORKERS[kind]
    except KeyError:
        raise ValueError(f"unknown worker kind {kind!r}; expected one of: {', '.join(sorted(WORKERS))}") from None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def config_for(spec: Spec, kind: str | None = None, intent: str | None = None) -> WorkerConfig:
    """The worker config of a spec's [worker] table (`kind` overrides its kind, as `--worker` does); the secret
    names its policies list are masked in what the worker records. `intent`: the [worker] its agent step uses (a
    sub-project's own, else the root's)."""
    from runner.spec import worker_of

    w = spec.worker if intent is None else worker_of(spec, intent)
    extra = dict(w.extra)
    extra.setdefault("project_root", spec.root)
    return WorkerConfig(
        kind=kind or w.kind,
        model=w.model,
        fallback_models=w.fallback_models,
        base_url=w.base_url,
        env_key=w.env_key,
        binary=w.binary,
        timeout=w.timeout,
        idle_timeout=w.idle_timeout,
        replays_dir=w.replays_dir,
        extra=extra,
        secret_names=tuple(name for p in spec.policies.values() for name in p.secrets),
    )


def ask(spec: Spec, prompt: str, intent: str, step_key: str) -> WorkerResult:
    """One question to the model outside any step (a learning pass's proposal, `runner new`'s draft): one
    Responses call through the openai worker with the project's [worker] model, key and base_url, in an empty
    temporary workspace; the answer comes back as the FILE blocks of the result."""
    import tempfile
    from pathlib import Path

    config = config_for(spec, "openai")
    with tempfile.TemporaryDirectory(prefix=f"runner-{step_key}-") as tmp:
        return get_worker(config).run(
            WorkerRequest(prompt=prompt, workspace=Path(tmp), intent=intent, step_key=step_key, config=config)
        )


def get_worker(config: WorkerConfig | str) -> Worker:
    """The (process-wide, stateless) worker for config.kind. Raises ValueError for an unknown kind."""
    kind = config if isinstance(config, str) else config.kind
    if kind not in _instances:
        _instances[kind] = worker_class(kind)()
    return _instances[kind]


__all__ = [
    "WORKERS",
    "ask",
    "config_for",
    "get_worker",
    "worker_class",
    "Worker",
    "WorkerConfig",
    "WorkerRequest",
    "WorkerResult",
    "Usage",
    "TRANSIENT",
    "PERMANENT",
    "TIMEOUT",
    "CONFIG",
    "SETUP",
    "FAILURES",
]
