"""The raw stage: a partition's upstream files, described in _work/<dir>/raw_manifest.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from gui_assets import mirror
from gui_assets.atomic import sweep_temps
from gui_assets.layout import OutLayout
from gui_assets.mirror import RawPartition
from gui_assets.source_spec import SourceSpec


@dataclass(frozen=True, slots=True)
class RawSettings:
    """How raw files are obtained (GUI_ASSETS_SOURCE, GUI_ASSETS_MIRROR, HF_TOKEN)."""

    mode: str  # "mirror" | "hub"
    mirror: Path
    token: str | None = None
    endpoint: str | None = None
    cache_dir: Path | None = None
    revision: str | None = None


def fetch_raw(spec: SourceSpec, key: str, layout: OutLayout, raw: RawSettings) -> RawPartition:
    """The partition's upstream files, described; an index file first where the source has one."""
    if raw.mode not in ("mirror", "hub"):
        raise ValueError(f"GUI_ASSETS_SOURCE must be 'mirror' or 'hub', not {raw.mode!r}")
    if raw.mode == "hub" and spec.not_on_hub:
        raise mirror.RawInputError(
            f"{spec.name} cannot be fetched with GUI_ASSETS_SOURCE=hub: {spec.not_on_hub}"
        )

    def fetch(patterns: list[str]) -> RawPartition:
        if raw.mode == "hub":
            return mirror.from_hub(
                spec.repo_id,
                patterns,
                revision=raw.revision,
                token=raw.token,
                cache_dir=raw.cache_dir,
                endpoint=raw.endpoint,
            )
        return mirror.from_mirror(raw.mirror, spec.repo_id, patterns)

    work = layout.raw_manifest(spec.directory(key)).parent
    sweep_temps(work, only_dead_writers=True)  # files and IR folders a killed build left
    patterns = spec.file_patterns(key)
    part = fetch(patterns)
    if spec.resolve_patterns is not None:
        more = spec.resolve_patterns(part.root, key)
        if raw.mode == "hub" and raw.revision is None:
            raw = dataclasses.replace(raw, revision=part.revision)  # the same commit both times
        part = fetch(patterns + more)
    part.partition = key
    part.write(layout.raw_manifest(spec.directory(key)))
    return part
