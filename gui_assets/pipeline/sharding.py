"""Shard writing split into units that an executor can place: plan -> write units -> publish.

    plan_shards     the IR + splits -> ShardPlan (_work/<dir>/shard_plan.json): episodes grouped
                    into units of about one shard each (by a measured bytes-per-step estimate)
    write_unit      one unit -> UnitResult: _work/<dir>/units/<unit>/piece_NNNN.hdf5 + unit.json;
                    units are independent, so Dagster runs them as separate steps (processes on
                    one machine, Celery or Kubernetes workers across machines)
    publish_shards  every unit's pieces -> <out>/<dir>/<dir>_NNNN.hdf5 (and _val_), numbered in
                    plan order, stale shards removed -> ShardManifest (_work/<dir>/shards.json),
                    and every frame's fingerprint -> _work/<dir>/fingerprints.parquet

Where units run apart (Celery or Kubernetes workers, processes), each unit hashes its own
pieces, so the reading is spread over the workers. In one process, publish hashes every piece
of the directory at once on every core: at the end of each unit the hash held the unit up on one
core while the other idled (0.3 s a 444 MB shard).

The plan depends only on the data and the config, never on the executor, so a single-process
build and a distributed one write the same shards. A unit's writer still rolls at the cap, so
a low estimate costs an extra, smaller shard, never one over the cap. Nothing appears under a
final shard name before publish, which is this module's alone: a killed or failed build leaves
the previous shards as they were.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_write_text, move_into_place, sha256_files, sweep_temps, temp_path
from gui_assets.core.config import BuildConfig
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.episode_store import STEPS_FILE, ImageStore, iter_episodes, read_episode_table
from gui_assets.core.errors import EmptyPartitionError
from gui_assets.core.images import ImageError, decode_cost, decode_rgb, image_size, window_pixels
from gui_assets.core.layout import OutLayout, ShardEntry, shard_name, shard_pattern
from gui_assets.core.splits import MAIN, VAL
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline import fingerprints
from gui_assets.pipeline.frames import frame_deflater, frame_size
from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter, picture_file
from gui_assets.pipeline.preview_frames import (
    CANDIDATES,
    DEFAULT_SEED,
    PictureCache,
    frames_dir,
    lowest_ranked,
)
from gui_assets.pipeline.shard_records import (
    LINKED,
    Piece,
    PlannedUnit,
    PublishError,
    ShardManifest,
    ShardPlan,
    UnitResult,
    reuse_summary,
)
from gui_assets.pipeline.unit_reuse import file_results, take_published, unit_key

PLAN_FILE = "shard_plan.json"
UNITS_DIR = "units"
UNIT_FILE = "unit.json"
# Units are planned to this share of the cap, so an estimate a little low still fits one shard.
FILL = 0.9
SAMPLE_STEPS = 8
# The estimate samples the first this many steps only, so episodes appended upstream leave the
# plan's earlier units as they were (a smaller partition is sampled whole).
ESTIMATE_PREFIX_STEPS = 2000

log = logging.getLogger(__name__)
_BATCH = 8192  # step rows read at a time


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _plan_path(layout: OutLayout, directory: str) -> Path:
    return layout.work(directory) / PLAN_FILE


def unit_dir(layout: OutLayout, directory: str, unit: str) -> Path:
    return layout.work(directory) / UNITS_DIR / unit


def estimate_bytes_per_step(layout: OutLayout, directory: str, config: BuildConfig) -> float:
    """Deflated bytes of a step (frame + eye crop), measured on a few frames spread over the IR's
    first ESTIMATE_PREFIX_STEPS steps."""
    cols = ["image_sha256", "image_ext", "obs_left", "obs_top", "obs_width", "obs_height"]
    steps = pq.ParquetFile(layout.episodes(directory) / STEPS_FILE)
    total = min(steps.metadata.num_rows, ESTIMATE_PREFIX_STEPS)
    if not total:
        return 1.0
    picks = sorted({round(i * (total - 1) / max(1, SAMPLE_STEPS - 1)) for i in range(SAMPLE_STEPS)})
    store = ImageStore(layout.image_store)
    deflate = frame_deflater(config)
    sizes = []
    for r in _rows_at(steps, picks, cols):
        try:
            data = store.get(r["image_sha256"], r["image_ext"])
            width, height = image_size(data)
            bottom = r["obs_top"] + r["obs_height"]
            if decode_cost(data, width, height, bottom) > config.decode_budget_bytes:
                continue  # the writer leaves such a page out; it says nothing of the others
            page = decode_rgb(data, bottom)
            frame = window_pixels(page, r["obs_left"], r["obs_top"], r["obs_width"], r["obs_height"])
        except (ImageError, OSError):
            continue  # the writer will drop it; the estimate needs only the usable ones
        eye = frame[:EYE_SIZE, :EYE_SIZE]
        chunks = (memoryview(np.ascontiguousarray(a)).cast("B") for a in (frame, eye))
        sizes.append(sum(len(deflate(c)) for c in chunks) + 600)  # + the small arrays
    return float(np.mean(sizes)) if sizes else 1.0


def _frame_sizes(layout: OutLayout, directory: str, config: BuildConfig) -> dict[str, tuple[int, int]]:
    """Each episode's frame size, as the writer will make it (build.frames.frame_size)."""
    cols = ["episode_id", "obs_width", "obs_height"]
    sizes: dict[str, tuple[int, int]] = {}
    current: str | None = None
    steps: list[tuple[int, int]] = []
    # The IR stores an episode's steps together: one episode's sizes are held at a time.
    path = layout.episodes(directory) / STEPS_FILE
    for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH, columns=cols):
        d = batch.to_pydict()
        for episode, width, height in zip(d["episode_id"], d["obs_width"], d["obs_height"], strict=True):
            if episode != current:
                if current is not None:
                    sizes[current] = frame_size(steps, config.agentview_hw)
                current, steps = episode, []
            steps.append((height, width))
    if current is not None:
        sizes[current] = frame_size(steps, config.agentview_hw)
    return sizes


