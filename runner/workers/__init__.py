"""The worker registry: how an agent step reaches a model (codex subprocess, openai SDK call, recorded replay)."""

from __future__ import annotations

import importlib

from runner.workers.base import (
    CONFIG,
    FAILURES,
    PERMANENT,
    TIMEOUT,
    TRANSIENT,
    Usage,
    Worker,
    WorkerConfig,
    WorkerRequest,
    WorkerResult,
)

# kind -> "module:Class". Imported lazily so that only workers/openai.py ever imports the openai SDK,
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


def get_worker(config: WorkerConfig | str) -> Worker:
    """The (process-wide, stateless) worker for config.kind. Raises ValueError for an unknown kind."""
    kind = config if isinstance(config, str) else config.kind
    if kind not in _instances:
        _instances[kind] = worker_class(kind)()
    return _instances[kind]


__all__ = [
    "WORKERS",
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
    "FAILURES",
]
