"""The output format, stated here a second time from its definition (docs/format.md), for the judge.

Nothing in this package imports the pipeline's own statement of the format (the IR, the writers,
the layout module): a rule written twice, once to write and once to judge, catches a writer that
drifted from the format, where a judge sharing the writer's constants would drift with it.
"""

from __future__ import annotations

import re

import numpy as np

# The action space: the integer code is the index.
ACTION_TYPES: tuple[str, ...] = (
    "CLICK",
    "TYPE",
    "SELECT",
    "HOVER",
    "SCROLL",
    "DRAG",
    "PRESS_BACK",
    "PRESS_HOME",
    "PRESS_ENTER",
    "PRESS_KEY",
    "GOTO",
    "WAIT",
    "STOP",
    "FAIL",
)
PARAM_NAMES: tuple[str, ...] = ("x1", "y1", "x2", "y2")

POINT = (1.0, 1.0, 0.0, 0.0)
SPAN = (1.0, 1.0, 1.0, 1.0)
NO_PARAMS = (0.0, 0.0, 0.0, 0.0)
# The mask of a grounded step per type; every type may also carry the all-zero mask (a step whose
# element could not be located, or a TYPE the source does not ground). Types absent here: all-zero.
MASK_ROWS: dict[str, tuple[float, float, float, float]] = {
    "CLICK": POINT,
    "HOVER": POINT,
    "SELECT": POINT,
    "TYPE": POINT,
    "SCROLL": SPAN,
    "DRAG": SPAN,
}
POINTER_TYPES = frozenset(MASK_ROWS)
# Where an action leaves the pointer: at (x1, y1) (a wheel turns where the pointer already is, so a
# SCROLL leaves it at its start), at (x2, y2) for a DRAG; any other action, or an ungrounded one,
# leaves it where it was. Step 0 starts at the screen centre.
LEAVES_POINTER_AT_START = frozenset({"CLICK", "HOVER", "SELECT", "TYPE", "SCROLL"})
LEAVES_POINTER_AT_END = frozenset({"DRAG"})
SCREEN_CENTRE = (0.5, 0.5)
# Grounded pointer steps counted by stats.target_inside_eye_in_hand_rate (a SCROLL is not aimed).
AIMED_TYPES = frozenset({"CLICK", "HOVER", "SELECT", "TYPE", "DRAG"})
EYE_SIZE = 128  # native pixels on each side of the eye-in-hand window
VIEW_DIRECTIONS = ("up", "down", "left", "right")

STR = "str"  # an HDF5 string dataset (variable-length UTF-8 or fixed-length bytes)
# /data/demo_i datasets: name -> (shape after the leading T, dtype)
DATASETS: dict[str, tuple[tuple[int, ...], np.dtype | str]] = {
    "actions": ((7,), np.dtype(np.float32)),
    "action_type": ((), np.dtype(np.int64)),
    "action_params": ((4,), np.dtype(np.float32)),
    "action_mask": ((4,), np.dtype(np.float32)),
    "action_text": ((), STR),
    "action_desc": ((), STR),
    "dones": ((), np.dtype(np.uint8)),
    "rewards": ((), np.dtype(np.uint8)),
    "states": ((5,), np.dtype(np.float32)),
    "robot_states": ((2,), np.dtype(np.float32)),
    "eye_rect": ((4,), np.dtype(np.float32)),
    "native_hw": ((2,), np.dtype(np.int32)),
    "obs/eye_in_hand_rgb": ((EYE_SIZE, EYE_SIZE, 3), np.dtype(np.uint8)),
    "obs/cursor_states": ((2,), np.dtype(np.float32)),
    "obs/scroll_states": ((2,), np.dtype(np.float32)),
    "obs/gripper_states": ((2,), np.dtype(np.float32)),
    "obs/joint_states": ((7,), np.dtype(np.float32)),
}
AGENTVIEW = "obs/agentview_rgb"  # (T, H, W, 3) uint8, one H, W per demo
TERMINAL = "obs/terminal_rgb"  # optional: (1, H, W, 3) uint8, o_T where the source recorded it
OPTIONAL_DATASETS: dict[str, tuple[tuple[int, ...], np.dtype | str]] = {
    "step_thought": ((), STR),
    "obs_stale": ((), np.dtype(np.uint8)),
}

# /data attrs: name -> kind ("str", "int", or "json" for a JSON string)
DATA_ATTRS: dict[str, str] = {
    "env_name": "str",
    "env_args": "json",
    "problem_info": "json",
    "num_demos": "int",
    "total": "int",
    "tag": "str",
    "gui_action_types": "json",
    "gui_param_names": "json",
}
DEMO_ATTRS: dict[str, str] = {
    "language_instruction": "str",
    "num_samples": "int",
    "episode_id": "str",
    "source": "str",
    "directory": "str",
    "source_ref": "json",
}
# The platforms a demo runs on (its `platform` attr).
PLATFORMS = ("browser", "desktop", "mobile")
# Demo attrs a source MUST carry (an evaluation holds them out).
SOURCE_ID_ATTRS: dict[str, tuple[str, ...]] = {"webarena": ("task_id", "intent_template_id")}

# HDF5 filters every libhdf5 (and so every LIBERO / robomimic loader) reads without a plugin:
# filter id -> name. lzf ships inside h5py itself.
BUILTIN_FILTERS: dict[int, str] = {1: "gzip", 2: "shuffle", 3: "fletcher32", 32000: "lzf"}

DATASET_INFO = "dataset_info.json"
DEFAULT_SHARD_CAP_BYTES = 500 * 1000 * 1000
INFO_KEYS = ("directory", "source", "split", "build", "stats", "shards")
BUILD_KEYS = ("gui_assets_version", "adapter", "config", "upstream")
UPSTREAM_KEYS = ("repo_id", "revision", "files")
# An upstream file entry: these, and its content hash as "sha256" or "lfs_oid".
UPSTREAM_FILE_KEYS = ("path", "size", "revision")
STATS_KEYS = (
    "episodes_in",
    "episodes_out",
    "steps",
    "drops",
    "ungrounded_steps",
    "action_type_counts",
    "scroll_histogram",
    "target_inside_eye_in_hand_rate",
)
SHARD_KEYS = ("file", "demos", "steps", "bytes", "sha256")
HELDOUT_KEYS = {"task_ids": "task_id", "intent_template_ids": "intent_template_id"}
# A `subsplits` entry: {name: {"episodes": n, "steps": n}}.
SUBSPLIT_KEYS = ("episodes", "steps")
# What a demo's subsplit attr reads as when it is not a JSON list of names (no subset is named so).
INVALID_SUBSPLITS = "<not a JSON list of names>"

# `<directory>_NNNN.hdf5` and `<directory>_val_NNNN.hdf5`; a single shard names its directory.
SHARD_NAME = re.compile(r"(?P<directory>.+?)(?P<val>_val)?_(?P<index>\d{4})\.hdf5")
# Folders of a whole output folder that are not `<directory>/`s: checked by their own rules, or
# skipped with a note (hub/ is a copy of the repo, lerobot/ another export, _work/ the build's state).
PREVIEW_DIR = "preview"
CUA_LITE_DIR = "cua_lite"
CARD = "README.md"
SKIPPED_FOLDERS: dict[str, str] = {
    "hub": "the local upload target, laid out as the dataset repo: validate it on its own",
    "lerobot": "the LeRobot export, outside this format",
    "samples": "the per-directory sample pages (HTML), outside this format",
    "_work": "the build's working state, never published",
}
PARQUET_MAGIC = b"PAR1"
