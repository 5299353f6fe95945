"""Reading built shards the way the checks, the preview and the contact sheet need: demos in
order, raw frame chunks (inflated on threads, not by HDF5's filter), pixel comparison, and a
small thread pool that compares sampled frames as they are read."""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Generic, TypeVar

import h5py
import numpy as np
from imagecodecs import DeflateError, deflate_decode

from gui_assets.core.config import usable_cpus
from gui_assets.core.layout import shard_pattern

Job = TypeVar("Job")
Result = TypeVar("Result")
BATCH = 64  # sampled frames held (compressed) before they are compared


def shard_files(directory: Path, name: str) -> list[Path]:
    """The main and val shard series of a directory, in order."""
    files = []
    for val in (False, True):
        pat = shard_pattern(name, val)
        files += sorted(p for p in directory.glob("*.hdf5") if pat.fullmatch(p.name))
    return files


def demos(shards: list[Path]) -> Iterator[tuple[str, h5py.Group]]:
    """("<shard>/demo_i", group) of every demo, shards in order, demos by number."""
    for path in shards:
        with h5py.File(path, "r") as f:
            for name in sorted(f["data"], key=lambda k: int(k[5:])):
                yield f"{path.name}/{name}", f["data"][name]


def text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def read_chunk(dset: h5py.Dataset, t: int) -> bytes | np.ndarray:
    """Frame t of a one-frame-per-chunk gzip dataset as its stored zlib stream (no HDF5 filter
    work, so callers can inflate on threads), or the decoded frame for any other layout."""
    if (
        dset.compression == "gzip"
        and dset.chunks == (1, *dset.shape[1:])
        and not dset.shuffle
        and not dset.fletcher32
        and dset.scaleoffset is None
    ):
        mask, raw = dset.id.read_direct_chunk((t,) + (0,) * (dset.ndim - 1))
        if mask == 0:
            return raw
    return dset[t]


def inflate(chunk: bytes | np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(chunk, np.ndarray):
        return chunk
    try:  # libdeflate into a buffer of the frame's size: ~3x zlib's speed, GIL released
        raw = deflate_decode(chunk, out=math.prod(shape))
    except DeflateError as e:  # the same outcome as zlib's for a chunk that does not inflate
        raise zlib.error(str(e)) from e
    return np.frombuffer(raw, np.uint8).reshape(shape)


def close_pixels(a: np.ndarray, b: np.ndarray, tolerance: float = 1.0) -> bool:
    """Mean absolute difference at most `tolerance` (identical frames, the usual case, exit early)."""
    if a.shape != b.shape:
        return False
    if np.array_equal(a, b):
        return True
    return bool(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean() <= tolerance)


PIXEL_SAMPLES = 64  # frames a check reads pixels of, per partition, whatever its size


def count_steps(shards: list[Path]) -> int:
    """Steps in these shards, from each shard's `total` attribute (its demos' when it has none:
    a shard some other writer made)."""
    total = 0
    for path in shards:
        with h5py.File(path, "r") as f:
            data = f["data"]
            if "total" in data.attrs:
                total += int(data.attrs["total"])
            else:
                total += sum(_demo_steps(d) for d in data.values())
    return total


def _demo_steps(demo: h5py.Group) -> int:
    if "num_samples" in demo.attrs:
        return int(demo.attrs["num_samples"])
    return int(demo["action_type"].shape[0]) if "action_type" in demo else 0


class StepSample:
    """A fixed number of steps drawn from a partition, so a check that reads pixels costs the same
    at any size. The draw is seeded by the step count (the same shards, the same steps) and
    spread at random over every step, so no episode length or shard boundary aliases it onto one
    step position. Demos are visited in order and `take(T)` answers which of the next demo's T
    steps are drawn."""

    def __init__(self, total: int, size: int = PIXEL_SAMPLES) -> None:
        picked = random.Random(f"gui_assets:{total}").sample(range(total), min(size, total))
        self._positions = sorted(picked)
        self._next = 0
        self._offset = 0
        self.size = len(picked)

    def take(self, T: int) -> list[int]:
        end = self._offset + T
        out = []
        while self._next < len(self._positions) and self._positions[self._next] < end:
            out.append(self._positions[self._next] - self._offset)
            self._next += 1
        self._offset = end
        return out


class ThreadedCompare(Generic[Job, Result]):
    """Jobs read on the calling thread (HDF5 is serial), compared on a pool (inflate and
    decode release the GIL) a batch at a time, so memory holds one batch of compressed frames."""

    def __init__(self, compare: Callable[[Job], Result], on_result: Callable[[Job, Result], None]) -> None:
        self.compare = compare
        self.on_result = on_result
        self.jobs: list[Job] = []
        self.pool = ThreadPoolExecutor(usable_cpus())

    def add(self, job: Job) -> None:
        self.jobs.append(job)
        if len(self.jobs) >= BATCH:
            self.flush()

    def flush(self) -> None:
        for job, result in zip(self.jobs, self.pool.map(self.compare, self.jobs), strict=True):
            self.on_result(job, result)
        self.jobs.clear()

    def __enter__(self) -> ThreadedCompare[Job, Result]:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.flush()
        self.pool.shutdown(wait=True, cancel_futures=True)
