"""A shard unit whose output cannot have changed is not written again: its published shards are
linked back in as the unit's pieces.

A unit's pieces are a function of its episodes in order (each by its IR `record_hash`, which
covers every stored field and every frame by sha256), the preview steps drawn among them, the
build config, the directory and source, and the writer's code (the import closure of
`gui_assets.sharding`) and libraries. `unit_key` hashes exactly those. Publish files each unit's result (its
pieces' sha256 and its statistics) under that key in `<work>/unit_index/`; the next build's unit
with the same key hard-links the published shards of those hashes into its staging folder (a
copy across file systems) and reports the same result, so publish writes what a fresh build
writes without reading or writing a frame. A one-row edit rewrites the unit holding that row;
the others cost a link each. Units that do change still take their unchanged steps' frames back
(`frame_reuse`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from gui_assets.atomic import atomic_write_text
from gui_assets.config import BuildConfig
from gui_assets.episode_store import read_episode_table
from gui_assets.frame_reuse import index_dir, library_versions
from gui_assets.layout import OutLayout
from gui_assets.lineage import version_of
from gui_assets.shard_records import Piece, PlannedUnit, UnitResult
from gui_assets.stats import BuildStats
from gui_assets.writers.preview_frames import PictureCache, frames_dir

INDEX_DIR = "unit_index"


def _code_version() -> str:
    return version_of(["gui_assets.sharding"], library_versions())


def unit_key(
    layout: OutLayout,
    directory: str,
    source: str,
    config: BuildConfig,
    planned: PlannedUnit,
    shown: dict[str, list[int]],
) -> str:
    table = read_episode_table(layout.episodes(directory)).select(["episode_id", "record_hash"]).to_pydict()
    hashes = dict(zip(table["episode_id"], table["record_hash"], strict=True))
    record = {
        "code": _code_version(),
        "config": config.to_dict(),
        "directory": directory,
        "source": source,
        "part": planned.part,
        "episodes": [[e, hashes.get(e)] for e in planned.episodes],
        "shown": {e: sorted(ts) for e, ts in sorted(shown.items())},
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def _index(layout: OutLayout, directory: str) -> Path:
    return layout.work(directory) / INDEX_DIR


def _published_by_sha(layout: OutLayout, directory: str) -> dict[str, Path]:
    try:
        manifest = json.loads(layout.shard_manifest(directory).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out_dir = layout.directory(directory)
    entries = [*manifest.get("shards", []), *manifest.get("val_shards", [])]
    return {e["sha256"]: out_dir / e["file"] for e in entries if (out_dir / e["file"]).is_file()}


def _sidecars_kept(layout: OutLayout, directory: str, sha: str, pictures: bool, frames: bool) -> bool:
    """What the writer leaves beside a shard is still there: the preview's pictures of its
    candidate steps and its steps' frame keys (publish files both by the shard's sha256)."""
    if pictures and not PictureCache(frames_dir(layout.work(directory))).path(sha).is_file():
        return False
    return not frames or (index_dir(layout, directory) / f"{sha}.parquet").is_file()


def link_back(
    layout: OutLayout,
    directory: str,
    key: str,
    planned: PlannedUnit,
    staging: Path,
    *,
    pictures: bool,
    frames: bool,
) -> UnitResult | None:
    """The unit's result with its pieces linked into `staging`, or None if it must be written
    (`pictures`: the unit has preview candidates, whose pictures must still be cached; `frames`:
    the codec files frame keys, which must still be there)."""
    try:
        recorded = json.loads((_index(layout, directory) / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    published = _published_by_sha(layout, directory)
    pieces = [Piece.from_dict(p) for p in recorded["pieces"]]
    sources = [published.get(p.sha256 or "") for p in pieces]
    pairs = list(zip(sources, pieces, strict=True))
    if not pieces or any(src is None or src.stat().st_size != p.bytes for src, p in pairs):
        return None
    if not all(_sidecars_kept(layout, directory, p.sha256 or "", pictures, frames) for p in pieces):
        return None
    staging.mkdir(parents=True, exist_ok=True)
    for i, (src, piece) in enumerate(pairs):
        piece.file = f"piece_{i:04d}.hdf5"
        dst = staging / piece.file
        try:
            os.link(src, dst)  # type: ignore[arg-type]
        except OSError:  # another file system: a copy (shards are never written in place)
            shutil.copyfile(src, dst)  # type: ignore[arg-type]
    return UnitResult(planned.name, planned.part, pieces, BuildStats.from_dict(recorded["stats"]), key)


def file_results(layout: OutLayout, directory: str, results: list[UnitResult], shas: set[str]) -> None:
    """Publish: record each keyed unit's published result; forget units whose shards are gone."""
    folder = _index(layout, directory)
    folder.mkdir(parents=True, exist_ok=True)
    for r in results:
        if r.key and all(p.sha256 in shas for p in r.pieces):
            record: dict[str, Any] = {"pieces": [p.to_dict() for p in r.pieces], "stats": r.stats.to_dict()}
            atomic_write_text(folder / f"{r.key}.json", json.dumps(record) + "\n")
    for path in folder.glob("*.json"):
        try:
            pieces = json.loads(path.read_text(encoding="utf-8"))["pieces"]
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)
            continue
        if not all(p.get("sha256") in shas for p in pieces):
            path.unlink(missing_ok=True)
