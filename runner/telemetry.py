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
    """The run as spans, sent as it goes: the run's own span (sent as it ends), and each step that started in it,
    sent as the step ends, with its agent attempts and their verify commands inside (as the trace file nests them).

    The build's thread only hands each event over (a list append): one thread of the exporter's own reads the
    events into the timeline, makes the spans (finished spans made whole, as the OTLP exporter takes them: no
    tracer, sampler or processor between, each of which cost ~0.1 ms a step) and posts whatever ended since its
    last request. A collector that is slow or down never holds a step up."""

    def __init__(self, project: str, exporter, where: str):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.where = where
        self.exporter = exporter
        self.resource = Resource.create({"service.name": "runner", "runner.project": project})
        self.scope = InstrumentationScope("runner")
        self.ids = RandomIdGenerator()
        self.reading: Reading | None = None
        self.trace_id = 0
        self.run: Any = None  # the run's SpanContext once it started, until its span is sent
        self.epoch = 0.0
        self._events: list = []  # handed over, not yet read
        self._spans: list = []  # made, not yet sent
        self._ready = threading.Condition()
        self._closed = False
        self.sending_since: float | None = None  # monotonic start of the request in flight
        self._busy = False  # the thread holds events it took or spans it made
        self.failed = False
        threading.Thread(target=self._work, name="runner-otlp", daemon=True).start()

    def watch(self, run_dir: Path):
        """What reads the run's events as they are reported (the pipeline's sink calls it with each one, masked)."""
        self.reading = Reading(run_dir)
        return self.event

    def event(self, e: Any) -> None:
        with self._ready:
            self._events.append(e)
            self._ready.notify_all()

    def close(self) -> None:
        """The run's end: its span sent if the run stopped before saying how it ended, then its last spans sent
        while the collector answers (HUNG_AFTER), said once on stderr when some could not be."""
        self.event(_END)
        if not self.drain(LAST_SPANS_WAIT, HUNG_AFTER):
            print(
                f"runner: the run's spans could not be sent to the OpenTelemetry collector at {self.where}",
                file=sys.stderr,
                flush=True,
            )
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self.exporter.shutdown()  # stops a request's retries; a request hung on its socket ends with the process

    def drain(self, timeout: float, hung_after: float) -> bool:
        """Wait until every event handed over was read and its spans sent: True when all were. Gives up at once
        when a request failed, when one has been outstanding `hung_after` seconds, or after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while self._events or self._spans or self._busy:
                now = time.monotonic()
                since = self.sending_since
                if self.failed or now >= deadline or (since is not None and now - since >= hung_after):
                    return False
                wait = deadline - now if since is None else min(deadline - now, since + hung_after - now)
                self._ready.wait(max(0.001, wait))
            return not self.failed

    # ---- the exporter's thread
    def _work(self) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        while True:
            with self._ready:
                while not self._events and not self._spans and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
                events, self._events = self._events, []
                if self.failed:  # the exporter retried for its whole timeout: the rest of the run is not sent
                    self._ready.notify_all()
                    continue
                self._busy = True
            made = []
            for e in events:
                try:
                    made.extend(self._read(e))
                except Exception:  # an event the timeline cannot place costs its span, never the build
                    continue
            with self._ready:
                self._spans.extend(made)
                batch, self._spans = self._spans, []
                if not batch:
                    self._busy = False
                    self._ready.notify_all()
                    continue
                self.sending_since = time.monotonic()
            try:
                ok = self.exporter.export(batch) == SpanExportResult.SUCCESS
            except Exception:  # the collector's trouble is the tracing's, never the build's
                ok = False
            with self._ready:
                self.sending_since = None
                self._busy = False
                self.failed = self.failed or not ok
                self._ready.notify_all()

    def _read(self, e) -> list:
        """The spans the event `e` finishes (read into the run's timeline)."""
        reading = self.reading
        if reading is None:
            return []
        if e is _END:  # the run stopped before run_finished: its span ends at the last moment it reported
            return [self._run_span(reading.timeline().duration, "incomplete")] if self.run is not None else []
        step = reading.add(e)
        kind = e.get("event")
        if step is not None:
            return self._step(step) if self.run is not None else []
        if kind == "run_started" and self.run is None:
            epoch = epoch_of(reading.head.get("started"))
            if epoch is not None:
                self.epoch = epoch
                self.trace_id = self.ids.generate_trace_id()
                self.run = self._context()
        elif kind == "run_finished" and self.run is not None:
            return [self._run_span(float(e.get("duration", 0.0)), str(e.get("status", "incomplete")))]
        return []

    def _context(self):
        from opentelemetry.trace import SpanContext, TraceFlags

        return SpanContext(self.trace_id, self.ids.generate_span_id(), False, TraceFlags(TraceFlags.SAMPLED))

    def _span(self, name: str, context, parent, start: float, end: float, attributes: dict, error=None):
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import Status, StatusCode

        status = Status(StatusCode.ERROR, (error or "")[:200]) if error is not None else Status(StatusCode.UNSET)
        return ReadableSpan(
            name,
            context=context,
            parent=parent,
            resource=self.resource,
            attributes=attributes,
            status=status,
            start_time=int((self.epoch + start) * 1e9),
            end_time=int((self.epoch + end) * 1e9),
            instrumentation_scope=self.scope,
        )

    def _run_span(self, duration: float, status: str):
        reading = self.reading
        assert reading is not None
        run, self.run = self.run, None
        attributes = {
            "runner.run_id": reading.run_dir.name,
            "runner.jobs": int(reading.head.get("jobs", 1)),
            "runner.status": status,
        }
        return self._span(f"runner make {reading.run_dir.name}", run, None, 0.0, duration, attributes)

    def _step(self, step: Step) -> list:
        attributes: dict[str, Any] = {"runner.status": step.status, "runner.slot": step.slot}
        if step.finished.get("reasons"):
            attributes["runner.reasons"] = list(step.finished["reasons"])
        error = step.finished.get("error")
        if error:
            attributes["runner.error"] = error
        failed = (error or "") if step.status in ("failed", "blocked") else None
        in_step = self._context()
        end = step.end if step.end is not None else step.start
        spans = [self._span(step.intent, in_step, self.run, step.start, end, attributes, failed)]
        for a in step.attempts:
            name = f"{step.intent} candidate {a.candidate} attempt {a.number}"
            in_attempt = self._context()
            attempt_attributes = {"runner.ok": a.ok, "runner.tokens": a.tokens, "runner.kind": a.kind or ""}
            rejected = None if a.ok else (a.error or "")
            spans.append(self._span(name, in_attempt, in_step, a.start, a.end, attempt_attributes, rejected))
            for v in a.verify:
                verify_attributes = {
                    "runner.command": v.command,
                    "runner.exit_code": -1 if v.exit_code is None else v.exit_code,
                }
                spans.append(
                    self._span(f"verify {v.name}", self._context(), in_attempt, v.start, v.end, verify_attributes)
                )
        return spans


_END = object()  # handed over by close(): the run's span, if it is still open, ends


def _named() -> str:
    """Where the collector was named: the first variable set, else the spec's table."""
    return next((name for name in ENDPOINT_VARIABLES if os.environ.get(name)), "[telemetry] endpoint")


def _endpoint(endpoint: str | None) -> str:
    named = _named()
    return os.environ.get(named, "") if named in ENDPOINT_VARIABLES else endpoint or ""
