"""The LeRobot v3.0 export: every built directory as a LeRobotDataset under `<out>/lerobot/`.

Frames come from the shards, so what lerobot reads is what the LIBERO loaders read, pixel for
pixel. A directory whose shards have several frame sizes becomes one dataset per size (lerobot
stacks an image feature's frames, so each feature has one shape): `<directory>/` holds the size
most steps have, `<directory>_<H>x<W>/` each other. Episodes come in shard order, the main
series then the `_val_` holdout, and info.json's `splits` gives both ranges.

An agentview frame that is a whole stored screenshot, unresized, in PNG as 8-bit RGB (what the
image feature decodes to three channels) keeps its original bytes: no decode, no encode. Any
other frame, and every eye-in-hand crop, is inflated from the shard and PNG-encoded on threads
(publish.rgb_png). Image statistics come from up to IMAGE_SAMPLES frames per episode, every 4th pixel
each way; numeric statistics from every step. Memory holds at most WINDOW steps' encoded frames.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core import shard_reader
from gui_assets.core.atomic import TMP_MARK
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.publish import lerobot_meta as meta
from gui_assets.publish.lerobot_files import DataFiles
from gui_assets.publish.lerobot_video import VideoFiles, video_info
from gui_assets.publish.rgb_png import encode_rgb, is_rgb8_png, png_size

EXPORT_DIR = "lerobot"  # <out>/lerobot/<dataset>/
WINDOW = 64  # steps whose frames are encoded ahead, and the most a row group holds
IMAGE_SAMPLES = 2  # agentview frames per episode that image statistics are taken from
PNG_LEVEL = 1  # libdeflate level: its fastest; the PNGs are a function of the pixels and this level
AGENTVIEW_STRIDE = 4  # statistics read every 4th pixel each way of a sampled agentview frame
EYE_STRIDE = 2  # and every other pixel of every eye-in-hand crop
EYE_SHAPE = (EYE_SIZE, EYE_SIZE, 3)


@dataclass(frozen=True, slots=True)
class Part:
    """One dataset of a directory: its shards of one frame size."""

    name: str
    directory: str
    frame_hw: tuple[int, int]
    shards: tuple[Path, ...]
    val_from: int  # index in `shards` where the holdout series starts


def parts_of(info: DatasetInfo, directory: Path) -> list[Part]:
    """A directory's datasets: one per frame size, the most-stepped size first (ties: larger)."""
    by_size: dict[tuple[int, int], list[tuple[bool, Path, int]]] = {}
    for val, entries in ((False, info.shards), (True, info.val_shards)):
        for e in entries:
            hw = tuple(e.frame_hw) if e.frame_hw else _shard_hw(directory / e.file)
            by_size.setdefault(hw, []).append((val, directory / e.file, e.steps))  # type: ignore[arg-type]
    sizes = sorted(by_size, key=lambda hw: (-sum(s for *_, s in by_size[hw]), -hw[0] * hw[1], hw))
    parts = []
    for i, hw in enumerate(sizes):
        files = by_size[hw]
        name = info.directory if i == 0 else f"{info.directory}_{hw[0]}x{hw[1]}"
        val_from = next((j for j, (val, *_) in enumerate(files) if val), len(files))
        parts.append(Part(name, info.directory, hw, tuple(p for _, p, _ in files), val_from))
    return parts


def _shard_hw(path: Path) -> tuple[int, int]:
    with h5py.File(path, "r") as f:
        for demo in f["data"].values():
            return tuple(demo["obs/agentview_rgb"].shape[1:3])  # type: ignore[return-value]
    return (0, 0)


# --- frames ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Whole:
    """A stored screenshot whose bytes are the agentview frame as they are."""

    path: Path


def original_frames(
    layout: OutLayout, directory: str, frame_hw: tuple[int, int]
) -> dict[str, list[Whole | None]]:
    """Per episode id, per step: the stored screenshot when the agentview frame is that whole
    image at the dataset's frame size (its header says PNG, 8-bit RGB), else None."""
    images = ImageStore(layout.image_store)
    out: dict[str, list[Whole | None]] = {}
    for ep in iter_episodes(layout.episodes(directory)):
        steps: list[Whole | None] = []
        for step in ep.steps:
            o = step.observation
            steps.append(None)
            if o.image_ext != "png" or o.left or o.top or (o.height, o.width) != frame_hw:
                continue
            path = images.path(o.image_sha256, o.image_ext)
            try:
                with open(path, "rb") as fh:
                    head = fh.read(32)
            except OSError:
                continue
            if is_rgb8_png(head) and png_size(head) == (o.width, o.height):
                steps[-1] = Whole(path)
        out[ep.episode_id] = steps
    return out


