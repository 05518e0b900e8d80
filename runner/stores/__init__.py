"""The cache's stores beyond the local database, a subsystem: `remote` (fsspec: blobs and signed records under a
URL), `mirror` (the core's cache.Remote: read-through, background uploads, counts). `mirror_for` turns the
`[cache]` table, `RUNNER_REMOTE_CACHE` and the command line into one, or None when no remote is named."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from ..errors import UsageError

ENV_URL = "RUNNER_REMOTE_CACHE"
ENV_MODE = "RUNNER_REMOTE_MODE"
DEFAULT_TIMEOUT = 5.0
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # as the schema's [cache] remote
_CACHE_TABLE = re.compile(r'^[ \t]*(\[[ \t]*"?cache"?[ \t]*\]|"?cache"?[ \t]*[.=])', re.MULTILINE)


def settings_of(root: Path, spec_file: str = "intents.toml", token: str | None = None) -> dict:
    """The [cache] table (validated with the rest of the spec by every command that loads it). `token`: the
    compiled spec's (runner/compiled.py), new whenever a spec file changed: the table found for it is kept in
    .runner/remote.json, so a 100,000-intent file is not read again on every run to learn it has none."""
    from .. import toml_read

    memo = root / ".runner" / "remote.json"
    if token:
        try:
            kept = json.loads(memo.read_text(encoding="utf-8"))
            if kept.get("token") == token and kept.get("file") == spec_file and isinstance(kept.get("table"), dict):
                return kept["table"]
        except (OSError, ValueError, AttributeError):
            pass
    try:
        text = (root / spec_file).read_text(encoding="utf-8")
        data = toml_read.loads(text) if "cache" in text and _CACHE_TABLE.search(text) else {}
    except (OSError, UnicodeDecodeError, toml_read.TOMLDecodeError):
        data = {}
    table = data.get("cache")
    table = table if isinstance(table, dict) else {}
    if token and memo.parent.is_dir():
        from ..cache import atomic_write

        try:
            atomic_write(str(memo), json.dumps({"token": token, "file": spec_file, "table": table}).encode())
        except OSError:
            pass  # only a shortcut
    return table


def mirror_named(
    root: str | Path, spec_file: str, url: str | None = None, mode: str | None = None, token: str | None = None
):
    """mirror_for, when a remote is named anywhere; else None, and fsspec is never imported. `token`: the
    compiled spec's (settings_of)."""
    if not url and not os.environ.get(ENV_URL) and not settings_of(Path(root), spec_file, token).get("remote"):
        return None
    return mirror_for(Path(root), spec_file, url, mode, token=token)


def mirror_for(
    root: Path,
    spec_file: str = "intents.toml",
    url: str | None = None,
    mode: str | None = None,
    environ: Mapping[str, str] | None = None,
    say=None,
    token: str | None = None,
):
    """The run's remote cache (runner/stores/mirror.py), or None. `url` and `mode`: `--remote`,
    `--remote-mode`; then `RUNNER_REMOTE_CACHE`, `RUNNER_REMOTE_MODE`; then `[cache] remote`, `mode`."""
    from .mirror import MODES, READ, READWRITE, Mirror
    from .remote import RemoteError, RemoteStore

    env = os.environ if environ is None else environ
    table = settings_of(root, spec_file, token)
    url = url or env.get(ENV_URL) or table.get("remote")
    if not url:
        return None
    if not _URL.match(url):
        raise UsageError(
            f"error: remote cache '{url}' is not a URL: use one such as s3://bucket/prefix or file:///mnt/shared/cache"
        )
    mode = mode or env.get(ENV_MODE) or table.get("mode") or READWRITE
    if mode not in MODES:
        raise UsageError(f"error: remote cache mode '{mode}': use read, write or readwrite")
    say = say or _stderr
    secret = None
    key_env = table.get("signing_key_env")
    if key_env:
        value = env.get(key_env, "")
        if value:
            secret = value.encode()
        elif mode != READ:
            # nothing it wrote could be signed: a runner holding the key would refuse it
            say(f"runner: [cache] signing_key_env names {key_env}, which is not set: reading the remote cache only")
            mode = READ
    try:
        store = RemoteStore(url, signing_key=secret, timeout=float(table.get("timeout", DEFAULT_TIMEOUT)))
    except RemoteError as exc:
        raise UsageError(f"error: remote cache {url}: {exc}") from None
    return Mirror(store, mode, drain=float(table.get("upload_timeout", 60.0)), say=say)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
