"""Where everything lives under GUI_ASSETS_OUT, and dataset_info.json as a typed object."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.core.atomic import atomic_write_text

DATASET_INFO = "dataset_info.json"
PREVIEW_DIR = "preview"  # the preview config: <out>/preview/*.parquet
# The generated demo mirror carries this file at its root: data from it is never published.
DEMO_STAMP = ".gui_assets_demo_version"
# Working state of the pipeline (IR, split tables, manifests); never uploaded.
WORK_DIR = "_work"
IMAGE_STORE = "images"


def shard_name(directory: str, index: int, val: bool = False) -> str:
    return f"{directory}_val_{index:04d}.hdf5" if val else f"{directory}_{index:04d}.hdf5"


def shard_pattern(directory: str, val: bool = False) -> re.Pattern[str]:
    mid = "_val_" if val else "_"
    return re.compile(re.escape(directory) + mid + r"(\d{4})\.hdf5$")


@dataclass(frozen=True, slots=True)
class OutLayout:
    """Paths of one build tree (GUI_ASSETS_OUT)."""

    root: Path

    def directory(self, directory: str) -> Path:
        return self.root / directory

    def dataset_info(self, directory: str) -> Path:
        return self.root / directory / DATASET_INFO

    def work(self, directory: str) -> Path:
        return self.root / WORK_DIR / directory

    @property
    def image_store(self) -> Path:
        return self.root / WORK_DIR / IMAGE_STORE

    def raw_manifest(self, directory: str) -> Path:
        return self.work(directory) / "raw_manifest.json"

    def episodes(self, directory: str) -> Path:
        return self.work(directory) / "episodes"

    def splits(self, directory: str) -> Path:
        return self.work(directory) / "splits.parquet"

    def shard_manifest(self, directory: str) -> Path:
        return self.work(directory) / "shards.json"

    def built_episodes(self, directory: str) -> Path:
        """The episodes (id, content hash) of the last dataset_info build: what the next one is
        compared with."""
        return self.work(directory) / "built_episodes.parquet"

    @property
    def hash_cache(self) -> Path:
        return self.root / WORK_DIR / "hash_cache.json"


def is_demo_mirror(repo_root: Path, repo_id: str) -> bool:
    """Is this repo folder (`<mirror>/<repo_id>`) inside the generated demo mirror?"""
    mirror = repo_root.parents[len(repo_id.split("/")) - 1]
    return (mirror / DEMO_STAMP).is_file()


@dataclass(slots=True)
class ShardEntry:
    file: str
    demos: int
    steps: int
    bytes: int
    sha256: str
    # [H, W] of every agentview frame in the shard (one size per shard: a shard batches)
    frame_hw: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "file": self.file,
            "demos": self.demos,
            "steps": self.steps,
            "bytes": self.bytes,
            "sha256": self.sha256,
        }
        if self.frame_hw is not None:
            d["frame_hw"] = list(self.frame_hw)
        return d


@dataclass(slots=True)
class DatasetInfo:
    """Mirrors dataset_info.json field for field; written only through to_dict()."""

    directory: str
    source: str
    split: str
    build: dict[str, Any]
    stats: dict[str, Any]
    shards: list[ShardEntry]
    val_shards: list[ShardEntry] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def demo(self) -> bool:
        """Built from the generated demo mirror (never to be published)."""
        return bool(self.build.get("demo_mirror"))

    @property
    def source_record(self) -> dict[str, Any]:
        """`build.source`: the source's repo, licence, platform and card notes (only the name when
        dataset_info.json has no `build.source` record)."""
        record = self.build.get("source")
        return record if isinstance(record, dict) else {"name": self.source}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "directory": self.directory,
            "source": self.source,
            "split": self.split,
            "build": self.build,
            "stats": self.stats,
            "shards": [s.to_dict() for s in self.shards],
        }
        if self.val_shards:
            d["val_shards"] = [s.to_dict() for s in self.val_shards]
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DatasetInfo:
        known = {"directory", "source", "split", "build", "stats", "shards", "val_shards"}
        return cls(
            directory=d["directory"],
            source=d["source"],
            split=d["split"],
            build=d["build"],
            stats=d["stats"],
            shards=[ShardEntry(**s) for s in d.get("shards", [])],
            val_shards=[ShardEntry(**s) for s in d.get("val_shards", [])],
            extra={k: v for k, v in d.items() if k not in known},
        )

    def write(self, path: Path) -> None:
        atomic_write_text(
            path, json.dumps(self.to_dict(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"
        )

    @classmethod
    def read(cls, path: Path) -> DatasetInfo:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))


def built_directories(out: Path) -> list[DatasetInfo]:
    """Every directory with a readable dataset_info.json, in name order (others are not built yet)."""
    infos = []
    for p in sorted(out.glob(f"*/{DATASET_INFO}")):
        try:
            infos.append(DatasetInfo.read(p))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return infos
