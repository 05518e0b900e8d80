"""A run's spans sent to an OpenTelemetry collector (runner/telemetry.py): `runner make` with
OTEL_EXPORTER_OTLP_ENDPOINT naming a real OTLP/HTTP receiver of this test's own on 127.0.0.1, which decodes each
protobuf request as a collector does."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

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
    """An OTLP/HTTP trace receiver: POST /v1/traces, a protobuf ExportTraceServiceRequest, answered 200."""

    def __init__(self):
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.paths.append((self.path, self.headers["Content-Type"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                outer.requests.append(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def resource(self) -> dict:
        (request,) = self.requests
        return {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


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
    assert receiver.paths == [("/v1/traces", "application/x-protobuf")]
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
    assert receiver.paths == [("/v1/traces", "application/x-protobuf")]  # the table's URL is a base, as the variable's
    assert {s.name for s in receiver.spans()} >= {"left"}
    other = Receiver()
    try:
        project.write("x", "2")
        assert project.make("left", env={"OTEL_EXPORTER_OTLP_ENDPOINT": other.url}).code == 0
        assert len(receiver.requests) == 1 and len(other.requests) == 1
    finally:
        other.server.shutdown()
    project.spec(PARALLEL.replace('name = "traced"', 'name = "traced"\n\n[telemetry]\nendpoint = "collector:4318"'))
    refused = project.run("validate")
    assert refused.code == 2 and "telemetry.endpoint" in refused.err, refused.err
