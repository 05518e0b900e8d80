"""A run's spans sent to an OpenTelemetry collector as the run goes (runner/telemetry.py): `runner make` with
OTEL_EXPORTER_OTLP_ENDPOINT naming a real OTLP/HTTP receiver on 127.0.0.1 (tests/fakes/otlp_receiver.py, a process
of its own that decodes each protobuf request as a collector does), one that hangs, and one that is not there."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

FAKES = Path(__file__).resolve().parents[1] / "fakes"
PARALLEL = """
[project]
name = "traced"

[intent.left]
run = "sleep 0.3; echo l > left.txt"
inputs = ["x"]
outputs = ["left.txt"]

[intent.right]
run = "sleep 0.2; echo r > right.txt"
inputs = ["x"]
outputs = ["right.txt"]

[intent.broken]
run = "exit 4"
deps = ["left", "right"]
"""


class Receiver:
    """tests/fakes/otlp_receiver.py started: POST /v1/traces kept (or, `hang`, never answered)."""

    def __init__(self, hang: bool = False):
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKES / "otlp_receiver.py"), *(["--hang"] if hang else [])],
            stdout=subprocess.PIPE,
            text=True,
        )
        port = int(self.proc.stdout.readline().split()[1])
        self.url = f"http://127.0.0.1:{port}"

    def kept(self) -> list[dict]:
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/__requests", timeout=10) as r:
            return json.loads(r.read())

    @property
    def requests(self) -> list[ExportTraceServiceRequest]:
        found = []
        for k in self.kept():
            request = ExportTraceServiceRequest()
            request.ParseFromString(base64.b64decode(k["body"]))
            found.append(request)
        return found

    @property
    def paths(self) -> set[tuple[str, str]]:
        return {(k["path"], k["content_type"]) for k in self.kept()}

    def spans(self) -> list:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def resource(self) -> dict:
        resources = [rs.resource for r in self.requests for rs in r.resource_spans]
        found = {a.key: a.value.string_value for a in resources[0].attributes}
        assert all({a.key: a.value.string_value for a in r.attributes} == found for r in resources)
        return found

    def wait_for(self, name: str, timeout: float = 20) -> float:
        """When the span named `name` arrived (time.time()), waiting for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for k in self.kept():
                request = ExportTraceServiceRequest()
                request.ParseFromString(base64.b64decode(k["body"]))
                if any(s.name == name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans):
                    return k["at"]
            time.sleep(0.05)
        raise AssertionError(f"no span {name!r} arrived in {timeout} s")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


@pytest.fixture
def hanging():
    r = Receiver(hang=True)
    yield r
    r.stop()


def attributes(span) -> dict:
    found = {}
    for a in span.attributes:
        v = a.value
        found[a.key] = v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value") else v
    return found


def test_a_run_s_steps_arrive_as_spans_inside_the_run_s_span(project, receiver):
    project.spec(PARALLEL)
    project.write("x", "1")
    result = project.make("-j", "2", "broken", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert result.code == 1, result.err
    run_id = result.events()[0]["run_id"]
    assert receiver.paths == {("/v1/traces", "application/x-protobuf")}
    assert receiver.resource()["service.name"] == "runner" and receiver.resource()["runner.project"] == "traced"
    spans = {s.name: s for s in receiver.spans()}
    assert set(spans) == {f"runner make {run_id}", "left", "right", "broken"}
    run = spans[f"runner make {run_id}"]
    assert run.parent_span_id == b"" and attributes(run)["runner.status"] == "failed"
    for name in ("left", "right", "broken"):
        step = spans[name]
        assert step.trace_id == run.trace_id and step.parent_span_id == run.span_id
        assert run.start_time_unix_nano <= step.start_time_unix_nano <= step.end_time_unix_nano
        assert step.end_time_unix_nano <= run.end_time_unix_nano
    assert spans["left"].end_time_unix_nano - spans["left"].start_time_unix_nano >= 250_000_000
    # the two ran side by side, on two slots; the failed one says so as a span status
    assert {attributes(spans["left"])["runner.slot"], attributes(spans["right"])["runner.slot"]} == {0, 1}
    assert spans["broken"].start_time_unix_nano >= spans["left"].end_time_unix_nano - 2_000_000
    assert spans["broken"].status.code == 2  # STATUS_CODE_ERROR
    assert attributes(spans["broken"])["runner.status"] == "failed"


def test_a_collector_that_does_not_answer_changes_nothing_but_a_line_on_stderr(project):
    project.spec(PARALLEL)
    project.write("x", "1")
    nobody = "http://127.0.0.1:9"  # the discard port: nothing listens on it here
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": nobody, "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}
    result = project.make("-j", "2", "left", "right", env=env)
    assert result.code == 0, result.err
    assert f"runner: the run's spans could not be sent to the OpenTelemetry collector at {nobody}\n" in result.err
    assert {e["status"] for e in result.events() if e["event"] == "step_finished"} == {"ran"}


