"""The viewer's HTTP server: the page, its static files and the JSON/frame API (see the package
docstring for the routes)."""

from __future__ import annotations

import gzip
import json
import mimetypes
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gui_assets.viewer.catalog import BadPath, Catalog, NotServed, ServedRoot, UnreadableShard
from gui_assets.viewer.frames import FrameCache, FrameError, ShardPool, encode_png, read_frame
from gui_assets.viewer.steps import read_demo

STATIC_DIR = Path(__file__).with_name("static")
GZIP_MIN_BYTES = 4096
# Frame URLs carry the file's version, so a cached frame is never a stale one.
IMMUTABLE = "private, max-age=31536000, immutable"


class BadRequest(ValueError):
    """A missing or malformed query parameter (HTTP 400)."""


class Viewer:
    """What the routes answer, independent of HTTP: the index, a demo, a frame."""

    def __init__(self, served: ServedRoot) -> None:
        self.catalog = Catalog(served)
        self.pool = ShardPool()
        self.cache = FrameCache()

    def index(self) -> dict[str, Any]:
        return self.catalog.index()

    def demo(self, rel: str, name: str) -> dict[str, Any]:
        path = self.catalog.path(rel)
        entry = self.catalog.file_entry(rel)
        answer = self.pool.read(path, lambda f: read_demo(f, name))
        answer["file"] = {k: entry[k] for k in ("path", "directory", "version", "bytes", "attrs")}
        return answer

    def frame(self, rel: str, name: str, kind: str, step: int) -> tuple[bytes, str]:
        """A frame's PNG and the file version it belongs to; the next step is encoded ahead."""
        path = self.catalog.path(rel)
        version = self.catalog.file_entry(rel)["version"]

        def make(t: int, k: str = kind) -> bytes:
            return encode_png(read_frame(self.pool, path, name, k, t))

        png = self.cache.get((rel, version, name, kind, step), lambda: make(step))
        if kind == "agentview":
            for k in ("agentview", "eye"):
                self.cache.prefetch((rel, version, name, k, step + 1), lambda k=k: make(step + 1, k))
        return png, version

    def close(self) -> None:
        self.cache.close()
        self.pool.close()


def _param(query: dict[str, list[str]], name: str) -> str:
    values = query.get(name)
    if not values or not values[0]:
        raise BadRequest(f"missing query parameter {name!r}")
    return values[0]


def _step(query: dict[str, list[str]]) -> int:
    raw = _param(query, "step")
    if not raw.isdigit():
        raise BadRequest(f"step must be a non-negative integer, not {raw!r}")
    return int(raw)


ERRORS: tuple[tuple[type[Exception], HTTPStatus], ...] = (
    (BadRequest, HTTPStatus.BAD_REQUEST),
    (BadPath, HTTPStatus.BAD_REQUEST),
    (NotServed, HTTPStatus.NOT_FOUND),
    (UnreadableShard, HTTPStatus.UNPROCESSABLE_ENTITY),
    (FrameError, HTTPStatus.UNPROCESSABLE_ENTITY),
)


class ViewerHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a step's frame, crop and prefetches share a connection
    server: ViewerServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        try:
            self._route(url.path, query)
        except tuple(e for e, _ in ERRORS) as e:
            status = next(s for cls, s in ERRORS if isinstance(e, cls))
            self._json({"error": str(e)}, status)
        except (BrokenPipeError, ConnectionResetError):  # the browser dropped a superseded frame
            self.close_connection = True

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        viewer = self.server.viewer
        if path in ("/", "/index.html"):
            self._static("index.html")
        elif path.startswith("/static/"):
            self._static(path.removeprefix("/static/"))
        elif path == "/api/index":
            self._json(viewer.index())
        elif path == "/api/demo":
            self._json(viewer.demo(_param(query, "file"), _param(query, "demo")))
        elif path == "/api/frame":
            kind = query.get("kind", ["agentview"])[0]
            png, version = viewer.frame(_param(query, "file"), _param(query, "demo"), kind, _step(query))
            fresh = query.get("v", [""])[0] == version
            self._send(png, "image/png", IMMUTABLE if fresh else "no-cache")
        else:
            raise NotServed(f"no route {path}")

    def _static(self, name: str) -> None:
        files = {p.name: p for p in STATIC_DIR.iterdir() if p.is_file()}
        if name not in files:
            raise NotServed(f"no static file {name!r}")
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        self._send(files[name].read_bytes(), f"{kind}; charset=utf-8" if kind.startswith("text/") else kind)

    def _json(self, payload: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        self._send(body, "application/json", "no-cache", status)

    def _send(
        self, body: bytes, kind: str, cache: str = "no-cache", status: HTTPStatus = HTTPStatus.OK
    ) -> None:
        encoding = None
        compressible = kind != "image/png" and len(body) >= GZIP_MIN_BYTES
        if compressible and "gzip" in self.headers.get("Accept-Encoding", ""):
            body, encoding = gzip.compress(body, 5), "gzip"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        self.send_header("X-Content-Type-Options", "nosniff")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], viewer: Viewer, verbose: bool = False) -> None:
        self.viewer = viewer
        self.verbose = verbose
        super().__init__(address, ViewerHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that closes a connection mid-answer is routine, not an error to print."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
