"""Raw inputs: a partition's upstream files, from a local mirror or downloaded from the hub.

A mirror is laid out like the hub: `<mirror>/<owner>/<repo>/<path in repo>`, so a real
download and a test fixture are read by the same code. The manifest records every file with
its size and sha256 and the revision it came from: record-level lineage starts here. On the hub
the revision is the resolved commit; a mirror's revision is its content (`mirror-` and the
partition's version below), so two builds from different mirror states never share a revision,
and the commit `hf download --local-dir` left in its metadata, when there is one, is kept beside
it as `downloaded_at`. Each entry also has a revision of its own, listed with it in
dataset_info.json: on the hub the last commit that changed the file, in a mirror the digest of
that entry alone. Records name only the repo, file and row or member (`source_ref`), so an edit
of one file changes the revision of that file alone and no other episode's bytes.

A pattern ending in "/" names a folder recorded as ONE entry (its file count, total size and a
sha256 over its files' names and hashes): an extracted folder of 80k screenshots stays one line.

Each entry also keeps its `oid`, the id the upstream itself gives the content (the LFS sha256
or the git blob id on the hub; the sha256 in a mirror): a partition's `version` is a digest of
its entries' paths, sizes and oids, which `gui_assets.pipeline.upstream` computes the same way from the
hub's file listing without downloading anything, so an observation of the upstream and the
raw asset's data version agree exactly when the partition's files are unchanged.

Files the records name by URL outside the hub (fetched in hub mode by `gui_assets.sources.remote`) are
recorded apart: `remote` entries, whose `path` is the URL, with the cached copy's size and
sha256, and `refused`, the URLs without a copy and why (`remote.Refusal` values). They are not
part of `version` (an observation of the repository cannot see them), but they are in the
manifest and in dataset_info.json's upstream block.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gui_assets.core.atomic import atomic_write_text, sha256_file
from gui_assets.core.config import usable_cpus
from gui_assets.core.layout import is_demo_mirror

MIRROR_REVISION_PREFIX = "mirror-"
_PATHS_PER_ASK = 50  # paths in one paths-info request: an expanded answer's page


log = logging.getLogger(__name__)


class RawInputError(Exception):
    """A whole raw input is unusable; the message names the file or pattern."""


@dataclass(frozen=True, slots=True)
class RawFile:
    path: str  # path in the upstream repo, e.g. data/train-00000-of-00027-....parquet (a folder ends in /)
    local: Path
    size: int
    sha256: str
    files: int = 1  # more than one for a folder entry
    oid: str = ""  # the upstream's own id of the content (LFS sha256, git blob id); sha256 if unset
    revision: str = ""  # the file's own revision: the hub's last commit to it, a mirror's digest

    @property
    def content_id(self) -> str:
        return self.oid or self.sha256

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "local": str(self.local),
            "size": self.size,
            "sha256": self.sha256,
        }
        if self.files != 1:
            d["files"] = self.files
        if self.oid and self.oid != self.sha256:
            d["oid"] = self.oid
        if self.revision:
            d["revision"] = self.revision
        return d

    @classmethod
    def from_dict(cls, f: dict[str, Any]) -> RawFile:
        optional = {k: f[k] for k in ("files", "oid", "revision") if k in f}  # to_dict leaves defaults out
        return cls(f["path"], Path(f["local"]), f["size"], f["sha256"], **optional)


@dataclass(frozen=True, slots=True)
class FileId:
    """One upstream file as described before folding: where it is, its size and its ids."""

    path: str
    local: Path
    size: int
    sha256: str
    oid: str


def partition_version(entries: Any) -> str:
    """A partition's data version: a digest of its entries' (path, size, content id)."""
    rows = sorted((str(p), int(n), str(o)) for p, n, o in entries)
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def fold(patterns: list[str], described: list[FileId], root: Path) -> list[RawFile]:
    """Manifest entries: files as they are, and the files under a folder pattern ("images/") as
    one entry whose hashes cover its members' names and hashes."""
    folders = [pat for pat in patterns if pat.endswith("/")]
    entries: list[RawFile] = []
    grouped: dict[str, list[FileId]] = {}
    for f in described:
        folder = next((d for d in folders if f.path.startswith(d)), None)
        if folder is None:
            entries.append(RawFile(f.path, f.local, f.size, f.sha256, oid=f.oid))
        else:
            grouped.setdefault(folder, []).append(f)
    for folder, members in sorted(grouped.items()):
        sha, oid = hashlib.sha256(), hashlib.sha256()
        for m in sorted(members, key=lambda m: m.path):
            sha.update(f"{m.path}\0{m.sha256}\n".encode())
            oid.update(f"{m.path}\0{m.oid}\n".encode())
        size = sum(m.size for m in members)
        entries.append(RawFile(folder, root / folder, size, sha.hexdigest(), len(members), oid.hexdigest()))
    return sorted(entries, key=lambda f: f.path)


