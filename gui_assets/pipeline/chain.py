"""Every stage of one partition chained in process (no Dagster): what each asset runs, in order,
for tests, debugging and the benchmark. The stages themselves are `gui_assets.pipeline.*`."""

from __future__ import annotations

from pathlib import Path

from gui_assets.core.config import BuildConfig
from gui_assets.core.errors import DiskFullError, EmptyPartitionError
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.pipeline.episodes import build_episodes
from gui_assets.pipeline.info import write_info
from gui_assets.pipeline.raw import RawSettings, fetch_raw
from gui_assets.pipeline.shards import publish_shards, write_shard_unit, write_shards
from gui_assets.pipeline.split import assign_splits, read_split_rows, read_splits
from gui_assets.sources.spec import SourceSpec

__all__ = [
    "DiskFullError",
    "EmptyPartitionError",
    "RawSettings",
    "assign_splits",
    "build_directory",
    "build_episodes",
    "fetch_raw",
    "publish_shards",
    "read_split_rows",
    "read_splits",
    "write_info",
    "write_shard_unit",
    "write_shards",
]


def build_directory(
    spec: SourceSpec, key: str, out: Path, raw: RawSettings, config: BuildConfig | None = None
) -> DatasetInfo:
    """Every stage of one partition in process: the same functions the assets call."""
    config = config or BuildConfig()
    layout = OutLayout(out)
    fetch_raw(spec, key, layout, raw)
    build_episodes(spec, key, layout, config)
    assign_splits(spec, key, layout)
    write_shards(spec, key, layout, config)
    return write_info(spec, key, layout, config)
