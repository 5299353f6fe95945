"""Raw inputs: a partition's upstream files, from a local mirror or downloaded from the hub.

A mirror is laid out like the hub: `<mirror>/<owner>/<repo>/<path in repo>`, so a real
download and a test fixture are read by the same code. The manifest records every file with
its size and sha256 and the revision it came from: record-level lineage starts here.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.atomic import atomic_write_text, sha256_file

LOCAL_REVISION = "local-mirror"


class RawInputError(Exception):
    """A whole raw input is unusable; the message names the file or pattern."""


@dataclass(frozen=True, slots=True)
class RawFile:
    path: str  # path in the upstream repo, e.g. data/train-00000-of-00027-....parquet
    local: Path
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "local": str(self.local), "size": self.size, "sha256": self.sha256}


@dataclass(slots=True)
class RawPartition:
    """The upstream files of one partition and where they came from."""

    repo_id: str
    revision: str
    mode: str  # "mirror" or "hub"
    patterns: list[str]
    files: list[RawFile] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo_id": self.repo_id,
            "revision": self.revision,
            "mode": self.mode,
            "patterns": self.patterns,
            "files": [f.to_dict() for f in self.files],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RawPartition:
        return cls(
            repo_id=d["repo_id"],
            revision=d["revision"],
            mode=d["mode"],
            patterns=list(d["patterns"]),
            files=[RawFile(f["path"], Path(f["local"]), f["size"], f["sha256"]) for f in d["files"]],
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
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
        }


def match_files(repo_root: Path, patterns: list[str]) -> list[tuple[str, Path]]:
    """Files under repo_root whose repo path matches any glob pattern, sorted by repo path."""
    found: dict[str, Path] = {}
    if repo_root.is_dir():
        for p in repo_root.rglob("*"):
            rel = p.relative_to(repo_root).as_posix()
            if rel.startswith(".cache/") or not p.is_file():
                continue
            if any(fnmatch.fnmatchcase(rel, pat) for pat in patterns):
                found[rel] = p
    return sorted(found.items())


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
    repo_id: str, revision: str, mode: str, patterns: list[str], files: list[tuple[str, Path]]
) -> RawPartition:
    if not files:
        raise RawInputError(f"no files matching {patterns} in {repo_id} ({mode})")
    return RawPartition(
        repo_id=repo_id,
        revision=revision,
        mode=mode,
        patterns=patterns,
        files=[RawFile(rel, p.resolve(), p.stat().st_size, sha256_file(p)) for rel, p in files],
    )


def from_mirror(mirror: Path, repo_id: str, patterns: list[str]) -> RawPartition:
    repo_root = mirror / repo_id
    if not repo_root.is_dir():
        raise RawInputError(f"mirror has no {repo_id}: {repo_root} does not exist")
    files = match_files(repo_root, patterns)
    return _manifest(repo_id, _mirror_revision(repo_root, files), "mirror", patterns, files)


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
                allow_patterns=patterns,
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
    return _manifest(repo_id, snapshot.name, "hub", patterns, files)
