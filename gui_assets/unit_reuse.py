"""A shard unit whose output cannot have changed is not written again: its published shards are
linked back in as the unit's pieces.

A unit's pieces are a function of its episodes in order (each by its IR `record_hash`, which
covers every stored field and every frame by sha256), the build config, the directory and
source, and the writer's code (the import closure of `gui_assets.sharding`) and libraries.
`unit_keys` hashes exactly those. Publish files each unit's result (its pieces' sha256 and its
statistics) under that key in `<work>/unit_index/`; the next build's unit with the same key
hard-links the published shards of those hashes into its staging folder (a copy across file
systems) and reports the same result, so publish writes what a fresh build writes without
reading or writing a frame. The preview's picks among its steps are not in the key: they do
not change the shards, and the preview draws from the shards any picture the cache lacks.

Every demo records its upstream file's revision, so an edit of a file moves the key of every
unit holding episodes of that file. A unit whose episodes differ from a published unit's only
by that revision (the same `unrevised` key: episodes by their `unrevised_hash`), all of one
revision, is copied from the published shards with the new revision put in place
(`revision_patch`): the kernel copies each shard while one read of it finds the revisions and
hashes the copy to be. So a one-row edit rewrites the unit holding that row, the edited file's
other units cost a copy each, and the units of other files a link. Units that do change still
take their unchanged steps' frames back (`frame_reuse`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_assets.atomic import atomic_write_text
from gui_assets.config import BuildConfig
from gui_assets.episode_store import read_episode_table
from gui_assets.layout import OutLayout
from gui_assets.lineage import version_of
from gui_assets.revision_patch import RevisionPatchError, clone, copy_revised
from gui_assets.shard_records import LINKED, REVISED, Piece, PlannedUnit, UnitResult
from gui_assets.stats import BuildStats
from gui_assets.writers.frame_reuse import filed_index, index_file, library_versions
from gui_assets.writers.libero_hdf5 import picture_file
from gui_assets.writers.preview_frames import PictureCache, frames_dir

INDEX_DIR = "unit_index"
UNREVISED_DIR = "unrevised"  # <unrevised key>.json -> {"key": the exact key of a filed result}

log = logging.getLogger(__name__)


def _code_version() -> str:
    return version_of(["gui_assets.sharding"], library_versions())


@dataclass(frozen=True, slots=True)
class UnitKeys:
    exact: str  # everything the unit's pieces are a function of
    unrevised: str  # the same with the upstream revision left out ("" for an IR without it)
    revision: str | None  # the one upstream revision the unit's demos record (None: several)


def unit_keys(
    layout: OutLayout,
    directory: str,
    source: str,
    config: BuildConfig,
    planned: PlannedUnit,
) -> UnitKeys:
    table = read_episode_table(layout.episodes(directory))
    ids = table.column("episode_id").to_pylist()
    wanted = set(planned.episodes)
    rows = [i for i, e in enumerate(ids) if e in wanted]
    exact = dict(zip((ids[i] for i in rows), table.column("record_hash").take(rows).to_pylist(), strict=True))
    unrevised: dict[str, str] = {}
    if "unrevised_hash" in table.column_names:
        hashes = table.column("unrevised_hash").take(rows).to_pylist()
        unrevised = dict(zip((ids[i] for i in rows), hashes, strict=True))
    refs = table.column("source_ref").take(rows).to_pylist()
    revisions: set[str | None] = set()
    for r in refs:
        ref = json.loads(r)
        revisions.add(ref.get("revision"))
        revisions.update(ref.get("revisions", {}).values())
    record = {
        "code": _code_version(),
        "config": config.to_dict(),
        "directory": directory,
        "source": source,
        "part": planned.part,
    }

    def key(hashes: dict[str, str]) -> str:
        episodes = [[e, hashes.get(e)] for e in planned.episodes]
        return hashlib.sha256(
            json.dumps({**record, "episodes": episodes}, sort_keys=True, default=str).encode()
        ).hexdigest()

    return UnitKeys(
        key(exact),
        key(unrevised) if unrevised else "",
        revisions.pop() if len(revisions) == 1 else None,
    )


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


def _frame_keys_kept(layout: OutLayout, directory: str, sha: str) -> bool:
    """The shard's frame keys, which publish files by its sha256, are still there (so the next
    build can take its frames back)."""
    return filed_index(layout, directory, sha).is_file()


def _filed(layout: OutLayout, directory: str, key: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads((_index(layout, directory) / f"{key}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _published_pieces(
    layout: OutLayout, directory: str, recorded: dict[str, Any]
) -> list[tuple[Path, Piece]] | None:
    """A filed result's pieces with the published shard of each, if all are still there as they
    were, with their frame keys."""
    published = _published_by_sha(layout, directory)
    pieces = [Piece.from_dict(p) for p in recorded["pieces"]]
    pairs = [(published.get(p.sha256 or ""), p) for p in pieces]
    if not pieces or any(src is None or src.stat().st_size != p.bytes for src, p in pairs):
        return None
    if not all(_frame_keys_kept(layout, directory, p.sha256 or "") for p in pieces):
        return None
    return pairs  # type: ignore[return-value]


def take_published(
    layout: OutLayout,
    directory: str,
    keys: UnitKeys,
    planned: PlannedUnit,
    staging: Path,
) -> UnitResult | None:
    """The unit's result from the published shards, put into `staging`: linked back when nothing
    it depends on changed, copied with the new revision when only the upstream revision did;
    None if it must be written (also when the shards' frame keys are gone). The preview draws
    any picture of its candidates the cache lacks from the shards."""
    recorded = _filed(layout, directory, keys.exact)
    pairs = None if recorded is None else _published_pieces(layout, directory, recorded)
    if recorded is not None and pairs is not None:
        return link_back(keys, planned, staging, recorded, pairs)
    return _revise_back(layout, directory, keys, planned, staging)


def link_back(
    keys: UnitKeys,
    planned: PlannedUnit,
    staging: Path,
    recorded: dict[str, Any],
    pairs: list[tuple[Path, Piece]],
) -> UnitResult:
    """The filed result of exactly this unit, its published shards linked into `staging`."""
    staging.mkdir(parents=True, exist_ok=True)
    for i, (src, piece) in enumerate(pairs):
        piece.file = f"piece_{i:04d}.hdf5"
        _link(src, staging / piece.file)
    stats = BuildStats.from_dict(recorded["stats"])
    pieces = [p for _, p in pairs]
    return UnitResult(
        planned.name, planned.part, pieces, stats, keys.exact, keys.unrevised, keys.revision, LINKED
    )


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError as e:  # another file system, or none of links: a copy (never written in place)
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        clone(src, dst)


def _revise_back(
    layout: OutLayout, directory: str, keys: UnitKeys, planned: PlannedUnit, staging: Path
) -> UnitResult | None:
    """The unit's result with the published shards of a unit that differed only by the upstream
    revision copied into `staging` with the new revision; None if there is none or the copy
    is refused (the unit is then written)."""
    if not keys.unrevised or keys.revision is None:
        return None
    try:
        alias = json.loads(
            (_index(layout, directory) / UNREVISED_DIR / f"{keys.unrevised}.json").read_text("utf-8")
        )
    except (OSError, ValueError):
        return None
    recorded = _filed(layout, directory, str(alias.get("key", "")))
    old = None if recorded is None else recorded.get("revision")
    if recorded is None or not old or old == keys.revision:
        return None
    pairs = _published_pieces(layout, directory, recorded)
    if pairs is None:
        return None
    staging.mkdir(parents=True, exist_ok=True)
    cache = PictureCache(frames_dir(layout.work(directory)))
    pieces: list[Piece] = []
    try:
        for i, (src, old_piece) in enumerate(pairs):
            piece = Piece(
                f"piece_{i:04d}.hdf5", old_piece.demos, old_piece.steps, old_piece.bytes, old_piece.frame_hw
            )
            piece.sha256 = copy_revised(src, staging / piece.file, old, keys.revision, piece.demos)
            # Its pictures and frame keys are the old shard's: publish files them under the new hash.
            drawn = cache.path(old_piece.sha256 or "")
            if drawn.is_file():
                _link(drawn, picture_file(staging / piece.file))
            frame_keys = filed_index(layout, directory, old_piece.sha256 or "")
            if frame_keys.is_file():
                _link(frame_keys, index_file(staging / piece.file))
            pieces.append(piece)
    except (RevisionPatchError, OSError) as e:
        log.warning(f"{directory} {planned.name}: the published shards cannot be revised ({e}); writing it")
        shutil.rmtree(staging, ignore_errors=True)
        return None
    stats = BuildStats.from_dict(recorded["stats"])
    written = sum(p.bytes for p in pieces)
    return UnitResult(
        planned.name, planned.part, pieces, stats, keys.exact, keys.unrevised, keys.revision, REVISED, written
    )


def file_results(layout: OutLayout, directory: str, results: list[UnitResult], shas: set[str]) -> None:
    """Publish: record each keyed unit's published result (and where its unrevised key leads);
    forget units whose shards are gone."""
    folder = _index(layout, directory)
    aliases = folder / UNREVISED_DIR
    aliases.mkdir(parents=True, exist_ok=True)
    for r in results:
        if r.key and all(p.sha256 in shas for p in r.pieces):
            record: dict[str, Any] = {
                "pieces": [p.to_dict() for p in r.pieces],
                "stats": r.stats.to_dict(),
                "revision": r.revision,
            }
            atomic_write_text(folder / f"{r.key}.json", json.dumps(record) + "\n")
            if r.unrevised_key and r.revision is not None:
                atomic_write_text(aliases / f"{r.unrevised_key}.json", json.dumps({"key": r.key}) + "\n")
    for path in folder.glob("*.json"):
        try:
            pieces = json.loads(path.read_text(encoding="utf-8"))["pieces"]
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)
            continue
        if not all(p.get("sha256") in shas for p in pieces):
            path.unlink(missing_ok=True)
    for path in aliases.glob("*.json"):
        try:
            target = folder / f"{json.loads(path.read_text(encoding='utf-8'))['key']}.json"
        except (OSError, ValueError, KeyError, TypeError):
            target = None
        if target is None or not target.is_file():
            path.unlink(missing_ok=True)
