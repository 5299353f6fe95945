"""build_source_defs(spec): a source's asset chain and its checks, from its declaration alone.

    S_upstream  ->  S  ->  S_episodes  ->  S_splits  ->  S_shards  ->  S_dataset_info  ->  S_upload

`S_upstream` is observed, not built (defs/upstream_assets.py); the raw asset `S` records the same
version for the same files, so an upstream change marks exactly the partitions it touched stale.

All in group `spec.name`, all on the source's one partitions definition. Each asset has its own
small builder (source_assets.py, shard_graph.py); checks are built in checks.py.
"""

from __future__ import annotations

import warnings
from typing import Any

import dagster as dg

from gui_assets.defs.checks import build_source_checks
from gui_assets.defs.metadata import OWNERS
from gui_assets.defs.partitions import source_partitions
from gui_assets.defs.shard_graph import shards_asset
from gui_assets.defs.source_assets import (
    dataset_info_asset,
    episodes_asset,
    raw_asset,
    splits_asset,
    upload_asset,
)
from gui_assets.defs.upstream_assets import upstream_asset
from gui_assets.sources.spec import SourceSpec


def build_source_defs(spec: SourceSpec) -> dg.Definitions:
    partitions = source_partitions(spec)
    common: dict[str, Any] = {"group_name": spec.name, "partitions_def": partitions, "owners": OWNERS}
    assets = [
        builder(spec, common)
        for builder in (
            raw_asset,
            episodes_asset,
            splits_asset,
            shards_asset,
            dataset_info_asset,
            upload_asset,
        )
    ]
    with warnings.catch_warnings():
        # Observable source assets and DataVersionsByPartition are beta in 1.13: one warning each per load.
        warnings.simplefilter("ignore", dg.BetaWarning)
        upstream = upstream_asset(spec)
    return dg.Definitions(assets=[upstream, *assets], asset_checks=build_source_checks(spec))
