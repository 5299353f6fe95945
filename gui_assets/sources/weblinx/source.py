"""The weblinx declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.spec import SourceSpec
from gui_assets.sources.weblinx import adapter, demo

SPEC = SourceSpec(
    name="weblinx",
    title="WebLINX",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="WebLINX: conversational web navigation demonstrations read from each demo's "
    "replay.json, splits taken from the dataset's own splits.json.",
    license="cc-by-nc-sa-4.0",
    platform="browser",
    scrolls=True,
    resolve_patterns=adapter.resolve_patterns,
    split_role={"train": "train", "valid": "validation"},
    demo=demo.write_mirror,
)
