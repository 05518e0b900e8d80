"""A real Dask cluster on 127.0.0.1 for the executor tests: a LocalCluster of worker processes started once per
session; `dask scheduler` / `dask worker` processes (executor_helpers.Processes) for the tests that kill one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# the agent tests' fixtures (an agent-step project, the fake Responses server), shared as tests/stores shares them
for _path in (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "agent"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from agent.conftest import agent, server  # noqa: E402, F401 - the fixtures, shared
from executor_helpers import Processes  # noqa: E402 - after the path above


@pytest.fixture(scope="session")
def cluster():
    """(scheduler address, worker addresses): 2 worker processes of 2 threads each, for the whole session."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            processes=True, n_workers=2, threads_per_worker=2, host="127.0.0.1", dashboard_address=":0"
        ) as local,
        Client(local) as client,
    ):
        client.wait_for_workers(2, timeout=60)
        yield local.scheduler_address, sorted(client.nthreads())


@pytest.fixture
def processes(tmp_path: Path):
    procs = Processes(tmp_path)
    yield procs
    procs.stop()
