"""A localhost HTTPS server for the remote fetcher's tests: a storage bucket stand-in.

It serves the files of a folder over TLS with a throwaway self-signed certificate made by the
`openssl` command for `localhost` / 127.0.0.1 (the tests hand its PEM to the fetcher as the CA
bundle; verification stays on). Every request is logged (path, Authorization present), and
faults are scripted per path:

    drop_after[path] = (n, times)  send the headers and n bytes of the body, then drop the
                                   connection, for the next `times` requests
    statuses[path] = [503, ...]    answer these statuses first, one per request
    redirects[path] = location     answer 302 with this Location
    unsized                        serve these paths without Content-Length (closing the connection)
    delays[path] = [seconds, ...]  wait this long before answering, one per request
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socket import socket
from ssl import PROTOCOL_TLS_SERVER, SSLContext
from typing import Any
from urllib.parse import unquote, urlsplit

from gui_assets_tests.serving import ServedOnAThread


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files for localhost and 127.0.0.1, valid for a day."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@dataclass
class Logged:
    path: str
    authorized: bool


@dataclass
class BucketState:
    root: Path
    requests: list[Logged] = field(default_factory=list)
    drop_after: dict[str, tuple[int, int]] = field(default_factory=dict)
    statuses: dict[str, list[int]] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    unsized: set[str] = field(default_factory=set)
    delays: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def gets(self, path: str | None = None) -> int:
        return sum(1 for r in self.requests if path is None or r.path == path)


def _handler(state: BucketState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            self.request.do_handshake()  # in this thread, so a refused handshake stalls nobody
            super().setup()

        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path).lstrip("/")
            with state.lock:
                state.requests.append(Logged(path, bool(self.headers.get("Authorization"))))
                delay = state.delays.get(path, []).pop(0) if state.delays.get(path) else 0.0
                status = state.statuses.get(path, []).pop(0) if state.statuses.get(path) else 200
                cut, times = state.drop_after.get(path, (0, 0))
                if times:
                    state.drop_after[path] = (cut, times - 1)
            time.sleep(delay)
            if status != 200:
                return self._send(status, b"busy")
            if path in state.redirects:
                return self._send(302, headers={"Location": state.redirects[path]})
            file = state.root / path
            if not path or not file.is_file():
                return self._send(404, b"no such key")
            data = file.read_bytes()
            self.send_response(200)
            if path in state.unsized:
                self.send_header("Connection", "close")
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if times:
                self.wfile.write(data[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the connection drops mid-file
                return
            self.wfile.write(data)

    return Handler


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], context: SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.context = context

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: socket | tuple[bytes, socket], client_address: Any) -> None:
        return  # refused handshakes and dropped connections are what the tests make happen


class HttpsBucket(ServedOnAThread):
    """`with HttpsBucket(root, tmp) as b:` files under root at b.url(path); b.ca_bundle, b.host."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.ca_bundle, key = self_signed_certificate(tmp / "tls")
        context = SSLContext(PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca_bundle, key)
        self.state = BucketState(root=root)
        self._server = _TlsServer(_handler(self.state), context)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        return f"localhost:{self.port}"

    def url(self, path: str = "") -> str:
        return f"https://localhost:{self.port}/{path}"
