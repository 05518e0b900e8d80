"""A run's spans sent to an OpenTelemetry collector (OTLP over HTTP) as the run goes, each step's as it ends: the
OpenTelemetry SDK's one importer, an extra (`telemetry`); configured as every OTLP exporter is, by
OTEL_EXPORTER_OTLP_ENDPOINT and its kin, else by the spec's `[telemetry] endpoint`."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .timeline import Reading, Step, epoch_of

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTALL = "pip install 'intent-runner[telemetry]'"
# The run's end waits for its last spans while the collector answers; a request outstanding this long means it
# does not (down, retried, or hung), and the run ends without waiting for it: a build never waits on its tracing.
HUNG_AFTER = 1.0
LAST_SPANS_WAIT = 10.0  # at most, for a collector that answers but slowly


def configured(endpoint: str | None = None, environ=os.environ) -> bool:
    """Whether the user named a collector: the standard variables, as any OpenTelemetry SDK reads them, or the
    spec's `[telemetry] endpoint`."""
    named = endpoint or any(environ.get(name) for name in ENDPOINT_VARIABLES)
    return bool(named) and environ.get("OTEL_SDK_DISABLED", "") != "true"


def live(project: str, endpoint: str | None = None) -> LiveSpans | None:
    """The spans of the run about to start, sent as it goes, when a collector is named (else None). Without the
    SDK the run says so once and goes on."""
    if not configured(endpoint):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        print(
            f"runner: {_named()} is set but the OpenTelemetry SDK is not installed: no spans sent ({INSTALL})",
            file=sys.stderr,
            flush=True,
        )
        return None
    import logging

    # the exporter logs each failed request (and its retries); the run says it once, on its own line, at its end
    logging.getLogger("opentelemetry").addHandler(logging.NullHandler())
    logging.getLogger("opentelemetry").propagate = False
    # the variables win, as for every OpenTelemetry SDK; the spec's endpoint is a base URL, as theirs is
    from_env = any(os.environ.get(name) for name in ENDPOINT_VARIABLES)
    spec_url = None if from_env or endpoint is None else f"{endpoint.rstrip('/')}/v1/traces"
    exporter = OTLPSpanExporter(endpoint=spec_url) if spec_url else OTLPSpanExporter()
    return LiveSpans(project, exporter, _endpoint(endpoint))


class LiveSpans:
    """The run as spans: the run's own opened as it starts and ended as it ends; each step that started in it ended
    as the step ends, with its agent attempts and their verify commands inside (as the trace file nests them),
    handed to a sender thread that posts whatever is ready. The scheduler's thread only makes spans: a collector
    that is slow or down never holds a step up."""

    def __init__(self, project: str, exporter, where: str):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        self.where = where
        self.sender = _Sender(exporter)
        # no atexit hook: the run's end says how long it waits (close), never the interpreter's teardown
        provider = TracerProvider(
            resource=Resource.create({"service.name": "runner", "runner.project": project}), shutdown_on_exit=False
        )
        provider.add_span_processor(_processor(self.sender))
        self.tracer: Any = provider.get_tracer("runner")  # Any: the SDK's types stay the SDK's (an extra)
        self.reading: Reading | None = None
        self.run: Any = None  # the run's span, open while it goes
        self.in_run: Any = None
        self.epoch = 0.0

    def watch(self, run_dir: Path):
        """What reads the run's events as they are reported (the pipeline's sink calls it with each one, masked)."""
        self.reading = Reading(run_dir)
        return self.event

    def event(self, e: dict) -> None:
        reading = self.reading
        if reading is None:
            return
        step = reading.add(e)
        kind = e.get("event")
        if step is not None:
            if self.run is not None:
                self._step(step)
        elif kind == "run_started" and self.run is None:
            self._open(reading)
        elif kind == "run_finished" and self.run is not None:
            self.run.set_attribute("runner.status", str(e.get("status", "incomplete")))
            self.run.end(end_time=self._ns(float(e.get("duration", 0.0))))
            self.run = None

    def close(self) -> None:
        """The run's end: its span ended if the run stopped before saying how it ended, then its last spans sent
        while the collector answers (HUNG_AFTER), said once on stderr when some could not be."""
        if self.run is not None:
            timeline = self.reading.timeline() if self.reading is not None else None
            self.run.set_attribute("runner.status", "incomplete")
            self.run.end(end_time=self._ns(timeline.duration if timeline is not None else 0.0))
            self.run = None
        if not self.sender.drain(LAST_SPANS_WAIT, HUNG_AFTER):
            print(
                f"runner: the run's spans could not be sent to the OpenTelemetry collector at {self.where}",
                file=sys.stderr,
                flush=True,
            )
        self.sender.shutdown()

    def _ns(self, at: float) -> int:
        return int((self.epoch + at) * 1e9)

    def _open(self, reading: Reading) -> None:
        from opentelemetry import trace

        head = reading.head
        epoch = epoch_of(head.get("started"))
        if epoch is None:
            return
        self.epoch = epoch
        attributes = {"runner.run_id": reading.run_dir.name, "runner.jobs": int(head.get("jobs", 1))}
        self.run = self.tracer.start_span(
            f"runner make {reading.run_dir.name}", start_time=self._ns(0.0), attributes=attributes
        )
        self.in_run = trace.set_span_in_context(self.run)

    def _step(self, step: Step) -> None:
        from opentelemetry import trace

        tracer, ns = self.tracer, self._ns
        attributes = {"runner.status": step.status, "runner.slot": step.slot}
        if step.finished.get("reasons"):
            attributes["runner.reasons"] = list(step.finished["reasons"])
        if step.finished.get("error"):
            attributes["runner.error"] = step.finished["error"]
        span = tracer.start_span(step.intent, context=self.in_run, start_time=ns(step.start), attributes=attributes)
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
        span.end(end_time=ns(step.end if step.end is not None else step.start))


