"""One declaration per source: what the factory needs to build its asset chain and checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gui_assets.adapters import agentnet, cuagym, mind2web, pango, webarena, weblinx
from gui_assets.config import BuildConfig
from gui_assets.episode_store import ImageStore
from gui_assets.ir import GuiEpisode
from gui_assets.mirror import RawPartition
from gui_assets.splits import SplitRule, hash_holdout, shipped_split, shipped_validation
from gui_assets.stats import BuildStats

Adapter = Callable[[RawPartition, ImageStore, BuildStats, BuildConfig], Iterator[GuiEpisode]]


@dataclass(frozen=True, slots=True)
class SourceSpec:
    name: str  # the root asset key and the asset group
    repo_id: str  # upstream repo, also the mirror path <mirror>/<owner>/<repo>
    partition_keys: tuple[str, ...]  # output directories are f"{name}_{key}"
    file_patterns: Callable[[str], list[str]]  # partition key -> globs of repo paths
    adapter: Adapter
    split_rule: SplitRule
    description: str
    license: str
    platform: str
    scrolls: bool  # the source yields SCROLL steps; none at all is suspicious (scroll_histogram)
    # For sources whose partition's files are named in an index file (WebLINX's splits.json):
    # (local repo root holding the file_patterns files, key) -> the rest of the patterns.
    resolve_patterns: Callable[[Path, str], list[str]] | None = None
    # Where the files come from when they are not on the hub (GUI_ASSETS_SOURCE=hub is refused).
    not_on_hub: str = ""
    # Episode attrs listed in dataset_info.json `heldout_ids`, so an evaluation can hold them out.
    heldout_attrs: tuple[str, ...] = ()

    def directory(self, key: str) -> str:
        if key not in self.partition_keys:
            raise KeyError(f"{self.name} has no partition {key!r} (known: {', '.join(self.partition_keys)})")
        return f"{self.name}_{key}"

    @property
    def adapter_name(self) -> str:
        return self.adapter.__module__


MIND2WEB = SourceSpec(
    name="mind2web",
    repo_id=mind2web.REPO_ID,
    partition_keys=mind2web.SPLITS,
    file_patterns=mind2web.file_patterns,
    adapter=mind2web.episodes,
    split_rule=shipped_split,
    description="Multimodal-Mind2Web: human web demonstrations, full-page screenshots sliced into "
    "1280x1080 viewports, with SCROLL steps to targets below the fold.",
    license="openrail",
    platform="web",
    scrolls=True,
)

AGENTNET = SourceSpec(
    name="agentnet",
    repo_id=agentnet.REPO_ID,
    partition_keys=agentnet.PARTITIONS,
    file_patterns=agentnet.file_patterns,
    adapter=agentnet.episodes,
    split_rule=hash_holdout(agentnet.HOLDOUT_SALT, "task_id", agentnet.HOLDOUT_FRACTION),
    description="AgentNet (OpenCUA): human desktop demonstrations on Windows, macOS and Ubuntu as "
    "PyAutoGUI code, parsed with ast; a 2% task_id hash holdout written as _val_ shards.",
    license="cc-by-4.0",
    platform="desktop",
    scrolls=True,
)

WEBLINX = SourceSpec(
    name="weblinx",
    repo_id=weblinx.REPO_ID,
    partition_keys=weblinx.PARTITIONS,
    file_patterns=weblinx.file_patterns,
    adapter=weblinx.episodes,
    split_rule=shipped_split,
    description="WebLINX: conversational web navigation demonstrations read from each demo's "
    "replay.json, splits taken from the dataset's own splits.json.",
    license="cc-by-nc-sa-4.0",
    platform="web",
    scrolls=True,
    resolve_patterns=weblinx.resolve_patterns,
)

WEBARENA = SourceSpec(
    name="webarena",
    repo_id=webarena.REPO_ID,
    partition_keys=webarena.PARTITIONS,
    file_patterns=webarena.file_patterns,
    adapter=webarena.episodes,
    split_rule=shipped_split,
    description="WebArena human demonstrations of the WebArena EVAL tasks: Playwright traces joined "
    "to config_files/test.raw.json. Training on a task_id and scoring it is training on the test set.",
    license="apache-2.0",
    platform="web (sandbox)",
    scrolls=False,
    not_on_hub="the human traces are published as <task_id>.zip files outside the hub (see the WebArena "
    "repository's resources/README.md); mirror them as <mirror>/webarena/human_trajectories/",
    heldout_attrs=("task_id", "intent_template_id"),
)

CUAGYM = SourceSpec(
    name="cuagym",
    repo_id=cuagym.REPO_ID,
    partition_keys=cuagym.PARTITIONS,
    file_patterns=cuagym.file_patterns,
    adapter=cuagym.episodes,
    split_rule=shipped_validation,
    description="Lite.CUAGym: agent rollouts on browser and desktop tasks as chat messages with batched "
    "computer tool calls; batched actions after the first are flagged obs_stale.",
    license="apache-2.0",
    platform="browser / desktop",
    scrolls=False,
)

PANGO = SourceSpec(
    name="pango",
    repo_id=pango.REPO_ID,
    partition_keys=pango.PARTITIONS,
    file_patterns=pango.file_patterns,
    adapter=pango.episodes,
    split_rule=shipped_split,
    description="Pango sample: real work sessions in Sheets, Slides, Figma and Canva recorded as raw "
    "browser events, aggregated into steps.",
    license="other",
    platform="web (productivity apps)",
    scrolls=False,
)

SOURCES: tuple[SourceSpec, ...] = (MIND2WEB, AGENTNET, WEBLINX, WEBARENA, PANGO, CUAGYM)
SOURCES_BY_NAME = {s.name: s for s in SOURCES}
