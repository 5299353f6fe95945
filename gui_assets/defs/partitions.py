"""One StaticPartitionsDefinition per source, shared by its whole chain (the CLI needs that)."""

from __future__ import annotations

import functools

import dagster as dg

from gui_assets.sources.spec import SourceSpec


@functools.cache
def source_partitions(spec: SourceSpec) -> dg.StaticPartitionsDefinition:
    return dg.StaticPartitionsDefinition(list(spec.partition_keys))
