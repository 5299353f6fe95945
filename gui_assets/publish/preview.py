"""The `preview` config: a few hundred steps sampled across every built directory, as Parquet the
Hugging Face viewer and `datasets` decode (`<out>/preview/sample-00000-of-00001.parquet`).

One row per step: the pre-action frame as JPEG 640 px wide, the eye-in-hand crop as JPEG, the
action (type name, params, mask, text, desc), the instruction, directory, episode and step
index. Image columns use the HF Image storage (a struct of `bytes` and `path`) and the file
carries the `huggingface` features metadata, so `load_dataset("parquet", ...)` returns images.
A directory shows its quota (proportional to its steps, at least one) of lowest-ranked steps,
a step's rank being a hash of (seed, directory, episode id, step): the same steps whichever
other directories exist, so one directory's rebuild changes only its own rows. The pictures come
from `preview_frames`' cache (drawn by the shard writer from the frames it held, or by an earlier
preview), and only a step the cache lacks is drawn here, from its stored chunk, on threads. The
ranks of an unchanged directory are cached too, so an unchanged directory costs a small read.
The file is the same bytes whichever way its pictures came. Directories never built are absent.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path
from gui_assets.core.config import usable_cpus
from gui_assets.core.ir import ACTION_TYPE_NAMES
from gui_assets.core.layout import PREVIEW_DIR, DatasetInfo, OutLayout, built_directories
from gui_assets.core.shard_reader import inflate, read_chunk
from gui_assets.pipeline.preview_frames import (
    DEFAULT_COUNT,
    DEFAULT_SEED,
    PictureCache,
    StepPictures,
    frames_dir,
    pictures,
    step_rank,
)

PREVIEW_FILE = "sample-00000-of-00001.parquet"
ROW_GROUP = 100
Pick = tuple[int, str, int]  # (index in the directory's shard list, demo name, step)

_IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
SCHEMA = pa.schema(
    [
        ("frame", _IMAGE),
        ("eye_in_hand", _IMAGE),
        ("directory", pa.string()),
        ("episode_id", pa.string()),
        ("step", pa.int32()),
        ("num_steps", pa.int32()),
        ("instruction", pa.string()),
        ("action_type", pa.string()),
        ("action_params", pa.list_(pa.float32())),
        ("action_mask", pa.list_(pa.float32())),
        ("action_text", pa.string()),
        ("action_desc", pa.string()),
    ]
)
_VALUE = {pa.string(): "string", pa.int32(): "int32"}
FEATURES = {
    f.name: {"_type": "Image"}
    if f.type == _IMAGE
    else {"feature": {"dtype": "float32", "_type": "Value"}, "_type": "List"}
    if pa.types.is_list(f.type)
    else {"dtype": _VALUE[f.type], "_type": "Value"}
    for f in SCHEMA
}


def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _shard_list(info: DatasetInfo) -> list[Any]:
    return info.shards + info.val_shards


def ranked_steps(out: Path, info: DatasetInfo, seed: int, count: int) -> list[Pick]:
    """The directory's `count` lowest-ranked steps, lowest first; kept in the directory's cache
    under its shards' sha256, so an unchanged directory's demos are not read again."""
    shards = _shard_list(info)
    key = {"directory": info.directory, "seed": seed, "count": count, "shards": [e.sha256 for e in shards]}
    cache = PictureCache(frames_dir(OutLayout(out).work(info.directory)))
    ranked = cache.read_ranks(key)
    if ranked is not None:
        return ranked

    def every_step() -> Iterator[tuple[int, int, str, int]]:
        for i, entry in enumerate(shards):
            with h5py.File(out / info.directory / entry.file, "r") as f:
                for name, demo in f["data"].items():
                    episode = _text(demo.attrs["episode_id"])
                    for t in range(int(demo.attrs["num_samples"])):
                        yield step_rank(seed, info.directory, episode, t), i, name, t

    ranked = [(i, d, t) for _, i, d, t in heapq.nsmallest(count, every_step())]
    cache.write_ranks(key, ranked)
    return ranked


def _draw(f: h5py.File, missing: list[tuple[str, int]], threads: int) -> dict[tuple[str, int], StepPictures]:
    """Pictures of steps the cache lacks, from their stored chunks: read here (HDF5 is one
    thread at a time), inflated and drawn on threads, a window of frames at a time."""
    drawn: dict[tuple[str, int], StepPictures] = {}

    def job(av: Any, av_shape: tuple[int, ...], eye: Any, eye_shape: tuple[int, ...]) -> StepPictures:
        return pictures(inflate(av, av_shape), inflate(eye, eye_shape))

    with ThreadPoolExecutor(threads, thread_name_prefix="gui-assets-preview") as pool:
        window: deque[tuple[tuple[str, int], Future[StepPictures]]] = deque()
        for d, t in missing:
            av, eye = f["data"][d]["obs/agentview_rgb"], f["data"][d]["obs/eye_in_hand_rgb"]
            chunks = (read_chunk(av, t), av.shape[1:], read_chunk(eye, t), eye.shape[1:])
            window.append(((d, t), pool.submit(job, *chunks)))
            if len(window) >= 2 * threads:
                k, fut = window.popleft()
                drawn[k] = fut.result()
        for k, fut in window:
            drawn[k] = fut.result()
    return drawn


# A demo's per-step arrays the rows take values from; each is a few bytes a step.
_DEMO_ARRAYS = ("action_type", "action_params", "action_mask", "action_text", "action_desc")


def _directory_rows(
    out: Path, info: DatasetInfo, picks: list[Pick], threads: int, counts: dict[str, int]
) -> Iterator[dict[str, Any]]:
    """The rows of one directory's picks, shard by shard: pictures the cache lacks are drawn
    into it first, then every row streams from the cache (demo, then step: the picks' order)."""
    shards = _shard_list(info)
    cache = PictureCache(frames_dir(OutLayout(out).work(info.directory)))
    for i, group in itertools.groupby(picks, key=lambda p: p[0]):
        entry = shards[i]
        wanted = [(d, t) for _, d, t in group]
        present = cache.keys(entry.sha256)
        with h5py.File(out / info.directory / entry.file, "r") as f:
            missing = [k for k in wanted if k not in present]
            if missing:
                cache.add(entry.sha256, _draw(f, missing, threads))
            counts["cached"] += len(wanted) - len(missing)
            counts["drawn"] += len(missing)
            streamed = 0
            demo: tuple[str, dict[str, Any], dict[str, Any]] | None = None
            for (name, t), (frame, eye) in cache.stream(entry.sha256, set(wanted)):
                if demo is None or demo[0] != name:  # a demo's arrays and attributes, read once
                    d = f["data"][name]
                    arrays = {k: d[k][:] for k in _DEMO_ARRAYS}
                    attrs = {k: d.attrs[k] for k in ("episode_id", "num_samples", "language_instruction")}
                    demo = (name, arrays, attrs)
                _, arrays, attrs = demo
                streamed += 1
                yield {
                    "frame": {"bytes": frame, "path": None},
                    "eye_in_hand": {"bytes": eye, "path": None},
                    "directory": info.directory,
                    "episode_id": _text(attrs["episode_id"]),
                    "step": t,
                    "num_steps": int(attrs["num_samples"]),
                    "instruction": _text(attrs["language_instruction"]),
                    "action_type": ACTION_TYPE_NAMES[int(arrays["action_type"][t])],
                    "action_params": [float(v) for v in arrays["action_params"][t]],
                    "action_mask": [float(v) for v in arrays["action_mask"][t]],
                    "action_text": _text(arrays["action_text"][t]),
                    "action_desc": _text(arrays["action_desc"][t]),
                }
            if streamed != len(wanted):
                raise RuntimeError(
                    f"{cache.path(entry.sha256)}: {streamed} of {len(wanted)} preview pictures; "
                    "the picture cache changed under this run"
                )


def write_preview(
    out: Path, count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED, threads: int | None = None
) -> dict[str, Any]:
    """Write `<out>/preview/sample-00000-of-00001.parquet`, streaming a row group at a time."""
    threads = threads or usable_cpus()
    infos = [i for i in built_directories(out) if i.stats.get("steps", 0)]
    total = sum(i.stats["steps"] for i in infos)
    per_directory: dict[str, int] = {}
    counts = {"cached": 0, "drawn": 0}
    rows = 0
    schema = SCHEMA.with_metadata({"huggingface": json.dumps({"info": {"features": FEATURES}})})
    path = out / PREVIEW_DIR / PREVIEW_FILE
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for info in infos:
            steps = info.stats["steps"]
            quota = min(steps, max(1, round(count * steps / total)))
            ranked = ranked_steps(out, info, seed, count)
            picks = sorted(ranked[:quota], key=lambda p: (p[0], int(p[1][5:]), p[2]))
            per_directory[info.directory] = len(picks)
            produced = _directory_rows(out, info, picks, threads, counts)
            while batch := list(itertools.islice(produced, ROW_GROUP)):
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                rows += len(batch)
    return {
        "path": str(path),
        "rows": rows,
        "per_directory": per_directory,
        "seed": seed,
        "count": count,
        "pictures": counts,
    }
