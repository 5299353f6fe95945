"""A real HTTP server on localhost that receives webhook POSTs (a stand-in for Slack).

`fail_first` answers the first N requests with `fail_status`, to exercise retries.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gui_assets_tests.serving import ServedOnAThread


class WebhookReceiver(ServedOnAThread):
    def __init__(self, fail_first: int = 0, fail_status: int = 503) -> None:
        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.attempts = 0
        self.fail_first = fail_first
        self.fail_status = fail_status
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.attempts += 1
                if receiver.attempts <= receiver.fail_first:
                    self.send_response(receiver.fail_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                receiver.received.append(json.loads(body))
                receiver.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/services/T000/B000/secretpart"