def _processor(sender: _Sender):
    """The sender as the SDK's span processor (a subclass of its own: the SDK is imported only when a collector is
    named)."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Handing(SpanProcessor):
        def on_end(self, span) -> None:
            sender.add(span)

        def shutdown(self) -> None:
            sender.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return sender.drain(timeout_millis / 1000, HUNG_AFTER)

    return Handing()


class _Sender:
    """A span processor that posts each ended span as soon as it can: one thread sends whatever ended since its last
    request (so a step's spans leave as it ends, and many steps ending during one request go in the next one).
    Unlike the SDK's BatchSpanProcessor it waits for no schedule and its flush is bounded by how the collector
    answers (drain)."""

    def __init__(self, exporter):
        self._exporter = exporter
        self._spans: list = []
        self._ready = threading.Condition()
        self._closed = False
        self.sending_since: float | None = None  # monotonic start of the request in flight
        self.failed = False
        threading.Thread(target=self._send, name="runner-otlp", daemon=True).start()

    def add(self, span) -> None:
        with self._ready:
            self._spans.append(span)
            self._ready.notify_all()

    def shutdown(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self._exporter.shutdown()  # stops a request's retries; a request hung on its socket ends with the process

    def _send(self) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        while True:
            with self._ready:
                while not self._spans and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
                batch, self._spans = self._spans, []
                self.sending_since = time.monotonic()
            try:
                ok = self._exporter.export(batch) == SpanExportResult.SUCCESS
            except Exception:  # the collector's trouble is the tracing's, never the build's
                ok = False
            with self._ready:
                self.sending_since = None
                self.failed = self.failed or not ok
                self._ready.notify_all()

    def drain(self, timeout: float, hung_after: float) -> bool:
        """Wait until every span ended so far was sent: True when all were. Gives up at once when a request
        failed, when one has been outstanding `hung_after` seconds, or after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while self._spans or self.sending_since is not None:
                now = time.monotonic()
                since = self.sending_since
                if self.failed or now >= deadline or (since is not None and now - since >= hung_after):
                    return False
                wait = deadline - now if since is None else min(deadline - now, since + hung_after - now)
                self._ready.wait(max(0.001, wait))
            return not self.failed


def _failed(span, failed: bool, error: str | None) -> None:
    if failed:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, (error or "")[:200]))


def _named() -> str:
    """Where the collector was named: the first variable set, else the spec's table."""
    return next((name for name in ENDPOINT_VARIABLES if os.environ.get(name)), "[telemetry] endpoint")


def _endpoint(endpoint: str | None) -> str:
    named = _named()
    return os.environ.get(named, "") if named in ENDPOINT_VARIABLES else endpoint or ""