class HashCache:
    """sha256 of local files kept by (size, mtime) in one JSON file: an unchanged file is hashed
    once, whoever asks (the raw stage, the upstream observation). Saved atomically."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._known: dict[str, list[Any]] = {}
        self._dirty = False
        if path is not None and path.is_file():
            try:
                self._known = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._known = {}

    def sha256(self, p: Path, compute: Any = None) -> str:
        st = p.stat()
        key = str(p.resolve())
        hit = self._known.get(key)
        if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return str(hit[2])
        digest = (compute or sha256_file)(p)
        self._known[key] = [st.st_size, st.st_mtime_ns, digest]
        self._dirty = True
        return digest

    def save(self) -> None:
        if self.path is not None and self._dirty:
            atomic_write_text(self.path, json.dumps(self._known))
            self._dirty = False


@dataclass(slots=True)
class RawPartition:
    """The upstream files of one partition and where they came from."""

    repo_id: str
    revision: str
    mode: str  # "mirror" or "hub"
    patterns: list[str]
    files: list[RawFile] = field(default_factory=list)
    root: Path = Path()  # the repo's local root: <mirror>/<owner>/<repo>, or the hub snapshot
    partition: str = ""  # the partition key these files were fetched for
    remote: list[RawFile] = field(default_factory=list)  # fetched URL copies; path = the URL
    refused: dict[str, str] = field(default_factory=dict)  # URL -> why it has no copy
    downloaded_at: str = ""  # mirror mode: the commit `hf download` recorded, if it left metadata

    @property
    def version(self) -> str:
        """What an observation of the upstream reports for these files (see partition_version)."""
        return partition_version((f.path, f.size, f.content_id) for f in self.files)

    @property
    def file_count(self) -> int:
        """Upstream files in the partition (a folder entry counts its files)."""
        return sum(f.files for f in self.files)

    def find(self, pattern: str) -> list[RawFile]:
        """The manifest entries whose repo path matches a glob."""
        return [f for f in self.files if fnmatch.fnmatchcase(f.path, pattern)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo_id": self.repo_id,
            "revision": self.revision,
            "mode": self.mode,
            "patterns": self.patterns,
            "root": str(self.root),
            "partition": self.partition,
            "files": [f.to_dict() for f in self.files],
            **({"remote": [f.to_dict() for f in self.remote]} if self.remote else {}),
            **({"refused": self.refused} if self.refused else {}),
            **({"downloaded_at": self.downloaded_at} if self.downloaded_at else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RawPartition:
        return cls(
            repo_id=d["repo_id"],
            revision=d["revision"],
            mode=d["mode"],
            patterns=list(d["patterns"]),
            files=[RawFile.from_dict(f) for f in d["files"]],
            root=Path(d.get("root", "")),
            partition=d.get("partition", ""),
            remote=[RawFile.from_dict(f) for f in d.get("remote", [])],
            refused=dict(d.get("refused", {})),
            downloaded_at=d.get("downloaded_at", ""),
        )

    def write(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> RawPartition:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    def upstream_record(self) -> dict[str, Any]:
        """The build.upstream block of dataset_info.json (no local paths: they are machine-specific)."""
        return {
            "repo_id": self.repo_id,
            "revision": self.revision,
            "mode": self.mode,
            "files": [
                {
                    "path": f.path,
                    "size": f.size,
                    "sha256": f.sha256,
                    **({"files": f.files} if f.files != 1 else {}),
                    "revision": f.revision or self.revision,
                }
                for f in self.files
            ],
            **(
                {"remote": [{"url": f.path, "size": f.size, "sha256": f.sha256} for f in self.remote]}
                if self.remote
                else {}
            ),
            **({"refused": self.refused} if self.refused else {}),
            **({"downloaded_at": self.downloaded_at} if self.downloaded_at else {}),
        }

    @property
    def demo_mirror(self) -> bool:
        """Read from the generated demo mirror (wherever it lies): never real data."""
        return self.mode == "mirror" and is_demo_mirror(self.root, self.repo_id)


def mirror_revision(entries: Any) -> str:
    """A mirror partition's revision: its content, the digest `partition_version` gives its
    entries (any change to a file of the partition is a new revision). A file's own revision is
    the same digest of that one entry."""
    return MIRROR_REVISION_PREFIX + partition_version((f.path, f.size, f.content_id) for f in entries)


def hub_file_commits(
    repo_id: str, commit: str, paths: list[str], token: str | None, endpoint: str | None, cache: Path
) -> dict[str, str]:
    """The last commit at `commit` of each of `paths` (files, and folders ending in "/"), from the
    hub's paths-info with `expand`: the commit a file's bytes date from, which later commits to
    other files leave alone. Only the partition's own paths are asked for (a recursive listing
    of a repo with a large image folder would take thousands of pages), 50 a request, the page
    the hub gives an expanded answer. A commit's answer never changes, so it is kept in `cache`
    (a JSON file) and an offline rebuild from the hub cache finds it. A path the hub does not
    date fails the partition by name: naming the partition's commit instead would give other
    bytes than a build on which the hub answered."""
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    try:
        known: dict[str, str] = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    wanted = [p for p in paths if p not in known]
    api = HfApi(endpoint=endpoint, token=token)
    try:
        for start in range(0, len(wanted), _PATHS_PER_ASK):
            asked = {p.rstrip("/"): p for p in wanted[start : start + _PATHS_PER_ASK]}
            for e in api.get_paths_info(
                repo_id, list(asked), repo_type="dataset", revision=commit, expand=True
            ):
                path = asked.get(e.path.rstrip("/"))
                if path is not None and e.last_commit is not None:
                    known[path] = e.last_commit.oid
    except (httpx2.HTTPError, HfHubHTTPError, OSError, ValueError) as e:
        raise RawInputError(
            f"the hub did not say which commit last changed {repo_id}'s files at {commit}: "
            f"{type(e).__name__}: {e}"
        ) from None
    undated = [p for p in paths if p not in known]
    if undated:
        raise RawInputError(f"the hub gave no last commit for {repo_id}/{undated[0]} at {commit}")
    if wanted:
        atomic_write_text(cache, json.dumps(known, sort_keys=True))
    return {p: known[p] for p in paths}


def match_files(repo_root: Path, patterns: list[str]) -> list[tuple[str, Path]]:
    """Files under repo_root whose repo path matches any glob pattern, sorted by repo path.

    A folder pattern ("images/") matches every file below that folder."""
    found: dict[str, Path] = {}
    globs = [pat + "*" if pat.endswith("/") else pat for pat in patterns]
    if repo_root.is_dir():
        for p in repo_root.rglob("*"):
            rel = p.relative_to(repo_root).as_posix()
            if rel.startswith(".cache/") or not p.is_file():
                continue
            if any(fnmatch.fnmatchcase(rel, pat) for pat in globs):
                found[rel] = p
    return sorted(found.items())


def _file_sha256(p: Path, root: Path | None = None, rel: str = "", cache: HashCache | None = None) -> str:
    """A file's sha256, read only when nothing already names it.

    A hub cache blob is named by it (LFS files); an `hf download --local-dir` file has it as
    the etag in its `.metadata`, trusted while the file is not newer than that metadata (the
    rule huggingface_hub itself applies); a hash cache has it while size and mtime hold.
    """
    if p.is_symlink():
        name = p.resolve().name
        if re.fullmatch(r"[0-9a-f]{64}", name):
            return name
    if root is not None:
        meta = root / ".cache" / "huggingface" / "download" / f"{rel}.metadata"
        try:
            lines = meta.read_text(encoding="utf-8").splitlines()
            if (
                len(lines) >= 3
                and re.fullmatch(r"[0-9a-f]{64}", lines[1].strip())
                and float(lines[2]) >= p.stat().st_mtime - 1.0
            ):
                return lines[1].strip()
        except (OSError, ValueError):
            pass
    return cache.sha256(p) if cache is not None else sha256_file(p)


def describe(rel: str, p: Path, root: Path, hub: bool, cache: HashCache | None = None) -> FileId:
    """One local file with its ids: in a hub snapshot the blob a file links to is named by the
    hub's own id of it (the LFS sha256, or the git blob id of a small file)."""
    sha = _file_sha256(p, root, rel, cache)
    oid = sha
    if hub and p.is_symlink():
        name = p.resolve().name
        if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", name):
            oid = name
    return FileId(rel, p.resolve(), p.stat().st_size, sha, oid)


