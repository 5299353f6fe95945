"""The webarena declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.spec import SourceSpec
from gui_assets.sources.webarena import adapter, demo

SPEC = SourceSpec(
    name="webarena",
    title="WebArena",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="WebArena human demonstrations of the WebArena EVAL tasks: Playwright traces joined "
    "to config_files/test.raw.json. Training on a task_id and scoring it is training on the test set.",
    license="apache-2.0",
    platform="browser",
    scrolls=False,
    notes="`webarena_human/` demonstrates the WebArena evaluation tasks. Training on a task_id and "
    "then scoring that same task_id is training on the test set. Each episode carries `task_id` and "
    "`intent_template_id`, and `webarena_human/dataset_info.json` lists them under `heldout_ids` so "
    "an evaluation can hold them out, or their whole templates.",
    not_on_hub="the human traces are published as <task_id>.zip files outside the hub (see the WebArena "
    "repository's resources/README.md); mirror them as <mirror>/webarena/human_trajectories/",
    heldout_attrs=("task_id", "intent_template_id"),
    split_role="evaluation",
    demo=demo.write_mirror,
)
