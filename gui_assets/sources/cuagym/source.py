"""The cuagym declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_validation
from gui_assets.sources.cuagym import adapter, demo
from gui_assets.sources.spec import SourceSpec

SPEC = SourceSpec(
    name="cuagym",
    title="Lite.CUAGym",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_validation,
    description="Lite.CUAGym: agent rollouts on browser and desktop tasks as chat messages with batched "
    "computer tool calls; batched actions after the first are flagged obs_stale.",
    license="apache-2.0",
    platform={"browser_use": "browser", "desktop_use": "desktop"},
    scrolls=False,
    notes="Upstream `validation` rows and `eval` rows (a benchmark evaluation split some cua-lite "
    "datasets ship) are written as `<directory>_val_NNNN.hdf5` beside the main shards, never as "
    "training data; each episode's `upstream_split` attr says which. A row is never kept twice: a "
    "train or validation row identical to an eval row is dropped (`benchmark_overlap`), a validation "
    "row identical to a train row likewise (`duplicate_across_splits`).",
    demo=demo.write_mirror,
)