def downloaded_at(repo_root: Path, files: list[tuple[str, Path]]) -> str:
    """The commit a mirror was downloaded at, when `hf download --local-dir` left its metadata
    ("" otherwise)."""
    for rel, _ in files:
        meta = repo_root / ".cache" / "huggingface" / "download" / f"{rel}.metadata"
        if meta.is_file():
            first = meta.read_text(encoding="utf-8").splitlines()[:1]
            if first and len(first[0]) == 40:
                return first[0]
    return ""


def _manifest(
    repo_id: str,
    revision: str | None,
    mode: str,
    patterns: list[str],
    files: list[tuple[str, Path]],
    root: Path,
    cache: HashCache | None = None,
) -> RawPartition:
    if not files:
        raise RawInputError(f"no files matching {patterns} in {repo_id} ({mode})")
    # Hashing releases the GIL: a partition's files are read on every core at once.
    with ThreadPoolExecutor(max(1, min(usable_cpus(), len(files)))) as pool:
        described = list(pool.map(lambda f: describe(f[0], f[1], root, mode == "hub", cache), files))
    if cache is not None:
        cache.save()
    entries = fold(patterns, described, root.resolve())
    return RawPartition(
        repo_id, revision or mirror_revision(entries), mode, patterns, entries, root.resolve()
    )


