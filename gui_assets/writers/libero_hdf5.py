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

import contextlib
import json
import os
import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from PIL import Image

from gui_assets.atomic import sha256_file, sweep_temps
from gui_assets.config import BuildConfig, frame_deflater, usable_cpus
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


def crop_window(page: np.ndarray, left: int, top: int, width: int, height: int) -> np.ndarray:
    frame = page[top : top + height, left : left + width]
    if frame.shape[0] != height or frame.shape[1] != width:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"window {width}x{height}+{left}+{top} outside image")
    return frame


def eye_crop(frame: np.ndarray, x0: int, y0: int) -> np.ndarray:
    crop = frame[y0 : y0 + EYE_SIZE, x0 : x0 + EYE_SIZE]
    if crop.shape[:2] != (EYE_SIZE, EYE_SIZE):  # a frame smaller than the window: pad, never stretch
        out = np.zeros((EYE_SIZE, EYE_SIZE, 3), np.uint8)
        out[: crop.shape[0], : crop.shape[1]] = crop
        return out
    return crop


@dataclass(frozen=True, slots=True)
class StepPixels:
    """What a worker needs to make one step's chunks; all geometry is settled beforehand."""

    left: int
    top: int
    width: int
    height: int
    out_h: int  # the demo's frame size; a step of another size is resized to it
    out_w: int
    eye_x0: int
    eye_y0: int


@dataclass(frozen=True, slots=True)
class PixelRun:
    """Consecutive steps over one stored image (a page and its SCROLL views): decoded once."""

    sha: str
    ext: str
    steps: tuple[StepPixels, ...]


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    """An episode with its causal cursor and eye windows worked out: no pixels needed."""

    episode: GuiEpisode
    frame_hw: tuple[int, int]
    cursors: tuple[tuple[float, float], ...]
    rects: tuple[tuple[float, float, float, float], ...]
    native_hw: tuple[tuple[int, int], ...]
    runs: tuple[PixelRun, ...]


def plan_episode(ep: GuiEpisode) -> EpisodePlan:
    if not ep.steps:
        raise ValueError(f"{ep.episode_id}: an episode with no steps reached the writer")
    first = ep.steps[0].observation
    H, W = first.height, first.width
    cursors, rects, native, runs = [], [], [], []
    run_steps: list[StepPixels] = []
    run_key: tuple[str, str] | None = None
    cursor = SCREEN_CENTRE
    for step in ep.steps:
        o = step.observation
        x0, y0 = eye_window(cursor, o.width, o.height)
        cursors.append(cursor)
        rects.append(eye_rect(x0, y0, o.width, o.height))
        native.append((o.height, o.width))
        if run_key != (o.image_sha256, o.image_ext) and run_steps:
            runs.append(PixelRun(run_key[0], run_key[1], tuple(run_steps)))  # type: ignore[index]
            run_steps = []
        run_key = (o.image_sha256, o.image_ext)
        run_steps.append(StepPixels(o.left, o.top, o.width, o.height, H, W, x0, y0))
        # The next cursor comes from the params as stored (float32), so a reader of the shard
        # derives exactly this eye_rect: a window edge on a half pixel must round the same way.
        stored = tuple(float(v) for v in np.asarray(step.params, dtype=np.float32))
        cursor = next_cursor(cursor, step.action_type, stored, step.grounded)
    runs.append(PixelRun(run_key[0], run_key[1], tuple(run_steps)))  # type: ignore[index]
    return EpisodePlan(ep, (H, W), tuple(cursors), tuple(rects), tuple(native), tuple(runs))


# Per step, (agentview, eye_in_hand): deflated chunks (bytes) for direct writes, or the pixel
# arrays for h5py's filter.
StepChunks = tuple[bytes | np.ndarray, bytes | np.ndarray]


