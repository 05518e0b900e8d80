"""What an agent worker needs before it can start (binary, key variable, base_url, recordings), checked without
calling a model, and the words for a set-up failure at run time (a refused key, an unreachable base_url)."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit


class Check(NamedTuple):
    """One thing a worker needs, found or not. `detail` says what was found, or what is wrong and what to do;
    it names variables, never their values."""

    what: str  # binary | version | key | base_url | recordings
    ok: bool
    detail: str

    def to_json(self) -> dict:
        return {"what": self.what, "ok": self.ok, "detail": self.detail}


def key_check(names: tuple[str, ...], environ: Mapping[str, str], why: str, login: Path | None = None) -> Check:
    """The first of `names` that is set (by name only), else a login file that stands in for a key."""
    for name in names:
        if (environ.get(name) or "").strip():
            return Check("key", True, f"{name} is set")
    if login is not None and login.is_file():
        return Check("key", True, f"no key variable, but a login in {login}")
    wanted = " or ".join(names)
    where = f" and there is no login in {login}" if login is not None else ""
    return Check("key", False, f"the environment variable {wanted} is not set{where}: {why}")


def url_problem(base_url: str) -> str | None:
    """Why [worker] base_url is not a usable http(s) URL, or None."""
    try:
        parts = urlsplit(base_url)
        port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"[worker] base_url = {base_url!r} is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"[worker] base_url = {base_url!r} must start with http:// or https://"
    if not parts.hostname or re.search(r"\s", base_url):
        return f"[worker] base_url = {base_url!r} names no host (expected http://HOST[:PORT]/v1)"
    if port == 0:
        return f"[worker] base_url = {base_url!r} has port 0"
    return None


def url_check(base_url: str | None) -> Check:
    if not base_url:
        return Check("base_url", True, "none: the provider's own endpoint")
    problem = url_problem(base_url)
    return Check("base_url", problem is None, problem or base_url)


def unreachable(base_url: str | None, default_host: str = "api.openai.com") -> str:
    """Why a connection to base_url failed, said as the user can check it: the name does not resolve, or nothing
    answers at that host and port. Resolving a name is local work (no request reaches a model)."""
    parts = urlsplit(base_url or f"https://{default_host}/v1")
    host = parts.hostname or default_host
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 443
    where = f"[worker] base_url {base_url}" if base_url else f"the provider's endpoint {host} (no [worker] base_url)"
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return f"the name {host} of {where} does not resolve: check the URL, or the network and DNS"
    return f"nothing answered at {host}:{port} ({where}): the connection was refused or failed; is the server up?"


def codex_home(extra: Mapping[str, str], environ: Mapping[str, str]) -> Path:
    """Where codex keeps a login: [worker] extra codex_home, else $CODEX_HOME, else ~/.codex."""
    if extra.get("codex_home"):
        return Path(extra["codex_home"])
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME") or os.path.expanduser("~")) / ".codex"
