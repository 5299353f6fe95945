"""SourceSpec: everything the pipeline, the writers and the Dagster factory need to know about a
source, declared once (the declarations themselves are in `gui_assets.sources`).

What a spec says about its source that readers of the output need (repo, licence, platform,
notes for the dataset card) is recorded in each directory's dataset_info.json by `record()`,
so the card, the preview and the cua-lite export read built files, never this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: a stage imports just what it runs (its code_version follows imports)
    from gui_assets.assembly import AdapterRun
    from gui_assets.ir import GuiEpisode
    from gui_assets.mirror import RawPartition
    from gui_assets.splits import SplitRule

Adapter = Callable[["AdapterRun"], Iterator["GuiEpisode"]]
PLATFORMS = ("browser", "desktop", "mobile")  # cua-lite's platform vocabulary
# What a partition's main shards are for: training data, a benchmark's validation or test split
# (kept apart from training by every export), or a benchmark's evaluation tasks themselves.
SPLIT_ROLES = ("train", "validation", "evaluation")


@dataclass(frozen=True, slots=True, eq=False)
class SourceSpec:
    name: str  # the root asset key, the asset group, the episodes' source and id prefix
    repo_id: str  # upstream repo, also the mirror path <mirror>/<owner>/<repo>
    partition_keys: tuple[str, ...]  # output directories are f"{name}_{key}"
    file_patterns: Callable[[str], list[str]]  # partition key -> globs of repo paths
    adapter: Adapter
    split_rule: SplitRule
    description: str
    license: str
    # The platform the demonstrations run on, one of PLATFORMS: one for the whole source or
    # one per partition key.
    platform: str | Mapping[str, str]
    scrolls: bool  # the source yields SCROLL steps; none at all is suspicious (scroll_histogram)
    # Markdown the dataset card shows under the source (warnings, holdout rules).
    notes: str = ""
    # For sources whose partition's files are named in an index file (WebLINX's splits.json):
    # (local repo root holding the file_patterns files, key) -> the rest of the patterns.
    resolve_patterns: Callable[[Path, str], list[str]] | None = None
    # Where the files come from when they are not on the hub (GUI_ASSETS_SOURCE=hub is refused).
    not_on_hub: str = ""
    # Episode attrs listed in dataset_info.json `heldout_ids`, so an evaluation can hold them out.
    heldout_attrs: tuple[str, ...] = ()
    # The largest screenshot (width, height) the source really produces; a bigger one is a
    # forged or broken header and is dropped (image_too_large) before anything decodes it.
    max_image: tuple[int, int] = (8192, 8192)
    # The role of each partition's main shards (SPLIT_ROLES), one for all or one per key; a
    # holdout (`_val_`) series is always validation.
    split_role: str | Mapping[str, str] = "train"
    # Hosts outside the hub the source's records name files on (https only), fetched in hub mode.
    remote_hosts: tuple[str, ...] = ()
    # For sources whose records name files outside their own files (Pango's events documents and
    # screenshots): (the partition fetched so far, {URL: local copy} fetched so far) -> every
    # reference the records make, an https URL or a repo path. The raw stage (hub mode) calls it
    # until it names nothing new: URLs are fetched from remote_hosts, repo paths from the hub.
    remote_files: Callable[[RawPartition, Mapping[str, Path]], list[str]] | None = None

    def __post_init__(self) -> None:
        platforms = self.platform.values() if isinstance(self.platform, Mapping) else [self.platform]
        if any(p not in PLATFORMS for p in platforms):
            raise ValueError(f"{self.name}: platform must be one of {PLATFORMS}, not {self.platform!r}")
        if isinstance(self.platform, Mapping) and set(self.platform) != set(self.partition_keys):
            raise ValueError(f"{self.name}: a platform per partition key needs every key")
        roles = self.split_role.values() if isinstance(self.split_role, Mapping) else [self.split_role]
        if any(r not in SPLIT_ROLES for r in roles):
            raise ValueError(f"{self.name}: split_role must be one of {SPLIT_ROLES}, not {self.split_role!r}")
        if isinstance(self.split_role, Mapping) and set(self.split_role) != set(self.partition_keys):
            raise ValueError(f"{self.name}: a split role per partition key needs every key")

    def directory(self, key: str) -> str:
        if key not in self.partition_keys:
            raise KeyError(f"{self.name} has no partition {key!r} (known: {', '.join(self.partition_keys)})")
        return f"{self.name}_{key}"

    def platform_of(self, key: str) -> str:
        return self.platform[key] if isinstance(self.platform, Mapping) else self.platform

    def split_role_of(self, key: str) -> str:
        return self.split_role[key] if isinstance(self.split_role, Mapping) else self.split_role

    @property
    def adapter_name(self) -> str:
        return self.adapter.__module__

    def record(self, key: str) -> dict[str, Any]:
        """The `build.source` block of a directory's dataset_info.json."""
        return {
            "name": self.name,
            "repo_id": self.repo_id,
            "license": self.license,
            "platform": self.platform_of(key),
            "split_role": self.split_role_of(key),
            "description": self.description,
            "notes": self.notes,
        }
