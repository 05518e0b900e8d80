"""The cache's stores beyond the local database, a subsystem: `remote` (fsspec: blobs and signed records under a
URL), `mirror` (the core's cache.Remote: read-through, background uploads, counts). `mirror_for` turns the
spec's `[cache]` table, `RUNNER_REMOTE_CACHE` and the command line into one, or None when no remote is named."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from ..errors import UsageError
from ..spec import Spec

ENV_URL = "RUNNER_REMOTE_CACHE"
ENV_MODE = "RUNNER_REMOTE_MODE"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # as the schema's [cache] remote


def mirror_named(spec: Spec, url: str | None = None, mode: str | None = None):
    """mirror_for, when a remote is named anywhere; else None, and fsspec is never imported."""
    if not url and not os.environ.get(ENV_URL) and not spec.cache.remote:
        return None
    return mirror_for(spec, url, mode)


def mirror_for(
    spec: Spec,
    url: str | None = None,
    mode: str | None = None,
    environ: Mapping[str, str] | None = None,
    say=None,
):
    """The run's remote cache (runner/stores/mirror.py), or None. `url` and `mode`: `--remote`,
    `--remote-mode`; then `RUNNER_REMOTE_CACHE`, `RUNNER_REMOTE_MODE`; then `[cache] remote`, `mode`."""
    from .mirror import MODES, READ, READWRITE, Mirror
    from .remote import RemoteError, RemoteStore

    env = os.environ if environ is None else environ
    table = spec.cache
    url = url or env.get(ENV_URL) or table.remote
    if not url:
        return None
    if not _URL.match(url):
        raise UsageError(
            f"error: remote cache '{url}' is not a URL: use one such as s3://bucket/prefix or file:///mnt/shared/cache"
        )
    mode = mode or env.get(ENV_MODE) or table.mode or READWRITE
    if mode not in MODES:
        raise UsageError(f"error: remote cache mode '{mode}': use read, write or readwrite")
    say = say or _stderr
    secret = None
    key_env = table.signing_key_env
    if key_env:
        value = env.get(key_env, "")
        if value:
            secret = value.encode()
        elif mode != READ:
            # nothing it wrote could be signed: a runner holding the key would refuse it
            say(f"runner: [cache] signing_key_env names {key_env}, which is not set: reading the remote cache only")
            mode = READ
    try:
        store = RemoteStore(url, signing_key=secret, timeout=float(table.timeout))
    except RemoteError as exc:
        raise UsageError(f"error: remote cache {url}: {exc}") from None
    return Mirror(store, mode, drain=float(table.upload_timeout), say=say)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
