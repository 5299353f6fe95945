"""The raw stage: a partition's upstream files, described in _work/<dir>/raw_manifest.json.

In hub mode, a source that declares `remote_files` has the files its records reference fetched
here too (URLs into the remote cache beside the hub cache, repo paths from the hub), so the
adapter stage reads only local, recorded files.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from gui_assets.core.atomic import sweep_temps
from gui_assets.core.layout import OutLayout
from gui_assets.pipeline.common import count
from gui_assets.sources import mirror
from gui_assets.sources.mirror import RawFile, RawInputError, RawPartition
from gui_assets.sources.remote import Fetched, Fetcher, RemoteSettings
from gui_assets.sources.spec import SourceSpec

REMOTE_CACHE = "gui_assets_remote"  # beside the hub cache's repo folders
MAX_REFERENCE_ROUNDS = 6  # rows -> documents -> screenshots takes three

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RawSettings:
    """How raw files are obtained (GUI_ASSETS_SOURCE, GUI_ASSETS_MIRROR, HF_TOKEN)."""

    mode: str  # "mirror" | "hub"
    mirror: Path
    token: str | None = None
    endpoint: str | None = None
    cache_dir: Path | None = None
    revision: str | None = None
    remote: RemoteSettings = field(default_factory=RemoteSettings)  # files named by URL (hub mode)


def fetch_raw(spec: SourceSpec, key: str, layout: OutLayout, raw: RawSettings) -> RawPartition:
    """The partition's upstream files, described; an index file first where the source has one,
    and in hub mode what the records reference (`SourceSpec.remote_files`) after them."""
    if raw.mode not in ("mirror", "hub"):
        raise ValueError(f"GUI_ASSETS_SOURCE must be 'mirror' or 'hub', not {raw.mode!r}")
    if raw.mode == "hub" and spec.not_on_hub:
        raise mirror.RawInputError(
            f"{spec.name} cannot be fetched with GUI_ASSETS_SOURCE=hub: {spec.not_on_hub}"
        )

    def fetch(patterns: list[str]) -> RawPartition:
        if raw.mode == "hub":
            return mirror.from_hub(
                spec.repo_id,
                patterns,
                revision=raw.revision,
                token=raw.token,
                cache_dir=raw.cache_dir,
                endpoint=raw.endpoint,
            )
        # A file the upstream observation or an earlier build already hashed is not read again.
        return mirror.from_mirror(raw.mirror, spec.repo_id, patterns, mirror.HashCache(layout.hash_cache))

    directory = spec.directory(key)
    started = time.perf_counter()
    where = raw.mirror if raw.mode == "mirror" else f"the hub ({spec.repo_id})"
    log.info(f"{directory}: finding the upstream files in {where}")
    work = layout.raw_manifest(directory).parent
    sweep_temps(work, only_dead_writers=True)  # files and IR folders a killed build left
    patterns = spec.file_patterns(key)
    part = fetch(patterns)
    if raw.mode == "hub" and raw.revision is None:
        raw = dataclasses.replace(raw, revision=part.revision)  # every later fetch: the same commit
    if spec.resolve_patterns is not None:
        patterns = patterns + spec.resolve_patterns(part.root, key)
        part = fetch(patterns)
    if raw.mode == "hub" and spec.remote_files is not None:
        part = _follow_references(spec, part, raw, patterns, fetch)
    size_mb = sum(f.size for f in [*part.files, *part.remote]) / 1e6
    log.info(
        f"{directory}: {count(part.file_count, 'upstream file')}, {size_mb:.1f} MB, revision "
        f"{part.revision} ({time.perf_counter() - started:.1f} s)"
    )
    part.partition = key
    part.write(layout.raw_manifest(spec.directory(key)))
    return part


def _remote_cache(raw: RawSettings) -> Path:
    if raw.cache_dir is not None:
        return raw.cache_dir / REMOTE_CACHE
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / REMOTE_CACHE


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc or url[:80]
    except ValueError:
        return url[:80]


def _literal(path: str) -> str:
    """A repo path as a glob matching only itself."""
    return re.sub(r"([\[\]*?])", r"[\1]", path)


def _follow_references(
    spec: SourceSpec,
    part: RawPartition,
    raw: RawSettings,
    patterns: list[str],
    fetch: Callable[[list[str]], RawPartition],
) -> RawPartition:
    """Fetch what the records reference outside their own files until nothing new is named:
    URLs into the remote cache (manifest `remote` and `refused`), repo paths from the hub."""
    assert spec.remote_files is not None
    fetcher = Fetcher(_remote_cache(raw), spec.remote_hosts, raw.remote)
    got: dict[str, Fetched] = {}
    paths: set[str] = set()
    for _ in range(MAX_REFERENCE_ROUNDS):
        refs = set(spec.remote_files(part, {u: f.local for u, f in got.items() if f.local is not None}))
        urls = {r for r in refs if "://" in r} - got.keys()
        more = {r for r in refs if "://" not in r} - paths
        if not urls and not more:
            break
        if urls and not spec.remote_hosts:
            hosts = ", ".join(sorted({_host(u) for u in urls})[:5])
            raise RawInputError(
                f"{spec.name}: the records name files on {hosts}, and the declaration allows no host "
                "to fetch them from (SourceSpec.remote_hosts)"
            )
        got.update(fetcher.fetch_all(urls))
        if more:
            paths |= more
            part = fetch(patterns + [_literal(p) for p in sorted(paths)])
    else:
        raise RawInputError(f"{spec.name}: references still new after {MAX_REFERENCE_ROUNDS} rounds")
    part.remote = [RawFile(u, f.local, f.size, f.sha256) for u, f in sorted(got.items()) if f.local]
    part.refused = {u: str(f.refused) for u, f in sorted(got.items()) if f.refused is not None}
    return part
