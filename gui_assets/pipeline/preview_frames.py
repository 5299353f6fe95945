"""The preview's pictures and which steps it shows, shared by the shard writer and the preview.

Which steps: every step has a rank, a hash of (seed, directory, episode id, step index), and a
directory shows its quota of lowest-ranked steps. A rank depends on nothing else, so the steps a
directory shows never change because another directory was built, and they can be chosen before
the directory's shards exist: the shard plan marks the `CANDIDATES` lowest-ranked steps (at the
default seed), and the writer draws their pictures from the frames it holds anyway, so the
preview decodes no frame again. Any other step the preview needs (another seed, a larger count,
a step of an episode the writer left out) is drawn from its stored chunk by the preview itself
and added to the same cache.

The cache: `_work/<directory>/preview_frames/<shard sha256>.parquet`, one row (demo, step,
frame JPEG, eye JPEG) per step, named by the content of the shard its pictures show, so a
rebuilt shard never meets stale pictures. The pictures are a pure function of the stored
pixels, so a cached picture and a freshly drawn one are the same bytes.
"""

from __future__ import annotations

import hashlib
import heapq
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.core.atomic import atomic_path, atomic_write_text
from gui_assets.pipeline.shard_records import ShardFiles

FRAME_WIDTH = 640
JPEG_QUALITY = 85
DEFAULT_SEED = 0
DEFAULT_COUNT = 665
CANDIDATES = DEFAULT_COUNT  # a directory never shows more steps than the whole preview holds
FRAMES_DIR = "preview_frames"
RANKS_FILE = "ranks.json"

CACHE_SCHEMA = pa.schema(
    [("demo", pa.string()), ("step", pa.int32()), ("frame", pa.binary()), ("eye", pa.binary())]
)
StepPictures = tuple[bytes, bytes]  # (frame JPEG, eye-in-hand JPEG)


def step_rank(seed: int, directory: str, episode_id: str, step: int) -> int:
    digest = hashlib.blake2b(f"{seed}\0{directory}\0{episode_id}\0{step}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def lowest_ranked(
    seed: int, directory: str, episodes: Iterable[tuple[str, int]], count: int
) -> dict[str, list[int]]:
    """episode id -> the step indices, of the `count` lowest-ranked steps of these episodes."""
    ranked = heapq.nsmallest(
        count,
        ((step_rank(seed, directory, e, t), e, t) for e, steps in episodes for t in range(steps)),
    )
    chosen: dict[str, list[int]] = {}
    for _, e, t in sorted(ranked, key=lambda r: (r[1], r[2])):
        chosen.setdefault(e, []).append(t)
    return chosen


