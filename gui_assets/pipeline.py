"""The stages of one partition, as plain functions over paths (no Dagster).

    fetch_raw        upstream files -> _work/<dir>/raw_manifest.json (sizes, sha256, revision)
    build_episodes   raw files -> GuiEpisode IR (_work/<dir>/episodes/, _work/images/)
    assign_splits    IR -> _work/<dir>/splits.parquet (main/val per episode, content hash)
    write_shards     IR + splits -> <out>/<dir>/<dir>_NNNN.hdf5 (+ _work/<dir>/shards.json)
    write_info       everything above -> <out>/<dir>/dataset_info.json

Each stage reads only what the previous one persisted, so a Dagster asset runs exactly one
stage and `build_directory` chains them in process for tests and debugging.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets import mirror, sharding
from gui_assets.atomic import atomic_path, sweep_temps
from gui_assets.config import BuildConfig
from gui_assets.episode_store import EpisodeWriter, ImageStore, read_episode_table, read_stats
from gui_assets.errors import DiskFullError, EmptyPartitionError
from gui_assets.layout import DatasetInfo, OutLayout, ShardEntry
from gui_assets.mirror import RawPartition
from gui_assets.sources import SourceSpec
from gui_assets.splits import MAIN, VAL
from gui_assets.stats import BuildStats
from gui_assets.version import GUI_ASSETS_VERSION


def _disk_full(e: BaseException) -> bool:
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left on device" in str(e)


@contextlib.contextmanager
def _disk_full_named(stage: str, where: Path) -> Iterator[None]:
    """Turn ENOSPC (from Python, h5py or pyarrow, which word it differently) into one message."""
    try:
        yield
    except Exception as e:
        if not _disk_full(e):
            raise
        free = shutil.disk_usage(where if where.exists() else where.parent).free
        raise DiskFullError(
            f"{stage}: the disk holding {where} is full ({free} bytes free); nothing partial was kept, "
            f"free space and rerun ({type(e).__name__}: {e})"
        ) from None


@dataclass(frozen=True, slots=True)
class RawSettings:
    """How raw files are obtained (GUI_ASSETS_SOURCE, GUI_ASSETS_MIRROR, HF_TOKEN)."""

    mode: str  # "mirror" | "hub"
    mirror: Path
    token: str | None = None
    endpoint: str | None = None
    cache_dir: Path | None = None
    revision: str | None = None


def fetch_raw(spec: SourceSpec, key: str, layout: OutLayout, raw: RawSettings) -> RawPartition:
    """The partition's upstream files, described; an index file first where the source has one."""
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
        return mirror.from_mirror(raw.mirror, spec.repo_id, patterns)

    work = layout.raw_manifest(spec.directory(key)).parent
    sweep_temps(work, only_dead_writers=True)  # files and IR folders a killed build left
    patterns = spec.file_patterns(key)
    part = fetch(patterns)
    if spec.resolve_patterns is not None:
        more = spec.resolve_patterns(part.root, key)
        if raw.mode == "hub" and raw.revision is None:
            raw = dataclasses.replace(raw, revision=part.revision)  # the same commit both times
        part = fetch(patterns + more)
    part.partition = key
    part.write(layout.raw_manifest(spec.directory(key)))
    return part


def build_episodes(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> BuildStats:
    directory = spec.directory(key)
    raw = RawPartition.read(layout.raw_manifest(directory))
    store = ImageStore(layout.image_store, writers=2)  # file writes overlap the parsing
    store.sweep()  # temp files of killed builds (not of builds still running)
    stats = BuildStats()
    writer = EpisodeWriter(layout.episodes(directory))
    try:
        with _disk_full_named(f"{directory}: writing the IR", layout.episodes(directory)):
            for episode in spec.adapter(raw, store, stats, config):
                stats.count_episode(episode)
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
    return stats


_SPLIT_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("part", pa.string()),
        ("content_hash", pa.string()),
        ("group", pa.string()),
    ]
)


def assign_splits(spec: SourceSpec, key: str, layout: OutLayout) -> dict[str, Any]:
    directory = spec.directory(key)
    table = read_episode_table(layout.episodes(directory))
    rows = []
    rule = spec.split_rule
    for r in table.select(["episode_id", "attrs", "content_hash"]).to_pylist():
        attrs = json.loads(r["attrs"])
        part = rule.assign(r["episode_id"], attrs)
        group = str(attrs.get(rule.group_key, "")) if rule.group_key else ""
        rows.append(
            {"episode_id": r["episode_id"], "part": part, "content_hash": r["content_hash"], "group": group}
        )
    path = layout.splits(directory)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=_SPLIT_SCHEMA), tmp)
    return {
        "rule": spec.split_rule.record(),
        "episodes": len(rows),
        MAIN: sum(r["part"] == MAIN for r in rows),
        VAL: sum(r["part"] == VAL for r in rows),
    }


