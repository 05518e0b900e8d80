"""The shared remote cache through the real CLI: a second clone served from a file:// folder, moto's S3 server,
gcp-storage-emulator and Azurite, damaged and unsigned entries refused, a remote down or silent changing nothing but
speed, read-only mode, failures never uploaded, and what explain, cache stats and audit say about it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from store_helpers import azurite_connection, blobs, objects, records

FAKES = Path(__file__).resolve().parents[1] / "fakes"


def _second_clone_served(first, tmp_path, env=None, steps=50):
    built = first.make("-j", "2", env=env)
    assert built.code == 0, built.err
    assert built.finished()["ran"] == steps
    assert built.remote()["uploaded"] == steps and built.remote()["upload_failed"] == 0
    second = first.clone(tmp_path / "second")
    served = second.make("-j", "2", env=env)
    assert served.code == 0, served.err
    done = served.finished()
    assert (done["ran"], done["restored"]) == (0, steps)
    assert served.remote()["hits"] == steps and served.remote()["refused"] == 0
    assert second.outputs() == first.outputs()  # byte for byte
    return second, served


def test_a_second_clone_of_a_50_step_project_runs_nothing_through_a_file_remote(team, tmp_path, shared):
    first = team()
    second, served = _second_clone_served(first, tmp_path)
    assert len(records(shared)) == 50 and len(blobs(shared)) == 50
    # what it got is now local too: the next run is a no-op without the remote
    again = second.make(env={"RUNNER_REMOTE_CACHE": ""})
    assert again.code == 0 and again.finished()["ran"] == 0


def test_a_second_clone_runs_nothing_through_moto_s3(team, tmp_path, moto):
    bucket = moto.bucket()
    first = team(steps=12)  # moto answers in tens of milliseconds: the 50 steps are the file:// test's
    env = {**moto.env, "RUNNER_REMOTE_CACHE": f"s3://{bucket}/team/cache"}  # over [cache] remote
    _second_clone_served(first, tmp_path, env, steps=12)
    stored = moto.objects(bucket)
    assert sum("/v1/records/" in k for k in stored) == 12
    assert all(k.startswith("team/cache/v1/") for k in stored)


def test_blobs_expired_from_the_remote_turn_its_hits_into_runs(team, tmp_path, shared):
    first = team(steps=4)
    assert first.make().code == 0
    for blob in blobs(shared)[:2]:  # a lifecycle rule took them, not their records
        blob.unlink()
    second = first.clone(tmp_path / "second")
    run = second.make()
    assert run.code == 0, run.err
    assert (run.finished()["ran"], run.finished()["restored"]) == (2, 2)
    assert second.outputs() == first.outputs()


def test_a_second_clone_runs_nothing_through_gcs(team, tmp_path, gcs):
    bucket = gcs.bucket()
    first = team(steps=12)
    env = {**gcs.env, "RUNNER_REMOTE_CACHE": f"gs://{bucket}/team/cache"}
    _second_clone_served(first, tmp_path, env, steps=12)
    stored = gcs.objects(bucket)
    assert sum("/v1/records/" in k for k in stored) == 12
    assert all(k.startswith("team/cache/v1/") for k in stored)


def test_a_gcs_remote_that_is_down_costs_one_bounded_wait(team, gcs):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    first = team(steps=5)
    env = {"RUNNER_REMOTE_CACHE": "gs://nowhere/cache", "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}"}
    began = time.monotonic()
    run = first.make(env=env)
    took = time.monotonic() - began
    assert run.code == 0, run.err
    assert run.finished()["ran"] == 5
    assert run.err.count("runner: the remote cache gs://nowhere/cache failed") == 1
    assert run.remote()["upload_failed"] == 5  # counted, never silent
    # gcsfs's own six tries with backoff would take over 30 s more than the same build does against a gs:// remote
    # that answers, timed now: the machine's pace at this load, gcsfs's import included (8 to 22 s of the run
    # beside two busy loops on 2 cores, where the whole run once took 24 s)
    began = time.monotonic()
    answering = {**gcs.env, "RUNNER_REMOTE_CACHE": f"gs://{gcs.bucket()}/cache"}
    assert team(steps=5, name="answered").make(env=answering).code == 0
    assert took - (time.monotonic() - began) < 20, took


def test_a_second_clone_runs_nothing_through_azurite(team, tmp_path, azurite):
    container = azurite.container()
    first = team(steps=12)
    env = {**azurite.env, "RUNNER_REMOTE_CACHE": f"az://{container}/team/cache"}
    _second_clone_served(first, tmp_path, env, steps=12)
    stored = azurite.objects(container)
    assert sum("/v1/records/" in k for k in stored) == 12
    assert sum("/v1/blobs/" in k for k in stored) == 12
    assert all(k.startswith("team/cache/v1/") for k in stored)


def test_an_azure_remote_that_is_down_costs_one_bounded_wait(team, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    first = team("timeout = 30", steps=5)  # what a retry would cost: far above what one refused connection does
    env = {"RUNNER_REMOTE_CACHE": "az://nowhere/cache", "AZURE_STORAGE_CONNECTION_STRING": azurite_connection(port)}
    began = time.monotonic()
    run = first.make(env=env)
    took = time.monotonic() - began
    assert run.code == 0, run.err
    assert run.finished()["ran"] == 5
    assert run.err.count("runner: the remote cache az://nowhere/cache failed") == 1
    assert run.remote()["down"].startswith("ServiceRequestError: Cannot connect to host 127.0.0.1:"), run.remote()
    assert run.remote()["upload_failed"] == 5  # counted, never silent
    # one refused connection: azure-storage-blob's own retries (15 s, 18 s, 24 s apart) would take the whole
    # `timeout` (30 s), where fsspec stops the read
    print(f"az:// down: the run took {took:.2f} s")
    assert took < 15, took
    human = first.clone(tmp_path / "human").run("make", env=env)
    assert human.code == 0
    assert "remote cache az://nowhere/cache (readwrite): 0 hits, 0 uploaded, 5 uploads FAILED" in human.out


def test_a_damaged_blob_in_azure_is_refused_and_never_restored(team, tmp_path, azurite):
    container = azurite.container()
    env = {**azurite.env, "RUNNER_REMOTE_CACHE": f"az://{container}/c"}
    first = team(steps=3)
    assert first.make(env=env).code == 0
    good = (first.root / "out/s1.txt").read_bytes()
    name = next(k for k, data in azurite.objects(container).items() if data == good)
    azurite.put(container, name, b"evil bytes\n")
    second = first.clone(tmp_path / "second")
    run = second.make(env=env)
    assert run.code == 0, run.err
    assert run.statuses()["s1"] == "ran"  # run again, not restored from the damaged copy
    assert (second.root / "out/s1.txt").read_bytes() == good
    assert run.remote()["refused"] == 1
    assert run.finished()["restored"] == 2


def test_azure_records_signed_with_another_key_are_refused(team, tmp_path, azurite):
    container = azurite.container()
    env = {**azurite.env, "RUNNER_REMOTE_CACHE": f"az://{container}/c"}
    first = team('signing_key_env = "TEAM_CACHE_KEY"', steps=2)
    assert first.make(env={**env, "TEAM_CACHE_KEY": "k" * 32}).code == 0
    # (read mode: holding a key, it would upload its own runs signed with it over the first's)
    wrong = first.clone(tmp_path / "wrong").make("--remote-mode", "read", env={**env, "TEAM_CACHE_KEY": "x" * 32})
    assert wrong.code == 0 and wrong.finished()["ran"] == 2
    assert wrong.remote()["refused"] == 2 and wrong.remote()["hits"] == 0
    right = first.clone(tmp_path / "right").make(env={**env, "TEAM_CACHE_KEY": "k" * 32})
    assert right.code == 0 and right.finished()["restored"] == 2 and right.remote()["refused"] == 0


def test_az_without_an_account_builds_without_the_remote_and_says_which_variables(team):
    """A fork's CI without the team's secrets: the remote refuses, the build goes on with the local cache, and the
    words say once what is missing (as for a remote that is down: never a failed build)."""
    first = team(steps=1)
    bare = {"AZURE_STORAGE_CONNECTION_STRING": "", "AZURE_STORAGE_ACCOUNT_NAME": ""}
    run = first.run("make", "--remote", "az://team/cache", env=bare)
    assert run.code == 0, run.err
    said = [line for line in run.err.splitlines() if "az://team/cache" in line and "failed" in line]
    assert said == [
        "runner: the remote cache az://team/cache failed (az:// needs a storage account: set "
        "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY); going on "
        "with the local cache only"
    ], run.err


def test_an_azure_read_is_one_request(team, tmp_path, azurite):
    """Through a counting proxy in front of Azurite: a second clone asks one GET for each step's record and one
    for its blob, nothing more (no HEAD for a size first, no listing, no retry)."""
    proxy = subprocess.Popen(
        [sys.executable, str(FAKES / "slow_proxy.py"), "--upstream", f"http://127.0.0.1:{azurite.port}"]
        + ["--delay", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(proxy.stdout.readline().split()[1])
        container = azurite.container()
        env = {
            "AZURE_STORAGE_CONNECTION_STRING": azurite_connection(port),
            "RUNNER_REMOTE_CACHE": f"az://{container}/c",
        }
        first = team(steps=6, width=6)
        assert first.make(env=env).code == 0
        urllib.request.urlopen(f"http://127.0.0.1:{port}/__reset").read()
        second = first.clone(tmp_path / "second")
        served = second.make(env=env)
        assert served.code == 0, served.err
        assert (served.finished()["ran"], served.finished()["restored"]) == (0, 6)
        assert second.outputs() == first.outputs()
        stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats").read())
        assert stats["requests"] == 12, stats
    finally:
        proxy.kill()
        proxy.wait()


def test_a_far_remote_is_read_many_requests_at_a_time(team, tmp_path, moto):
    """Each request to the store waits 0.1 s (a proxy in front of moto): the second clone's reads for the
    steps that are ready together go out together, not a round trip a step in turn (300 steps over moto took
    16.6 s that way; 0.6 s to build)."""
    proxy = subprocess.Popen(
        [sys.executable, str(FAKES / "slow_proxy.py"), "--upstream", moto.endpoint, "--delay", "0.1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(proxy.stdout.readline().split()[1])
        bucket = moto.bucket()
        first = team(steps=24, width=24)  # 24 steps with no dependency: all ready at once
        env = {**moto.env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "RUNNER_REMOTE_CACHE": f"s3://{bucket}/c"}
        assert first.make(env=env).code == 0
        urllib.request.urlopen(f"http://127.0.0.1:{port}/__reset").read()
        second = first.clone(tmp_path / "second")
        served = second.make(env=env)
        assert served.code == 0, served.err
        assert (served.finished()["ran"], served.finished()["restored"]) == (0, 24)
        assert second.outputs() == first.outputs()
        stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats").read())
        assert stats["requests"] == 48  # a GET for each step's record and one for its blob, nothing more
        assert stats["peak"] >= 8, stats  # the 24 independent steps' reads in flight together, not one by one
        third = first.clone(tmp_path / "third")
        urllib.request.urlopen(f"http://127.0.0.1:{port}/__reset").read()
        status = json.loads(third.run("status", "--json", env=env).out)
        assert {s["action"] for s in status["steps"]} == {"skip"}
        stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/__stats").read())
        assert stats["requests"] == 48 and stats["peak"] >= 8, stats  # status asks as make does
    finally:
        proxy.kill()
        proxy.wait()


@pytest.mark.parametrize("damage", ["corrupt", "truncate"])
def test_a_damaged_remote_blob_is_refused_and_never_restored(team, tmp_path, shared, damage):
    first = team(steps=3)
    assert first.make().code == 0
    target = next(p for p in blobs(shared) if p.read_bytes() == (first.root / "out/s1.txt").read_bytes())
    good = target.read_bytes()
    target.write_bytes(b"evil bytes\n" if damage == "corrupt" else good[:-3])
    second = first.clone(tmp_path / "second")
    shown = second.run("explain", "s1")
    assert "output out/s1.txt missing and its cached copy is gone" in shown.out
    run = second.make()
    assert run.code == 0, run.err
    assert run.statuses()["s1"] == "ran"  # run again, not restored from the damaged copy
    assert (second.root / "out/s1.txt").read_bytes() == good
    assert run.remote()["refused"] == 1
    assert run.finished()["restored"] == 2


def _keyed(team, tmp_path, writer_key: str | None, reader_key: str | None):
    cache = 'signing_key_env = "TEAM_CACHE_KEY"'
    first = team(cache, steps=2)
    env = {"TEAM_CACHE_KEY": writer_key} if writer_key else {"TEAM_CACHE_KEY": ""}
    built = first.make(env=env)
    assert built.code == 0, built.err
    second = first.clone(tmp_path / "second")
    return second.make(env={"TEAM_CACHE_KEY": reader_key or ""})


def test_signed_entries_are_served_to_a_runner_holding_the_key(team, tmp_path, shared):
    run = _keyed(team, tmp_path, "k" * 32, "k" * 32)
    assert run.code == 0 and run.finished()["restored"] == 2 and run.remote()["refused"] == 0
    envelope = json.loads(records(shared)[0].read_bytes())
    assert len(envelope["signature"]) == 64


def test_mis_signed_entries_are_refused(team, tmp_path):
    run = _keyed(team, tmp_path, "k" * 32, "x" * 32)
    assert run.code == 0 and run.finished()["ran"] == 2
    assert run.remote()["refused"] == 2 and run.remote()["hits"] == 0


def test_unsigned_entries_are_refused_by_a_runner_with_the_key(team, tmp_path, shared):
    # without the key the writer only reads: nothing is uploaded, so an unsigned record is planted by hand
    first = team('signing_key_env = "TEAM_CACHE_KEY"', steps=1)
    built = first.make("--remote-mode", "readwrite", env={"TEAM_CACHE_KEY": ""})
    assert built.code == 0 and built.remote()["mode"] == "read" and built.remote()["uploaded"] == 0
    assert "signing_key_env names TEAM_CACHE_KEY, which is not set" in built.err
    signed = first.clone(tmp_path / "writer")
    assert signed.make(env={"TEAM_CACHE_KEY": "k" * 32}).code == 0
    path = records(shared)[0]
    envelope = json.loads(path.read_bytes())
    del envelope["signature"]
    path.write_text(json.dumps(envelope))
    reader = first.clone(tmp_path / "reader")
    shown = reader.run("explain", "s0", env={"TEAM_CACHE_KEY": "k" * 32})
    assert "remote cache: remote record is unsigned and this runner holds the signing key: ignored" in shown.out
    run = reader.make(env={"TEAM_CACHE_KEY": "k" * 32})
    assert run.code == 0 and run.finished()["ran"] == 1 and run.remote()["refused"] == 1


def test_read_mode_never_writes(team, shared):
    first = team(steps=5)
    run = first.make("--remote-mode", "read")
    assert run.code == 0 and run.finished()["ran"] == 5
    assert run.remote()["uploaded"] == 0 and objects(shared) == {}


def test_a_failure_is_never_uploaded(team, shared):
    first = team(steps=2)
    with open(first.root / "intents.toml", "a") as f:
        f.write('\n[intent.broken]\nrun = "echo partial > out/broken.txt; exit 3"\ninputs = ["src/0.txt"]\n')
        f.write('outputs = ["out/broken.txt"]\n')
    run = first.make("-k", "all", "broken")
    assert run.code == 1 and run.statuses()["broken"] == "failed"
    assert run.remote()["uploaded"] == 2
    keys = {json.loads(p.read_bytes())["record"]["intent"] for p in records(shared)}
    assert keys == {"s0", "s1"}
    assert b"partial" not in b"".join(p.read_bytes() for p in blobs(shared))


def test_a_remote_with_its_port_closed_changes_nothing_but_speed(team, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    first = team(steps=5)
    env = {
        "RUNNER_REMOTE_CACHE": "s3://nowhere/cache",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    run = first.make(env=env)
    assert run.code == 0, run.err
    assert run.finished()["ran"] == 5
    assert run.err.count("runner: the remote cache s3://nowhere/cache failed") == 1
    assert run.remote()["down"].startswith("EndpointConnectionError")
    assert run.remote()["upload_failed"] == 5  # counted, never silent
    human = first.clone(tmp_path / "human").run("make", env=env)
    assert human.code == 0
    assert "remote cache s3://nowhere/cache (readwrite): 0 hits, 0 uploaded, 5 uploads FAILED" in human.out


def _silent_env(backend: str, port: int) -> dict[str, str]:
    if backend == "az":
        return {"RUNNER_REMOTE_CACHE": "az://silent/cache", "AZURE_STORAGE_CONNECTION_STRING": azurite_connection(port)}
    return {
        "RUNNER_REMOTE_CACHE": "s3://silent/cache",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


@pytest.mark.parametrize("backend", ["s3", "az"])
def test_a_remote_that_never_answers_costs_one_bounded_wait(team, backend):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():  # takes every connection and never says a word
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        first = team("timeout = 1\nupload_timeout = 2", steps=5)
        env = _silent_env(backend, silent.getsockname()[1])
        started = time.monotonic()
        run = first.make(env=env, timeout=60)
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        silent.close()
    assert run.code == 0, run.err
    assert run.finished()["ran"] == 5
    assert run.err.count(f"runner: the remote cache {backend}://silent/cache failed") == 1
    assert "ReadTimeoutError" in run.remote()["down"] or "timeout" in run.remote()["down"].lower()
    print(f"{backend}:// silent: the run took {took:.2f} s")
    assert took < 12, took  # one read timeout, no retries


def test_explain_and_cache_stats_tell_remote_hits_from_local_ones(team, tmp_path):
    first = team(steps=3)
    assert first.make().code == 0
    second = first.clone(tmp_path / "second")
    shown = second.run("explain", "s2")
    assert "remote cache: inputs match a run in the remote cache file://" in shown.out
    status = json.loads(second.run("status", "--json").out)
    steps = {s["intent"]: s for s in status["steps"] if s["intent"] != "all"}
    assert {name: s["action"] for name, s in steps.items()} == {"s0": "skip", "s1": "skip", "s2": "skip"}
    assert steps["s0"]["reasons"][0].startswith("inputs match a run in the remote cache file://")
    run = second.make()
    assert run.remote()["hits"] == 3
    assert [e.get("remote") for e in run.events() if e["event"] == "step_finished" and e["intent"] != "all"] == [
        True
    ] * 3
    (second.root / "out/s0.txt").unlink()
    local = second.make()
    assert local.finished()["restored"] == 1  # from the local copy now
    assert [e for e in local.events() if e["event"] == "step_finished" and e.get("remote")] == []
    third = first.clone(tmp_path / "third")
    assert "[1/3] restored s0 from the remote cache\n" in third.run("make").out
    (third.root / "out/s0.txt").unlink()
    assert "restored s0 from the cache\n" in third.run("make").out
    stats = json.loads(second.run("cache", "stats", "--json").out)
    assert stats["hits"] == {"local": 3, "remote": 3}  # the last run: 1 restored, 2 up to date


def test_audit_counts_the_step_seconds_the_remote_saved(team, tmp_path):
    first = team(steps=2)
    with open(first.root / "intents.toml", "a") as f:
        f.write('\n[intent.slow]\nrun = "sleep 0.3; cp src/0.txt out/slow.txt"\ninputs = ["src/0.txt"]\n')
        f.write('outputs = ["out/slow.txt"]\n')
    assert first.make("slow").code == 0
    second = first.clone(tmp_path / "second")
    assert second.make("slow").remote()["hits"] == 1
    figures = json.loads(second.run("audit", "--json").out)["figures"]
    assert figures["remote_saved_seconds"]["value"] >= 0.3
    assert figures["remote_saved_model_calls"] == {"value": 0, "steps": 1, "previous": None, "trend": None}
    shown = second.run("audit").out
    assert "step-seconds the remote cache saved" in shown


def test_a_remote_record_naming_an_output_outside_the_project_is_refused(team, tmp_path, shared):
    first = team(steps=1)
    assert first.make().code == 0
    path = records(shared)[0]
    envelope = json.loads(path.read_bytes())
    digest = next(iter(envelope["record"]["outputs"].values()))
    envelope["record"]["outputs"] = {"../escaped.txt": digest}
    path.write_text(json.dumps(envelope))
    second = first.clone(tmp_path / "second")
    run = second.make()
    assert run.code == 0 and run.statuses()["s0"] == "ran"
    assert run.remote()["refused"] == 1
    assert not (tmp_path / "escaped.txt").exists()


def test_write_mode_never_reads_and_bad_settings_are_usage_errors(team, tmp_path):
    first = team(steps=2)
    assert first.make().code == 0
    second = first.clone(tmp_path / "second")
    run = second.make("--remote-mode", "write")
    assert run.code == 0 and run.finished()["ran"] == 2 and run.remote()["hits"] == 0
    assert run.remote()["uploaded"] == 2
    wrong = second.run("make", "--remote", "team-cache")
    assert wrong.code == 2
    assert wrong.err.strip() == (
        "error: remote cache 'team-cache' is not a URL: use one such as s3://bucket/prefix or file:///mnt/shared/cache"
    )
    # (-B: a proven no-op answers from stats alone and never asks the remote, nor reads its settings)
    mode = second.run("make", "-B", env={"RUNNER_REMOTE_MODE": "sometimes"})
    assert mode.code == 2
    assert mode.err.strip() == "error: remote cache mode 'sometimes': use read, write or readwrite"
    unknown = second.run("make", "--remote", "nosuch://bucket/x")
    assert unknown.code == 2 and unknown.err.startswith("error: remote cache nosuch://bucket/x: ")
