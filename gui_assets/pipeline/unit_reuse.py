"""A shard unit whose output cannot have changed is not written again: its published shards are
linked back in as the unit's pieces.

A unit's pieces are a function of its episodes in order (each by its IR `record_hash`, which
covers every stored field and every frame by sha256), the build config, the directory and
source, and the writer's code (the import closure of `gui_assets.pipeline.sharding`) and libraries.
`unit_key` hashes exactly those. Publish files each unit's result (its pieces' sha256 and its
statistics) under that key in `<work>/unit_index/`; the next build's unit with the same key
hard-links the published shards of those hashes into its staging folder (a copy across file
systems) and reports the same result, so publish writes what a fresh build writes without
reading or writing a frame. Any other unit is written, and so is one whose shards' frame
fingerprints (pipeline.fingerprints) are not all kept: no unit is published without them. The
preview's picks among its steps are not in the key: they do not change the shards, and the
preview draws from the shards any picture the cache lacks.

No demo records its upstream file's revision (dataset_info.json lists it), so an edit of one
row changes the key of the unit holding that row's episode only: the rest of the file's units
and every other file's are linked back.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata as md
import json
import os
import shutil
from pathlib import Path
from typing import Any

import h5py

from gui_assets.core.atomic import atomic_write_text
from gui_assets.core.code_version import version_of
from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import read_episode_table
from gui_assets.core.layout import OutLayout
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline import fingerprints
from gui_assets.pipeline.shard_records import LINKED, Piece, PlannedUnit, UnitResult

INDEX_DIR = "unit_index"


def library_versions() -> dict[str, str]:
    """The libraries whose versions can change output bytes (HDF5's layout, the deflaters, the
    decoders and the resize): a linked shard must be one a fresh build would write today."""
    out = {}
    for name in ("h5py", "imagecodecs", "pillow", "numpy", "pywuffs"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = ""
    out["hdf5"] = h5py.version.hdf5_version
    return out


def _code_version() -> str:
    return version_of(["gui_assets.pipeline.sharding"], library_versions())


def unit_key(
    layout: OutLayout,
    directory: str,
    source: str,
    platform: str,
    config: BuildConfig,
    planned: PlannedUnit,
) -> str:
    """Everything the unit's pieces are a function of, hashed."""
    table = read_episode_table(layout.episodes(directory))
    ids = table.column("episode_id").to_pylist()
    wanted = set(planned.episodes)
    rows = [i for i, e in enumerate(ids) if e in wanted]
    record_hashes = table.column("record_hash").take(rows).to_pylist()
    hashes = dict(zip((ids[i] for i in rows), record_hashes, strict=True))
    record = {
        "code": _code_version(),
        "config": config.to_dict(),
        "directory": directory,
        "source": source,
        "platform": platform,
        "part": planned.part,
        "episodes": [[e, hashes.get(e)] for e in planned.episodes],
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


def take_published(
    layout: OutLayout, directory: str, key: str, planned: PlannedUnit, staging: Path
) -> UnitResult | None:
    """The unit's result filed under exactly its key, its published shards linked into
    `staging`; None (write it) unless the result is filed and every shard is still there."""
    try:
        recorded = json.loads((_index(layout, directory) / f"{key}.json").read_text(encoding="utf-8"))
        pieces = [Piece.from_dict(p) for p in recorded["pieces"]]
    except (OSError, ValueError, KeyError, TypeError):  # none filed, or a damaged record: write it
        return None
    published = _published_by_sha(layout, directory)
    pairs = [(published.get(p.sha256 or ""), p) for p in pieces]
    if not pieces or any(src is None or src.stat().st_size != p.bytes for src, p in pairs):
        return None
    if not fingerprints.kept(layout, directory).has_all(p.sha256 or "" for p in pieces):
        return None
    return link_back(key, planned, staging, recorded, pairs)  # type: ignore[arg-type]


def link_back(
    key: str, planned: PlannedUnit, staging: Path, recorded: dict[str, Any], pairs: list[tuple[Path, Piece]]
) -> UnitResult:
    """The filed result of exactly this unit, its published shards linked into `staging`."""
    staging.mkdir(parents=True, exist_ok=True)
    for i, (src, piece) in enumerate(pairs):
        piece.file = f"piece_{i:04d}.hdf5"
        _link(src, staging / piece.file)
    stats = BuildStats.from_dict(recorded["stats"])
    return UnitResult(planned.name, planned.part, [p for _, p in pairs], stats, key, LINKED)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as e:  # another file system, or none of links: a copy (never written in place)
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(src, dst)


def file_results(layout: OutLayout, directory: str, results: list[UnitResult], shas: set[str]) -> None:
    """Publish: record each keyed unit's published result; forget units whose shards are gone."""
    folder = _index(layout, directory)
    folder.mkdir(parents=True, exist_ok=True)
    for r in results:
        if r.key and all(p.sha256 in shas for p in r.pieces):
            record = {"pieces": [p.to_dict() for p in r.pieces], "stats": r.stats.to_dict()}
            atomic_write_text(folder / f"{r.key}.json", json.dumps(record) + "\n")
    for path in folder.glob("*.json"):
        try:
            pieces = json.loads(path.read_text(encoding="utf-8"))["pieces"]
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)
            continue
        if not all(p.get("sha256") in shas for p in pieces):
            path.unlink(missing_ok=True)
