"""The replay worker: record a live exchange, serve it back offline (the fake server sees no request), refuse
unsafe recordings, say how to record when nothing matches."""

from __future__ import annotations

import json
from pathlib import Path

from worker_helpers import make_request

from runner.workers import get_worker
from runner.workers.base import CONFIG, PERMANENT, Usage, WorkerConfig, WorkerResult
from runner.workers.replay import record_exchange, recording_path, resolve_replays_dir

ANSWER = (
    "<<MIS:START>>\n<<MIS:FILE path=src/app.py>>\nprint('hi')\n<<MIS:JSON>>\n"
    '{"summary": "ok", "delete": ["old.txt"]}\n<<MIS:END>>\n'
)
KEY = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


def replay_cfg(replays, **extra) -> WorkerConfig:
    return WorkerConfig(kind="replay", replays_dir=str(replays), extra=extra)


def test_record_then_replay_makes_no_request(fake_server, tmp_path, assert_no_leak):
    srv = fake_server({"steps": [{"message": ANSWER, "usage": {"input_tokens": 9, "output_tokens": 4}}]})
    live_ws = tmp_path / "live"
    live_ws.mkdir()
    live = WorkerConfig(kind="openai", model="gpt-5.5", fallback_models=(), base_url=srv.base_url, timeout=10)
    req = make_request(live_ws, live, "write the app", intent="app", step_key=KEY)
    result = get_worker(live).run(req)
    assert result.ok, result.error
    replays = tmp_path / "project" / "replays"
    path = record_exchange(replays, req, result, result.files)
    assert path == replays / "app" / f"{KEY[:16]}-1.json"
    doc = json.loads(path.read_text())
    assert doc["files"] == {"old.txt": None, "src/app.py": "print('hi')\n"}
    assert doc["worker_version"].startswith("openai-python") and isinstance(doc["transcript"], list)
    seen = len(srv.requests())
    log_size = srv.log.stat().st_size

    ws = tmp_path / "attempt"
    ws.mkdir()
    (ws / "old.txt").write_text("stale")
    config = replay_cfg(replays)
    r = get_worker(config).run(make_request(ws, config, "write the app", intent="app", step_key=KEY))
    assert r.ok and r.failure is None
    assert (ws / "src" / "app.py").read_text() == "print('hi')\n" and not (ws / "old.txt").exists()
    assert r.final_message == result.final_message and r.usage == Usage(9, 0, 4)
    assert r.duration_s < 0.5 and r.worker_version == "replay-1"
    assert r.events[0]["type"] == "runner.replay" and r.events[0]["recorded_worker"] == "openai"
    assert len(srv.requests()) == seen and srv.log.stat().st_size == log_size  # nothing reached the server


def test_recording_is_redacted(tmp_path, assert_no_leak, workspace):
    key = assert_no_leak
    req = make_request(workspace, WorkerConfig(kind="codex"), f"use key {key}", intent="x", step_key=KEY)
    res = WorkerResult(
        ok=True,
        final_message=f"done with {key}",
        events=[],
        transcript=f'{{"k": "{key}"}}\n',
        usage=Usage(),
        duration_s=1.0,
        model="m",
        failure=None,
        error=None,
    )
    path = record_exchange(tmp_path / "replays", req, res, {"cfg.env": f"KEY={key}\n"})
    text = path.read_text()
    assert key not in text and "[REDACTED:OPENAI_API_KEY]" in text


def _record(replays, workspace, intent="demo", step_key=KEY, attempt=1, files=None, **kw):
    req = make_request(workspace, WorkerConfig(kind="codex"), intent=intent, step_key=step_key, attempt=attempt)
    res = WorkerResult(
        ok=kw.get("ok", True),
        final_message=kw.get("msg", "done"),
        events=[],
        transcript='{"type":"turn.completed"}\n',
        usage=Usage(1, 0, 1),
        duration_s=2.0,
        model="m",
        failure=kw.get("failure"),
        error=kw.get("error"),
        worker_version="codex-cli 0.163.0",
    )
    return record_exchange(replays, req, res, files or {})


def test_no_recording_is_config_with_advice(tmp_path, workspace):
    config = replay_cfg(tmp_path / "replays")
    r = get_worker(config).run(make_request(workspace, config, intent="parser-tests", step_key=KEY))
    assert r.failure == CONFIG
    assert "no recording for intent parser-tests" in r.error and KEY[:16] in r.error
    assert "runner make --record" in r.error


def test_exact_key_by_default_and_intent_match_when_asked(tmp_path, workspace):
    replays = tmp_path / "replays"
    _record(replays, workspace, step_key="f" * 40, msg="old")
    _record(replays, workspace, step_key="e" * 40, msg="newer")
    config = replay_cfg(replays)
    assert get_worker(config).run(make_request(workspace, config, step_key=KEY)).failure == CONFIG
    loose = replay_cfg(replays, match="intent")
    r = get_worker(loose).run(make_request(workspace, loose, step_key=KEY))
    assert r.ok and r.final_message in ("old", "newer")


def test_recorded_failure_is_served_as_failure(tmp_path, workspace):
    replays = tmp_path / "replays"
    _record(replays, workspace, attempt=2, ok=False, failure="transient", error="high demand", msg="")
    config = replay_cfg(replays)
    r = get_worker(config).run(make_request(workspace, config, attempt=2, step_key=KEY))
    assert not r.ok and r.failure == "transient" and r.error == "high demand"


def test_prefix_collision_is_not_served(tmp_path, workspace):
    replays = tmp_path / "replays"
    _record(replays, workspace, step_key=KEY[:16] + "ffff")
    config = replay_cfg(replays)
    assert get_worker(config).run(make_request(workspace, config, step_key=KEY)).failure == CONFIG


def test_escaping_paths_are_refused(tmp_path, workspace):
    replays = tmp_path / "replays"
    for bad in ("../outside.txt", "/etc/evil", ".git/config", "a/../../x"):
        path = _record(replays, workspace, files={"ok.txt": "fine", bad: "evil"})
        config = replay_cfg(replays)
        r = get_worker(config).run(make_request(workspace, config, step_key=KEY))
        assert r.failure == PERMANENT and "refused path" in r.error, bad
        assert not (workspace / "ok.txt").exists(), "nothing is written when one path is refused"
        path.unlink()
    assert not (tmp_path / "outside.txt").exists()


def test_symlink_escape_is_refused(tmp_path, workspace):
    (workspace / "link").symlink_to(tmp_path)
    replays = tmp_path / "replays"
    _record(replays, workspace, files={"link/evil.txt": "x"})
    config = replay_cfg(replays)
    assert get_worker(config).run(make_request(workspace, config, step_key=KEY)).failure == PERMANENT
    assert not (tmp_path / "evil.txt").exists()


def test_relative_replays_dir_resolves_from_the_project(tmp_path):
    project = tmp_path / "proj"
    ws = project / ".runner" / "work" / "a1"
    ws.mkdir(parents=True)
    (project / "intents.toml").write_text("[project]\nname='x'\n")
    assert resolve_replays_dir(WorkerConfig(replays_dir="replays"), ws) == project.resolve() / "replays"
    assert resolve_replays_dir(WorkerConfig(replays_dir="r", extra={"project_root": "/p"}), ws) == Path("/p/r")
    assert resolve_replays_dir(WorkerConfig(replays_dir="/abs/r"), ws) == Path("/abs/r")
    assert recording_path(tmp_path, "a b/c", KEY, 3).name == f"{KEY[:16]}-3.json"
    assert recording_path(tmp_path, "a b/c", KEY, 3).parent.name == "a_b_c"