def from_mirror(
    mirror: Path, repo_id: str, patterns: list[str], cache: HashCache | None = None
) -> RawPartition:
    repo_root = mirror / repo_id
    if not repo_root.is_dir():
        raise RawInputError(f"mirror has no {repo_id}: {repo_root} does not exist")
    files = match_files(repo_root, patterns)
    part = _manifest(repo_id, None, "mirror", patterns, files, repo_root, cache)
    part.files = [replace(f, revision=mirror_revision([f])) for f in part.files]  # its content
    part.downloaded_at = downloaded_at(repo_root, files)
    return part


def from_hub(
    repo_id: str,
    patterns: list[str],
    *,
    revision: str | None = None,
    token: str | None = None,
    cache_dir: Path | None = None,
    endpoint: str | None = None,
) -> RawPartition:
    """Download the partition's files into the huggingface_hub cache and describe them.

    snapshot_download skips complete files, so a rerun after a dropped connection fetches only
    the files not yet complete (a partly downloaded file starts over). The snapshot folder is named by the
    resolved commit, which is recorded as the revision.
    """
    import httpx2  # huggingface_hub's HTTP client: transport failures surface as its errors
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        snapshot = Path(
            snapshot_download(
                repo_id=repo_id,
                repo_type="dataset",
                revision=revision,
                allow_patterns=[pat + "*" if pat.endswith("/") else pat for pat in patterns],
                token=token,
                cache_dir=str(cache_dir) if cache_dir else None,
                endpoint=endpoint,
            )
        )
    except (httpx2.HTTPError, EntryNotFoundError, OSError) as e:
        # HTTP statuses, dropped connections (after huggingface_hub's own retries), an empty
        # cache when offline. The message carries the URL and status, never the token.
        raise RawInputError(
            f"hub download of {repo_id} ({patterns}) failed: {type(e).__name__}: {e}"
        ) from None
    files = match_files(snapshot, patterns)
    part = _manifest(repo_id, snapshot.name, "hub", patterns, files, snapshot)
    # Kept beside the snapshots, in the repo's own cache folder: <cache>/datasets--o--r/
    cache = snapshot.parent.parent / "gui_assets" / f"last_commits-{snapshot.name}.json"
    commits = hub_file_commits(repo_id, snapshot.name, [f.path for f in part.files], token, endpoint, cache)
    part.files = [replace(f, revision=commits[f.path]) for f in part.files]
    return part