def _rows_at(steps: pq.ParquetFile, picks: list[int], cols: list[str]) -> Iterator[dict[str, Any]]:
    """The step rows at the sorted indices `picks`, reading a batch at a time."""
    wanted = iter(picks)
    at = next(wanted, None)
    offset = 0
    for batch in steps.iter_batches(batch_size=_BATCH, columns=cols):
        while at is not None and at < offset + batch.num_rows:
            yield batch.slice(at - offset, 1).to_pylist()[0]
            at = next(wanted, None)
        if at is None:
            return
        offset += batch.num_rows


def _first_file(source_ref: str) -> str:
    """An episode's upstream file: the first, in the manifest's (path) order, that any of its
    steps was read from; where its first row sits, for a source whose steps span files."""
    d = json.loads(source_ref)
    return min([str(d.get("file", "")), *(str(s[0]) for s in d.get("steps", []))])


def pack_units(stream: list[tuple[str, int, str]], budget: int) -> list[tuple[list[str], int]]:
    """(episode ids, steps) per unit for a stream of (episode id, steps, upstream file) in stored
    order: greedy up to `budget` steps, and ended at a file boundary once at least half full or
    where a file with at least half a budget of steps in this stream starts or ends. Each unit's
    end depends only on the episodes up to it and the file after it, so a stream that grows by
    files at its end keeps its earlier units."""
    file_steps: dict[str, int] = {}
    for _, n, file in stream:
        file_steps[file] = file_steps.get(file, 0) + n
    own_units = {f for f, n in file_steps.items() if 2 * n >= budget}
    units: list[tuple[list[str], int]] = []
    current: list[str] = []
    steps = 0
    last_file = ""
    for episode, n, file in stream:
        if current and (
            steps + n > budget
            or (file != last_file and (2 * steps >= budget or file in own_units or last_file in own_units))
        ):
            units.append((current, steps))
            current, steps = [], 0
        current.append(episode)
        steps += n
        last_file = file
    if current:
        units.append((current, steps))
    return units


def plan_shards(layout: OutLayout, directory: str, config: BuildConfig, parts: dict[str, str]) -> ShardPlan:
    """Group the IR's episodes into units of about a shard: per split part, per frame size (so a
    shard holds frames of one size and batches), in stored order.

    Units end at upstream file boundaries where they can (`pack_units`): a unit at least half
    full ends with the file it is in, and a file of at least half a unit's steps (in the unit's
    part and frame size) has units of its own. So a file appended upstream (the others keeping
    their names) lands in new units, unless the last unit before it was under half full, and an
    edited file leaves the units of the other files as they were, which the next build links
    back. Small files are still packed together: a unit each would give tiny shards."""
    table = (
        read_episode_table(layout.episodes(directory))
        .select(["episode_id", "num_steps", "source_ref"])
        .to_pylist()
    )
    hw = _frame_sizes(layout, directory, config)
    per_step = estimate_bytes_per_step(layout, directory, config)
    budget = max(1, int(config.shard_cap_bytes * FILL / per_step))
    files = {r["episode_id"]: _first_file(r["source_ref"]) for r in table}
    units: list[PlannedUnit] = []
    for part in (MAIN, VAL):
        rows = [r for r in table if parts[r["episode_id"]] == part]
        for size in dict.fromkeys(hw[r["episode_id"]] for r in rows):  # sizes in order of appearance
            stream = [
                (r["episode_id"], r["num_steps"], files[r["episode_id"]])
                for r in rows
                if hw[r["episode_id"]] == size
            ]
            for episodes, steps in pack_units(stream, budget):
                index = sum(u.part == part for u in units)
                units.append(PlannedUnit(f"{part}-{index:04d}", part, tuple(episodes), steps))
    candidates = lowest_ranked(
        DEFAULT_SEED, directory, ((r["episode_id"], r["num_steps"]) for r in table), CANDIDATES
    )
    plan = ShardPlan(directory, round(per_step, 1), budget, config.to_dict(), tuple(units), candidates)
    atomic_write_text(_plan_path(layout, directory), json.dumps(plan.to_dict(), indent=1) + "\n")
    return plan


