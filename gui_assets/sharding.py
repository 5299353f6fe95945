"""Shard writing split into units that an executor can place: plan -> write units -> publish.

    plan_shards     the IR + splits -> _work/<dir>/shard_plan.json: episodes grouped into units
                    of about one shard each (by a measured bytes-per-step estimate)
    write_unit      one unit -> _work/<dir>/units/<unit>/piece_NNNN.hdf5 + unit.json; units
                    are independent, so Dagster runs them as separate steps (processes on one
                    machine, Celery or Kubernetes workers across machines)
    publish_shards  every unit's pieces -> <out>/<dir>/<dir>_NNNN.hdf5 (and _val_), numbered in
                    plan order, stale shards removed, _work/<dir>/shards.json

The plan depends only on the data and the config, never on the executor, so a single-process
build and a distributed one write the same shards. A unit's writer still rolls at the cap, so
a low estimate costs an extra, smaller shard, never one over the cap.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from gui_assets.atomic import atomic_write_text, sha256_file
from gui_assets.config import BuildConfig, frame_deflater
from gui_assets.cursor import EYE_SIZE
from gui_assets.episode_store import STEPS_FILE, ImageStore, iter_episodes, read_episode_table
from gui_assets.errors import EmptyPartitionError
from gui_assets.images import ImageError, decode_rgb
from gui_assets.layout import OutLayout, ShardEntry, shard_name, shard_pattern
from gui_assets.splits import MAIN, VAL
from gui_assets.stats import BuildStats
from gui_assets.writers.libero_hdf5 import (
    LiberoShardWriter,
    crop_window,
    sweep_directory,
)

PLAN_FILE = "shard_plan.json"
UNITS_DIR = "units"
UNIT_FILE = "unit.json"
# Units are planned to this share of the cap, so an estimate a little low still fits one shard.
FILL = 0.9
SAMPLE_STEPS = 8


class PublishError(Exception):
    """A unit's output is missing or does not match what it reported: rerun the shards step."""


def _plan_path(layout: OutLayout, directory: str) -> Path:
    return layout.work(directory) / PLAN_FILE


def unit_dir(layout: OutLayout, directory: str, unit: str) -> Path:
    return layout.work(directory) / UNITS_DIR / unit


def estimate_bytes_per_step(layout: OutLayout, directory: str, config: BuildConfig) -> float:
    """Deflated bytes of a step (frame + eye crop), measured on a few frames spread over the IR."""
    cols = ["image_sha256", "image_ext", "obs_left", "obs_top", "obs_width", "obs_height"]
    rows = pq.read_table(layout.episodes(directory) / STEPS_FILE, columns=cols).to_pylist()
    if not rows:
        return 1.0
    picks = sorted({round(i * (len(rows) - 1) / max(1, SAMPLE_STEPS - 1)) for i in range(SAMPLE_STEPS)})
    store = ImageStore(layout.image_store)
    deflate = frame_deflater(config)
    sizes = []
    for i in picks:
        r = rows[i]
        try:
            page = decode_rgb(store.get(r["image_sha256"], r["image_ext"]))
            frame = crop_window(page, r["obs_left"], r["obs_top"], r["obs_width"], r["obs_height"])
        except (ImageError, OSError):
            continue  # the writer will drop it; the estimate needs only the usable ones
        eye = frame[:EYE_SIZE, :EYE_SIZE]
        chunks = (memoryview(np.ascontiguousarray(a)).cast("B") for a in (frame, eye))
        sizes.append(sum(len(deflate(c)) for c in chunks) + 600)  # + the small arrays
    return float(np.mean(sizes)) if sizes else 1.0


def plan_shards(
    layout: OutLayout, directory: str, config: BuildConfig, parts: dict[str, str]
) -> dict[str, Any]:
    """Group the IR's episodes (in stored order, per split part) into units of about a shard."""
    table = read_episode_table(layout.episodes(directory)).select(["episode_id", "num_steps"]).to_pylist()
    per_step = estimate_bytes_per_step(layout, directory, config)
    budget = max(1, int(config.shard_cap_bytes * FILL / per_step))
    units: list[dict[str, Any]] = []

    def close_unit(part: str, episodes: list[str], steps: int) -> None:
        index = sum(1 for u in units if u["part"] == part)
        units.append({"name": f"{part}-{index:04d}", "part": part, "episodes": episodes, "steps": steps})

    for part in (MAIN, VAL):
        current: list[str] = []
        steps = 0
        for row in table:
            if parts[row["episode_id"]] != part:
                continue
            if current and steps + row["num_steps"] > budget:
                close_unit(part, current, steps)
                current, steps = [], 0
            current.append(row["episode_id"])
            steps += row["num_steps"]
        if current:
            close_unit(part, current, steps)
    plan = {
        "directory": directory,
        "bytes_per_step_estimate": round(per_step, 1),
        "steps_per_unit_budget": budget,
        "config": config.to_dict(),
        "units": units,
    }
    atomic_write_text(_plan_path(layout, directory), json.dumps(plan, indent=1) + "\n")
    return plan


