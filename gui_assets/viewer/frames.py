"""Frames for the browser: one HDF5 chunk per request, inflated and encoded as PNG, kept in a
small LRU cache, with the next step encoded ahead on a background thread."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import h5py
import numpy as np

from gui_assets.core.png import COLOUR_TYPES, encode_pixels
from gui_assets.core.shard_reader import inflate, read_chunk
from gui_assets.viewer.catalog import NotServed, UnreadableShard, demo_names, file_version

FRAME_DATASETS = {
    "agentview": "obs/agentview_rgb",
    "eye": "obs/eye_in_hand_rgb",
    "terminal": "obs/terminal_rgb",
}

Value = TypeVar("Value")


class FrameError(ValueError):
    """A stored frame that cannot be shown (not uint8, a chunk of the wrong size): HTTP 422."""


def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG of an (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) uint8 array: Up-filtered rows and
    libdeflate at level 1 (a 1920x1080 screenshot in a few milliseconds, ten times Pillow's speed)."""
    if pixels.dtype != np.uint8:
        raise FrameError(f"frame dtype {pixels.dtype}, not uint8")
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[2] not in COLOUR_TYPES or 0 in pixels.shape:
        raise FrameError(f"frame shape {pixels.shape} is not (H, W, 1|3|4)")
    return encode_pixels(pixels, level=1)


class ShardPool:
    """Open h5py files, a few at a time, reopened when a file changes on disk. h5py serializes
    its calls anyway, so reads run one at a time under one lock; inflating and encoding, which
    release the GIL, run outside it on the request threads."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._open: OrderedDict[Path, tuple[str, h5py.File]] = OrderedDict()

    def read(self, path: Path, reader: Callable[[h5py.File], Value]) -> Value:
        with self._lock:
            return reader(self._file(path))

    def _file(self, path: Path) -> h5py.File:
        version = file_version(path)
        held = self._open.get(path)
        if held is not None and held[0] == version:
            self._open.move_to_end(path)
            return held[1]
        if held is not None:
            held[1].close()
            del self._open[path]
        try:
            f = h5py.File(path, "r")
        except OSError as e:
            raise UnreadableShard(f"h5py cannot open {path.name}: {e}") from None
        self._open[path] = (version, f)
        while len(self._open) > self.size:
            _, (_, oldest) = self._open.popitem(last=False)
            oldest.close()
        return f

    def close(self) -> None:
        with self._lock:
            for _, f in self._open.values():
                f.close()
            self._open.clear()


def frame_dataset(f: h5py.File, demo: str, kind: str) -> h5py.Dataset:
    """The frame dataset of one kind (agentview, eye, terminal) in one demo."""
    if kind not in FRAME_DATASETS:
        raise NotServed(f"no frame kind {kind!r} (one of {', '.join(FRAME_DATASETS)})")
    data = f.get("data")
    if not isinstance(data, h5py.Group) or demo not in demo_names(data):
        raise NotServed(f"no demo {demo!r}")
    dset = data[demo].get(FRAME_DATASETS[kind])
    if not isinstance(dset, h5py.Dataset) or dset.ndim < 3:
        raise NotServed(f"{demo} has no {FRAME_DATASETS[kind]} frames")
    return dset


def read_frame(pool: ShardPool, path: Path, demo: str, kind: str, step: int) -> np.ndarray:
    """Frame `step` of a demo: one chunk read under the pool's lock, inflated outside it."""

    def raw(f: h5py.File) -> tuple[bytes | np.ndarray, tuple[int, ...], np.dtype]:
        dset = frame_dataset(f, demo, kind)
        if not 0 <= step < dset.shape[0]:
            raise NotServed(f"{demo} has no step {step} ({dset.shape[0]} frames)")
        return read_chunk(dset, step), dset.shape[1:], dset.dtype

    chunk, shape, dtype = pool.read(path, raw)
    if dtype != np.uint8:
        raise FrameError(f"{demo}/{FRAME_DATASETS[kind]} is {dtype}, not uint8")
    try:
        return inflate(chunk, shape)
    except (zlib.error, ValueError) as e:  # inflate raises zlib.error for libdeflate's errors too
        raise FrameError(f"{demo}/{FRAME_DATASETS[kind]}[{step}] does not inflate to {shape}: {e}") from None


class FrameCache:
    """Encoded frames by key, least recently used evicted past `budget_bytes`. Two requests for
    one key encode it once (the second waits); `prefetch` encodes a key on a background thread."""

    def __init__(self, budget_bytes: int = 64 * 2**20) -> None:
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bytes = 0
        self._pending: dict[Hashable, Future[bytes]] = {}
        self._ahead = ThreadPoolExecutor(1, thread_name_prefix="viewer-prefetch")

    def get(self, key: Hashable, make: Callable[[], bytes]) -> bytes:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
            waiting = self._pending.get(key)
            if waiting is None:
                mine: Future[bytes] = Future()
                self._pending[key] = mine
        if waiting is not None:
            return waiting.result()
        try:
            value = make()
        except Exception as e:  # handed to any request waiting on this key, then raised here too
            with self._lock:
                self._pending.pop(key, None)
            mine.set_exception(e)
            raise
        self._store(key, value)
        mine.set_result(value)
        return value

    def _store(self, key: Hashable, value: bytes) -> None:
        """Cache `value` and end its pending entry in one step, so no request sees neither."""
        with self._lock:
            self._pending.pop(key, None)
            if key in self._items or len(value) > self.budget_bytes:
                return
            self._items[key] = value
            self._bytes += len(value)
            while self._bytes > self.budget_bytes:
                _, old = self._items.popitem(last=False)
                self._bytes -= len(old)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items or key in self._pending

    def prefetch(self, key: Hashable, make: Callable[[], bytes]) -> None:
        """Encode `key` ahead unless it is cached or under way; a failure (a step past the end)
        stays in the discarded future: the request that really asks for it reports it."""
        if key not in self:
            self._ahead.submit(self.get, key, make)

    def close(self) -> None:
        self._ahead.shutdown(wait=False, cancel_futures=True)
