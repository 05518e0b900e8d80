"""The worker registry, the result dataclasses and secret redaction."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.redact import redact, redact_obj, secret_values
from runner.workers import WORKERS, Worker, get_worker
from runner.workers.base import Usage, WorkerConfig, WorkerResult, failed


def test_registry_has_three_workers_behind_one_protocol():
    assert set(WORKERS) == {"codex", "openai", "replay"}
    for kind in WORKERS:
        w = get_worker(WorkerConfig(kind=kind))
        assert isinstance(w, Worker) and w.kind == kind
        assert get_worker(kind) is w


def test_unknown_kind_names_the_choices():
    with pytest.raises(ValueError, match="codex, openai, replay"):
        get_worker(WorkerConfig(kind="gemini"))


def test_the_openai_worker_never_imports_the_openai_sdk_and_keeps_its_version_string():
    """Planning asks the openai worker its version (part of every agent step's key): that must import neither
    the SDK (~0.8 s) nor the HTTP client; the string stays the SDK's (`openai-python X mis-1`, from its
    distribution's metadata) so that no step's key changed when the worker left the SDK; warming the worker
    for its first call loads httpx2, never the SDK."""
    code = (
        "import sys, importlib.metadata as md; from runner.workers import get_worker, WorkerConfig; "
        "get_worker('codex'); get_worker('replay'); "
        "w = get_worker('openai'); v = w.version(WorkerConfig(kind='openai')); "
        "assert 'openai' not in sys.modules and 'httpx2' not in sys.modules, 'version() imported a client'; "
        "w.warm(); assert 'httpx2' in sys.modules and 'openai' not in sys.modules, 'warm() imported the SDK'; "
        "assert v == f\"openai-python {md.version('openai')} mis-1\", v"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_result_json_and_failed_helper():
    r = failed("timeout", "took too long", model="m", duration_s=1.23456)
    assert not r.ok and r.failure == "timeout" and r.to_json()["duration_s"] == 1.235
    with pytest.raises(AssertionError):
        failed("weird", "x")
    assert Usage.from_json({"input_tokens": 3, "output_tokens": "4"}) == Usage(3, 0, 4)
    ok = WorkerResult(True, "m", [], "", Usage(), 0.0, "gpt")
    assert ok.failure is None and ok.files is None and ok.worker_version == ""


def test_config_key_fields_exclude_timeouts_and_paths():
    a = WorkerConfig(timeout=1, binary="/a").key_fields()
    b = WorkerConfig(timeout=2, binary="/b").key_fields()
    assert a == b and WorkerConfig(model="x").key_fields() != a


def test_secret_values_and_redact(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-aaaaaaaaaaaa")
    monkeypatch.setenv("CODEX_API_KEY", "")
    monkeypatch.setenv("MY_TOKEN", "tok-bbbbbbbbbbbbbbbb")
    monkeypatch.setenv("SHORT", "abc")
    values = secret_values(["MY_TOKEN", "SHORT", None, "UNSET_VAR"])
    assert values == ["tok-bbbbbbbbbbbbbbbb", "sk-aaaaaaaaaaaa"]  # longest first, short/empty ignored
    text = "key sk-aaaaaaaaaaaa and tok-bbbbbbbbbbbbbbbb and abc"
    assert redact(text, values) == "key [REDACTED:OPENAI_API_KEY] and [REDACTED:MY_TOKEN] and abc"
    assert redact(text, {"X": "sk-aaaaaaaaaaaa"}) == "key [REDACTED:X] and tok-bbbbbbbbbbbbbbbb and abc"
    obj = {"sk-aaaaaaaaaaaa": ["tok-bbbbbbbbbbbbbbbb", 3, None, {"k": "sk-aaaaaaaaaaaa!"}]}
    assert redact_obj(obj, values) == {
        "[REDACTED:OPENAI_API_KEY]": ["[REDACTED:MY_TOKEN]", 3, None, {"k": "[REDACTED:OPENAI_API_KEY]!"}]
    }
    assert redact_obj(obj, []) is obj


def test_secret_values_from_a_given_environ():
    assert secret_values(environ={"CODEX_API_KEY": "cccccccccccc"}) == ["cccccccccccc"]
    assert secret_values(environ={}) == []


def test_a_secret_inside_another_is_replaced_whole():
    env = {"OPENAI_API_KEY": "sk-abcdefgh", "CODEX_API_KEY": "sk-abcdefgh-longer"}
    assert redact("x sk-abcdefgh-longer y", secret_values(environ=env)) == "x [REDACTED:CODEX_API_KEY] y"


def test_config_from_toml_values_is_normalised_and_hashable():
    c = WorkerConfig(fallback_models=["a", "b"], extra={"request_max_retries": 1})
    assert c.fallback_models == ("a", "b") and c.extra["request_max_retries"] == "1"
    assert hash(c) == hash(WorkerConfig(fallback_models=("a", "b")))
    with pytest.raises(TypeError):
        c.extra["x"] = "y"
