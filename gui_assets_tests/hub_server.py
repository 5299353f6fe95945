"""A localhost HTTP server that serves the hub's file routes for dataset repos in a folder.

The real hub is unreachable here, so hub-mode downloads are tested against this: huggingface_hub
talks to it through its ordinary `endpoint`, with the routes snapshot_download uses:

    GET  /api/datasets/<owner>/<repo>[/revision/<rev>]      repo info (sha, siblings)
    GET  /api/datasets/<owner>/<repo>/tree/<rev>[/<path>]   file listing (recursive)
    HEAD /datasets/<owner>/<repo>/resolve/<rev>/<path>      X-Repo-Commit, ETag, size
    GET  /datasets/<owner>/<repo>/resolve/<rev>/<path>      the bytes (Range supported)

Files are stored as the hub stores them: large data files in LFS (the tree lists their sha256,
the ETag is it) and small text files (.json, .md, .csv, .txt) in git (the tree lists no LFS, the
ETag is the git blob id). Every request is recorded (method, path, Range, Authorization present)
so tests can assert what was fetched, that a resumed download asked for the missing tail only,
and that a token was sent as a header. `fail_after_bytes` cuts every response for a file short
(a connection that keeps dropping) until the test removes the entry.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    authorized: bool


@dataclass
class HubState:
    root: Path  # <root>/<owner>/<repo>/<files>
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    requests: list[Request] = field(default_factory=list)
    fail_after_bytes: dict[str, int] = field(default_factory=dict)  # repo path -> bytes sent before a drop
    lock: threading.Lock = field(default_factory=threading.Lock)

    def files(self, repo_id: str) -> list[tuple[str, Path]]:
        base = self.root / repo_id
        return sorted(
            (p.relative_to(base).as_posix(), p)
            for p in base.rglob("*")
            if p.is_file() and ".cache" not in p.parts
        )


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


GIT_SUFFIXES = (".json", ".md", ".csv", ".txt")  # kept in git, not LFS, as a hub repo's .gitattributes does


def _in_lfs(rel: str) -> bool:
    return not rel.endswith(GIT_SUFFIXES)


def _etag(rel: str, data: bytes) -> str:
    return hashlib.sha256(data).hexdigest() if _in_lfs(rel) else _git_blob_sha1(data)


def _handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            return

        def _record(self) -> None:
            with state.lock:
                state.requests.append(
                    Request(
                        self.command,
                        unquote(urlparse(self.path).path),
                        self.headers.get("Range"),
                        bool(self.headers.get("Authorization")),
                    )
                )

        def _json(self, obj: object, status: int = 200) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Repo-Commit", state.commit)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _not_found(self, what: str) -> None:
            self.send_response(404)
            body = json.dumps({"error": what}).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            self._record()
            path = unquote(urlparse(self.path).path)
            m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
            if m:
                repo = m.group(1)
                if not (state.root / repo).is_dir():
                    return self._not_found("repo")
                siblings = [{"rfilename": rel} for rel, _ in state.files(repo)]
                return self._json({"id": repo, "sha": state.commit, "siblings": siblings, "private": False})
            m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path)
            if m:
                repo, prefix = m.group(1), (m.group(3) or "").strip("/")
                entries = []
                for rel, p in state.files(repo):
                    if prefix and not rel.startswith(prefix + "/"):
                        continue
                    data = p.read_bytes()
                    entry: dict[str, object] = {
                        "type": "file",
                        "oid": _git_blob_sha1(data),
                        "size": len(data),
                        "path": rel,
                    }
                    if _in_lfs(rel):
                        entry["lfs"] = {
                            "oid": hashlib.sha256(data).hexdigest(),
                            "size": len(data),
                            "pointerSize": 134,
                        }
                    entries.append(entry)
                return self._json(entries)
            m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if m:
                return self._file(m.group(1), m.group(3))
            return self._not_found(path)

        def _file(self, repo: str, rel: str) -> None:
            p = state.root / repo / rel
            if not p.is_file():
                return self._not_found(rel)
            data = p.read_bytes()
            start = 0
            rng = self.headers.get("Range")
            if rng and (m := re.fullmatch(r"bytes=(\d+)-", rng)):
                start = int(m.group(1))
            body = data[start:]
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", f'"{_etag(rel, data)}"')
            self.send_header("X-Repo-Commit", state.commit)
            self.send_header("Accept-Ranges", "bytes")
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if self.command == "HEAD":
                return
            cut = state.fail_after_bytes.get(rel) if self.command == "GET" else None
            if cut is not None:
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the connection drops mid-file
                return
            self.wfile.write(body)

    return Handler


class LocalHub:
    """Context manager: `with LocalHub(root) as hub: hub.endpoint` -> http://127.0.0.1:<port>."""

    def __init__(self, root: Path) -> None:
        self.state = HubState(root=root)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LocalHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
