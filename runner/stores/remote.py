"""The shared cache's store: content-addressed blobs and signed step records under one fsspec URL (the one
importer of fsspec and gcsfs; adlfs, for az://, is reached through fsspec alone).

Layout under the URL's prefix: `v1/blobs/AB/DIGEST` (a step output's bytes, named by their SHA-256) and
`v1/records/AB/KEY.json` (a step record, named by its key, in an envelope with its HMAC signature). A reader
trusts a blob by its digest alone (nobody can write other bytes under a digest and pass the check) and a record
by its signature, when it holds the team's key: a record names its outputs' digests, so a signed record vouches
for its blobs too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import posixpath
import threading
import uuid

from ..cache import StepRecord
from ..confine import path_problem, shown

FORMAT = 1
_FIELDS = ("intent", "key", "outputs", "ingredients", "created", "duration", "run_id", "drift", "attempts")


class RemoteError(Exception):
    """The store could not be reached, or answered with an error other than "not found"."""


def _canonical(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(secret: bytes, key: str, record: dict) -> str:
    """HMAC-SHA256 over the record's key and its content (Turborepo's remoteCache.signature, in spirit)."""
    return hmac.new(
        secret, b"runner-record-v1\0" + key.encode() + b"\0" + _canonical(record), hashlib.sha256
    ).hexdigest()


class RemoteStore:
    """Blobs and step records under `url` (`s3://bucket/prefix`, `gs://…`, `az://container/prefix`,
    `file:///path`, any fsspec URL).

    `signing_key`: records written are signed with it, and records read must carry its signature (an unsigned
    or mis-signed record is refused). `timeout`: seconds for one connection or one read, with no retry (a
    remote that fails is given up on by the caller, runner/stores/mirror.py, rather than asked again).
    Every refusal is counted (`refused`) and its reason kept (`refusals`).
    """

    def __init__(self, url: str, signing_key: bytes | None = None, timeout: float = 5.0):
        import fsspec  # the only importer of fsspec and gcsfs (fsspec loads s3fs and the other backends)
        import fsspec.asyn

        self.url = url
        self.signing_key = signing_key
        self.timeout = timeout
        protocol = fsspec.core.split_protocol(url)[0] or "file"
        options: dict = {}
        if protocol in ("s3", "s3a"):
            # botocore's own retries off and its timeouts bounded; s3fs's retry loop is set to one try below
            options = {
                "skip_instance_cache": True,
                # a read is one GET: with more, s3fs asks each object's size first (a HEAD, a round trip more)
                # to fetch a large one in parts
                "max_concurrency": 1,
                "config_kwargs": {
                    "connect_timeout": timeout,
                    "read_timeout": timeout,
                    "retries": {"max_attempts": 1, "mode": "standard"},
                },
            }
        elif protocol in ("gs", "gcs"):
            _plain_gcs(fsspec)
            options = {"skip_instance_cache": True, "requests_timeout": timeout}
        elif protocol in _AZURE:
            options = {
                "skip_instance_cache": True,
                # a blob under 32 MiB is read in one GET, under 64 MiB written in one PUT; a larger one goes in
                # parts one after another, rather than up to 128 at once beside the blobs fsspec sends together
                "max_concurrency": 1,
                "connection_timeout": timeout,
                "read_timeout": timeout,
            }
        try:
            if protocol in _AZURE and (missing := _azure_account_missing(url, protocol)):
                # a fork's CI, say, without the team's secrets: a remote that refuses, never a failed build
                self.fs, root = _Refusing(missing), fsspec.core.split_protocol(url)[1]
            else:
                self.fs, root = fsspec.core.url_to_fs(url, **options)
        except ImportError as exc:
            raise RemoteError(
                f"{protocol}:// needs an extra: pip install 'intent-runner[{_extra(protocol)}]' ({exc})"
            ) from None
        except (ValueError, TypeError) as exc:
            raise RemoteError(f"cannot open {url}: {exc}") from None
        if not isinstance(self.fs, _Refusing):
            if hasattr(self.fs, "retries"):
                self.fs.retries = 1
            if protocol in _AZURE:
                _one_try_azure(self.fs)
        self.local = protocol in ("file", "local")
        # one read's whole wait, its backend's own retries included (gcsfs retries a failed request six times
        # with a backoff, whatever its `retries` says): asked of an async filesystem's call, fsspec stops it
        self._bounded = {"timeout": timeout} if isinstance(self.fs, fsspec.asyn.AsyncFileSystem) else {}
        self._folders: set[str] = set()  # folders of a file:// remote known to exist
        self.root = root.rstrip("/") + "/v1"
        self.refused = 0
        self.refusals: dict[str, str] = {}  # key or digest -> why it was refused
        self._lock = threading.Lock()

    # paths
    def blob_path(self, digest: str) -> str:
        return f"{self.root}/blobs/{digest[:2]}/{digest}"

    def record_path(self, key: str) -> str:
        return f"{self.root}/records/{key[:2]}/{key}.json"

    # the wire
    def _read(self, path: str) -> bytes | None:
        try:
            if self.local:  # a folder: plain reads (fsspec's layer costs more than the read itself)
                with open(path, "rb") as f:
                    return f.read()
            return self.fs.cat_file(path, **self._bounded)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - any backend's failure is the remote's, never the build's
            raise RemoteError(_words(exc)) from None

    def _write_many(self, objects: dict[str, bytes]) -> None:
        """A reader never sees half an object: an object store's PUT is whole or absent (fsspec sends a batch
        concurrently); in a folder, each file is written under a temporary name beside it and renamed."""
        if not objects:
            return
        try:
            if not self.local:
                self.fs.pipe(objects)
                return
            for path, data in objects.items():
                folder = posixpath.dirname(path)
                if folder not in self._folders:
                    os.makedirs(folder, exist_ok=True)
                    self._folders.add(folder)
                tmp = f"{folder}/.{posixpath.basename(path)}.{uuid.uuid4().hex}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
        except Exception as exc:  # noqa: BLE001 - any backend's failure is the remote's, never the build's
            raise RemoteError(_words(exc)) from None

    def refuse(self, name: str, why: str) -> None:
        with self._lock:  # reads come from several threads (mirror.py fetch_records)
            self.refused += 1
            self.refusals[name] = why

    # blobs
    def get_blob(self, digest: str) -> bytes | None:
        """The blob's bytes, checked against the digest: a mismatch (corrupt, truncated) is refused and None."""
        data = self._read(self.blob_path(digest))
        if data is None:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            self.refuse(digest, f"remote copy of {digest[:12]} is damaged ({len(data)} bytes do not match its digest)")
            return None
        return data

    def has_blob(self, digest: str) -> bool:
        """Whether an object is stored under the digest (its bytes unchecked: a reader checks them)."""
        path = self.blob_path(digest)
        try:
            return os.path.exists(path) if self.local else bool(self.fs.exists(path, **self._bounded))
        except Exception as exc:  # noqa: BLE001 - any backend's failure is the remote's, never the build's
            raise RemoteError(_words(exc)) from None

    def put_blob(self, digest: str, data: bytes) -> None:
        self.put_many({digest: data}, [])

    # records
    def get_record(self, key: str) -> StepRecord | None:
        """The record stored under `key`, or None: absent, or refused (unreadable, for another key, naming a path
        outside the project or the runner's own, unsigned or mis-signed when this store holds the signing key)."""
        raw = self._read(self.record_path(key))
        if raw is None:
            return None
        try:
            envelope = json.loads(raw)
            record = envelope["record"]
            ok = envelope.get("format") == FORMAT and isinstance(record, dict) and isinstance(record["outputs"], dict)
        except (ValueError, KeyError, TypeError, AttributeError):
            ok = False
        if not ok:
            self.refuse(key, "remote record is unreadable")
            return None
        if record.get("key") != key:
            self.refuse(key, "remote record was stored under another key")
            return None
        for path in record["outputs"]:  # the first look; the step's own declared outputs are the core's (confine)
            if (why := path_problem(path)) is not None:
                self.refuse(key, f"remote record names {shown(path)}, which {why}")
                return None
        if self.signing_key is not None:
            signature = envelope.get("signature")
            if not isinstance(signature, str):
                self.refuse(key, "remote record is unsigned and this runner holds the signing key")
                return None
            if not hmac.compare_digest(signature, sign(self.signing_key, key, record)):
                self.refuse(key, "remote record's signature does not match the signing key")
                return None
        try:
            return StepRecord(**{k: record[k] for k in _FIELDS if k in record})
        except TypeError:  # a field it must have is missing
            self.refuse(key, "remote record is unreadable")
            return None

    def put_record(self, record: StepRecord) -> None:
        self.put_many({}, [record])

    def put_many(self, blobs: dict[str, bytes], records: list[StepRecord]) -> None:
        """Blobs first, then the records that name them (a reader finding a record finds its blobs)."""
        for digest, data in blobs.items():
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError(f"blob {digest[:12]} does not hold its bytes")
        self._write_many({self.blob_path(d): data for d, data in blobs.items()})
        encoded = {}
        for record in records:
            value = record.to_dict()
            envelope: dict = {"format": FORMAT, "record": value}
            if self.signing_key is not None:
                envelope["signature"] = sign(self.signing_key, record.key, value)
            encoded[self.record_path(record.key)] = _canonical(envelope)
        self._write_many(encoded)