def _jpeg(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def frame_jpeg(frame: np.ndarray) -> bytes:
    """The stored frame, FRAME_WIDTH wide. Bicubic after an integer box reduction
    (reducing_gap=1): about 7x faster than plain bicubic from full size, and a picture a viewer
    cannot tell from it."""
    im = Image.fromarray(frame)
    if im.width != FRAME_WIDTH:
        size = (FRAME_WIDTH, max(1, round(im.height * FRAME_WIDTH / im.width)))
        im = im.resize(size, Image.Resampling.BICUBIC, reducing_gap=1.0)
    return _jpeg(im)


def eye_jpeg(eye: np.ndarray) -> bytes:
    return _jpeg(Image.fromarray(eye))


def pictures(frame: np.ndarray, eye: np.ndarray) -> StepPictures:
    return frame_jpeg(frame), eye_jpeg(eye)


def frames_dir(work: Path) -> Path:
    """The cache folder of one directory, under its `_work/<directory>`."""
    return work / FRAMES_DIR


PictureKey = tuple[str, int]  # (demo, step)


class PictureFile:
    """A shard's pictures written as the shard is: opened at the first row, one row group per demo."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: pq.ParquetWriter | None = None

    def add_demo(self, demo: str, rows: list[tuple[int, StepPictures]]) -> None:
        if not rows:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, CACHE_SCHEMA)
        batch = {
            "demo": [demo] * len(rows),
            "step": [t for t, _ in rows],
            "frame": [p[0] for _, p in rows],
            "eye": [p[1] for _, p in rows],
        }
        self._writer.write_table(pa.Table.from_pydict(batch, schema=CACHE_SCHEMA))

    def close(self) -> bool:
        """Finish the file; False when no row was written (and no file exists)."""
        if self._writer is None:
            return False
        self._writer.close()
        self._writer = None
        return True


_READ_ROWS = 32  # cached pictures read (and written as a row group) at a time


class PictureCache(ShardFiles):
    """The pictures of one directory's shards, by shard sha256, demo and step."""

    def keys(self, sha256: str) -> set[tuple[str, int]]:
        """The (demo, step) keys the cache holds for this shard (an unreadable file: none)."""
        path = self.path(sha256)
        if not path.is_file():
            return set()
        try:
            table = pq.read_table(path, columns=["demo", "step"])
        except (OSError, pa.ArrowException):
            return set()
        return set(zip(table.column("demo").to_pylist(), table.column("step").to_pylist(), strict=True))

    def stream(self, sha256: str, wanted: set[tuple[str, int]]) -> Iterator[tuple[PictureKey, StepPictures]]:
        """The wanted pictures in the file's order (demo, then step), a few rows at a time: the
        file holds every candidate's pictures, and a whole read with its copies costs ~200 MB of
        RSS for ~30 MB of pictures. Raises OSError / ArrowException on a damaged file."""
        cached = pq.ParquetFile(self.path(sha256), pre_buffer=False, buffer_size=1 << 20)
        for batch in cached.iter_batches(batch_size=_READ_ROWS):
            keys = zip(batch.column("demo").to_pylist(), batch.column("step").to_pylist(), strict=True)
            hits = [(i, key) for i, key in enumerate(keys) if key in wanted]
            if not hits:
                continue
            rows = pa.array([i for i, _ in hits], pa.int32())  # one take per column, not a scalar per cell
            frames = batch.column("frame").take(rows).to_pylist()
            eyes = batch.column("eye").take(rows).to_pylist()
            for (_, key), frame, eye in zip(hits, frames, eyes, strict=True):
                yield key, (frame, eye)

    def add(self, sha256: str, rows: dict[tuple[str, int], StepPictures]) -> None:
        """Merge pictures into the shard's cache file (rewritten atomically)."""
        if not rows:
            return
        path = self.path(sha256)
        merged: dict[tuple[str, int], StepPictures] = {}
        if path.is_file():
            try:
                t = pq.read_table(path)
                for d, s, f, e in zip(*(t.column(c).to_pylist() for c in CACHE_SCHEMA.names), strict=True):
                    merged[(d, s)] = (f, e)
            except (OSError, pa.ArrowException):
                merged = {}
        merged.update(rows)
        keys = sorted(merged, key=lambda k: (int(k[0][5:]), k[1]))
        table = pa.Table.from_pydict(
            {
                "demo": [k[0] for k in keys],
                "step": [k[1] for k in keys],
                "frame": [merged[k][0] for k in keys],
                "eye": [merged[k][1] for k in keys],
            },
            schema=CACHE_SCHEMA,
        )
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, row_group_size=_READ_ROWS)

    # The ranks of a directory's steps, kept so an unchanged directory is not scanned again.

    def read_ranks(self, key: dict[str, Any]) -> list[tuple[int, str, int]] | None:
        """The (shard index, demo, step) list written under exactly this key, or None."""
        path = self.folder / RANKS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            return [(int(i), str(d), int(t)) for i, d, t in data["steps"]]
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def write_ranks(self, key: dict[str, Any], steps: list[tuple[int, str, int]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.folder / RANKS_FILE, json.dumps({"key": key, "steps": steps}) + "\n")
