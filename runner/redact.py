"""Secret masking: which variables hold secrets, and one Mask per run that every writer of the runner goes through.

The runner's own records (events, step logs, attempt artefacts, cache records, the error log, terminal lines)
show [REDACTED:NAME] where a secret's value was; a step's declared outputs are the user's own bytes and are
never masked.
"""

from __future__ import annotations

import json
import marshal
import os
from collections.abc import Iterable, Mapping
from typing import Any

# Variables whose values are secrets wherever they appear; the policy and the worker config add more names.
DEFAULT_SECRET_NAMES = ("OPENAI_API_KEY", "CODEX_API_KEY")
# Names that look like they hold a key (GITHUB_TOKEN, AWS_SECRET, PGPASSWORD, ...): masked without being listed,
# as a CI service masks what it injects; a false positive costs a masked word in a log, a miss costs a key.
# A connection string carries its key inside (AZURE_STORAGE_CONNECTION_STRING: "...;AccountKey=...").
SECRET_SUFFIXES = ("_TOKEN", "_KEY", "_SECRET", "_CONNECTION_STRING")
SECRET_INFIX = "PASSWORD"
MIN_SECRET_LEN = 8  # shorter values ("1", "true") would redact ordinary text and protect nothing


class Secret(str):
    """A secret value that remembers the name of the variable it came from (still a plain str)."""

    name: str

    def __new__(cls, value: str, name: str = "SECRET") -> Secret:
        obj = super().__new__(cls, value)
        obj.name = name
        return obj


def looks_secret(name: str) -> bool:
    """A variable name that says it holds a key: *_TOKEN, *_KEY, *_SECRET, *_CONNECTION_STRING, *PASSWORD*
    (any case)."""
    upper = name.upper()
    return upper.endswith(SECRET_SUFFIXES) or SECRET_INFIX in upper