def _plain_gcs(fsspec) -> None:
    """gs:// through gcsfs's JSON-API class. The class gcsfs registers since 2025 first asks each bucket's type
    over gRPC, a probe that waits 60 s a try against anything but Google's own endpoint (an emulator, a proxy,
    a network that drops it) whatever the request timeout says; a cache needs only whole-object reads and
    writes, which the JSON API serves on every kind of bucket."""
    try:
        from gcsfs.core import GCSFileSystem
    except ImportError:
        return  # fsspec's url_to_fs names the missing package; the caller names the extra
    for name in ("gs", "gcs"):
        fsspec.register_implementation(name, GCSFileSystem, clobber=True)


_AZURE = ("az", "abfs", "abfss")
_AZURE_ACCOUNT = ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME")


def _azure_account_missing(url: str, protocol: str) -> str | None:
    """What to say when there is no storage account to use. adlfs needs one before it can name a container: from
    AZURE_STORAGE_CONNECTION_STRING, from AZURE_STORAGE_ACCOUNT_NAME (with AZURE_STORAGE_ACCOUNT_KEY, a SAS token
    or Azure AD through DefaultAzureCredential), or from the URL's host
    (`az://container@ACCOUNT.blob.core.windows.net/prefix`). Without one its words are "Must provide either a
    connection_string or account_name with credentials!!"."""
    if any(os.environ.get(name) for name in _AZURE_ACCOUNT) or ".core.windows.net" in url:
        return None
    return (
        f"{protocol}:// needs a storage account: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME "
        "with AZURE_STORAGE_ACCOUNT_KEY"
    )


