"""The androidcontrol declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.androidcontrol import adapter, demo
from gui_assets.sources.spec import SourceSpec

SPEC = SourceSpec(
    name="androidcontrol",
    title="AndroidControl",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="AndroidControl: human demonstrations on Android phones and tablets (GZIP TFRecord "
    "episodes, read without TensorFlow), each with its goal and per-step instructions; splits as "
    "splits.json ships them, the test sub-splits recorded on each test demo.",
    license="apache-2.0",
    platform="mobile",
    scrolls=True,
    scroll_gestures=False,  # a scroll records the view's direction only
    subsplit_attr=adapter.SUBSPLITS_ATTR,
    notes="Scrolls record only the direction the view moved: SCROLL steps carry it in `action_desc` "
    "with an all-zero mask. Each step's low-level instruction is the demo attr `step_instructions` "
    "(a JSON list, one per step). `androidcontrol_test` demos carry `test_subsplits`, the sub-splits "
    "(IDD, app_unseen, task_unseen, category_unseen) that hold them.",
    not_on_hub="AndroidControl is released in the Google Cloud Storage bucket gs://gresearch/android_control "
    "(the GZIP TFRecord files android_control-NNNNN-of-00020, splits.json and test_subsplits.json); "
    "mirror them as <mirror>/google-research/android_control/",
    # Phones (1080x2400 for most screens) and tablets in either orientation.
    max_image=(4096, 4096),
    # The benchmark's validation and test splits are never training data.
    split_role={"train": "train", "validation": "validation", "test": "validation"},
    demo=demo.write_mirror,
)
