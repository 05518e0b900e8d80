"""A run's spans sent to an OpenTelemetry collector (OTLP over HTTP) as the run ends: the OpenTelemetry SDK's one
importer, an extra (`telemetry`); configured as every OTLP exporter is, by OTEL_EXPORTER_OTLP_ENDPOINT and its kin,
else by the spec's `[telemetry] endpoint`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .timeline import Timeline, epoch_of

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTALL = "pip install 'intent-runner[telemetry]'"


def configured(endpoint: str | None = None, environ=os.environ) -> bool:
    """Whether the user named a collector: the standard variables, as any OpenTelemetry SDK reads them, or the
    spec's `[telemetry] endpoint`."""
    named = endpoint or any(environ.get(name) for name in ENDPOINT_VARIABLES)
    return bool(named) and environ.get("OTEL_SDK_DISABLED", "") != "true"


def export_run(run_dir: Path, project: str, endpoint: str | None = None) -> None:
    """Send the run recorded in `run_dir` as spans: the run, each step that started inside it, each agent attempt
    inside its step and each verify command inside its attempt. A collector that does not answer is said on
    stderr once; the run's outcome never depends on it."""
    from .record import read_events
    from .timeline import build

    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print(
            f"runner: {_named()} is set but the OpenTelemetry SDK is not installed: no spans sent ({INSTALL})",
            file=sys.stderr,
            flush=True,
        )
        return
    if not (run_dir / "events.jsonl").is_file():  # a run that recorded nothing: no span to send
        return
    timeline = build(run_dir, read_events(run_dir.parent, run_dir.name))
    epoch = epoch_of(timeline.started)
    if timeline.untimed or epoch is None:
        return
    provider = TracerProvider(resource=Resource.create({"service.name": "runner", "runner.project": project}))
    finished = InMemorySpanExporter()  # a build's spans are known once it ends: sent in one request
    provider.add_span_processor(SimpleSpanProcessor(finished))
    _spans(provider.get_tracer("runner"), timeline, epoch)
    # the variables win, as for every OpenTelemetry SDK; the spec's endpoint is a base URL, as theirs is
    from_env = any(os.environ.get(name) for name in ENDPOINT_VARIABLES)
    spec_url = None if from_env or endpoint is None else f"{endpoint.rstrip('/')}/v1/traces"
    exporter = OTLPSpanExporter(endpoint=spec_url) if spec_url else OTLPSpanExporter()
    result = exporter.export(finished.get_finished_spans())
    exporter.shutdown()
    if result != SpanExportResult.SUCCESS:
        print(
            f"runner: the run's spans could not be sent to the OpenTelemetry collector at {_endpoint(endpoint)}",
            file=sys.stderr,
            flush=True,
        )


def _spans(tracer, timeline: Timeline, epoch: float) -> None:
    from opentelemetry import trace

    def ns(at: float) -> int:
        return int((epoch + at) * 1e9)

    finished = timeline.finished or {}
    run = tracer.start_span(
        f"runner make {timeline.run_id}",
        start_time=ns(0.0),
        attributes={"runner.run_id": timeline.run_id, "runner.jobs": timeline.jobs, "runner.status": _status(finished)},
    )
    in_run = trace.set_span_in_context(run)
    for step in timeline.steps.values():
        end = step.end if step.end is not None else timeline.duration
        attributes = {"runner.status": step.status, "runner.slot": step.slot}
        if step.finished.get("reasons"):
            attributes["runner.reasons"] = list(step.finished["reasons"])
        if step.finished.get("error"):
            attributes["runner.error"] = step.finished["error"]
        span = tracer.start_span(step.intent, context=in_run, start_time=ns(step.start), attributes=attributes)
        _failed(span, step.status in ("failed", "blocked"), step.finished.get("error"))
        in_step = trace.set_span_in_context(span)
        for a in step.attempts:
            name = f"{step.intent} candidate {a.candidate} attempt {a.number}"
            attempt_attributes = {"runner.ok": a.ok, "runner.tokens": a.tokens, "runner.kind": a.kind or ""}
            attempt = tracer.start_span(name, context=in_step, start_time=ns(a.start), attributes=attempt_attributes)
            _failed(attempt, not a.ok, a.error)
            in_attempt = trace.set_span_in_context(attempt)
            for v in a.verify:
                verify_attributes = {
                    "runner.command": v.command,
                    "runner.exit_code": -1 if v.exit_code is None else v.exit_code,
                }
                command = tracer.start_span(
                    f"verify {v.name}", context=in_attempt, start_time=ns(v.start), attributes=verify_attributes
                )
                command.end(end_time=ns(v.end))
            attempt.end(end_time=ns(a.end))
        span.end(end_time=ns(end))
    run.end(end_time=ns(timeline.duration))


def _failed(span, failed: bool, error: str | None) -> None:
    if failed:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, (error or "")[:200]))


def _status(finished: dict) -> str:
    return str(finished.get("status", "incomplete"))


def _named() -> str:
    """Where the collector was named: the first variable set, else the spec's table."""
    return next((name for name in ENDPOINT_VARIABLES if os.environ.get(name)), "[telemetry] endpoint")


def _endpoint(endpoint: str | None) -> str:
    named = _named()
    return os.environ.get(named, "") if named in ENDPOINT_VARIABLES else endpoint or ""
