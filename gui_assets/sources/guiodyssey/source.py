"""The guiodyssey declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.guiodyssey import adapter, demo
from gui_assets.sources.spec import SourceOption, SourceSpec

OPTIONS = (
    SourceOption(
        "split_file",
        str,
        adapter.DEFAULT_SPLIT_FILE,
        "which of the release's split files (splits/<name>.json) defines train and test",
        f"one of {', '.join(adapter.SPLIT_FILES)}",
        lambda v, _: v in adapter.SPLIT_FILES,
    ),
)

SPEC = SourceSpec(
    name="guiodyssey",
    title="GUI-Odyssey",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="GUI-Odyssey: cross-app navigation on Android phones and tablets, screens at native "
    "resolution, taps, long presses, swipes as SCROLL gestures, system keys and typing.",
    license="cc-by-4.0",
    platform="mobile",
    scrolls=True,
    notes="Train and test are the two lists of one of the release's split files, chosen by the "
    "`split_file` option (default `random_split`; the others hold out unseen apps, devices or "
    "tasks) and recorded in `build.config.source_options`. The test partition is the benchmark's "
    "test split: never training data. An INCOMPLETE ending is a FAIL step with reward 0.",
    # Phones up to 1440x3120, tablets 2560x1600; either way round.
    max_image=(3200, 3200),
    split_role={"train": "train", "test": "validation"},
    demo=demo.write_mirror,
    options=OPTIONS,
)