@dataclass(frozen=True, slots=True)
class WindowJob:
    """Up to WINDOW steps of one episode, their shard chunks already read (h5py stays on the
    caller's thread): what a worker needs to make their two image columns."""

    shape: tuple[int, int, int]
    wholes: tuple[Whole | None, ...]  # per step: keep this stored screenshot's bytes
    agentview: tuple[bytes | np.ndarray | None, ...]  # per step: the shard chunk, when read
    sampled: tuple[bool, ...]  # per step: tallied into the image statistics
    eyes: tuple[bytes | np.ndarray, ...]
    video: bool  # hand back agentview pixels for the encoder instead of PNG


@dataclass(slots=True)
class WindowFrames:
    agentview: pa.Array | list[np.ndarray]  # an image column, or pixels for the video
    eye: pa.Array
    tallies: dict[str, np.ndarray]


def _image_column(data: list[bytes]) -> pa.Array:
    return pa.StructArray.from_arrays(
        [pa.array(data, pa.binary()), pa.nulls(len(data), pa.string())], fields=list(meta.IMAGE_STRUCT)
    )


def _window(job: WindowJob) -> WindowFrames:
    """Run on a worker: the window's PNG bytes (or pixels) and its pixels' tallies."""
    av_tally = np.zeros((3, 256), np.int64)
    agentview: list[Any] = []
    for whole, chunk, sampled in zip(job.wholes, job.agentview, job.sampled, strict=True):
        pixels = None if chunk is None else shard_reader.inflate(chunk, job.shape)
        if sampled and pixels is not None:
            av_tally += meta.channel_histogram(pixels, AGENTVIEW_STRIDE)
        if job.video:
            agentview.append(pixels)
        elif whole is not None:
            agentview.append(whole.path.read_bytes())
        else:
            agentview.append(encode_rgb(pixels, PNG_LEVEL))  # type: ignore[arg-type]
    eyes = [shard_reader.inflate(chunk, EYE_SHAPE) for chunk in job.eyes]
    eye_tally = meta.channel_histogram(np.concatenate(eyes, axis=0), EYE_STRIDE)
    return WindowFrames(
        agentview if job.video else _image_column(agentview),
        _image_column([encode_rgb(e, PNG_LEVEL) for e in eyes]),
        {meta.AGENTVIEW: av_tally, meta.EYE_IN_HAND: eye_tally},
    )


def sample_steps(T: int, k: int = IMAGE_SAMPLES) -> set[int]:
    return {round(float(v)) for v in np.linspace(0, T - 1, min(T, k))}


# --- one dataset -------------------------------------------------------------------------------


@dataclass
class _Totals:
    episodes: int = 0
    frames: int = 0
    train_episodes: int = 0
    originals: int = 0  # agentview frames kept as stored
    encoded: int = 0  # agentview frames encoded from the shard
    tasks: dict[str, int] = field(default_factory=dict)
    stats: meta.EpisodeStats = field(default_factory=meta.EpisodeStats)


def _numeric_columns(demo: h5py.Group) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {}
    for key, (dtype, names) in meta.NUMERIC.items():
        values = demo[meta.SHARD_SOURCE[key]][()]
        cols[key] = np.asarray(values).astype(dtype).reshape(len(values), len(names))
    return cols


def _columns(
    cols: dict[str, np.ndarray], texts: dict[str, list[str]], lo: int, hi: int, first: dict[str, int]
) -> dict[str, pa.Array]:
    """The non-image columns of steps lo..hi of an episode."""
    out: dict[str, pa.Array] = {}
    for key, (dtype, names) in meta.NUMERIC.items():
        block = cols[key][lo:hi]
        if len(names) == 1:
            out[key] = pa.array(block[:, 0], type=meta._ARROW[dtype])
        else:
            out[key] = pa.FixedSizeListArray.from_arrays(
                pa.array(block.ravel(), type=meta._ARROW[dtype]), len(names)
            )
    for key in meta.TEXT:
        out[key] = pa.array(texts[key][lo:hi], pa.string())
    t = np.arange(lo, hi, dtype=np.int64)
    out["timestamp"] = pa.array((t / meta.FPS).astype(np.float32))
    out["frame_index"] = pa.array(t)
    out["episode_index"] = pa.array(np.full(hi - lo, first["episode"], np.int64))
    out["index"] = pa.array(first["index"] + t)
    out["task_index"] = pa.array(np.full(hi - lo, first["task"], np.int64))
    return out