def test_without_the_sdk_the_run_says_so_once_and_goes_on(project):
    """The SDK absent (an install without the `telemetry` extra; here made absent in the runner's own process)."""
    project.spec(PARALLEL)
    project.write("x", "1")
    code = (
        "import sys; sys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None; "
        "sys.argv = ['runner', 'make', 'left']; from runner.entry import console; console()"
    )
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (
        "runner: OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: no spans sent "
        "(pip install 'intent-runner[telemetry]')\n"
    ) in proc.stderr


def test_the_spec_s_telemetry_table_names_the_collector_and_the_standard_variable_wins(project, receiver):
    project.spec(PARALLEL.replace('name = "traced"', f'name = "traced"\n\n[telemetry]\nendpoint = "{receiver.url}/"'))
    project.write("x", "1")
    env = {name: "" for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")}
    assert project.make("left", env=env).code == 0
    assert receiver.paths == {("/v1/traces", "application/x-protobuf")}  # the table's URL is a base, as the variable's
    assert {s.name for s in receiver.spans()} >= {"left"}
    before = len(receiver.requests)
    other = Receiver()
    try:
        project.write("x", "2")
        assert project.make("left", env={"OTEL_EXPORTER_OTLP_ENDPOINT": other.url}).code == 0
        assert len(receiver.requests) == before and {s.name for s in other.spans()} >= {"left"}
    finally:
        other.stop()
    project.spec(PARALLEL.replace('name = "traced"', 'name = "traced"\n\n[telemetry]\nendpoint = "collector:4318"'))
    refused = project.run("validate")
    assert refused.code == 2 and "telemetry.endpoint" in refused.err, refused.err


GATED = """
[project]
name = "gated"

[intent.first]
run = "echo 1 > first.txt"
outputs = ["first.txt"]

[intent.second]
run = "while [ ! -f go ]; do sleep 0.02; done; echo 2 > second.txt"
outputs = ["second.txt"]
deps = ["first"]
"""


def _started(project, env: dict) -> tuple[subprocess.Popen, str]:
    """`runner make --json` started (a process of its own: the test acts while it runs) and read until `second`
    started; its run id."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", "second"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    run_id = None
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        event = json.loads(line)
        run_id = run_id or event.get("run_id")
        if event.get("event") == "step_started" and event["intent"] == "second":
            return proc, run_id


def test_a_step_s_span_arrives_while_a_later_step_still_runs(project, receiver):
    project.spec(GATED)
    proc, run_id = _started(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    try:
        arrived = receiver.wait_for("first")
        events = (project.root / ".runner" / "runs" / run_id / "events.jsonl").read_text()
        assert proc.poll() is None and '"intent": "second", "status"' not in events  # second still runs
        (spans,) = [s for s in receiver.spans() if s.name == "first"]
        project.write("go", "")
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        proc.kill()
    by_name = {s.name: s for s in receiver.spans()}
    run = by_name[f"runner make {run_id}"]
    assert spans.parent_span_id == run.span_id and by_name["second"].parent_span_id == run.span_id
    assert arrived < by_name["second"].end_time_unix_nano / 1e9  # it left before the later step ended
    assert attributes(run)["runner.status"] == "ok" and run.end_time_unix_nano >= by_name["second"].end_time_unix_nano


def test_a_run_stopped_short_sends_what_finished_and_ends_its_own_span(project, receiver):
    project.spec(GATED)
    proc, run_id = _started(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    try:
        receiver.wait_for("first")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
        project.write("go", "")  # whatever became of the step, it ends
    by_name = {s.name: s for s in receiver.spans()}
    run = by_name[f"runner make {run_id}"]
    assert attributes(run)["runner.status"] == "interrupted"
    assert by_name["first"].parent_span_id == run.span_id
    assert attributes(by_name["first"])["runner.status"] == "ran"


SEQUENCE = """
[project]
name = "timed"

[intent.quick]
run = "echo q > q.txt"
outputs = ["q.txt"]

[intent.slow1]
run = "sleep 0.7; echo 1 > s1.txt"
outputs = ["s1.txt"]
deps = ["quick"]

[intent.slow2]
run = "sleep 0.7; echo 2 > s2.txt"
outputs = ["s2.txt"]
deps = ["slow1"]
"""


def _timed(project, env: dict) -> tuple[float, float, str]:
    """A clean build of SEQUENCE, `runner make` a process of its own: the run's own duration (its run_finished),
    how long the process took from printing run_finished to its exit (what the run's end waits for its spans), and
    its stderr."""
    shutil.rmtree(project.root / ".runner", ignore_errors=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OTEL_EXPORTER_OTLP_TIMEOUT": "30", **env},
    )
    try:
        duration = None
        for line in proc.stdout:
            event = json.loads(line)
            if event["event"] == "run_finished":
                finished, duration = time.monotonic(), event["duration"]
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0 and duration is not None, err
        return duration, time.monotonic() - finished, err
    finally:
        proc.kill()


def test_a_collector_that_hangs_or_is_down_costs_the_build_nothing_measurable(project, receiver, hanging):
    """A build of 1.4 s of steps against a collector that answers, one that reads each request and never answers
    (the exporter's own timeout set to 30 s), and an address nothing listens on: the same run, and the same wait
    at its end, give or take the machine's noise; the two that fail say so once."""
    project.spec(SEQUENCE)
    _timed(project, {})  # the project's first build compiles its spec: not part of what is compared
    answered, answered_end, err = _timed(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert "runner:" not in err and {s.name for s in receiver.spans()} >= {"quick", "slow1", "slow2"}
    hung, hung_end, err = _timed(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": hanging.url})
    assert err.count(f"the run's spans could not be sent to the OpenTelemetry collector at {hanging.url}") == 1, err
    nobody = "http://127.0.0.1:9"
    down, down_end, err = _timed(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": nobody})
    assert err == f"runner: the run's spans could not be sent to the OpenTelemetry collector at {nobody}\n", err
    assert hung < answered + 0.25 and down < answered + 0.25, (answered, hung, down)
    assert hung_end < answered_end + 0.25 and down_end < answered_end + 0.25, (answered_end, hung_end, down_end)


def test_a_run_killed_outright_has_sent_the_steps_that_finished(project, receiver):
    project.spec(GATED)
    proc, run_id = _started(project, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    try:
        receiver.wait_for("first")
    finally:
        proc.kill()  # SIGKILL: nothing of the run's end happens
        proc.communicate(timeout=60)
        project.write("go", "")  # the step it left (its own process group) ends, not spinning on after the test
    names = {s.name for s in receiver.spans()}
    assert "first" in names and f"runner make {run_id}" not in names  # its own span never ended


def test_an_agent_step_s_attempts_and_verify_commands_nest_inside_its_span(quickstart, receiver):
    """The quickstart's agent steps (replay worker): `tests` fails its first attempt's verify and passes its second;
    each attempt a span inside the step's, each verify command one inside its attempt's, sent as the step ended."""
    root, _runner = quickstart
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    made = subprocess.run(
        [sys.executable, "-m", "runner", "make", "--json"], cwd=root, capture_output=True, text=True, env=env
    )
    assert made.returncode == 0, made.stderr
    spans = receiver.spans()
    by_name = {s.name: s for s in spans}
    step = by_name["tests"]
    first, second = by_name["tests candidate 1 attempt 1"], by_name["tests candidate 1 attempt 2"]
    assert first.parent_span_id == step.span_id and second.parent_span_id == step.span_id
    assert first.status.code == 2 and second.status.code != 2  # the rejected attempt is an error span
    verify = [s for s in spans if s.name == "verify test"]
    assert {v.parent_span_id for v in verify} == {first.span_id, second.span_id}
    for v in verify:
        attempt = first if v.parent_span_id == first.span_id else second
        assert attempt.start_time_unix_nano <= v.start_time_unix_nano <= v.end_time_unix_nano
        assert v.end_time_unix_nano <= attempt.end_time_unix_nano + 2_000_000
    assert attributes(next(v for v in verify if v.parent_span_id == first.span_id))["runner.exit_code"] == 1
    # sent as the step ended: in an earlier request than the run's own span
    run_id = json.loads(made.stdout.splitlines()[0])["run_id"]
    holding = [
        i
        for i, r in enumerate(receiver.requests)
        for rs in r.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
        if s.name in ("tests", f"runner make {run_id}")
    ]
    assert len(holding) == 2 and holding[0] < holding[1], holding
