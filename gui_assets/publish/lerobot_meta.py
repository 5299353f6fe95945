"""What a LeRobotDataset v3.0 export declares: its features, info.json, statistics and the
parquet schemas of its data, episodes and tasks files.

The format's rules (lerobot's `codebase_version` "v3.0"): `meta/info.json` describes every
feature by dtype, shape and names; a data file holds many episodes' frames, one row per step,
image features as `datasets.Image` structs with the encoded bytes inside; `meta/episodes/...`
holds a row per episode saying where its frames are, with flattened per-episode statistics;
`meta/tasks.parquet` is a pandas frame indexed by task string; `meta/stats.json` holds the
dataset's statistics per feature (images per channel, values scaled to [0, 1]).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.ir import ACTION_TYPE_NAMES, PARAM_NAMES

CODEBASE_VERSION = "v3.0"
FPS = 1  # GUI steps have no frame rate: a step's timestamp is its index, in seconds
CHUNKS_SIZE = 1000  # files per chunk folder
DATA_FILE_MB = 100  # a data file is closed once it holds about this much
VIDEO_FILE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
ROBOT_TYPE = "gui_agent"

AGENTVIEW = "observation.images.agentview"
EYE_IN_HAND = "observation.images.eye_in_hand"
IMAGE_NAMES = ["height", "width", "channels"]

# Per-step numeric features: name -> (dtype, names); shape is len(names). Read from the shard's
# dataset of the same meaning (SHARD_SOURCE).
NUMERIC: dict[str, tuple[str, list[str]]] = {
    "observation.state": ("float32", ["cursor_x", "cursor_y", "scroll_x", "scroll_y", "progress"]),
    "observation.eye_rect": ("float32", ["left", "top", "right", "bottom"]),
    "observation.native_hw": ("int32", ["height", "width"]),
    "observation.stale": ("bool", ["stale"]),
    "action": ("float32", [*PARAM_NAMES, "action_type", "has_text", "masked_params"]),
    "action_type": ("int64", ["action_type"]),
    "action_params": ("float32", list(PARAM_NAMES)),
    "action_mask": ("float32", list(PARAM_NAMES)),
    "next.reward": ("float32", ["reward"]),
    "next.done": ("bool", ["done"]),
}
TEXT = ("action_text", "action_desc", "step_thought")  # one string per step ("" when none)
SHARD_SOURCE = {
    "observation.state": "states",
    "observation.eye_rect": "eye_rect",
    "observation.native_hw": "native_hw",
    "observation.stale": "obs_stale",
    "action": "actions",
    "action_type": "action_type",
    "action_params": "action_params",
    "action_mask": "action_mask",
    "next.reward": "rewards",
    "next.done": "dones",
    "action_text": "action_text",
    "action_desc": "action_desc",
    "step_thought": "step_thought",
}
INDEX: dict[str, str] = {
    "timestamp": "float32",
    "frame_index": "int64",
    "episode_index": "int64",
    "index": "int64",
    "task_index": "int64",
}
_ARROW = {"float32": pa.float32(), "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_()}
IMAGE_STRUCT = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def features(frame_hw: tuple[int, int], video: bool) -> dict[str, dict[str, Any]]:
    """info.json's `features`, in column order. `video`: the agentview as an MP4 stream."""
    h, w = frame_hw
    out: dict[str, dict[str, Any]] = {
        AGENTVIEW: {"dtype": "video" if video else "image", "shape": [h, w, 3], "names": IMAGE_NAMES},
        EYE_IN_HAND: {"dtype": "image", "shape": [EYE_SIZE, EYE_SIZE, 3], "names": IMAGE_NAMES},
    }
    for key, (dtype, names) in NUMERIC.items():
        out[key] = {"dtype": dtype, "shape": [len(names)], "names": list(names)}
    # The integer-to-name mapping of action types, beside the names lerobot reads.
    out["action_type"]["labels"] = dict(enumerate(ACTION_TYPE_NAMES))
    for key in TEXT:
        out[key] = {"dtype": "string", "shape": [1], "names": None}
    for key, dtype in INDEX.items():
        out[key] = {"dtype": dtype, "shape": [1], "names": None}
    return out


