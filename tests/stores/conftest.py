"""Fixtures of the shared-cache tests: a project and its clones through the real CLI; a file:// remote in a temp
folder; moto's S3 server, one real process on 127.0.0.1 for the session, a fresh bucket per test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

# the agent tests' fixtures (an agent-step project, the fake Responses server), shared as tests/plans shares them
for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "agent"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from agent.conftest import agent, server  # noqa: E402, F401 - the fixtures, shared
from store_helpers import Clone, wide  # noqa: E402 - after the path above


class Moto:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc = proc
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self.env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, **_credentials(self.env))

    def bucket(self) -> str:
        name = "runner-" + uuid.uuid4().hex[:12]
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str) -> dict[str, bytes]:
        client = self.client()
        found = client.list_objects_v2(Bucket=bucket).get("Contents", [])
        return {o["Key"]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in found}


def _credentials(env: dict) -> dict:
    return {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    """moto's S3 server on 127.0.0.1 (a port it chooses), started once; at the end, no object in any of its
    buckets holds the session's API key (tests/conftest.py checks the files the tests wrote)."""
    log = tmp_path_factory.mktemp("moto") / "server.log"  # a file, not a pipe: its request log never blocks it
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    port = None
    deadline = time.monotonic() + 30
    while port is None and time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())
        if found:
            port = int(found.group(1))
        else:
            time.sleep(0.05)
    assert port, "moto's server did not start"
    s3 = Moto(proc, port)
    try:
        yield s3
        key = os.environ["OPENAI_API_KEY"].encode()
        client = s3.client()
        for bucket in client.list_buckets().get("Buckets", []):
            leaked = [k for k, data in s3.objects(bucket["Name"]).items() if key in data]
            assert not leaked, f"SECRET LEAK: the session's API key is in the remote cache: {leaked[:5]}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A file:// remote: a folder outside every clone."""
    folder = tmp_path / "shared"
    folder.mkdir()
    return folder


@pytest.fixture
def team(tmp_path: Path, shared: Path):
    """A 50-step project whose [cache] remote is the shared folder; call it with more of [cache] or a step count."""

    def make(cache: str = "", steps: int = 50, name: str = "first") -> Clone:
        root = tmp_path / name
        root.mkdir()
        clone = Clone(root)
        clone.write("intents.toml", f'[cache]\nremote = "{shared.as_uri()}"\n{cache}\n' + wide(steps))
        for i in range(steps):
            clone.write(f"src/{i}.txt", f"input {i}\n")
        (root / "out").mkdir()
        return clone

    return make
