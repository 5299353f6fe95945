"""The shard stage: IR + splits -> the directory's HDF5 shards, as plan -> units -> publish."""

from __future__ import annotations

from gui_assets.core.config import BuildConfig
from gui_assets.core.layout import OutLayout
from gui_assets.pipeline import sharding
from gui_assets.pipeline.common import disk_full_named
from gui_assets.pipeline.sharding import ShardManifest, ShardPlan, UnitResult
from gui_assets.pipeline.split import read_splits
from gui_assets.sources.spec import SourceSpec


def write_shards(
    spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig, threads: int | None = None
) -> ShardManifest:
    """Write the main (and, where the split rule makes one, val) shard series, unit by unit.

    The Dagster asset runs the same three calls as separate steps (one per unit in between).
    """
    plan = plan_shard_units(spec, key, layout, config)
    for unit in plan.units:
        write_shard_unit(spec, key, layout, config, unit.name, threads)
    return publish_shards(spec, key, layout)


def plan_shard_units(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> ShardPlan:
    directory = spec.directory(key)
    sharding.prepare(layout, directory)
    return sharding.plan_shards(layout, directory, config, read_splits(layout, directory))


def write_shard_unit(
    spec: SourceSpec,
    key: str,
    layout: OutLayout,
    config: BuildConfig,
    unit: str,
    threads: int | None = None,
    hash_pieces: bool = False,
) -> UnitResult:
    """One unit's pieces; `hash_pieces` where the unit runs apart from the others (sharding)."""
    directory = spec.directory(key)

    def needed() -> int:
        return sharding.bytes_to_finish(layout, directory)

    with disk_full_named(f"{directory}: writing shards ({unit})", layout.directory(directory), needed):
        return sharding.write_unit(
            layout, directory, spec.name, config, unit, threads, hash_pieces, platform=spec.platform_of(key)
        )


def publish_shards(spec: SourceSpec, key: str, layout: OutLayout) -> ShardManifest:
    directory = spec.directory(key)
    with disk_full_named(f"{directory}: publishing shards", layout.directory(directory)):
        return sharding.publish_shards(layout, directory)