def hf_features(feats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The `datasets` features of a data file (its `huggingface` schema metadata), as lerobot
    derives them from info.json: shape (1,) a value, (N,) a fixed-length sequence."""
    out: dict[str, Any] = {}
    for key, ft in feats.items():
        if ft["dtype"] == "video":
            continue
        value = {"dtype": ft["dtype"], "_type": "Value"}
        if ft["dtype"] == "image":
            out[key] = {"_type": "Image"}
        elif list(ft["shape"]) == [1]:
            out[key] = value
        else:
            out[key] = {"feature": value, "length": ft["shape"][0], "_type": "Sequence"}
    return out


def data_schema(feats: dict[str, dict[str, Any]]) -> pa.Schema:
    arrow = {**_ARROW, "string": pa.string(), "image": IMAGE_STRUCT}
    fields = []
    for key, ft in feats.items():
        if ft["dtype"] == "video":
            continue
        one = arrow[ft["dtype"]]  # an image is one struct of its encoded bytes, whatever its shape
        scalar = ft["dtype"] == "image" or list(ft["shape"]) == [1]
        fields.append(pa.field(key, one if scalar else pa.list_(one, ft["shape"][0])))
    meta = {"huggingface": json.dumps({"info": {"features": hf_features(feats)}})}
    return pa.schema(fields, metadata=meta)


def info_json(
    feats: dict[str, dict[str, Any]],
    episodes: int,
    frames: int,
    tasks: int,
    splits: dict[str, str],
    video: bool,
) -> dict[str, Any]:
    return {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": ROBOT_TYPE,
        "total_episodes": episodes,
        "total_frames": frames,
        "total_tasks": tasks,
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": DATA_FILE_MB,
        "video_files_size_in_mb": VIDEO_FILE_MB,
        "fps": FPS,
        "splits": splits,
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if video else None,
        "features": feats,
    }


def tasks_table(tasks: list[str]) -> pa.Table:
    """meta/tasks.parquet: `task_index` indexed by the task string, as pandas reads it back
    (the pandas metadata names `task` as the index), written without pandas."""
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.3",
    }
    schema = pa.schema(
        [("task_index", pa.int64()), ("task", pa.string())], metadata={"pandas": json.dumps(pandas_meta)}
    )
    return pa.table({"task_index": list(range(len(tasks))), "task": tasks}, schema=schema)


# --- statistics -------------------------------------------------------------------------------


@dataclass
class Moments:
    """min, max, sum, sum of squares and count of a feature, per component; images per channel."""

    lo: np.ndarray
    hi: np.ndarray
    total: np.ndarray
    squares: np.ndarray
    count: int
    frames: int = 0  # frames these values came from (the `count` lerobot reports)

    @classmethod
    def of(cls, values: np.ndarray, frames: int) -> Moments:
        """Moments over axis 0 of (n, ...) values."""
        v = values.astype(np.float64)
        return cls(v.min(0), v.max(0), v.sum(0), np.square(v).sum(0), len(v), frames)

    def merge(self, other: Moments) -> Moments:
        return Moments(
            np.minimum(self.lo, other.lo),
            np.maximum(self.hi, other.hi),
            self.total + other.total,
            self.squares + other.squares,
            self.count + other.count,
            self.frames + other.frames,
        )

    def to_stats(self, image: bool = False) -> dict[str, list[Any]]:
        mean = self.total / self.count
        std = np.sqrt(np.maximum(self.squares / self.count - np.square(mean), 0.0))
        shape = (-1, 1, 1) if image else (-1,)
        out = {
            k: np.asarray(v, np.float64).reshape(shape).tolist()
            for k, v in (("min", self.lo), ("max", self.hi), ("mean", mean), ("std", std))
        }
        out["count"] = [self.frames]
        return out


def channel_histogram(frame: np.ndarray, stride: int = 4) -> np.ndarray:
    """(3, 256) counts of each channel's values in an (H, W, 3) uint8 frame, every `stride`-th
    pixel each way: exact integer tallies, from which the moments follow without float passes."""
    view = frame[::stride, ::stride]
    return np.stack([np.bincount(view[..., c].ravel(), minlength=256) for c in range(3)])


def image_moments(histogram: np.ndarray, frames: int) -> Moments:
    """Per-channel moments on [0, 1] of pixels tallied by channel_histogram."""
    levels = np.arange(256, dtype=np.float64) / 255.0
    present = histogram > 0
    lo = np.array([levels[np.argmax(row)] for row in present])
    hi = np.array([levels[255 - np.argmax(row[::-1])] for row in present])
    counts = histogram.sum(1)
    return Moments(lo, hi, histogram @ levels, histogram @ np.square(levels), int(counts[0]), frames)


@dataclass
class EpisodeStats:
    """One episode's moments per feature, and the dataset's as episodes are added."""

    per_feature: dict[str, Moments] = field(default_factory=dict)

    def add(self, other: EpisodeStats) -> None:
        for key, m in other.per_feature.items():
            mine = self.per_feature.get(key)
            self.per_feature[key] = m if mine is None else mine.merge(m)

    def to_stats(self, image_keys: set[str]) -> dict[str, dict[str, list[Any]]]:
        return {k: m.to_stats(k in image_keys) for k, m in self.per_feature.items()}

    def flattened(self, image_keys: set[str]) -> dict[str, list[Any]]:
        """`stats/<feature>/<stat>` columns of an episode row."""
        return {
            f"stats/{key}/{name}": value
            for key, stats in self.to_stats(image_keys).items()
            for name, value in stats.items()
        }