def secret_values(extra_names: Iterable[str | None] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the secret variables present in environ (default os.environ): the defaults, extra_names and
    every name that looks_secret(); longest first so a secret containing another is replaced whole. Short or
    empty values are ignored."""
    env = os.environ if environ is None else environ
    names = [*DEFAULT_SECRET_NAMES, *(n for n in extra_names if n), *(n for n in env if looks_secret(n))]
    seen: dict[str, Secret] = {}
    for name in names:
        value = env.get(name) or ""
        if len(value.strip()) >= MIN_SECRET_LEN and value not in seen:
            seen[value] = Secret(value, name)
    return sorted(seen.values(), key=len, reverse=True)


def _pairs(secrets: Iterable[str] | Mapping[str, str]) -> list[tuple[str, str]]:
    if isinstance(secrets, Mapping):
        pairs = [(v, k) for k, v in secrets.items()]
    else:
        pairs = [(s, getattr(s, "name", "SECRET")) for s in secrets]
    return sorted(((v, n) for v, n in pairs if v and len(v) >= MIN_SECRET_LEN), key=lambda p: len(p[0]), reverse=True)


def redact(text: str, secrets: Iterable[str] | Mapping[str, str]) -> str:
    """text with each secret value replaced by [REDACTED:NAME]. secrets: secret_values() or {name: value}."""
    if not text:
        return text
    for value, name in _pairs(secrets):
        if value in text:
            text = text.replace(value, f"[REDACTED:{name}]")
    return text


def redact_obj(obj: Any, secrets: Iterable[str] | Mapping[str, str]) -> Any:
    """A copy of a JSON-able structure with every string (keys included) redacted."""
    return Mask(Secret(v, n) for v, n in _pairs(secrets)).obj(obj)


class Mask:
    """The secret values of one run and the ways to hide them, built once (for_run) and handed to every writer.

    False when there is nothing to hide: a writer then skips masking outright, so a run with no secret in its
    environment pays one truth test per write. A value is also matched in its JSON-escaped form, so an event
    line (JSON) is masked after it is serialized, at the cost of a substring search, not a walk of the event.
    """

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets = list(secrets)
        text: dict[str, str] = {}
        for value in sorted(self._secrets, key=len, reverse=True):  # a secret containing another is replaced whole
            if len(value) < MIN_SECRET_LEN:
                continue
            marker = f"[REDACTED:{getattr(value, 'name', 'SECRET')}]"
            for form in (str(value), json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
                text.setdefault(form, marker)
        self._text = list(text.items())
        self._bytes = [(v.encode("utf-8", "surrogateescape"), m.encode()) for v, m in self._text]
        # a secret cut by a chunk boundary starts within the last `longest - 1` bytes of the chunk
        self.longest = max((len(v) for v, _m in self._bytes), default=0)

    def __bool__(self) -> bool:
        return bool(self._text)

    def add(self, secrets: Iterable[str]) -> None:
        """Secrets met as the run goes on (a literal `env` value read back as its step starts: env_secrets.py):
        every writer holding this mask hides them from now on."""
        Mask.__init__(self, [*self._secrets, *secrets])

    def text(self, text: str) -> str:
        for value, marker in self._text:
            if value in text:
                text = text.replace(value, marker)
        return text

    def data(self, data: bytes) -> bytes:
        for value, marker in self._bytes:
            if value in data:
                data = data.replace(value, marker)
        return data

    def cut(self, data: bytes) -> int:
        """How many bytes at the end of `data` may be the start of a secret that the next chunk completes: the
        longest end of it that is the beginning of a secret (0 for most chunks). A writer holds those back
        and writes the rest at once, so output that holds no secret's start is never kept waiting (runner
        make -v shows a step's line as it prints it)."""
        cut = 0
        for value, _marker in self._bytes:
            first = value[:1]
            at = data.find(first, max(0, len(data) - len(value) + 1))  # a proper beginning: shorter than it
            while at != -1 and len(data) - at > cut:
                if value.startswith(data[at:]):
                    cut = len(data) - at
                    break
                at = data.find(first, at + 1)
        return cut

    def holds(self, obj: Any) -> bool:
        """Whether a secret occurs in any string of a structure of dicts, lists, strings and numbers. Checked in
        its marshal bytes, where every string stands as its UTF-8 bytes: a few microseconds at C speed, where
        walking a step record in Python costs twice that (a 10,000-step build stores 10,000 records)."""
        try:
            flat = marshal.dumps(obj)
        except ValueError:  # something marshal does not take: walk it
            return self.obj(obj) != obj
        return any(value in flat for value, _marker in self._bytes)

    def obj(self, obj: Any) -> Any:
        """A copy of a JSON-able structure with every string (keys included) masked; obj itself if no secrets."""
        if not self._text:
            return obj

        def walk(o: Any) -> Any:
            if isinstance(o, str):
                return self.text(o)
            if isinstance(o, Mapping):
                return {walk(k): walk(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [walk(v) for v in o]
            return o

        return walk(obj)

    def file(self, path: str | os.PathLike) -> bool:
        """Mask a file a child wrote (a verify log): rewritten atomically, and only when a secret occurs in it,
        so its bytes are otherwise untouched. True if it was rewritten."""
        if not self._bytes:
            return False
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return False
        masked = self.data(data)
        if masked == data:
            return False
        # written beside it and renamed over it: a reader sees the whole old log or the whole masked one
        tmp = f"{os.fspath(path)}.{os.getpid()}.masked"
        with open(tmp, "wb") as f:
            f.write(masked)
        os.replace(tmp, path)
        return True


def secret_names(spec) -> list[str]:
    """The names the spec adds to the defaults and the look of a name: the worker's key variable and every
    name a policy lists in `secrets`."""
    names = [spec.worker.env_key] if spec.worker.env_key else []
    for policy in spec.policies.values():
        names.extend(policy.secrets)
    return names


_last: list[Mask] = []  # the mask of this process's run, for the error boundary (which has no spec at hand)


def mask_for_run(spec, environ: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> Mask:
    """The run's mask: secret_values() of the environment, for the spec's names. Computed once per run. A
    step's own `env` values are not looked at: they are written in intents.toml, in the repository, and
    reading them would decode every intent of a compiled spec that a run otherwise reads a few of. `extra`:
    name -> value of the secrets the run's steps get through `env` ($NAME given to a key-like name)."""
    found = secret_values(secret_names(spec), environ)
    found += [Secret(value, name) for name, value in (extra or {}).items() if len(value.strip()) >= MIN_SECRET_LEN]
    mask = Mask(found)
    _last[:] = [mask]
    return mask


def current_mask() -> Mask:
    """The mask of the run this process made, or (before one was made, e.g. a spec error) one from the
    environment and the default names."""
    return _last[0] if _last else Mask(secret_values())
