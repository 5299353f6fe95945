"""The mind2web declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.mind2web import adapter, demo
from gui_assets.sources.spec import SourceOption, SourceSpec

OPTIONS = (
    SourceOption(
        "viewport_width",
        int,
        1280,
        "width of the capture viewport (CSS px): the frame is this window of the full page",
        "a positive number of pixels",
        lambda v, _: v > 0,
    ),
    SourceOption(
        "viewport_height",
        int,
        1080,
        "height of the capture viewport (CSS px); targets below it are reached by SCROLL steps",
        "a positive number of pixels",
        lambda v, _: v > 0,
    ),
    SourceOption(
        "scroll_step_fraction",
        float,
        0.75,
        "share of the viewport height one wheel step moves the view",
        "in (0, 1]",
        lambda v, _: 0 < v <= 1,
    ),
    SourceOption(
        "scroll_bottom_margin",
        float,
        0.10,
        "a target closer than this share of the viewport to its bottom edge is scrolled past it",
        "in [0, 1 - scroll_step_fraction), so a step never carries the target past the top",
        lambda v, o: 0 <= v < 1 - o["scroll_step_fraction"] + 1e-9,
    ),
)

SPEC = SourceSpec(
    name="mind2web",
    title="Mind2Web",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.SPLITS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="Multimodal-Mind2Web: human web demonstrations, full-page screenshots sliced into "
    "1280x1080 viewports, with SCROLL steps to targets below the fold.",
    license="openrail",
    platform="browser",
    scrolls=True,
    # Full pages: 1280 px wide and more (up to about 11.8k in the viewer), up to about 85k tall.
    max_image=(12_000, 90_000),
    # The benchmark's test splits: never training data (cua-lite maps them to validation too).
    split_role={
        "train": "train",
        "test_task": "validation",
        "test_website": "validation",
        "test_domain": "validation",
    },
    demo=demo.write_mirror,
    options=OPTIONS,
)
