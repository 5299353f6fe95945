"""The code_version of every asset: what marks it stale when its code changes.

An asset runs one stage (`gui_assets.pipeline.*`) or one writer (`gui_assets.publish.*`), plus, for
a source's chain, the parts of its declaration that stage calls (the adapter, the file patterns,
the split rule). Its code_version is `version_of` (gui_assets.core.code_version) over those
modules and everything they import. The declaration's data a stage depends on (repo id and file
patterns for the raw stage, the split rule for the split stage, ...) is hashed with it. The unit
is the module: the raw stage, which calls an adapter's `file_patterns`, counts the adapter module
and its closure, so any edit of the adapter moves it as well as the episodes stage.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gui_assets.core.code_version import PACKAGE_DIR, version_of

if TYPE_CHECKING:
    from gui_assets.sources.spec import SourceSpec

# The module each asset's body runs. A source's chain adds its declaration's code below.
STAGE_MODULES: dict[str, tuple[str, ...]] = {
    "raw": ("gui_assets.pipeline.raw",),
    "episodes": ("gui_assets.pipeline.episodes",),
    "splits": ("gui_assets.pipeline.split",),
    "shards": ("gui_assets.pipeline.shards",),
    "dataset_info": ("gui_assets.pipeline.info",),
    "upload": ("gui_assets.publish.hub",),
    "preview": ("gui_assets.publish.preview",),
    "dataset_card": ("gui_assets.publish.card", "gui_assets.viewer.samples"),
    "hub_card": ("gui_assets.publish.hub",),
    "cua_lite_export": ("gui_assets.publish.cua_lite",),
    "lerobot_export": ("gui_assets.publish.lerobot_export",),
    "hub_lerobot": ("gui_assets.publish.hub", "gui_assets.publish.lerobot_export"),
    "screen_overlap": ("gui_assets.publish.screen_overlap",),
}


# Files other than modules whose bytes an asset's output is made of (the card's prose).
STAGE_FILES: dict[str, tuple[str, ...]] = {
    # the card's prose, and the viewer page its sample pages inline
    "dataset_card": (
        "publish/templates/dataset_card.md",
        "publish/templates/dataset_card_lerobot.md",
        "publish/templates/dataset_card_mobile.md",
        "viewer/static/index.html",
        "viewer/static/viewer.css",
        "viewer/static/viewer.js",
    )
}


def _spec_roots_and_data(stage: str, spec: SourceSpec) -> tuple[list[str], Any]:
    """What of a source's declaration a stage of its chain runs, and the data it reads from it."""
    if stage == "raw":
        # The modules of the functions the raw stage calls (an adapter's file_patterns), whole.
        fns = [f for f in (spec.file_patterns, spec.resolve_patterns) if f is not None]
        patterns = {k: spec.file_patterns(k) for k in spec.partition_keys}
        return sorted({f.__module__ for f in fns}), [spec.repo_id, spec.not_on_hub, patterns]
    if stage == "episodes":
        # The options' defaults are declared in the registry, which no stage imports.
        return [spec.adapter.__module__], [spec.name, spec.max_image, spec.resolve_options({})]
    if stage == "splits":
        return [spec.split_rule.assign.__module__], spec.split_rule.record()
    if stage == "shards":
        return [], [spec.name, {k: spec.platform_of(k) for k in spec.partition_keys}]
    if stage == "dataset_info":
        record = {k: spec.record(k) for k in spec.partition_keys}
        return [spec.split_rule.assign.__module__], [record, spec.split_rule.record(), spec.heldout_attrs]
    return [], None


def stage_version(stage: str, spec: SourceSpec | None = None, package_dir: Path = PACKAGE_DIR) -> str:
    """The code_version of a source's `stage` asset (or of a repo-level asset, spec None)."""
    roots = list(STAGE_MODULES[stage])
    data: Any = [
        hashlib.sha256((package_dir / f).read_bytes()).hexdigest() for f in STAGE_FILES.get(stage, ())
    ]
    if spec is not None:
        extra, spec_data = _spec_roots_and_data(stage, spec)
        roots += extra
        data.append(spec_data)
    return version_of(roots, data, package_dir)