class _Refusing:
    """The filesystem of a remote that cannot be used at all (no account to reach it with): every request
    fails with why, so the mirror notes it once and the run goes on with the local cache, as for a remote
    that is down."""

    def __init__(self, why: str):
        self.why = why

    def __getattr__(self, name: str):
        def refuse(*args, **kwargs):
            raise RemoteError(self.why)

        return refuse


def _one_try_azure(fs) -> None:
    """No retries: azure-storage-blob retries a failed request three times, 15, 18 and 24 s apart (its
    ExponentialRetry), and adlfs builds its client with no way to say otherwise. The client's one retry policy
    is shared by every request it and its container and blob clients send (reads, writes, existence checks);
    told to allow no retry, a down endpoint costs one refused connection. Should a later SDK move it, a read's
    whole wait stays bounded by fsspec's timeout (RemoteStore._bounded), and the az:// test of a closed port
    says so (tests/stores/test_remote_cache.py)."""
    config = getattr(getattr(fs, "service_client", None), "_config", None)
    policy = getattr(config, "retry_policy", None)
    if policy is not None and hasattr(policy, "total_retries"):
        policy.total_retries = 0


def _extra(protocol: str) -> str:
    return {"gs": "gcs", "gcs": "gcs", **dict.fromkeys(_AZURE, "azure")}.get(protocol, "s3")


def _words(exc: Exception) -> str:
    if isinstance(exc, RemoteError):  # already in our words (a _Refusing remote)
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
