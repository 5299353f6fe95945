"""Rebuilds that cost what changed: a step's deflated frames are taken from the last published
shards when nothing that makes those bytes has changed.

A step's frame bytes are a function of its stored image, the window cut from it, the demo's
frame size, the eye crop's corner, the deflate level, and the code that decodes, crops
and deflates (the import closure of `gui_assets.writers.frames`). `step_key` hashes exactly
those. The writer records each published shard's keys (`<work>/frame_index/<shard sha256>.parquet`,
kept by content like the preview's pictures); the next build of the directory looks a step's
key up and, when found, copies the two stored chunks with `read_direct_chunk` instead of
decoding the page and deflating again. The copied bytes are the bytes the encoder would make,
so a rebuild that reuses writes the same shards as one from scratch; a one-row edit or a few
appended episodes cost the chunks' I/O, not the decode and deflate of every step.

A step drawn for the preview takes its pictures back too, from the last build's picture cache
(they are drawn from the same pixels by the same code, which the key covers); only a step that
was not drawn before is inflated and drawn.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.atomic import temp_path
from gui_assets.config import BuildConfig
from gui_assets.layout import OutLayout
from gui_assets.lineage import version_of
from gui_assets.writers.preview_frames import PictureCache, StepPictures, frames_dir

log = logging.getLogger(__name__)

INDEX_DIR = "frame_index"
_SCHEMA = pa.schema([("key", pa.binary(16)), ("demo", pa.string()), ("t", pa.int32())])


def library_versions() -> dict[str, str]:
    """The libraries whose versions can change output bytes (HDF5's layout, the deflaters, the
    decoders and the resize): a reused byte must be one a fresh build would write today."""
    import importlib.metadata as md

    out = {}
    for name in ("h5py", "imagecodecs", "pillow", "numpy", "pywuffs"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = ""
    import h5py

    out["hdf5"] = h5py.version.hdf5_version
    return out


def frames_version(config: BuildConfig) -> str:
    """What besides a step's own geometry makes its chunk bytes: the deflate level, the code
    and the libraries."""
    return version_of(["gui_assets.writers.frames"], [config.libdeflate_level, library_versions()])


def step_key(version: str, sha: str, ext: str, geometry: Sequence[int]) -> bytes:
    """16 bytes naming one step's frame and eye chunks (geometry: left, top, width, height,
    out_h, out_w, eye_x0, eye_y0)."""
    text = f"{version}|{sha}.{ext}|{','.join(str(int(v)) for v in geometry)}"
    return hashlib.sha256(text.encode()).digest()[:16]


def plan_keys(version: str, runs: Iterable[Any]) -> list[bytes]:
    """Every step's key of an episode plan's pixel runs (writers.frames.PixelRun), in step order."""
    return [step_key(version, run.sha, run.ext, geometry(s)) for run in runs for s in run.steps]


def geometry(s: Any) -> tuple[int, ...]:
    """A StepPixels' fields that shape its chunks."""
    return (s.left, s.top, s.width, s.height, s.out_h, s.out_w, s.eye_x0, s.eye_y0)


def index_dir(layout: OutLayout, directory: str) -> Path:
    return layout.work(directory) / INDEX_DIR


def index_file(shard: Path) -> Path:
    """Where the writer puts a shard's step keys, beside it, until publish files them by content."""
    return shard.with_name(shard.stem + ".frames.parquet")


def write_index(path: Path, rows: Iterable[tuple[bytes, str, int]]) -> None:
    keys, demos, ts = [], [], []
    for key, demo, t in rows:
        keys.append(key)
        demos.append(demo)
        ts.append(t)
    table = pa.table({"key": keys, "demo": demos, "t": ts}, schema=_SCHEMA)
    tmp = temp_path(path)
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)


def filed_index(layout: OutLayout, directory: str, shard_sha: str) -> Path:
    """Where publish keeps a published shard's step keys: by its content hash."""
    return index_dir(layout, directory) / f"{shard_sha}.parquet"


def file_index(layout: OutLayout, directory: str, shard_sha: str, drawn: Path) -> None:
    """Publish: keep a piece's step keys under its shard's content hash."""
    index_dir(layout, directory).mkdir(parents=True, exist_ok=True)
    drawn.replace(filed_index(layout, directory, shard_sha))