class EpisodeChunks:
    """One episode's step chunks, in order, as the encoder finishes them.

    Iterating raises ImageError at the first step whose image would not decode; `skip()`
    discards whatever the consumer did not take, so the stream stays aligned.
    """

    def __init__(self, stream: Iterator[tuple[bool, list[StepChunks] | ImageError]]) -> None:
        self._stream = stream
        self._done = False

    def __iter__(self) -> Iterator[StepChunks]:
        while not self._done:
            last, result = next(self._stream)
            self._done = last
            if isinstance(result, ImageError):
                self.skip()
                raise result
            yield from result

    def skip(self) -> None:
        while not self._done:
            self._done, _ = next(self._stream)


class FrameEncoder:
    """Decodes, crops and deflates steps on a thread pool; results come back in order.

    At most `window` runs are in flight, so memory is bounded by the threads' decoded pages
    plus a window of finished chunks, whatever the episode or shard size.
    """

    def __init__(self, images: ImageStore, config: BuildConfig, threads: int | None = None) -> None:
        self.images = images
        self.direct = config.frame_codec == "isal"
        self._compress = frame_deflater(config)
        self.threads = threads or usable_cpus()
        self.window = 2 * self.threads + 2
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gui-assets-frames")

    def _deflate(self, a: np.ndarray) -> bytes:
        return self._compress(memoryview(np.ascontiguousarray(a)).cast("B"))

    def _encode(self, run: PixelRun) -> list[StepChunks] | ImageError:
        try:
            page = decode_rgb(self.images.get(run.sha, run.ext))
            out: list[StepChunks] = []
            for s in run.steps:
                frame = crop_window(page, s.left, s.top, s.width, s.height)
                eye = eye_crop(frame, s.eye_x0, s.eye_y0)
                if frame.shape[:2] != (s.out_h, s.out_w):  # normalized coordinates survive the resize
                    frame = np.asarray(
                        Image.fromarray(frame).resize((s.out_w, s.out_h), Image.Resampling.BILINEAR)
                    )
                if self.direct:
                    out.append((self._deflate(frame), self._deflate(eye)))
                else:
                    out.append((np.ascontiguousarray(frame), np.ascontiguousarray(eye)))
            return out
        except ImageError as e:
            return e
        except FileNotFoundError as e:
            return ImageError(DropReason.UNDECODABLE_IMAGE, f"image missing from the store: {e.filename}")

    def episodes(self, plans: Iterable[EpisodePlan]) -> Iterator[tuple[EpisodePlan, EpisodeChunks]]:
        """(plan, its chunks) per plan, in order; later episodes are encoded ahead."""
        order: deque[EpisodePlan] = deque()
        flat = self._flat(plans, order)
        while True:
            try:
                first = next(flat)
            except StopIteration:
                return
            plan = order.popleft()
            chunks = EpisodeChunks(_prepend(first, flat))
            yield plan, chunks
            chunks.skip()

    def _flat(
        self, plans: Iterable[EpisodePlan], order: deque[EpisodePlan]
    ) -> Iterator[tuple[bool, list[StepChunks] | ImageError]]:
        def runs() -> Iterator[tuple[bool, PixelRun]]:
            for plan in plans:
                order.append(plan)
                for i, run in enumerate(plan.runs):
                    yield i == len(plan.runs) - 1, run

        source = runs()
        futures: deque[tuple[bool, Future[list[StepChunks] | ImageError]]] = deque()

        def top_up() -> None:
            while len(futures) < self.window:
                nxt = next(source, None)
                if nxt is None:
                    return
                futures.append((nxt[0], self._pool.submit(self._encode, nxt[1])))

        try:
            top_up()
            while futures:
                last, fut = futures.popleft()
                result = fut.result()
                top_up()
                yield last, result
        finally:
            for _, fut in futures:
                fut.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> FrameEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _prepend(first: tuple[bool, Any], rest: Iterator[tuple[bool, Any]]) -> Iterator[tuple[bool, Any]]:
    yield first
    if first[0]:
        return
    for item in rest:
        yield item
        if item[0]:
            return


def sweep_directory(out_dir: Path) -> None:
    """Remove what a killed build left in a shard directory (temp files, staging folders).

    Call once before opening the writers of a directory, never while one is writing.
    """
    sweep_temps(out_dir)
    if out_dir.is_dir():
        for stale in out_dir.glob(".staging-*"):
            shutil.rmtree(stale, ignore_errors=True)