@dataclass
class _Episode:
    """An episode read from its demo (all but the frames, which are jobs on the pool)."""

    episode_id: str
    T: int
    task: str
    val: bool
    cols: dict[str, np.ndarray]
    texts: dict[str, list[str]]
    first: dict[str, int] = field(default_factory=dict)
    where: tuple[int, int] = (0, 0)  # its data file (chunk, file)
    tallies: dict[str, np.ndarray] = field(
        default_factory=lambda: {k: np.zeros((3, 256), np.int64) for k in (meta.AGENTVIEW, meta.EYE_IN_HAND)}
    )
    video_where: tuple[int, int, float] = (0, 0, 0.0)  # its video file and first timestamp


# A window of an episode in flight: (episode, first step, end step, its frames' job).
_Window = tuple[_Episode, int, int, "Future[WindowFrames]"]
LOOKAHEAD = 3  # windows submitted ahead of the one being written


class DatasetWriter:
    """Writes one Part into `root` (a fresh folder). Frames are jobs on `pool`, submitted up to
    WINDOW steps ahead of the step being written, across episode boundaries, so the threads stay
    busy while a row group is assembled and written."""

    def __init__(
        self,
        part: Part,
        root: Path,
        originals: dict[str, list[Whole | None]],
        pool: ThreadPoolExecutor,
        video: bool = False,
    ) -> None:
        self.part, self.root, self.originals, self.pool = part, root, originals, pool
        self.features = meta.features(part.frame_hw, video=video)
        self.videos = VideoFiles(root, meta.AGENTVIEW, part.frame_hw) if video else None
        if video:
            self.features[meta.AGENTVIEW]["info"] = video_info(part.frame_hw)
        self.totals = _Totals()
        self.episode_rows: list[dict[str, Any]] = []
        self.image_keys = {meta.AGENTVIEW, meta.EYE_IN_HAND}
        self.files: list[tuple[Path, str]] = []  # data files written, with their sha256

    def write(self) -> _Totals:
        data = DataFiles(self.root, meta.data_schema(self.features))
        ahead: deque[_Window] = deque()
        try:
            for window in self._windows():
                ahead.append(window)
                if len(ahead) > LOOKAHEAD:
                    self._take(ahead.popleft(), data)
            while ahead:
                self._take(ahead.popleft(), data)
        finally:
            for *_, fut in ahead:
                fut.cancel()
            self.files = data.close()
            if self.videos is not None:
                self.files += self.videos.close()
        self._finish()
        return self.totals

    def _windows(self) -> Iterator[_Window]:
        """Every episode of the part in windows of at most WINDOW steps, in order, each one's
        frames submitted as a job (the shards are read here only)."""
        for i, path in enumerate(self.part.shards):
            for _, demo in shard_reader.demos([path]):
                T = int(demo.attrs["num_samples"])
                ep = _Episode(
                    shard_reader.text(demo.attrs["episode_id"]),
                    T,
                    shard_reader.text(demo.attrs["language_instruction"]),
                    i >= self.part.val_from,
                    _numeric_columns(demo),
                    {k: [shard_reader.text(v) for v in demo[meta.SHARD_SOURCE[k]][()]] for k in meta.TEXT},
                )
                wholes = self.originals.get(ep.episode_id) or []
                if len(wholes) != T or self.videos is not None:
                    wholes = [None] * T  # the IR and the shard disagree, or a video: all from the shard
                sampled = sample_steps(T)
                for lo in range(0, T, WINDOW):
                    hi = min(T, lo + WINDOW)
                    job = self._job(demo, wholes[lo:hi], lo, sampled)
                    yield ep, lo, hi, self.pool.submit(_window, job)

    def _job(self, demo: h5py.Group, wholes: list[Whole | None], lo: int, sampled: set[int]) -> WindowJob:
        av, eye = demo["obs/agentview_rgb"], demo["obs/eye_in_hand_rgb"]
        steps = range(lo, lo + len(wholes))
        chunks = tuple(
            shard_reader.read_chunk(av, t) if w is None or t in sampled else None
            for t, w in zip(steps, wholes, strict=True)
        )
        kept = sum(w is not None for w in wholes)
        self.totals.originals += kept
        self.totals.encoded += len(wholes) - kept
        return WindowJob(
            (*self.part.frame_hw, 3),
            tuple(wholes),
            chunks,
            tuple(t in sampled for t in steps),
            tuple(shard_reader.read_chunk(eye, t) for t in steps),
            self.videos is not None,
        )

    def _take(self, window: _Window, data: DataFiles) -> None:
        ep, lo, hi, fut = window
        if lo == 0:
            self._begin(ep, data)
        frames = fut.result()
        for key, tally in frames.tallies.items():
            ep.tallies[key] += tally
        images = {meta.EYE_IN_HAND: frames.eye}
        if self.videos is not None:
            for pixels in frames.agentview:
                self.videos.add(pixels)  # type: ignore[arg-type]
        else:
            images[meta.AGENTVIEW] = frames.agentview  # type: ignore[assignment]
        columns = {**images, **_columns(ep.cols, ep.texts, lo, hi, ep.first)}
        data.write(pa.table({k: columns[k] for k in data.schema.names}, schema=data.schema))
        if hi == ep.T:
            self._end(ep)

    def _begin(self, ep: _Episode, data: DataFiles) -> None:
        tot = self.totals
        ep.first = {
            "episode": tot.episodes,
            "index": tot.frames,
            "task": tot.tasks.setdefault(ep.task, len(tot.tasks)),
        }
        ep.where = data.at_episode_start()
        if self.videos is not None:
            ep.video_where = self.videos.at_episode_start()
        tot.episodes += 1
        tot.frames += ep.T
        tot.train_episodes += 0 if ep.val else 1

    def _end(self, ep: _Episode) -> None:
        T, first = ep.T, ep.first
        stats = meta.EpisodeStats({k: meta.Moments.of(v, T) for k, v in ep.cols.items()})
        for key, tally in ep.tallies.items():
            stats.per_feature[key] = meta.image_moments(tally, T)
        t = np.arange(T, dtype=np.float64)[:, None]
        for key, values in (
            ("timestamp", t / meta.FPS),
            ("frame_index", t),
            ("episode_index", np.full((T, 1), first["episode"], np.float64)),
            ("index", first["index"] + t),
            ("task_index", np.full((T, 1), first["task"], np.float64)),
        ):
            stats.per_feature[key] = meta.Moments.of(values, T)
        chunk, file = ep.where
        self.episode_rows.append(
            {
                "episode_index": first["episode"],
                "tasks": [ep.task],
                "length": T,
                "data/chunk_index": chunk,
                "data/file_index": file,
                "dataset_from_index": first["index"],
                "dataset_to_index": first["index"] + T,
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
                **self._video_columns(ep),
                **stats.flattened(self.image_keys),
            }
        )
        self.totals.stats.add(stats)

    def _video_columns(self, ep: _Episode) -> dict[str, Any]:
        if self.videos is None:
            return {}
        chunk, file, start = ep.video_where
        prefix = f"videos/{meta.AGENTVIEW}"
        return {
            f"{prefix}/chunk_index": chunk,
            f"{prefix}/file_index": file,
            f"{prefix}/from_timestamp": start,
            f"{prefix}/to_timestamp": start + ep.T / meta.FPS,
        }

    def _finish(self) -> None:
        tot = self.totals
        path = self.root / meta.EPISODES_PATH.format(chunk_index=0, file_index=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.episode_rows), path)
        pq.write_table(meta.tasks_table(list(tot.tasks)), self.root / "meta" / "tasks.parquet")
        (self.root / "meta" / "stats.json").write_text(
            json.dumps(tot.stats.to_stats(self.image_keys), indent=2), encoding="utf-8"
        )
        splits = {"train": f"0:{tot.train_episodes}"}
        if tot.train_episodes < tot.episodes:
            splits["validation"] = f"{tot.train_episodes}:{tot.episodes}"
        video = self.videos is not None
        info = meta.info_json(self.features, tot.episodes, tot.frames, len(tot.tasks), splits, video=video)
        (self.root / "meta" / "info.json").write_text(json.dumps(info, indent=2), encoding="utf-8")


