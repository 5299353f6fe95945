"""IR episodes -> LIBERO-layout HDF5 shards (spec/output-format.md).

`LiberoShardWriter` writes one series of shards into a folder of its own (a shard unit's work
folder): open -> add_episode(plan, chunks)* -> close() -> [Piece]. Hashing the pieces, numbering
them, moving them to their final names and removing stale ones belong to `gui_assets.pipeline.sharding`.

Streaming: frames come from `build.frames.FrameEncoder` one step at a time into datasets sized
for the episode, so memory holds the encoder's window plus one episode's small arrays, never a
shard. Frames are chunked one per chunk (random frame reads stay fast for training) and stored
behind HDF5's built-in gzip filter, so any LIBERO/robomimic loader reads them with plain h5py.

Shards roll on a demo boundary before an episode that is expected (from the running bytes per
step) to pass the cap, so a shard overshoots the cap by less than one episode.

Drop reasons at this stage, each leaving the whole episode out of the shard: undecodable_frame
(a stored screenshot that passed the adapter's header check but does not decode) and
frame_over_budget (a page that alone needs more memory to decode than the build's budget).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from gui_assets.core.config import BuildConfig
from gui_assets.core.cursor import EYE_SIZE, inside
from gui_assets.core.drops import DropReason
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.images import ImageError
from gui_assets.core.ir import ACTION_TYPE_NAMES, PARAM_NAMES, POINTER_TYPES, ActionType, GuiEpisode
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline.fingerprints import FingerprintFile, piece_file
from gui_assets.pipeline.frames import EpisodePlan, FrameEncoder, ScreenPrint, StepChunks, plan_episode
from gui_assets.pipeline.preview_frames import PictureFile, StepPictures
from gui_assets.pipeline.shard_records import Piece

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


class LiberoShardWriter:
    """Writes shards `name_of(0)`, `name_of(1)`, ... into `folder`, which no one else writes.

    `stats` counts what was written (episodes, steps, actions, the eye-in-hand figure) and the
    episodes left out.
    """

    def __init__(
        self,
        folder: Path,
        directory: str,
        source: str,
        config: BuildConfig,
        *,
        platform: str,
        name_of: Callable[[int], str] | None = None,
        preview_steps: dict[str, list[int]] | None = None,
    ) -> None:
        self.folder = folder
        self.name_of = name_of or (lambda i: f"piece_{i:04d}.hdf5")
        self.directory = directory
        self.source = source
        self.platform = platform  # every demo's `platform`: the source's declaration for the partition
        self.config = config
        self.stats = BuildStats()
        folder.mkdir(parents=True, exist_ok=True)
        self._file: h5py.File | None = None
        self._shard_index = 0
        self._demos = 0
        self._steps = 0
        self._bytes_per_step = 0.0
        self._frame_hw: tuple[int, int] | None = None  # of the open shard's demos: one per shard
        self._pieces: list[Piece] = []
        self._closed = False
        # The preview candidates among this writer's steps (episode id -> step indices): their
        # pictures go beside each shard as <shard stem>.preview.parquet (preview_frames).
        self.preview_steps = preview_steps or {}
        self._pictures: PictureFile | None = None
        # Every frame's screen fingerprint, beside each shard (pipeline.fingerprints).
        self._fingerprints: FingerprintFile | None = None

    # --- shard lifecycle -------------------------------------------------------------------

    def _open_shard(self) -> h5py.File:
        path = self.folder / self.name_of(self._shard_index)
        f = h5py.File(path, "w")
        f.create_group("data")
        self._pictures = PictureFile(picture_file(path))
        self._fingerprints = FingerprintFile(piece_file(path))
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
        if self._pictures is not None:
            self._pictures.close()
            self._pictures = None
        if self._fingerprints is not None:
            self._fingerprints.close()
            self._fingerprints = None
        hw = list(self._frame_hw) if self._frame_hw else None
        self._pieces.append(Piece(path.name, self._demos, self._steps, path.stat().st_size, hw))
        self._shard_index += 1

    def _current_bytes(self) -> int:
        assert self._file is not None
        self._file.flush()
        return int(self._file.id.get_filesize())

    # --- episodes --------------------------------------------------------------------------

    def add_episode(self, plan: EpisodePlan, chunks: Iterable[StepChunks]) -> bool:
        """Write one episode as the next demo_i; False when it was left out (counted)."""
        episode = plan.episode
        if self._closed:
            raise RuntimeError("writer is closed")
        if not episode.steps:
            raise ValueError(f"{episode.episode_id}: an episode with no steps reached the writer")
        if self._file is not None and self._demos > 0:
            expected = self._current_bytes() + self._bytes_per_step * len(episode.steps)
            if expected > self.config.shard_cap_bytes or plan.frame_hw != self._frame_hw:
                self._finish_shard()  # at the cap, or at a new frame size: every shard batches
        if self._file is None:
            self._file = self._open_shard()
            self._frame_hw = plan.frame_hw
        before = self._current_bytes()
        name = f"demo_{self._demos}"
        shown: list[tuple[int, StepPictures]] = []
        fingerprints: list[ScreenPrint] = []
        try:
            pointer, hits = self._write_demo(self._file["data"], name, plan, chunks, shown, fingerprints)
        except ImageError as e:
            del self._file["data"][name]
            over = e.reason == DropReason.IMAGE_TOO_LARGE
            self.stats.drop(DropReason.FRAME_OVER_BUDGET if over else DropReason.UNDECODABLE_FRAME)
            return False
        grown = self._current_bytes() - before
        if self._pictures is not None:
            self._pictures.add_demo(name, shown)
        if self._fingerprints is not None:
            self._fingerprints.add_demo(name, episode.episode_id, fingerprints)
        self._demos += 1
        self._steps += len(episode.steps)
        written = self.stats.steps + len(episode.steps)
        self._bytes_per_step = (self._bytes_per_step * self.stats.steps + grown) / written
        self.stats.pointer_steps += pointer
        self.stats.target_inside_eye += hits
        self.stats.count_episode(episode)
        return True

    def _frames(self, obs: h5py.Group, name: str, shape: tuple[int, ...]) -> h5py.Dataset:
        return obs.create_dataset(
            name,
            shape=shape,
            dtype=np.uint8,
            chunks=(1, *shape[1:]),  # one frame per chunk: a random frame read inflates one chunk
            # The chunks come deflated (write_direct_chunk); the filter's recorded level is
            # zlib's nearest to libdeflate's, for a reader that appends through h5py.
            compression="gzip",
            compression_opts=min(self.config.libdeflate_level, 9),
        )

    def _write_demo(
        self,
        data: h5py.Group,
        name: str,
        plan: EpisodePlan,
        chunks: Iterable[StepChunks],
        shown: list[tuple[int, StepPictures]],
        fingerprints: list[ScreenPrint],
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
        for t, (frame, crop, pictures, printed) in enumerate(chunks):
            if pictures is not None:
                shown.append((t, pictures))
            fingerprints.append(printed)
            agentview.id.write_direct_chunk((t, 0, 0, 0), frame)
            eye.id.write_direct_chunk((t, 0, 0, 0), crop)
        if t != T - 1:
            raise RuntimeError(f"{ep.episode_id}: {t + 1} frames for {T} steps")
        pointer_steps, hits = self._fill_arrays(arrays, plan)
        for key, arr in arrays.items():
            demo.create_dataset(key, data=arr, dtype=DEMO_DATASETS[key][1])
        demo.attrs["language_instruction"] = ep.instruction
        demo.attrs["num_samples"] = T
        demo.attrs["episode_id"] = ep.episode_id
        demo.attrs["source"] = ep.source
        demo.attrs["directory"] = self.directory
        demo.attrs["source_ref"] = ep.source_ref_json()
        demo.attrs["success"] = int(ep.success)
        demo.attrs["platform"] = self.platform
        # An adapter may restate success (WebArena's "unknown"); the rest are the format's own,
        # and an adapter attr overwriting one is our bug, not the data's.
        clashing = sorted(set(ep.attrs) & (set(demo.attrs) - {"success"}))
        if clashing:
            raise ValueError(f"{ep.episode_id}: episode attrs {clashing} clash with the format's demo attrs")
        for k, v in sorted(ep.attrs.items()):
            demo.attrs[k] = v
        return pointer_steps, hits

    @staticmethod
    def _fill_arrays(a: dict[str, np.ndarray], plan: EpisodePlan) -> tuple[int, int]:
        """The per-step arrays of one demo; returns (grounded pointer steps, targets inside the eye)."""
        ep = plan.episode
        T = len(ep.steps)
        pointer_steps = hits = 0
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
        a["dones"][T - 1] = 1
        a["rewards"][T - 1] = 1 if ep.success else 0
        return pointer_steps, hits

    # --- close -----------------------------------------------------------------------------

    def close(self) -> list[Piece]:
        """Finish the last shard (the last write that can fail); idempotent."""
        if not self._closed:
            self._finish_shard()
            self._closed = True
        return list(self._pieces)

    def write_episodes(
        self, episodes: Iterable[GuiEpisode], images: ImageStore, threads: int | None = None
    ) -> list[bool]:
        """add_episode for each episode, with frames encoded ahead on a thread pool."""
        with FrameEncoder(images, self.config, threads) as encoder:
            return [
                self.add_episode(plan, chunks)
                for plan, chunks in encoder.episodes(
                    plan_episode(ep, self.config.agentview_hw, self.preview_steps.get(ep.episode_id, ()))
                    for ep in episodes
                )
            ]

    def abort(self) -> None:
        """Stop and remove everything this writer wrote into its folder."""
        for side in (self._pictures, self._fingerprints):
            if side is not None:
                with contextlib.suppress(Exception):
                    side.close()
        self._pictures = self._fingerprints = None
        if self._file is not None:
            with contextlib.suppress(Exception):  # e.g. a full disk refuses the final flush too
                self._file.close()
            self._file = None
        shutil.rmtree(self.folder, ignore_errors=True)
        self._closed = True


def picture_file(shard: Path) -> Path:
    """Where the writer puts the preview pictures of a shard's candidate steps."""
    return shard.with_name(shard.stem + ".preview.parquet")
