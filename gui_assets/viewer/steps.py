"""One demo's per-step arrays as the page draws them (everything but the frames)."""

from __future__ import annotations

import json
from typing import Any

import h5py
import numpy as np

from gui_assets.viewer.catalog import (
    NotServed,
    UnreadableShard,
    action_type_names,
    attrs_of,
    demo_names,
    jsonable,
)
from gui_assets.viewer.frames import FRAME_DATASETS

# key in the answer -> (dataset in the demo, the width of a row; None for a (T,) dataset)
STEP_ARRAYS: dict[str, tuple[str, int | None]] = {
    "params": ("action_params", 4),
    "masks": ("action_mask", 4),
    "texts": ("action_text", None),
    "descs": ("action_desc", None),
    "eye_rect": ("eye_rect", 4),
    "states": ("states", 5),
    "native_hw": ("native_hw", 2),
    "cursor": ("obs/cursor_states", 2),
    "scroll": ("obs/scroll_states", 2),
    "thoughts": ("step_thought", None),
    "obs_stale": ("obs_stale", None),
    "dones": ("dones", None),
    "rewards": ("rewards", None),
}


def _step_array(demo: h5py.Group, name: str, steps: int, width: int | None, problems: list[str]) -> Any:
    """A (T,) or (T, width) dataset as JSON, or None (absent, or noted in `problems` when its
    shape is not the one the output format gives it)."""
    dset = demo.get(name)
    if dset is None:
        return None
    want = (steps,) if width is None else (steps, width)
    if not isinstance(dset, h5py.Dataset) or dset.shape != want:
        shape = dset.shape if isinstance(dset, h5py.Dataset) else "a group"
        problems.append(f"{name} has shape {shape}, not {want}")
        return None
    return jsonable(np.asarray(dset[()]))


def _frame_shape(demo: h5py.Group, kind: str) -> list[int] | None:
    dset = demo.get(FRAME_DATASETS[kind])
    if not isinstance(dset, h5py.Dataset) or dset.ndim < 3:
        return None
    return [int(n) for n in dset.shape[:3]]


def _source_ref(demo: h5py.Group) -> Any:
    raw = jsonable(demo.attrs["source_ref"]) if "source_ref" in demo.attrs else None
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def read_demo(f: h5py.File, name: str) -> dict[str, Any]:
    """Types, params, masks, texts, descs, eye rects, states, native sizes and the rest of one
    demo, its attributes and lineage, and the size of its frames (T, H, W)."""
    data = f.get("data")
    if not isinstance(data, h5py.Group):
        raise UnreadableShard("no /data group")
    if name not in demo_names(data):
        raise NotServed(f"no demo {name!r}")
    demo = data[name]
    codes = demo.get("action_type")
    if not isinstance(codes, h5py.Dataset) or codes.ndim != 1:
        raise UnreadableShard(f"{name} has no (T,) action_type dataset")
    steps = int(codes.shape[0])
    problems: list[str] = []
    answer: dict[str, Any] = {
        "name": name,
        "steps": steps,
        "type_names": action_type_names(data),
        "types": jsonable(np.asarray(codes[()], np.int64)),
    }
    for key, (dataset, width) in STEP_ARRAYS.items():
        answer[key] = _step_array(demo, dataset, steps, width, problems)
    answer["frames"] = {kind: _frame_shape(demo, kind) for kind in FRAME_DATASETS}
    agentview = answer["frames"]["agentview"]
    if agentview is not None and agentview[0] != steps:
        problems.append(f"{FRAME_DATASETS['agentview']} holds {agentview[0]} frames for {steps} steps")
    answer["attrs"] = attrs_of(demo)
    answer["source_ref"] = _source_ref(demo)
    answer["problems"] = problems
    return answer