# --- publishing one dataset --------------------------------------------------------------------


def _swap_in(tmp: Path, final: Path) -> None:
    """Publish a finished dataset folder: the old one is moved aside, then removed. A reader sees
    the old dataset or the new one (for an instant none), never a mix of the two."""
    old = final.with_name(f".{final.name}.old{TMP_MARK}{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def export_part(
    out: Path, part: Part, pool: ThreadPoolExecutor, video: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """Write one dataset to `<out>/lerobot/<part.name>/` (built under a temp name, then swapped
    in); its figures, and the sha256 of its data and video files by path in the dataset."""
    final = out / EXPORT_DIR / part.name
    tmp = final.with_name(f".{part.name}{TMP_MARK}{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        originals = {} if video else original_frames(OutLayout(out), part.directory, part.frame_hw)
        writer = DatasetWriter(part, tmp, originals, pool, video)
        totals = writer.write()
        hashes = {p.relative_to(tmp).as_posix(): sha for p, sha in writer.files}
        _swap_in(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures = {
        "directory": part.directory,
        "frame_hw": list(part.frame_hw),
        "episodes": totals.episodes,
        "frames": totals.frames,
        "validation_episodes": totals.episodes - totals.train_episodes,
        "tasks": len(totals.tasks),
        "agentview_original": totals.originals,
        "agentview_encoded": totals.encoded,
        "video": video,
    }
    return figures, hashes
