"""The agentnet declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import hash_holdout
from gui_assets.sources.agentnet import adapter, demo
from gui_assets.sources.spec import SourceSpec

SPEC = SourceSpec(
    name="agentnet",
    title="AgentNet",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=hash_holdout(adapter.HOLDOUT_SALT, "task_id", adapter.HOLDOUT_FRACTION),
    description="AgentNet (OpenCUA): human desktop demonstrations on Windows, macOS and Ubuntu as "
    "PyAutoGUI code, parsed with ast; a 2% task_id hash holdout written as _val_ shards.",
    license="cc-by-4.0",
    platform="desktop",
    scrolls=True,
    notes="AgentNet ships no split: a deterministic 2% holdout by task_id hash is written as "
    "`<directory>_val_NNNN.hdf5` beside the main shards (the rule and its counts are "
    "`build.holdout_rule` in the directory's dataset_info.json); repeats of a task_id share a side.",
    demo=demo.write_mirror,
)
