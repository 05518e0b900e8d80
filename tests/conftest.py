"""Session-wide: a dummy API key in the environment of every test, and a check at the end that nothing the tests
wrote (run records, recordings, logs, Codex homes, temp projects) contains it; moto's S3 server, one real
process on 127.0.0.1 for the session, a fresh bucket per test (the shared cache's and the hermetic executor's);
the racy window shortened for this process and every runner it starts (tests/racy.py), `real_racy_window` for
a test about the rule itself; the zygote the helpers' runners are forked from (tests/runner_cli.py); the xdist
lanes (CONTRIBUTING.md, "The tests")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# tests/ci.py (the one "in CI?" rule) is imported by name from every folder's tests and helpers; this puts
# tests/ on sys.path whatever pytest's import mode
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

import racy  # noqa: E402 - after the path above
import runner_cli  # noqa: E402 - after the path above

from runner import stat_cache  # noqa: E402

# The differential test (tests/core/test_differential.py) and other explorations: a fixed seed and a bounded
# count in CI; `--hypothesis-profile=long` explores further. No examples database in the repository.
_SLOW_EXAMPLES = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=300, derandomize=True, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.register_profile("long", max_examples=5000, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES)
settings.register_profile(  # the floor for a long exploration, where 5,000 does not fit a shared machine's hour
    "explore", max_examples=2000, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.register_profile(  # a first look, e.g. while checking that a mutation of runner is caught
    "quick", max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=_SLOW_EXAMPLES
)
settings.load_profile("ci")

SESSION_KEY = "sk-test-session-" + uuid.uuid4().hex


def pytest_configure(config: pytest.Config) -> None:
    # set before any test: every runner, worker and fake started by a test inherits it. xdist's workers inherited
    # the controller's and keep it: the controller's look at every worker's files (pytest_sessionfinish) searches
    # for the one key they all used
    if not hasattr(config, "workerinput"):
        os.environ["OPENAI_API_KEY"] = SESSION_KEY
        os.environ["CODEX_API_KEY"] = SESSION_KEY
    racy.shorten()
    if hasattr(config, "workerinput") or config.getoption("dist", "no") == "no":  # a process that runs tests
        # a project's own pytest (an agent step's verify, an adapter's test command) runs without this suite's
        # plugins (xdist, hypothesis, syrupy, timeout): loading them was ~1 s of each such run's ~1.3 s. Not set in
        # xdist's controller, whose workers must load them
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        if not config.option.collectonly:
            runner_cli.start()  # before any test: the runners the helpers start are copies of a process no test touched


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `slow` tests (the interrupt and kill tortures, the differential test, the killed Dask workers) run in a
    lane of their own: one xdist worker runs them one at a time (the suite's addopts: `--dist loadgroup`; xdist
    sends the biggest group first, so they start at once) while the other workers share the rest. No two of them
    time signals at once, and none waits behind the rest of the suite."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("slow"))  # a slow test with a group of its own keeps it


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: half as many workers again as cores. The suite's tests wait on the processes they start about half
    the time (CPU ~54% used with one worker per core, 2026-12-01), so a core has room for more than one worker.
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0))
    return cores + max(1, cores // 2)


@pytest.hookimpl(tryfirst=True)  # before xdist's, which sends the ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    """xdist's workers tell the controller each test's group by a suffix of its id (`...@slow`), which xdist 3.8
    writes where pytest 9.2 no longer reads it (pytest-dev/pytest-xdist#1386): every group was spread over the
    workers. Written here where pytest reads it, as xdist's fix does (#1388), until xdist does it itself."""
    if not (hasattr(session.config, "workerinput") and session.config.getvalue("loadgroup")):
        return
    for item in session.items:
        groups = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        )
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.fixture
def real_racy_window(monkeypatch) -> None:
    """The racy window a user's runner has (git's second), for this test's runners and its in-process ones: for a
    test about the racy rule itself, which needs a change to stay inside the window while a runner starts."""
    monkeypatch.delenv(racy.RACY_WINDOW, raising=False)
    monkeypatch.setattr(stat_cache, "RACY_NS", racy.DEFAULT_NS)


def _files_with(root: Path, needle: bytes) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                hits.append(str(path))
        except OSError:
            pass
    return hits


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: its temp folder is inside the controller's, which looks at them all once
    factory = getattr(session.config, "_tmp_path_factory", None)
    roots = [Path(__file__).resolve().parents[1] / "examples"]
    if factory is not None and getattr(factory, "_basetemp", None) is not None:
        roots.append(factory.getbasetemp())
    leaks = [hit for root in roots if root.exists() for hit in _files_with(root, SESSION_KEY.encode())]
    if leaks:
        session.config.get_terminal_writer().line(
            f"SECRET LEAK: the session's API key was written to {len(leaks)} file(s): {leaks[:10]}", red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
