"""The shard stage's records, one serialisation each: the plan, a unit's result, the manifest.

ShardPlan       _work/<dir>/shard_plan.json: the units and the episodes of each
UnitResult      _work/<dir>/units/<unit>/unit.json: one unit's pieces and statistics
Piece           one shard a unit wrote, before publish numbers it
ShardManifest   _work/<dir>/shards.json: the published shard series and what the writer
                counted writing them (the statistics dataset_info.json reports)
ShardFiles      a folder of files kept beside a directory's shards by each shard's sha256 (the
                preview's pictures, the screen fingerprints)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.core.layout import OutLayout, ShardEntry
from gui_assets.core.stats import BuildStats


class ShardFiles:
    """`<folder>/<shard sha256>.parquet`: what the writer made beside each shard, kept by the
    shard's content, so a unit linked back from the last build keeps its files and a rebuilt
    shard never meets stale ones."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, sha256: str) -> Path:
        return self.folder / f"{sha256}.parquet"

    def put_file(self, sha256: str, written: Path) -> None:
        """Adopt the file the writer made beside the shard with this sha256."""
        self.folder.mkdir(parents=True, exist_ok=True)
        written.replace(self.path(sha256))

    def has_all(self, sha256s: Iterable[str]) -> bool:
        return all(self.path(sha).is_file() for sha in sha256s)

    def keep_only(self, sha256s: set[str]) -> None:
        """Remove the files of shards the directory no longer has."""
        if not self.folder.is_dir():
            return
        for p in self.folder.glob("*.parquet"):
            if p.stem not in sha256s:
                p.unlink(missing_ok=True)


class PublishError(Exception):
    """A unit's output is missing or does not match what it reported: rerun the shards step."""


@dataclass(frozen=True, slots=True)
class PlannedUnit:
    name: str  # "<part>-NNNN"
    part: str  # MAIN or VAL
    episodes: tuple[str, ...]
    steps: int


@dataclass(frozen=True, slots=True)
class ShardPlan:
    directory: str
    bytes_per_step_estimate: float
    steps_per_unit_budget: int
    config: dict[str, Any]
    units: tuple[PlannedUnit, ...]
    # The preview's candidate steps (episode id -> step indices), drawn by the writer
    # (build.preview_frames); empty when a plan file carries none.
    preview_steps: dict[str, list[int]] = field(default_factory=dict)

    def unit(self, name: str) -> PlannedUnit:
        for u in self.units:
            if u.name == name:
                return u
        raise PublishError(f"{self.directory}: unit {name} is not in the shard plan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "bytes_per_step_estimate": self.bytes_per_step_estimate,
            "steps_per_unit_budget": self.steps_per_unit_budget,
            "config": self.config,
            "units": [
                {"name": u.name, "part": u.part, "episodes": list(u.episodes), "steps": u.steps}
                for u in self.units
            ],
            "preview_steps": self.preview_steps,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardPlan:
        units = tuple(PlannedUnit(u["name"], u["part"], tuple(u["episodes"]), u["steps"]) for u in d["units"])
        return cls(
            d["directory"],
            d["bytes_per_step_estimate"],
            d["steps_per_unit_budget"],
            d["config"],
            units,
            {e: list(ts) for e, ts in d.get("preview_steps", {}).items()},
        )


@dataclass(slots=True)
class Piece:
    """One shard a unit's writer finished (`piece_NNNN.hdf5` in the unit folder until publish
    numbers it). `sha256` is None until it is hashed: by the unit's own worker when units run
    apart (Celery, Kubernetes, processes), so the reading is spread over them; in one process,
    by publish, every piece of the directory at once on every core."""

    file: str
    demos: int
    steps: int
    bytes: int
    frame_hw: list[int] | None = None
    sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "demos": self.demos,
            "steps": self.steps,
            "bytes": self.bytes,
            "frame_hw": self.frame_hw,
            "sha256": self.sha256,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Piece:
        return cls(d["file"], d["demos"], d["steps"], d["bytes"], d.get("frame_hw"), d.get("sha256"))

    def published(self, name: str) -> ShardEntry:
        """Its entry in the shard series, under its final name (once hashed)."""
        if self.sha256 is None:
            raise PublishError(f"{self.file} was never hashed; rerun the shards step")
        return ShardEntry(name, self.demos, self.steps, self.bytes, self.sha256, self.frame_hw)


# How a unit came by its pieces (UnitResult.how).
WRITTEN = "written"  # written by the shard writer
LINKED = "linked"  # nothing it depends on changed: the published shards linked back


@dataclass(slots=True)
class UnitResult:
    """What one unit wrote: its pieces (named piece_NNNN until published) and their statistics."""

    unit: str
    part: str
    pieces: list[Piece]
    stats: BuildStats
    key: str = ""  # unit_reuse.unit_key: what the pieces are a function of
    how: str = WRITTEN
    bytes_written: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "part": self.part,
            "pieces": [p.to_dict() for p in self.pieces],
            "stats": self.stats.to_dict(),
            "key": self.key,
            "how": self.how,
            "bytes_written": self.bytes_written,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UnitResult:
        pieces = [Piece.from_dict(p) for p in d["pieces"]]
        return cls(
            d["unit"],
            d["part"],
            pieces,
            BuildStats.from_dict(d["stats"]),
            d.get("key", ""),
            d.get("how", WRITTEN),
            d.get("bytes_written", 0),
        )


def reuse_summary(results: list[UnitResult]) -> dict[str, int]:
    """What a build of a directory wrote and what it linked back from the last one."""
    return {
        "units_written": sum(r.how == WRITTEN for r in results),
        "units_linked": sum(r.how == LINKED for r in results),
        "bytes_written": sum(r.bytes_written for r in results),
    }


@dataclass(slots=True)
class ShardManifest:
    """The published shard series of a directory and what the writer counted writing them."""

    shards: list[ShardEntry]
    val_shards: list[ShardEntry]
    stats: BuildStats
    units: int = 0
    reuse: dict[str, int] = field(default_factory=dict)  # reuse_summary of the build that published

    @property
    def all_shards(self) -> list[ShardEntry]:
        return self.shards + self.val_shards

    def to_dict(self) -> dict[str, Any]:
        return {
            "shards": [e.to_dict() for e in self.shards],
            "val_shards": [e.to_dict() for e in self.val_shards],
            "stats": self.stats.to_dict(),
            "units": self.units,
            "reuse": self.reuse,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShardManifest:
        return cls(
            [ShardEntry(**e) for e in d["shards"]],
            [ShardEntry(**e) for e in d["val_shards"]],
            BuildStats.from_dict(d["stats"]),
            d.get("units", 0),
            dict(d.get("reuse", {})),
        )

    @classmethod
    def read(cls, layout: OutLayout, directory: str) -> ShardManifest:
        return cls.from_dict(json.loads(layout.shard_manifest(directory).read_text(encoding="utf-8")))
