"""Observing a source's upstream without downloading its data: what each partition's files are
now, and the version the raw asset will record when it builds them.

Hub mode asks the hub API for the repository's current commit and its file tree (paths, sizes,
LFS sha256 or git blob ids); mirror mode lists the mirror's files with their sizes and sha256
(kept in a hash cache by size and mtime, so an unchanged file is read once). A partition's
version is `mirror.partition_version` over the same entries the raw stage records, so it
changes exactly when a file of that partition changes: a new commit touching other partitions
leaves it as it was.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_assets.pipeline.raw import RawSettings
from gui_assets.sources.mirror import FileId, HashCache, RawInputError, fold, match_files, partition_version
from gui_assets.sources.spec import SourceSpec


@dataclass(frozen=True, slots=True)
class PartitionObservation:
    partition: str
    revision: str  # the commit observed (hub), or the mirror partition's content (mirror_revision)
    version: str  # equal to the raw asset's data_version for the same files
    files: int
    bytes: int


def _hub_files(spec: SourceSpec, raw: RawSettings) -> tuple[str, list[FileId], Any]:
    """The repository's current commit and every file in it, from the hub API (no download)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=raw.endpoint, token=raw.token)
    try:
        info = api.dataset_info(spec.repo_id, revision=raw.revision)
        tree = api.list_repo_tree(spec.repo_id, repo_type="dataset", revision=info.sha, recursive=True)
        files = []
        for entry in tree:
            if isinstance(entry, RepoFile):
                lfs = entry.lfs.sha256 if entry.lfs is not None else None
                oid = lfs or entry.blob_id
                files.append(FileId(entry.path, Path(entry.path), int(entry.size), lfs or "", oid))
    except Exception as e:  # any failure to reach or read the hub: the observation says so
        raise RawInputError(f"observing {spec.repo_id} on the hub failed: {type(e).__name__}: {e}") from None
    return str(info.sha), files, api


def _select(files: list[FileId], patterns: list[str]) -> list[FileId]:
    globs = [pat + "*" if pat.endswith("/") else pat for pat in patterns]
    return [f for f in files if any(fnmatch.fnmatchcase(f.path, g) for g in globs)]


def _index_root(spec: SourceSpec, key: str, raw: RawSettings, api: Any, commit: str) -> Path:
    """A local folder holding the partition's index files (WebLINX's splits.json): small files,
    fetched into the hub cache like any download."""
    from huggingface_hub import hf_hub_download

    paths = spec.file_patterns(key)
    local = None
    for path in paths:
        local = Path(
            hf_hub_download(
                spec.repo_id,
                path,
                repo_type="dataset",
                revision=commit,
                token=raw.token,
                cache_dir=str(raw.cache_dir) if raw.cache_dir else None,
                endpoint=raw.endpoint,
            )
        )
    assert local is not None
    return local.parents[len(Path(paths[-1]).parts) - 1]


def observe_hub(spec: SourceSpec, keys: list[str], raw: RawSettings) -> dict[str, PartitionObservation]:
    commit, files, api = _hub_files(spec, raw)
    out = {}
    for key in keys:
        patterns = spec.file_patterns(key)
        if spec.resolve_patterns is not None:
            patterns = patterns + spec.resolve_patterns(_index_root(spec, key, raw, api, commit), key)
        out[key] = _observation(key, commit, fold(patterns, _select(files, patterns), Path()))
    return out


def observe_mirror(
    spec: SourceSpec, keys: list[str], raw: RawSettings, cache: HashCache
) -> dict[str, PartitionObservation]:
    from gui_assets.sources.mirror import describe, mirror_revision

    repo_root = raw.mirror / spec.repo_id
    if not repo_root.is_dir():
        raise RawInputError(f"mirror has no {spec.repo_id}: {repo_root} does not exist")
    out = {}
    for key in keys:
        patterns = spec.file_patterns(key)
        if spec.resolve_patterns is not None:
            patterns = patterns + spec.resolve_patterns(repo_root, key)
        matched = match_files(repo_root, patterns)
        described = [describe(rel, p, repo_root, False, cache) for rel, p in matched]
        entries = fold(patterns, described, repo_root)
        out[key] = _observation(key, mirror_revision(entries), entries)
    cache.save()
    return out


def _observation(key: str, revision: str, entries: list[Any]) -> PartitionObservation:
    version = partition_version((f.path, f.size, f.content_id) for f in entries)
    return PartitionObservation(
        key, revision, version, sum(f.files for f in entries), sum(f.size for f in entries)
    )


def observe(
    spec: SourceSpec, keys: list[str], raw: RawSettings, cache: HashCache
) -> dict[str, PartitionObservation]:
    """Each partition's observation; a source not on the hub is observed only in a mirror."""
    if raw.mode == "hub":
        if spec.not_on_hub:
            return {}
        return observe_hub(spec, keys, raw)
    return observe_mirror(spec, keys, raw, cache)