def bytes_to_finish(layout: OutLayout, directory: str) -> int:
    """The shard bytes still to write: the plan's units without a finished folder, at the plan's
    bytes-per-step estimate."""
    plan = read_plan(layout, directory)
    left = [u for u in plan.units if not (unit_dir(layout, directory, u.name) / UNIT_FILE).is_file()]
    return round(sum(u.steps for u in left) * plan.bytes_per_step_estimate)


def read_plan(layout: OutLayout, directory: str) -> ShardPlan:
    return ShardPlan.from_dict(json.loads(_plan_path(layout, directory).read_text(encoding="utf-8")))


def write_unit(
    layout: OutLayout,
    directory: str,
    source: str,
    config: BuildConfig,
    unit: str,
    threads: int | None = None,
    hash_pieces: bool = False,
    *,
    platform: str,
) -> UnitResult:
    """Write one planned unit's pieces into a hidden folder, swapped in whole when the unit is
    done (so a unit folder under its name is always complete); safe to rerun. `hash_pieces`:
    hash them here (a unit on a worker of its own) instead of leaving them to publish."""
    started = time.perf_counter()
    plan = read_plan(layout, directory)
    planned = plan.unit(unit)
    wanted = set(planned.episodes)
    log.info(
        f"{directory} {unit}: writing {_count(len(wanted), 'episode')} ({_count(planned.steps, 'step')})"
    )
    folder = unit_dir(layout, directory, unit)
    staging = temp_path(folder)
    shutil.rmtree(staging, ignore_errors=True)
    shown = {e: ts for e, ts in plan.preview_steps.items() if e in wanted}
    key = unit_key(layout, directory, source, platform, config, planned)
    result = take_published(layout, directory, key, planned, staging)
    if result is None:
        writer = LiberoShardWriter(staging, directory, source, config, platform=platform, preview_steps=shown)
        result = _write_pieces(layout, directory, writer, planned, key, threads)
    if hash_pieces:
        todo = [p for p in result.pieces if p.sha256 is None]
        for piece, sha in zip(todo, sha256_files([staging / p.file for p in todo]), strict=True):
            piece.sha256 = sha
    atomic_write_text(staging / UNIT_FILE, json.dumps(result.to_dict(), indent=1) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    shards = _count(len(result.pieces), "published shard")
    took = f"({time.perf_counter() - started:.1f} s)"
    if result.how == LINKED:
        log.info(f"{directory} {unit}: unchanged, {shards} linked back {took}")
    else:
        pieces = _count(len(result.pieces), "piece")
        written = f"{_count(result.stats.episodes_out, 'episode')}, {result.bytes_written / 1e6:.1f} MB"
        log.info(f"{directory} {unit}: {pieces} of {written} {took}")
    return result


def _write_pieces(
    layout: OutLayout,
    directory: str,
    writer: LiberoShardWriter,
    planned: PlannedUnit,
    key: str,
    threads: int | None,
) -> UnitResult:
    """The unit written by the shard writer."""
    episodes = iter_episodes(layout.episodes(directory), only=set(planned.episodes))
    try:
        writer.write_episodes(episodes, ImageStore(layout.image_store), threads)
        pieces = writer.close()
    except BaseException:
        writer.abort()
        raise
    return UnitResult(
        planned.name, planned.part, pieces, writer.stats, key, bytes_written=sum(p.bytes for p in pieces)
    )


def _unit_results(layout: OutLayout, directory: str, plan: ShardPlan) -> list[UnitResult]:
    results = []
    for u in plan.units:
        path = unit_dir(layout, directory, u.name) / UNIT_FILE
        if not path.is_file():
            raise PublishError(f"{directory}: unit {u.name} has not been written (no {path})")
        results.append(UnitResult.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    return results


def publish_shards(layout: OutLayout, directory: str) -> ShardManifest:
    """Number every unit's pieces into the directory's shard series and put them in place."""
    plan = read_plan(layout, directory)
    out_dir = layout.directory(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = _unit_results(layout, directory, plan)
    stats = BuildStats()
    for r in results:
        stats = stats + r.stats
    if not any(r.stats.episodes_out for r in results if r.part == MAIN):
        raise EmptyPartitionError(
            f"{directory}: no episode could be written to a shard (drops {dict(stats.drops)})"
        )
    _hash_pieces(layout, directory, results)
    entries: dict[str, list[ShardEntry]] = {MAIN: [], VAL: []}
    moves: list[tuple[ShardEntry, Path, Path]] = []  # (entry, piece, final path)
    for r in results:
        for piece in r.pieces:
            entry = piece.published(shard_name(directory, len(entries[r.part]), r.part == VAL))
            entries[r.part].append(entry)
            moves.append((entry, unit_dir(layout, directory, r.unit) / piece.file, out_dir / entry.file))
    _check_moved(directory, [m for m in moves if not m[1].is_file()])
    pictures = PictureCache(frames_dir(layout.work(directory)))
    prints = fingerprints.kept(layout, directory)
    for entry, src, dst in moves:
        drawn, printed = picture_file(src), fingerprints.piece_file(src)
        if drawn.is_file():  # the preview's pictures of this shard, kept by its content
            pictures.put_file(entry.sha256, drawn)
        if printed.is_file():  # a linked-back unit's are kept already
            prints.put_file(entry.sha256, printed)
        if src.is_file():
            move_into_place(src, dst)  # the directory may sit on another file system
    _prune(out_dir, directory, {e.file for es in entries.values() for e in es})
    published = {e.sha256 for es in entries.values() for e in es}
    pictures.keep_only(published)
    try:
        fingerprints.write_directory_table(layout, directory, entries[MAIN], entries[VAL])
    except fingerprints.MissingFingerprints as e:
        raise PublishError(str(e)) from None
    file_results(layout, directory, results, published)
    manifest = ShardManifest(entries[MAIN], entries[VAL], stats, len(results), reuse_summary(results))
    atomic_write_text(layout.shard_manifest(directory), json.dumps(manifest.to_dict(), indent=2) + "\n")
    shutil.rmtree(layout.work(directory) / UNITS_DIR, ignore_errors=True)
    log.info(
        f"{directory}: published {_count(len(entries[MAIN]), 'shard')} (+{len(entries[VAL])} val) from "
        f"{_count(len(results), 'unit')}, {sum(e.bytes for es in entries.values() for e in es) / 1e6:.1f} MB "
        f"({', '.join(f'{k} {v}' for k, v in manifest.reuse.items())})"
    )
    return manifest


def _hash_pieces(layout: OutLayout, directory: str, results: list[UnitResult]) -> None:
    """Hash the pieces not hashed yet, all at once on every core, and record the hashes in their
    units' unit.json before any piece moves: a publish killed after moving some pieces can then
    still check, on a rerun, what it had moved."""
    todo: list[tuple[UnitResult, Piece]] = [(r, p) for r in results for p in r.pieces if p.sha256 is None]
    paths = [unit_dir(layout, directory, r.unit) / p.file for r, p in todo]
    for path in paths:
        if not path.is_file():
            raise PublishError(f"{directory}: {path} is missing and was never hashed; rerun the shards step")
    for (_, piece), sha in zip(todo, sha256_files(paths), strict=True):
        piece.sha256 = sha
    for r in {r.unit: r for r, _ in todo}.values():
        record = unit_dir(layout, directory, r.unit) / UNIT_FILE
        atomic_write_text(record, json.dumps(r.to_dict(), indent=1) + "\n")


def _check_moved(directory: str, moved: list[tuple[ShardEntry, Path, Path]]) -> None:
    """Pieces an interrupted publish had moved already: each must be under its final name with
    the hash its unit recorded (hashed together, on every core)."""
    for _, src, dst in moved:
        if not dst.is_file():
            raise PublishError(f"{directory}: {src} is missing; rerun the shards step")
    for (entry, src, _), sha in zip(moved, sha256_files([dst for _, _, dst in moved]), strict=True):
        if sha != entry.sha256:
            raise PublishError(
                f"{directory}: {src} is missing and {entry.file} is not what it was; rerun the shards step"
            )


def _prune(out_dir: Path, directory: str, keep: set[str]) -> None:
    """Remove shards of an earlier, longer build (both series)."""
    for val in (False, True):
        pattern = shard_pattern(directory, val)
        for p in out_dir.iterdir():
            if pattern.fullmatch(p.name) and p.name not in keep:
                p.unlink()


def prepare(layout: OutLayout, directory: str) -> None:
    """Before a build's units run: clear what a killed build left in the shard directory
    (temp files; staging folders of builds before units moved to _work)."""
    out_dir = layout.directory(directory)
    sweep_temps(out_dir)
    sweep_temps(layout.work(directory) / UNITS_DIR, only_dead_writers=True)  # units a killed build left
    if out_dir.is_dir():
        for stale in out_dir.glob(".staging-*"):
            shutil.rmtree(stale, ignore_errors=True)