class LiberoShardWriter:
    """open -> add_episode(plan, chunks)* -> close() -> list[ShardEntry].

    `write_episodes` drives it from plain episodes with its own FrameEncoder.
    """

    def __init__(
        self,
        out_dir: Path,
        directory: str,
        source: str,
        config: BuildConfig,
        *,
        val: bool = False,
        name_of: Callable[[int], str] | None = None,
    ) -> None:
        self.out_dir = out_dir
        # File name of the i-th shard this writer makes (a sharding unit names them pieces).
        self.name_of = name_of or (lambda i: shard_name(directory, i, val))
        self.directory = directory
        self.source = source
        self.config = config
        self.val = val
        self.direct = config.frame_codec == "isal"
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
        path = self.staging / self.name_of(self._shard_index)
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

    def add_episode(self, plan: EpisodePlan, chunks: Iterable[StepChunks]) -> bool:
        """Write one episode as the next demo_i; False when it was dropped (counted)."""
        episode = plan.episode
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
            pointer, hits = self._write_demo(self._file["data"], name, plan, chunks)
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

    def _frames(self, obs: h5py.Group, name: str, shape: tuple[int, ...]) -> h5py.Dataset:
        return obs.create_dataset(
            name,
            shape=shape,
            dtype=np.uint8,
            chunks=(1, *shape[1:]),  # one frame per chunk: a random frame read inflates one chunk
            compression="gzip",
            compression_opts=self.config.gzip_level,
        )

    def _write_demo(
        self, data: h5py.Group, name: str, plan: EpisodePlan, chunks: Iterable[StepChunks]
    ) -> tuple[int, int]:
        ep = plan.episode
        T = len(ep.steps)
        H, W = plan.frame_hw
        demo = data.create_group(name)
        obs = demo.create_group("obs")
        arrays: dict[str, np.ndarray] = {
            k: np.zeros((T, *shape), dtype=object if dt is STR else dt)
            for k, (shape, dt) in DEMO_DATASETS.items()
        }
        agentview = self._frames(obs, "agentview_rgb", (T, H, W, 3))
        eye = self._frames(obs, "eye_in_hand_rgb", (T, EYE_SIZE, EYE_SIZE, 3))
        t = -1
        for t, (frame, crop) in enumerate(chunks):
            if self.direct:
                agentview.id.write_direct_chunk((t, 0, 0, 0), frame)
                eye.id.write_direct_chunk((t, 0, 0, 0), crop)
            else:
                agentview[t] = frame
                eye[t] = crop
        if t != T - 1:
            raise RuntimeError(f"{ep.episode_id}: {t + 1} frames for {T} steps")
        pointer_steps = hits = 0
        a = arrays
        for t, step in enumerate(ep.steps):
            cursor, rect = plan.cursors[t], plan.rects[t]
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
            a["native_hw"][t] = plan.native_hw[t]
            a["step_thought"][t] = step.thought
            a["obs_stale"][t] = 1 if step.obs_stale else 0
            if step.grounded and step.action_type in POINTER_TYPES and step.action_type != ActionType.SCROLL:
                pointer_steps += 1
                hits += inside((step.params[0], step.params[1]), rect)
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

    def finish(self) -> None:
        """Finish the last shard in the staging folder (the last write that can fail)."""
        if not self._closed:
            self._finish_shard()

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

    def write_episodes(
        self, episodes: Iterable[GuiEpisode], images: ImageStore, threads: int | None = None
    ) -> list[bool]:
        """add_episode for each episode, with frames encoded ahead on a thread pool."""
        with FrameEncoder(images, self.config, threads) as encoder:
            return [
                self.add_episode(plan, chunks)
                for plan, chunks in encoder.episodes(plan_episode(ep) for ep in episodes)
            ]

    def abort(self) -> None:
        """Drop everything written so far; the shards of an earlier build stay as they were."""
        if self._file is not None:
            with contextlib.suppress(Exception):  # e.g. a full disk refuses the final flush too
                self._file.close()
            self._file = None
        shutil.rmtree(self.staging, ignore_errors=True)
        self._closed = True
