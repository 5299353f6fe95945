"""The info stage: everything a build recorded -> <out>/<dir>/dataset_info.json."""

from __future__ import annotations

import json
import logging
from typing import Any

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import read_episode_table, read_stats
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.core.shard_reader import demos as shard_demos
from gui_assets.core.shard_reader import text
from gui_assets.core.splits import VAL
from gui_assets.core.version import GUI_ASSETS_VERSION
from gui_assets.pipeline.changes import record_build
from gui_assets.pipeline.common import count
from gui_assets.pipeline.shard_records import ShardManifest
from gui_assets.pipeline.split import read_split_rows
from gui_assets.sources.mirror import RawPartition
from gui_assets.sources.spec import SourceSpec

log = logging.getLogger(__name__)


def write_info(spec: SourceSpec, key: str, layout: OutLayout, config: BuildConfig) -> DatasetInfo:
    directory = spec.directory(key)
    raw = RawPartition.read(layout.raw_manifest(directory))
    adapter_stats = read_stats(layout.episodes(directory))
    manifest = ShardManifest.read(layout, directory)
    written = manifest.stats
    written.files_in = adapter_stats.files_in
    written.episodes_in = adapter_stats.episodes_in
    written.drops = adapter_stats.drops + written.drops
    written.ignored_calls = adapter_stats.ignored_calls  # counted where calls are read
    info = DatasetInfo(
        directory=directory,
        source=spec.name,
        split=key,
        build={
            "gui_assets_version": GUI_ASSETS_VERSION,
            "adapter": spec.adapter_name,
            "config": spec.resolve_config(config).to_dict(),  # this source's options only
            "upstream": raw.upstream_record(),
            "demo_mirror": raw.demo_mirror,
            "source": spec.record(key),
            "split_rule": spec.split_rule.record(),
            **_holdout_record(spec, layout, directory),
        },
        stats=written.to_dict(),
        shards=manifest.shards,
        val_shards=manifest.val_shards,
        extra={**_heldout_ids(spec, layout, directory), **_subsplits(spec, layout, manifest, directory)},
    )
    record_build(layout, directory, info, lambda: info.write(layout.dataset_info(directory)))
    log.info(
        f"{directory}: dataset_info.json written: {count(written.episodes_out, 'episode')}, "
        f"{count(written.steps, 'step')} in {count(len(manifest.shards), 'shard')} "
        f"(+{len(manifest.val_shards)} val)"
    )
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


def _subsplits(
    spec: SourceSpec, layout: OutLayout, manifest: ShardManifest, directory: str
) -> dict[str, Any]:
    """dataset_info.json `subsplits`: {name: {episodes, steps}} of the named evaluation subsets the
    published demos belong to (their `spec.subsplit_attr`, a JSON list of names), counted in the
    shards themselves so they agree with what a reader finds there. A demo whose attr is not a
    JSON list of names belongs to none (the adapter is meant to write only lists)."""
    if not spec.subsplit_attr:
        return {}
    counts: dict[str, dict[str, int]] = {}
    folder = layout.directory(directory)
    for _, demo in shard_demos([folder / e.file for e in manifest.all_shards]):
        try:
            names = json.loads(text(demo.attrs.get(spec.subsplit_attr, "[]")))
        except ValueError:
            continue
        if not isinstance(names, list):
            continue
        for name in sorted({n for n in names if isinstance(n, str) and n}):
            entry = counts.setdefault(name, {"episodes": 0, "steps": 0})
            entry["episodes"] += 1
            entry["steps"] += int(demo.attrs["num_samples"])
    return {"subsplits": dict(sorted(counts.items()))}


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
