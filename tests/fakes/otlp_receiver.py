#!/usr/bin/env python3
"""An OpenTelemetry collector's OTLP/HTTP trace receiver on 127.0.0.1: POST /v1/traces takes a protobuf
ExportTraceServiceRequest, decoded with opentelemetry-proto (a body that does not decode is answered 400), and
keeps it with when it arrived; or, with --hang, reads each request and never answers, as a collector stuck behind a
full queue does.

Run:  otlp_receiver.py [--hang] [--port 0]
The first stdout line is `listening PORT`. GET /__requests gives every request kept, in order, as JSON:
[{"path", "content_type", "at" (time.time() on arrival), "body" (base64 of the protobuf)}].
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

_lock = threading.Lock()
_kept: list[dict] = []


def handler(hang: bool):
    class Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path != "/__requests":
                self._answer(404, b"", "text/plain")
                return
            with _lock:
                body = json.dumps(_kept).encode()
            self._answer(200, body, "application/json")

        def do_POST(self) -> None:
            at = time.time()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if hang:
                time.sleep(3600)  # the client's own timeout is all that ends its wait
                return
            try:
                ExportTraceServiceRequest().ParseFromString(body)
            except Exception:  # a request a collector cannot read
                self._answer(400, b"", "application/x-protobuf")
                return
            with _lock:
                _kept.append(
                    {
                        "path": self.path,
                        "content_type": self.headers.get("Content-Type"),
                        "at": at,
                        "body": base64.b64encode(body).decode(),
                    }
                )
            self._answer(200, b"", "application/x-protobuf")

    return Receiver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.hang))
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
