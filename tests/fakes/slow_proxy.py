#!/usr/bin/env python3
"""An HTTP proxy on 127.0.0.1 that answers each request after a delay and counts how many were in flight at once
(stdlib only): put in front of moto's S3 server, it stands for a store far away, where a round trip a request,
one after another, is what a cache pays.

Run:  slow_proxy.py --upstream http://127.0.0.1:PORT --delay SECONDS [--port 0]
The first stdout line is `listening PORT`. GET /__stats gives {"requests": N, "peak": M}; GET /__reset gives them
and starts counting again.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_stats = {"requests": 0, "peak": 0, "now": 0}
LOG = bool(os.environ.get("SLOW_PROXY_LOG"))  # each request's method and path on stdout


def handler(upstream: str, delay: float):
    target = urllib.parse.urlsplit(upstream)

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _forward(self) -> None:
            if self.path in ("/__stats", "/__reset"):
                body = json.dumps({k: _stats[k] for k in ("requests", "peak")}).encode()
                if self.path == "/__reset":
                    with _lock:
                        _stats.update(requests=0, peak=0)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if LOG:
                print(self.command, self.path, flush=True)
            with _lock:
                _stats["requests"] += 1
                _stats["now"] += 1
                _stats["peak"] = max(_stats["peak"], _stats["now"])
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                time.sleep(delay)
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()
            finally:
                with _lock:
                    _stats["now"] -= 1

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    return Proxy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.upstream, args.delay))
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
