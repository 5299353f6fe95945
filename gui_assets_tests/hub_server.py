"""A localhost HTTP server that serves the hub's file routes for dataset repos in a folder.

The real hub is unreachable here, so hub-mode downloads are tested against this: huggingface_hub
talks to it through its ordinary `endpoint`, with the routes snapshot_download uses:

    GET  /api/datasets/<owner>/<repo>[/revision/<rev>]      repo info (sha, siblings)
    GET  /api/datasets/<owner>/<repo>/tree/<rev>[/<path>]   listing (recursive; ?expand=True: lastCommit)
    POST /api/datasets/<owner>/<repo>/paths-info/<rev>      the named paths' entries (form: paths, expand)
    HEAD /datasets/<owner>/<repo>/resolve/<rev>/<path>      X-Repo-Commit, ETag, size
    GET  /datasets/<owner>/<repo>/resolve/<rev>/<path>      the bytes (Range supported)

Files are stored as the hub stores them: large data files in LFS (the tree lists their sha256,
the ETag is it) and small text files (.json, .md, .csv, .txt) in git (the tree lists no LFS, the
ETag is the git blob id). Uploads take huggingface_hub's HTTP path (LFS, as with
HF_HUB_DISABLE_XET; the Xet storage service cannot be stood up here):

    POST /api/repos/create                                  a repo folder (409 if it exists)
    POST /api/datasets/<owner>/<repo>/preupload/<rev>       "lfs" or "regular" per file
    POST /datasets/<owner>/<repo>.git/info/lfs/objects/batch  an upload URL per object not held
    PUT  /lfs/<oid>                                         the object; kept only if its sha256 is oid
    POST /api/datasets/<owner>/<repo>/commit/<rev>          ndjson; refused (422) if an LFS file it
                                                            names was never uploaded whole, else
                                                            applied at once, as one commit

Faults on demand: `drop_uploads` cuts the next N object uploads half way through their body (the
connection closes, nothing is kept), `fail_requests` answers the next N upload-route requests
500, `fail_commits` answers the next N commits 500 after reading them (nothing applied), and so does
every commit writing a path in `refuse_paths`. Every
request is recorded (method, path, Range, Authorization present)
so tests can assert what was fetched, that a resumed download asked for the missing tail only,
and that a token was sent as a header. `fail_after_bytes` cuts every response for a file short
(a connection that keeps dropping) until the test removes the entry.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from gui_assets_tests.serving import ServedOnAThread


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
    drop_uploads: int = 0
    fail_requests: int = 0
    fail_commits: int = 0
    refuse_paths: set[str] = field(default_factory=set)  # a commit writing any of these answers 500
    commits: list[list[str]] = field(default_factory=list)  # the paths each applied commit wrote
    objects_received: list[str] = field(default_factory=list)  # oid of every object kept, in order
    # The download side's history: earlier commits, oldest first (`commit` is the newest), and the
    # commit that last changed each path (`commit` where a path is not named).
    history: list[str] = field(default_factory=list)
    last_changed: dict[str, str] = field(default_factory=dict)

    def move_to(self, repo: str, commit: str, changed: list[str]) -> None:
        """A new head commit that changed `changed` (repo paths, as they now are on disk) in `repo`."""
        for rel, _ in self.files(repo):
            self.last_changed.setdefault(f"{repo}/{rel}", self.commit)
        self.history.append(self.commit)
        self.commit = commit
        for rel in changed:
            self.last_changed[f"{repo}/{rel}"] = commit

    def last_commit(self, repo: str, paths: list[str]) -> dict[str, str]:
        """The hub's `lastCommit` of a file or folder: the newest commit that changed any of `paths`."""
        order = {c: i for i, c in enumerate([*self.history, self.commit])}
        commit = max(
            (self.last_changed.get(f"{repo}/{p}", self.commit) for p in paths), key=order.__getitem__
        )
        return {"id": commit, "title": f"commit {commit[:7]}", "date": "2026-12-01T00:00:00.000Z"}

    @property
    def lfs(self) -> Path:
        return self.root / ".lfs-objects"  # beside the repos, never listed as a repo's file

    def take(self, counter: str) -> bool:
        """Spend one of a fault counter; True when there was one."""
        with self.lock:
            left = getattr(self, counter)
            if left > 0:
                setattr(self, counter, left - 1)
            return left > 0

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

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    out += self.rfile.read(size)
                    self.rfile.readline()
                self.rfile.readline()
                return bytes(out)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _drop(self) -> None:
            self.close_connection = True
            self.connection.shutdown(2)

        def do_POST(self) -> None:
            self._record()
            path = unquote(urlparse(self.path).path)
            if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/paths-info/[^/]+", path):
                form = parse_qs(self._body().decode("utf-8"))
                wanted = {p.rstrip("/") for p in form.get("paths", [])}
                expand = form.get("expand", [""])[0].lower() == "true"
                return self._json([e for e in self._tree(m.group(1), "", expand) if e["path"] in wanted])
            if state.take("fail_requests"):
                self._body()
                return self._json({"error": "server error (injected)"}, 500)
            if path == "/api/repos/create":
                ask = json.loads(self._body())
                folder = state.root / str(ask.get("organization") or "user") / str(ask["name"])
                url = f"http://{self.headers['Host']}/datasets/{folder.parent.name}/{folder.name}"
                if folder.is_dir():  # the hub's conflict answer carries the url too
                    return self._json({"error": "You already created this dataset repo", "url": url}, 409)
                folder.mkdir(parents=True)
                return self._json({"url": url})
            if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/[^/]+", path):
                files = json.loads(self._body())["files"]
                modes = [{"path": f["path"], "uploadMode": "lfs" if _in_lfs(f["path"]) else "regular",
                          "shouldIgnore": False} for f in files]  # fmt: skip
                return self._json({"files": modes})
            if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path):
                ask = json.loads(self._body())
                objects = []
                for o in ask["objects"]:
                    entry = {"oid": o["oid"], "size": o["size"]}
                    if not (state.lfs / o["oid"]).is_file():  # held objects get no actions: not sent again
                        href = f"http://{self.headers['Host']}/lfs/{o['oid']}"
                        entry["actions"] = {"upload": {"href": href}}
                    objects.append(entry)
                return self._json({"transfer": "basic", "objects": objects})
            if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/[^/]+", path):
                return self._commit(m.group(1), self._body())
            return self._not_found(path)

        def do_PUT(self) -> None:
            self._record()
            m = re.fullmatch(r"/lfs/([0-9a-f]{64})", unquote(urlparse(self.path).path))
            if m is None:
                return self._not_found(self.path)
            if state.take("fail_requests"):
                self._body()
                return self._json({"error": "server error (injected)"}, 500)
            if state.take("drop_uploads"):
                self.rfile.read(int(self.headers.get("Content-Length") or 0) // 2)
                return self._drop()  # half the object arrived; nothing is kept
            data = self._body()
            if hashlib.sha256(data).hexdigest() != m.group(1):
                return self._json({"error": "object does not match its oid"}, 400)
            state.lfs.mkdir(exist_ok=True)
            tmp = state.lfs / f".{m.group(1)}.part"
            tmp.write_bytes(data)
            tmp.replace(state.lfs / m.group(1))
            with state.lock:
                state.objects_received.append(m.group(1))
            return self._json({})

        def _commit(self, repo: str, body: bytes) -> None:
            if state.take("fail_commits"):
                return self._json({"error": "commit failed (injected)"}, 500)
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            if any(item["value"].get("path") in state.refuse_paths for item in lines):
                return self._json({"error": "commit failed (injected)"}, 500)
            writes: list[tuple[str, bytes]] = []
            for item in lines:
                v = item["value"]
                if item["key"] == "file":
                    writes.append((v["path"], base64.b64decode(v["content"])))
                elif item["key"] == "lfsFile":
                    obj = state.lfs / v["oid"]
                    if not obj.is_file():  # as the hub: a pointer to an object never uploaded is refused
                        return self._json({"error": f"LFS object of {v['path']} was not uploaded"}, 422)
                    writes.append((v["path"], obj.read_bytes()))
                elif item["key"] != "header":
                    return self._json({"error": f"unsupported commit operation {item['key']}"}, 400)
            base = state.root / repo
            staged = [(base / rel, data) for rel, data in writes]
            for target, data in staged:  # every file staged first, then all renamed: one commit
                target.parent.mkdir(parents=True, exist_ok=True)
                target.with_name(f".{target.name}.commit").write_bytes(data)
            for target, _ in staged:
                target.with_name(f".{target.name}.commit").replace(target)
            with state.lock:
                state.commits.append([rel for rel, _ in writes])
                state.commit = hashlib.sha1(f"{state.commit}{len(state.commits)}".encode()).hexdigest()
            return self._json({"commitUrl": f"http://{self.headers['Host']}/datasets/{repo}/commit/{state.commit}",
                               "commitOid": state.commit})  # fmt: skip

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
                expand = parse_qs(urlparse(self.path).query).get("expand", [""])[0].lower() == "true"
                return self._json(self._tree(m.group(1), (m.group(3) or "").strip("/"), expand))
            m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if m:
                return self._file(m.group(1), m.group(3))
            return self._not_found(path)

        def _tree(self, repo: str, prefix: str, expand: bool) -> list[dict[str, object]]:
            """The recursive listing: folders, then files; with `expand`, each entry's lastCommit."""
            files = [(rel, p) for rel, p in state.files(repo) if not prefix or rel.startswith(prefix + "/")]
            folders: dict[str, list[str]] = {}
            for rel, _ in files:
                parts = rel.split("/")[:-1]
                for depth in range(1, len(parts) + 1):
                    folders.setdefault("/".join(parts[:depth]), []).append(rel)
            entries: list[dict[str, object]] = []
            for folder, members in sorted(folders.items()):
                if prefix and not folder.startswith(prefix + "/"):
                    continue
                oid = hashlib.sha1("\n".join(members).encode()).hexdigest()
                entries.append({"type": "directory", "oid": oid, "size": 0, "path": folder})
                if expand:
                    entries[-1]["lastCommit"] = state.last_commit(repo, members)
            for rel, p in files:
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
                if expand:
                    entry["lastCommit"] = state.last_commit(repo, [rel])
                entries.append(entry)
            return entries

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


class LocalHub(ServedOnAThread):
    """Context manager: `with LocalHub(root) as hub: hub.endpoint` -> http://127.0.0.1:<port>."""

    def __init__(self, root: Path) -> None:
        self.state = HubState(root=root)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