def keep_only(layout: OutLayout, directory: str, shas: set[str]) -> None:
    folder = index_dir(layout, directory)
    if folder.is_dir():
        for p in folder.glob("*.parquet"):
            if p.stem not in shas:
                p.unlink(missing_ok=True)


@dataclass
class FrameReuse:
    """The last published shards' chunks (and pictures), by step key; reads are safe from the
    encoder's threads."""

    version: str
    where: dict[bytes, tuple[Path, str, int]]
    shard_sha: dict[Path, str] = field(default_factory=dict)
    pictures_cache: PictureCache | None = None
    _files: dict[Path, h5py.File] = field(default_factory=dict)
    _datasets: dict[tuple[Path, str], tuple[Any, Any]] = field(default_factory=dict)
    _pictures: dict[Path, dict[tuple[str, int], StepPictures]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    reused: int = 0

    @classmethod
    def load(cls, layout: OutLayout, directory: str, config: BuildConfig) -> FrameReuse | None:
        """None when nothing was published with an index."""
        try:
            manifest = json.loads(layout.shard_manifest(directory).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        where: dict[bytes, tuple[Path, str, int]] = {}
        shas: dict[Path, str] = {}
        out_dir = layout.directory(directory)
        for entry in [*manifest.get("shards", []), *manifest.get("val_shards", [])]:
            shard, index = out_dir / entry["file"], filed_index(layout, directory, entry["sha256"])
            if not (shard.is_file() and index.is_file()) or shard.stat().st_size != entry["bytes"]:
                continue
            shas[shard] = entry["sha256"]
            table = pq.read_table(index).to_pydict()
            for key, demo, t in zip(table["key"], table["demo"], table["t"], strict=True):
                where[key] = (shard, demo, t)
        if not where:
            return None
        return cls(frames_version(config), where, shas, PictureCache(frames_dir(layout.work(directory))))

    def _frames_of(self, shard: Path, demo: str) -> tuple[Any, Any]:
        """The demo's two frame datasets (opened once per demo, under the lock)."""
        held = self._datasets.get((shard, demo))
        if held is None:
            f = self._files.get(shard)
            if f is None:
                f = self._files[shard] = h5py.File(shard, "r")
            obs = f["data"][demo]["obs"]
            held = self._datasets[(shard, demo)] = (obs["agentview_rgb"].id, obs["eye_in_hand_rgb"].id)
        return held

    def chunks(self, keys: Sequence[bytes]) -> list[tuple[bytes, bytes]] | None:
        """(frame chunk, eye chunk) per key, or None unless every key is held."""
        spots = [self.where.get(k) for k in keys]
        if any(s is None for s in spots):
            return None
        out = []
        with self._lock:  # h5py serializes anyway; the lock guards the open-file table
            for shard, demo, t in spots:  # type: ignore[misc]
                pair = []
                for dataset in self._frames_of(shard, demo):
                    mask, data = dataset.read_direct_chunk((t, 0, 0, 0))
                    if mask:  # a filter was skipped on this chunk: not the bytes the encoder makes
                        return None
                    pair.append(bytes(data))
                out.append((pair[0], pair[1]))
            self.reused += len(out)
        return out

    def pictures(self, key: bytes) -> StepPictures | None:
        """The preview pictures the last build drew for this step, if it drew them."""
        spot = self.where.get(key)
        if spot is None or self.pictures_cache is None:
            return None
        shard, demo, t = spot
        with self._lock:
            drawn = self._pictures.get(shard)
            if drawn is None:  # one shard's candidates: a few MB of JPEG, read once
                sha = self.shard_sha.get(shard, "")
                try:
                    drawn = dict(self.pictures_cache.stream(sha, self.pictures_cache.keys(sha)))
                except (OSError, pa.ArrowException):
                    drawn = {}
                self._pictures[shard] = drawn
        return drawn.get((demo, t))

    def close(self) -> None:
        with self._lock:
            self._datasets.clear()
            self._pictures.clear()
            for f in self._files.values():
                f.close()
            self._files.clear()