def read_split_rows(layout: OutLayout, directory: str) -> list[dict[str, str]]:
    return pq.read_table(layout.splits(directory)).to_pylist()


def read_splits(layout: OutLayout, directory: str) -> dict[str, str]:
    table = pq.read_table(layout.splits(directory), columns=["episode_id", "part"])
    return dict(zip(table["episode_id"].to_pylist(), table["part"].to_pylist(), strict=True))


def write_shards(
    spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig, threads: int | None = None
) -> dict[str, Any]:
    """Write the main (and, where the split rule makes one, val) shard series, unit by unit.

    The Dagster asset runs the same three calls as separate steps (one per unit in between).
    """
    plan = plan_shard_units(spec, key, layout, config)
    for unit in plan["units"]:
        write_shard_unit(spec, key, layout, config, unit["name"], threads)
    return publish_shards(spec, key, layout)


def plan_shard_units(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> dict[str, Any]:
    directory = spec.directory(key)
    sharding.prepare(layout, directory)
    return sharding.plan_shards(layout, directory, config, read_splits(layout, directory))


def write_shard_unit(
    spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig, unit: str, threads: int | None = None
) -> dict[str, Any]:
    directory = spec.directory(key)
    with _disk_full_named(f"{directory}: writing shards ({unit})", layout.directory(directory)):
        return sharding.write_unit(layout, directory, spec.name, config, unit, threads)


def publish_shards(spec: SourceSpec, key: str, layout: OutLayout) -> dict[str, Any]:
    directory = spec.directory(key)
    with _disk_full_named(f"{directory}: publishing shards", layout.directory(directory)):
        return sharding.publish_shards(layout, directory)


def write_info(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> DatasetInfo:
    directory = spec.directory(key)
    raw = RawPartition.read(layout.raw_manifest(directory))
    adapter_stats = read_stats(layout.episodes(directory))
    manifest = json.loads(layout.shard_manifest(directory).read_text(encoding="utf-8"))
    written = BuildStats.from_dict(manifest["stats"])
    pointer, hits = manifest["eye"]["pointer_steps"], manifest["eye"]["target_inside_eye"]
    stats = written.to_dict()
    stats.update(
        files_in=adapter_stats.files_in,
        episodes_in=adapter_stats.episodes_in,
        drops=dict(sorted((adapter_stats.drops + written.drops).items())),
        target_inside_eye_in_hand_rate=round(hits / pointer, 6) if pointer else 0.0,
        target_inside_eye_in_hand={"numerator": hits, "denominator": pointer},
    )
    info = DatasetInfo(
        directory=directory,
        source=spec.name,
        split=key,
        build={
            "gui_assets_version": GUI_ASSETS_VERSION,
            "adapter": spec.adapter_name,
            "config": config.to_dict(),
            "upstream": raw.upstream_record(),
            "split_rule": spec.split_rule.record(),
            **_holdout_record(spec, layout, directory),
        },
        stats=stats,
        shards=[ShardEntry(**s) for s in manifest["shards"]],
        val_shards=[ShardEntry(**s) for s in manifest["val_shards"]],
        extra=_heldout_ids(spec, layout, directory),
    )
    info.write(layout.dataset_info(directory))
    return info


def _heldout_ids(spec: SourceSpec, layout: OutLayout, directory: str) -> dict[str, Any]:
    """dataset_info.json `heldout_ids`: the ids present, for an evaluation to hold them out."""
    if not spec.heldout_attrs:
        return {}
    table = read_episode_table(layout.episodes(directory))
    attrs = [json.loads(a) for a in table["attrs"].to_pylist()]

    def ordered(values: set[str]) -> list[Any]:
        if all(v.isdigit() for v in values):
            return sorted(int(v) for v in values)
        return sorted(values)

    return {"heldout_ids": {f"{k}s": ordered({a[k] for a in attrs if a.get(k)}) for k in spec.heldout_attrs}}


def _holdout_record(spec: SourceSpec, layout: OutLayout, directory: str) -> dict[str, Any]:
    """build.holdout_rule for a source without an official split: the rule and what it did."""
    rule = spec.split_rule
    if rule.fraction is None:
        return {}
    rows = read_split_rows(layout, directory)
    val = [r for r in rows if r["part"] == VAL]
    return {
        "holdout_rule": {
            **rule.record(),
            "episodes": len(rows),
            "val_episodes": len(val),
            "main_episodes": len(rows) - len(val),
            "groups": len({r["group"] for r in rows}),
            "val_groups": len({r["group"] for r in val}),
            "val_fraction": round(len(val) / len(rows), 6) if rows else 0.0,
        }
    }


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
