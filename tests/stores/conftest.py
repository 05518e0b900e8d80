"""Fixtures of the shared-cache tests: a project and its clones through the real CLI; a file:// remote in a temp
folder; gcp-storage-emulator for gs:// and Azurite for az://, each one real process on 127.0.0.1 for the session.
(moto's S3 server is in tests/conftest.py: the hermetic executor's tests use it too.)"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

# the agent tests' fixtures (an agent-step project, the fake Responses server), shared as tests/plans shares them
for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "agent"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from agent.conftest import agent, server  # noqa: E402, F401 - the fixtures, shared
from ci import need  # noqa: E402 - after the path above
from store_helpers import AZURITE, AZURITE_ACCOUNT, AZURITE_VERSION, Clone, azurite_connection, wide  # noqa: E402


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A file:// remote: a folder outside every clone."""
    folder = tmp_path / "shared"
    folder.mkdir()
    return folder


@pytest.fixture
def team(tmp_path: Path, shared: Path):
    """A 50-step project whose [cache] remote is the shared folder; call it with more of [cache] or a step count."""

    def make(cache: str = "", steps: int = 50, name: str = "first", width: int = 5) -> Clone:
        root = tmp_path / name
        root.mkdir()
        clone = Clone(root)
        clone.write("intents.toml", f'[cache]\nremote = "{shared.as_uri()}"\n{cache}\n' + wide(steps, width))
        for i in range(steps):
            clone.write(f"src/{i}.txt", f"input {i}\n")
        (root / "out").mkdir()
        return clone

    return make


class Gcs:
    """gcp-storage-emulator, a GCS JSON-API server, as a real process on 127.0.0.1: gcsfs reaches it through
    STORAGE_EMULATOR_HOST (`env`), as it would reach fake-gcs-server or Google's own endpoint."""

    def __init__(self, port: int):
        self.endpoint = f"http://127.0.0.1:{port}"
        self.env = {"STORAGE_EMULATOR_HOST": self.endpoint}

    def _call(self, method: str, path: str, body: dict | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.endpoint + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.read()

    def bucket(self) -> str:
        name = "runner-" + uuid.uuid4().hex[:12]
        self._call("POST", "/storage/v1/b?project=test", {"name": name})
        return name

    def buckets(self) -> list[str]:
        return [b["name"] for b in json.loads(self._call("GET", "/storage/v1/b?project=test")).get("items", [])]

    def objects(self, bucket: str) -> dict[str, bytes]:
        listed = json.loads(self._call("GET", f"/storage/v1/b/{bucket}/o")).get("items", [])
        media = f"/download/storage/v1/b/{bucket}/o/{{}}?alt=media"
        return {o["name"]: self._call("GET", media.format(urllib.parse.quote(o["name"], safe=""))) for o in listed}


@pytest.fixture(scope="session")
def gcs(tmp_path_factory):
    """gcp-storage-emulator on 127.0.0.1, in memory, started once; at the end, no object holds the session's
    API key (as moto's fixture checks its buckets)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("gcs") / "server.log"  # a file, not a pipe: its request log never blocks it
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port", str(port), "-M"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    emulator = Gcs(port)
    deadline = time.monotonic() + 30
    while True:
        try:
            emulator.buckets()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, f"the GCS emulator did not start: {log}"
            time.sleep(0.1)
    try:
        yield emulator
        key = os.environ["OPENAI_API_KEY"].encode()
        for bucket in emulator.buckets():
            leaked = [name for name, data in emulator.objects(bucket).items() if key in data]
            assert not leaked, f"SECRET LEAK: the session's API key is in the remote cache: {leaked[:5]}"
    finally:
        proc.terminate()
        proc.wait(10)


class Azurite:
    """Azurite's blob service as a real process on 127.0.0.1: adlfs reaches it through
    AZURE_STORAGE_CONNECTION_STRING (`env`), as it would reach a storage account in Azure."""

    def __init__(self, port: int):
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
        self.env = {"AZURE_STORAGE_CONNECTION_STRING": azurite_connection(port)}

    def service(self):
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.env["AZURE_STORAGE_CONNECTION_STRING"], retry_total=0)

    def container(self) -> str:
        name = "runner-" + uuid.uuid4().hex[:12]
        self.service().create_container(name)
        return name

    def containers(self) -> list[str]:
        return [c.name for c in self.service().list_containers()]

    def objects(self, container: str) -> dict[str, bytes]:
        client = self.service().get_container_client(container)
        return {b.name: client.download_blob(b.name).readall() for b in client.list_blobs()}

    def put(self, container: str, name: str, data: bytes) -> None:
        self.service().get_blob_client(container, name).upload_blob(data, overwrite=True)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite's blob server on 127.0.0.1, its data in a temp folder, started once; at the end, no blob in any
    container holds the session's API key (as moto's fixture checks its buckets)."""
    binary = str(AZURITE) if AZURITE.exists() else shutil.which("azurite-blob")  # .ci/run's, else one on PATH
    need(
        "Azurite (the Azure Storage emulator)",
        binary is not None,
        f"npm install --prefix .ci/node azurite@{AZURITE_VERSION} (.ci/run does)",
    )
    assert binary is not None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = tmp_path_factory.mktemp("azurite")
    log = folder / "server.log"  # a file, not a pipe: what it prints never blocks it
    with open(log, "w") as out:
        proc = subprocess.Popen(
            # (--disableTelemetry: Azurite otherwise reports to Microsoft, and the tests reach nothing but loopback)
            [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(folder / "data")]
            + ["--silent", "--skipApiVersionCheck", "--disableTelemetry"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    emulator = Azurite(port)
    deadline = time.monotonic() + 60  # node loads Azurite in seconds; more on a loaded machine
    while True:
        try:
            emulator.containers()
            break
        except Exception:  # noqa: BLE001 - not listening yet (the SDK wraps the refused connection)
            assert proc.poll() is None and time.monotonic() < deadline, f"Azurite did not start: {log.read_text()}"
            time.sleep(0.1)
    try:
        yield emulator
        key = os.environ["OPENAI_API_KEY"].encode()
        for container in emulator.containers():
            leaked = [name for name, data in emulator.objects(container).items() if key in data]
            assert not leaked, f"SECRET LEAK: the session's API key is in the remote cache: {leaked[:5]}"
    finally:
        proc.terminate()  # node closes its server and flushes its files first
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
