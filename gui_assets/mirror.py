"""Raw inputs: a partition's upstream files, from a local mirror or downloaded from the hub.

A mirror is laid out like the hub: `<mirror>/<owner>/<repo>/<path in repo>`, so a real
download and a test fixture are read by the same code. The manifest records every file with
its size and sha256 and the revision it came from: record-level lineage starts here.

A pattern ending in "/" names a folder recorded as ONE entry (its file count, total size and a
sha256 over its files' names and hashes): an extracted folder of 80k screenshots stays one line.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.atomic import atomic_write_text, sha256_file

LOCAL_REVISION = "local-mirror"


class RawInputError(Exception):
    """A whole raw input is unusable; the message names the file or pattern."""


@dataclass(frozen=True, slots=True)
class RawFile:
    path: str  # path in the upstream repo, e.g. data/train-00000-of-00027-....parquet (a folder ends in /)
    local: Path
    size: int
    sha256: str
    files: int = 1  # more than one for a folder entry

    def to_dict(self) -> dict[str, Any]:
        d = {"path": self.path, "local": str(self.local), "size": self.size, "sha256": self.sha256}
        if self.files != 1:
            d["files"] = self.files
        return d


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
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RawPartition:
        return cls(
            repo_id=d["repo_id"],
            revision=d["revision"],
            mode=d["mode"],
            patterns=list(d["patterns"]),
            files=[
                RawFile(f["path"], Path(f["local"]), f["size"], f["sha256"], f.get("files", 1))
                for f in d["files"]
            ],
            root=Path(d.get("root", "")),
            partition=d.get("partition", ""),
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
                }
                for f in self.files
            ],
        }


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


def _file_sha256(p: Path, root: Path | None = None, rel: str = "") -> str:
    """A file's sha256, read only when nothing already names it.

    A hub cache blob is named by it (LFS files); an `hf download --local-dir` file has it as
    the etag in its `.metadata`, trusted while the file is not newer than that metadata (the
    rule huggingface_hub itself applies). Either way the build reads the file once, to parse it.
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
    return sha256_file(p)


def _mirror_revision(repo_root: Path, files: list[tuple[str, Path]]) -> str:
    """The commit a mirror was downloaded at, when `hf download --local-dir` left its metadata."""
    for rel, _ in files:
        meta = repo_root / ".cache" / "huggingface" / "download" / f"{rel}.metadata"
        if meta.is_file():
            first = meta.read_text(encoding="utf-8").splitlines()[:1]
            if first and len(first[0]) == 40:
                return first[0]
    return LOCAL_REVISION


def _manifest(
    repo_id: str, revision: str, mode: str, patterns: list[str], files: list[tuple[str, Path]], root: Path
) -> RawPartition:
    if not files:
        raise RawInputError(f"no files matching {patterns} in {repo_id} ({mode})")
    folders = [pat for pat in patterns if pat.endswith("/")]
    entries: list[RawFile] = []
    grouped: dict[str, list[tuple[str, Path]]] = {}
    for rel, p in files:
        folder = next((f for f in folders if rel.startswith(f)), None)
        if folder is None:
            entries.append(RawFile(rel, p.resolve(), p.stat().st_size, _file_sha256(p, root, rel)))
        else:
            grouped.setdefault(folder, []).append((rel, p))
    for folder, members in sorted(grouped.items()):
        h = hashlib.sha256()
        size = 0
        for rel, p in members:
            h.update(f"{rel}\0{_file_sha256(p, root, rel)}\n".encode())
            size += p.stat().st_size
        entries.append(RawFile(folder, (root / folder).resolve(), size, h.hexdigest(), files=len(members)))
    return RawPartition(
        repo_id, revision, mode, patterns, sorted(entries, key=lambda f: f.path), root.resolve()
    )


def from_mirror(mirror: Path, repo_id: str, patterns: list[str]) -> RawPartition:
    repo_root = mirror / repo_id
    if not repo_root.is_dir():
        raise RawInputError(f"mirror has no {repo_id}: {repo_root} does not exist")
    files = match_files(repo_root, patterns)
    return _manifest(repo_id, _mirror_revision(repo_root, files), "mirror", patterns, files, repo_root)


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

    snapshot_download resumes interrupted files and skips complete ones, so a rerun after a
    dropped connection fetches only what is missing. The snapshot folder is named by the
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
    return _manifest(repo_id, snapshot.name, "hub", patterns, files, snapshot)