def read_plan(layout: OutLayout, directory: str) -> dict[str, Any]:
    return json.loads(_plan_path(layout, directory).read_text(encoding="utf-8"))


def write_unit(
    layout: OutLayout, directory: str, source: str, config: BuildConfig, unit: str, threads: int | None = None
) -> dict[str, Any]:
    """Write one planned unit's pieces into its own folder; safe to rerun (it starts afresh)."""
    plan = read_plan(layout, directory)
    spec = next((u for u in plan["units"] if u["name"] == unit), None)
    if spec is None:
        raise PublishError(f"{directory}: unit {unit} is not in the shard plan")
    wanted = set(spec["episodes"])
    folder = unit_dir(layout, directory, unit)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    writer = LiberoShardWriter(
        folder, directory, source, config, val=spec["part"] == VAL, name_of=lambda i: f"piece_{i:04d}.hdf5"
    )
    episodes = (ep for ep in iter_episodes(layout.episodes(directory)) if ep.episode_id in wanted)
    try:
        writer.write_episodes(episodes, ImageStore(layout.image_store), threads)
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    pieces = writer.close()
    result = {
        "unit": unit,
        "part": spec["part"],
        "pieces": [p.to_dict() for p in pieces],
        "stats": writer.stats.build_stats.to_dict(),
        "eye": {
            "pointer_steps": writer.stats.pointer_steps,
            "target_inside_eye": writer.stats.target_inside_eye,
        },
        "episodes_written": writer.stats.episodes_written,
    }
    atomic_write_text(folder / UNIT_FILE, json.dumps(result, indent=1) + "\n")
    return result


def publish_shards(layout: OutLayout, directory: str) -> dict[str, Any]:
    """Number every unit's pieces into the directory's shard series and put them in place."""
    plan = read_plan(layout, directory)
    out_dir = layout.directory(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for u in plan["units"]:
        path = unit_dir(layout, directory, u["name"]) / UNIT_FILE
        if not path.is_file():
            raise PublishError(f"{directory}: unit {u['name']} has not been written (no {path})")
        results.append(json.loads(path.read_text(encoding="utf-8")))
    if not any(r["episodes_written"] for r in results if r["part"] == MAIN):
        drops: dict[str, int] = {}
        for r in results:
            for k, v in r["stats"]["drops"].items():
                drops[k] = drops.get(k, 0) + v
        raise EmptyPartitionError(f"{directory}: no episode could be written to a shard (drops {drops})")
    entries: dict[str, list[ShardEntry]] = {MAIN: [], VAL: []}
    moves: list[tuple[Path, Path, ShardEntry]] = []
    for r in results:
        for piece in r["pieces"]:
            part = r["part"]
            final = shard_name(directory, len(entries[part]), part == VAL)
            entry = ShardEntry(**{**piece, "file": final})
            entries[part].append(entry)
            moves.append((unit_dir(layout, directory, r["unit"]) / piece["file"], out_dir / final, entry))
    for src, dst, entry in moves:
        if src.is_file():
            os.replace(src, dst)
        elif not (dst.is_file() and sha256_file(dst) == entry.sha256):  # moved by an interrupted publish
            raise PublishError(f"{directory}: {src} is missing; rerun the shards step")
    keep = {e.file for es in entries.values() for e in es}
    for val in (False, True):
        pattern = shard_pattern(directory, val)
        for p in out_dir.iterdir():
            if pattern.fullmatch(p.name) and p.name not in keep:
                p.unlink()  # a shard of an earlier, longer build
    stats = BuildStats()
    for r in results:
        stats = stats + BuildStats.from_dict(r["stats"])
    manifest = {
        "shards": [e.to_dict() for e in entries[MAIN]],
        "val_shards": [e.to_dict() for e in entries[VAL]],
        "stats": stats.to_dict(),
        "eye": {
            "pointer_steps": sum(r["eye"]["pointer_steps"] for r in results),
            "target_inside_eye": sum(r["eye"]["target_inside_eye"] for r in results),
        },
        "units": len(results),
    }
    atomic_write_text(layout.shard_manifest(directory), json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(layout.work(directory) / UNITS_DIR, ignore_errors=True)
    return manifest


def prepare(layout: OutLayout, directory: str) -> None:
    """Before a build's units run: clear what a killed build left in the shard directory."""
    sweep_directory(layout.directory(directory))
