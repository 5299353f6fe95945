"""The adapter stage: raw files -> the GuiEpisode IR of one partition."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import EpisodeWriter, ImageStore
from gui_assets.core.errors import EmptyPartitionError
from gui_assets.core.ir import GuiEpisode
from gui_assets.core.layout import OutLayout
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline.common import count, disk_full_named
from gui_assets.sources.assembly import AdapterRun
from gui_assets.sources.mirror import RawPartition
from gui_assets.sources.spec import SourceSpec

log = logging.getLogger(__name__)


def adapt(
    spec: SourceSpec, raw: RawPartition, store: ImageStore, config: BuildConfig, stats: BuildStats
) -> Iterator[GuiEpisode]:
    """The source's adapter over one raw partition; every episode is counted as it leaves."""
    stats.files_in = raw.file_count
    for episode in spec.adapter(AdapterRun(spec.name, raw, store, stats, config, spec.max_image)):
        stats.count_episode(episode)
        yield episode


def raw_bytes(raw: RawPartition) -> int:
    return sum(f.size for f in raw.files)


def build_episodes(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> BuildStats:
    directory = spec.directory(key)
    started = time.perf_counter()
    raw = RawPartition.read(layout.raw_manifest(directory))
    log.info(f"{directory}: reading {count(raw.file_count, 'upstream file')} with the {spec.name} adapter")
    store = ImageStore(layout.image_store, writers=2)  # file writes overlap the parsing
    store.sweep()  # temp files of killed builds (not of builds still running)
    stats = BuildStats()
    writer = EpisodeWriter(layout.episodes(directory))
    try:
        # At most the partition's upstream bytes: the screenshots are copied out of them.
        with disk_full_named(
            f"{directory}: writing the IR", layout.episodes(directory), lambda: raw_bytes(raw)
        ):
            for episode in adapt(spec, raw, store, config, stats):
                writer.add(episode)
            store.close()  # every image is on disk before the IR that names them is published
    except BaseException:
        writer.abort()
        store.close_quietly()
        raise
    if stats.episodes_out == 0:
        writer.abort()
        raise EmptyPartitionError(
            f"{directory}: no episode survived the {spec.name} adapter "
            f"({stats.files_in} files, {stats.episodes_in} episodes in, drops {dict(stats.drops)})"
        )
    writer.close(stats)
    drops = f"; drops: {_by_reason(stats.drops)}" if stats.drops else ""
    log.info(
        f"{directory}: {count(stats.episodes_out, 'episode')} ({count(stats.steps, 'step')}) of "
        f"{stats.episodes_in} upstream{drops} ({time.perf_counter() - started:.1f} s)"
    )
    return stats


def _by_reason(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))
