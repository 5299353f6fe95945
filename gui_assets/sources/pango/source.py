"""The pango declaration: what the registry, the asset factory and the docs read."""

from __future__ import annotations

from gui_assets.core.splits import shipped_split
from gui_assets.sources.pango import adapter, demo
from gui_assets.sources.spec import SourceOption, SourceSpec

SPEC = SourceSpec(
    name="pango",
    title="Pango",
    repo_id=adapter.REPO_ID,
    partition_keys=adapter.PARTITIONS,
    file_patterns=adapter.file_patterns,
    adapter=adapter.episodes,
    split_rule=shipped_split,
    description="Pango sample: real work sessions in Sheets, Slides, Figma and Canva recorded as raw "
    "browser events, aggregated into steps.",
    license="other",
    platform="browser",
    scrolls=False,
    # The rows name their events documents (and those their screenshots) by URL on the
    # collector's storage bucket; in hub mode the raw stage fetches them. The bucket's host is
    # not known from any public source yet, so no host is allowed: hub mode stops in the raw
    # stage with the hosts the rows name, to be checked and written here.
    remote_files=adapter.remote_files,
    remote_hosts=(),
    demo=demo.write_mirror,
    options=(
        SourceOption(
            "hover",
            bool,
            False,
            "keep mouseover_start/_end pairs as HOVER steps instead of dropping them as `mouseover`",
        ),
    ),
)
