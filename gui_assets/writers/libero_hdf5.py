"""IR episodes -> LIBERO-layout HDF5 shards (`<directory>_NNNN.hdf5`, spec/output-format.md).

Streaming: frames are decoded, cropped and written one step at a time into datasets sized for
the episode, so memory holds one decoded screenshot (reused across the SCROLL steps that view
the same page) plus an episode's small arrays, never a shard. Frames are chunked one per chunk
(random frame reads stay fast for training) and gzip-compressed (a built-in HDF5 filter: any
LIBERO/robomimic loader reads it with plain h5py).

Shards roll on a demo boundary before an episode that is expected (from the running bytes per
step) to pass the cap, so a shard overshoots the cap by less than one episode. All shards are
written into a hidden staging folder and moved into place when the writer closes, then shards
of an earlier, longer build are removed: a killed build leaves the previous shards untouched.

Drop reason at this stage: undecodable_image (bytes that passed the adapter's header check but
do not decode); the episode is removed from the shard and counted.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from PIL import Image

from gui_assets.atomic import sha256_file, sweep_temps
from gui_assets.config import BuildConfig
from gui_assets.cursor import EYE_SIZE, SCREEN_CENTRE, eye_rect, eye_window, inside, next_cursor
from gui_assets.episode_store import ImageStore
from gui_assets.images import ImageError, decode_rgb
from gui_assets.ir import ACTION_TYPE_NAMES, PARAM_NAMES, POINTER_TYPES, ActionType, DropReason, GuiEpisode
from gui_assets.layout import ShardEntry, shard_name, shard_pattern
from gui_assets.stats import BuildStats

TAG = "gui-agent-v1"
STR = h5py.string_dtype("utf-8")

# The /data/demo_i contract (name -> per-step shape, dtype); validated before every write.
DEMO_DATASETS: dict[str, tuple[tuple[int, ...], Any]] = {
    "actions": ((7,), np.float32),
    "action_type": ((), np.int64),
    "action_params": ((4,), np.float32),
    "action_mask": ((4,), np.float32),
    "action_text": ((), STR),
    "action_desc": ((), STR),
    "dones": ((), np.uint8),
    "rewards": ((), np.uint8),
    "states": ((5,), np.float32),
    "robot_states": ((2,), np.float32),
    "eye_rect": ((4,), np.float32),
    "native_hw": ((2,), np.int32),
    "step_thought": ((), STR),
    "obs_stale": ((), np.uint8),
    "obs/cursor_states": ((2,), np.float32),
    "obs/scroll_states": ((2,), np.float32),
    "obs/gripper_states": ((2,), np.float32),
    "obs/joint_states": ((7,), np.float32),
}


@dataclass(slots=True)
class WriterStats:
    """What the writer measured: the eye-in-hand leakage figure and its own drops."""

    pointer_steps: int = 0
    target_inside_eye: int = 0
    episodes_written: int = 0
    steps_written: int = 0
    build_stats: BuildStats = field(default_factory=BuildStats)


class _FrameCache:
    """Decoded screenshots by sha256; a page viewed by several SCROLL steps is decoded once."""

    def __init__(self, images: ImageStore, capacity: int = 2) -> None:
        self.images = images
        self.capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def get(self, sha: str, ext: str) -> np.ndarray:
        if sha in self._cache:
            self._cache.move_to_end(sha)
            return self._cache[sha]
        arr = decode_rgb(self.images.get(sha, ext))
        self._cache[sha] = arr
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return arr


def _window(page: np.ndarray, left: int, top: int, width: int, height: int) -> np.ndarray:
    frame = page[top : top + height, left : left + width]
    if frame.shape[0] != height or frame.shape[1] != width:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"window {width}x{height}+{left}+{top} outside image")
    return frame


def _eye_crop(frame: np.ndarray, x0: int, y0: int) -> np.ndarray:
    crop = frame[y0 : y0 + EYE_SIZE, x0 : x0 + EYE_SIZE]
    if crop.shape[:2] != (EYE_SIZE, EYE_SIZE):  # a frame smaller than the window: pad, never stretch
        out = np.zeros((EYE_SIZE, EYE_SIZE, 3), np.uint8)
        out[: crop.shape[0], : crop.shape[1]] = crop
        return out
    return crop


def sweep_directory(out_dir: Path) -> None:
    """Remove what a killed build left in a shard directory (temp files, staging folders).

    Call once before opening the writers of a directory, never while one is writing.
    """
    sweep_temps(out_dir)
    if out_dir.is_dir():
        for stale in out_dir.glob(".staging-*"):
            shutil.rmtree(stale, ignore_errors=True)


class LiberoShardWriter:
    """open -> add_episode()* -> close() -> list[ShardEntry]."""

    def __init__(
        self,
        out_dir: Path,
        directory: str,
        source: str,
        images: ImageStore,
        config: BuildConfig,
        *,
        val: bool = False,
    ) -> None:
        self.out_dir = out_dir
        self.directory = directory
        self.source = source
        self.config = config
        self.val = val
        self.frames = _FrameCache(images)
        self.stats = WriterStats()
        out_dir.mkdir(parents=True, exist_ok=True)
        self.staging = out_dir / f".staging-{'val-' if val else ''}{os.getpid()}"
        self.staging.mkdir()
        self._file: h5py.File | None = None
        self._shard_index = 0
        self._demos = 0
        self._steps = 0
        self._bytes_per_step = 0.0
        self._entries: list[ShardEntry] = []
        self._closed = False

    # --- shard lifecycle -------------------------------------------------------------------

    def _open_shard(self) -> h5py.File:
        path = self.staging / shard_name(self.directory, self._shard_index, self.val)
        f = h5py.File(path, "w")
        f.create_group("data")
        self._demos = 0
        self._steps = 0
        return f

    def _finish_shard(self) -> None:
        f = self._file
        if f is None:
            return
        data = f["data"]
        data.attrs["env_name"] = f"gui_assets/{self.source}"
        data.attrs["env_args"] = json.dumps(
            {
                "type": "gui",
                "env_name": f"gui_assets/{self.source}",
                "env_kwargs": {
                    "source": self.source,
                    "directory": self.directory,
                    "image_convention": "opencv",
                },
            }
        )
        data.attrs["problem_info"] = json.dumps(
            {"problem_name": self.directory, "domain_name": self.source, "language_instruction": ""}
        )
        data.attrs["num_demos"] = self._demos
        data.attrs["total"] = self._steps
        data.attrs["tag"] = TAG
        data.attrs["gui_action_types"] = json.dumps(ACTION_TYPE_NAMES)
        data.attrs["gui_param_names"] = json.dumps(PARAM_NAMES)
        # Screenshots are stored upright; LIBERO's robosuite frames are flipped ("opengl").
        data.attrs["macros_image_convention"] = "opencv"
        path = Path(f.filename)
        f.close()
        self._file = None
        self._entries.append(
            ShardEntry(path.name, self._demos, self._steps, path.stat().st_size, sha256_file(path))
        )
        self._shard_index += 1

    def _current_bytes(self) -> int:
        assert self._file is not None
        self._file.flush()
        return int(self._file.id.get_filesize())

    # --- episodes --------------------------------------------------------------------------

    def add_episode(self, episode: GuiEpisode) -> bool:
        """Write one episode as the next demo_i; False when it was dropped (counted)."""
        if self._closed:
            raise RuntimeError("writer is closed")
        if not episode.steps:
            raise ValueError(f"{episode.episode_id}: an episode with no steps reached the writer")
        if self._file is not None and self._demos > 0:
            expected = self._current_bytes() + self._bytes_per_step * len(episode.steps)
            if expected > self.config.shard_cap_bytes:
                self._finish_shard()
        if self._file is None:
            self._file = self._open_shard()
        before = self._current_bytes()
        name = f"demo_{self._demos}"
        try:
            pointer, hits = self._write_demo(self._file["data"], name, episode)
        except ImageError as e:
            del self._file["data"][name]
            self.stats.build_stats.drop(e.reason)
            return False
        grown = self._current_bytes() - before
        self._demos += 1
        self._steps += len(episode.steps)
        written = self.stats.steps_written + len(episode.steps)
        self._bytes_per_step = (self._bytes_per_step * self.stats.steps_written + grown) / written
        self.stats.steps_written = written
        self.stats.episodes_written += 1
        self.stats.pointer_steps += pointer
        self.stats.target_inside_eye += hits
        self.stats.build_stats.count_episode(episode)
        return True

    def _write_demo(self, data: h5py.Group, name: str, ep: GuiEpisode) -> tuple[int, int]:
        T = len(ep.steps)
        demo = data.create_group(name)
        obs = demo.create_group("obs")
        arrays: dict[str, np.ndarray] = {
            k: np.zeros((T, *shape), dtype=object if dt is STR else dt)
            for k, (shape, dt) in DEMO_DATASETS.items()
        }
        agentview: h5py.Dataset | None = None
        eye = obs.create_dataset(
            "eye_in_hand_rgb",
            shape=(T, EYE_SIZE, EYE_SIZE, 3),
            dtype=np.uint8,
            chunks=(1, EYE_SIZE, EYE_SIZE, 3),
            compression="gzip",
            compression_opts=self.config.gzip_level,
        )
        pointer_steps = hits = 0
        cursor = SCREEN_CENTRE
        for t, step in enumerate(ep.steps):
            o = step.observation
            frame = _window(self.frames.get(o.image_sha256, o.image_ext), o.left, o.top, o.width, o.height)
            h, w = frame.shape[:2]
            x0, y0 = eye_window(cursor, w, h)
            rect = eye_rect(x0, y0, w, h)
            eye[t] = _eye_crop(frame, x0, y0)
            if agentview is None:
                agentview = obs.create_dataset(
                    "agentview_rgb",
                    shape=(T, h, w, 3),
                    dtype=np.uint8,
                    chunks=(1, h, w, 3),
                    compression="gzip",
                    compression_opts=self.config.gzip_level,
                )
            H, W = agentview.shape[1:3]
            if (h, w) != (H, W):  # one H, W per demo; normalized coordinates survive the resize
                frame = np.asarray(Image.fromarray(frame).resize((W, H), Image.Resampling.BILINEAR))
            agentview[t] = frame
            a = arrays
            a["action_type"][t] = int(step.action_type)
            a["action_params"][t] = step.params
            a["action_mask"][t] = step.mask
            a["action_text"][t] = step.text
            a["action_desc"][t] = step.desc
            a["actions"][t] = [
                *step.params,
                int(step.action_type),
                1.0 if step.text else 0.0,
                float(sum(1 for m in step.mask if m == 0)),
            ]
            a["states"][t] = [cursor[0], cursor[1], step.scroll[0], step.scroll[1], t / T]
            a["robot_states"][t] = cursor
            a["obs/cursor_states"][t] = cursor
            a["obs/gripper_states"][t] = cursor
            a["obs/scroll_states"][t] = step.scroll
            a["eye_rect"][t] = rect
            a["native_hw"][t] = (h, w)
            a["step_thought"][t] = step.thought
            a["obs_stale"][t] = 1 if step.obs_stale else 0
            if step.grounded and step.action_type in POINTER_TYPES and step.action_type != ActionType.SCROLL:
                pointer_steps += 1
                hits += inside((step.params[0], step.params[1]), rect)
            # The next cursor comes from the params as stored (float32), so a reader of the shard
            # derives exactly this eye_rect: a window edge on a half pixel must round the same way.
            stored = tuple(float(v) for v in np.asarray(step.params, dtype=np.float32))
            cursor = next_cursor(cursor, step.action_type, stored, step.grounded)
        arrays["dones"][T - 1] = 1
        arrays["rewards"][T - 1] = 1 if ep.success else 0
        for key, arr in arrays.items():
            demo.create_dataset(key, data=arr, dtype=DEMO_DATASETS[key][1])
        demo.attrs["language_instruction"] = ep.instruction
        demo.attrs["num_samples"] = T
        demo.attrs["episode_id"] = ep.episode_id
        demo.attrs["source"] = ep.source
        demo.attrs["directory"] = self.directory
        demo.attrs["source_ref"] = ep.source_ref_json()
        demo.attrs["success"] = int(ep.success)
        for k, v in sorted(ep.attrs.items()):
            demo.attrs[k] = v
        return pointer_steps, hits

    # --- close -----------------------------------------------------------------------------

    def close(self) -> list[ShardEntry]:
        """Finish the last shard, move every shard into place, remove stale ones. Idempotent."""
        if self._closed:
            return list(self._entries)
        self._finish_shard()
        keep = set()
        for entry in self._entries:
            os.replace(self.staging / entry.file, self.out_dir / entry.file)
            keep.add(entry.file)
        pattern = shard_pattern(self.directory, self.val)
        for p in self.out_dir.iterdir():
            if pattern.fullmatch(p.name) and p.name not in keep:
                p.unlink()
        shutil.rmtree(self.staging, ignore_errors=True)
        self._closed = True
        return list(self._entries)

    def abort(self) -> None:
        """Drop everything written so far; the shards of an earlier build stay as they were."""
        if self._file is not None:
            self._file.close()
            self._file = None
        shutil.rmtree(self.staging, ignore_errors=True)
        self._closed = True
