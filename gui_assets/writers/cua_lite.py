"""The cua-lite export (seed 001's canonical local layout) of every built directory.

    <out>/cua_lite/cua-lite/GuiAgent/images/<sha256[:2]>/<sha256>.<ext>      content-addressed frames
    <out>/cua_lite/cua-lite/GuiAgent/<platform>/use/<split>/<directory>.parquet

Rows hold `images` (paths relative to `<out>/cua_lite`), `messages` and `metadata` as JSON
strings, coordinates as integers in [0, 1000], so cua-lite's SFT export (and this project's
Lite.CUAGym adapter) read them. An observation that is a whole screenshot keeps its original
bytes; a window of one (Mind2Web's viewport slices) is cropped and stored as PNG.

Each step is one `computer` call; its observation is the screen shown before it (the user
turn's image for step 0, the tool message after the previous call for the others). Where
cua-lite has no verb: SELECT is a click at the element (the option in the call's
action_description), a grounded TYPE loses its point (cua-lite types at the focus), GOTO is
ctrl+l then typing the url and Enter, PRESS_BACK is alt+left, PRESS_HOME home; STOP and FAIL
are the terminate tool. Main shards export as split `train`, holdout shards as `validation`.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.atomic import atomic_path, atomic_write_bytes
from gui_assets.episode_store import ImageStore, iter_episodes
from gui_assets.images import decode_rgb
from gui_assets.ir import ActionType, GuiEpisode, GuiStep, view_direction
from gui_assets.layout import OutLayout, built_directories
from gui_assets.splits import VAL

EXPORT_DIR = "cua_lite"
NAME = "cua-lite/GuiAgent"
SCHEMA = pa.schema([("images", pa.list_(pa.string())), ("messages", pa.string()), ("metadata", pa.string())])
_SCROLL_UNIT = 0.05


def _k(v: float) -> int:
    return max(0, min(1000, round(v * 1000)))


def actions_of(step: GuiStep) -> tuple[str, list[dict[str, Any]]]:
    """(tool name, cua-lite actions) for one IR step."""
    t, p, g = step.action_type, step.params, step.grounded
    at = {"coordinate": [_k(p[0]), _k(p[1])]} if g else {}
    desc = step.desc
    if t in (ActionType.CLICK, ActionType.SELECT):
        button = "right" if desc.startswith("right_") else "middle" if desc.startswith("middle_") else "left"
        clicks = 3 if "triple_click" in desc else 2 if "double_click" in desc else 1
        extra = {"button": button} if button != "left" else {}
        return "computer", [{"action": "click", **at, **extra, **({"clicks": clicks} if clicks > 1 else {})}]
    if t == ActionType.HOVER:
        return "computer", [{"action": "mouse_move", **at}]
    if t == ActionType.DRAG:
        if not g:
            return "computer", [{"action": "drag"}]
        return "computer", [
            {"action": "drag", "start_coordinate": [_k(p[0]), _k(p[1])], "coordinate": [_k(p[2]), _k(p[3])]}
        ]
    if t == ActionType.SCROLL:
        direction = view_direction(p) if g else desc[desc.find("(") + 1 : desc.find(")")] or "down"
        magnitude = max(abs(p[2] - p[0]), abs(p[3] - p[1])) if g else _SCROLL_UNIT
        return "computer", [
            {
                "action": "scroll",
                "direction": direction,
                "amount": max(1, round(magnitude / _SCROLL_UNIT)),
                **at,
            }
        ]
    if t == ActionType.TYPE:
        return "computer", [{"action": "type", "text": step.text}]
    if t == ActionType.PRESS_ENTER:
        return "computer", [{"action": "key", "keys": ["enter"]}]
    if t == ActionType.PRESS_KEY:
        return "computer", [
            {"action": "key", "keys": chord.split("+")} for chord in (step.text or "").split(" ") if chord
        ]
    if t == ActionType.PRESS_BACK:
        return "computer", [{"action": "key", "keys": ["alt", "left"]}]
    if t == ActionType.PRESS_HOME:
        return "computer", [{"action": "key", "keys": ["home"]}]
    if t == ActionType.GOTO:
        return "computer", [
            {"action": "key", "keys": ["ctrl", "l"]},
            {"action": "type", "text": step.text + "\n"},
        ]
    if t == ActionType.WAIT:
        return "computer", [{"action": "wait", "duration": 1}]
    return "terminate", [{"status": "success" if t == ActionType.STOP else "failure"}]


class _Frames:
    """Observations into the export's image store: original bytes where the window is the whole image."""

    def __init__(self, source: ImageStore, root: Path) -> None:
        self.source = source
        self.root = root
        self._done: dict[tuple[str, int, int, int, int], str] = {}

    def path(self, step: GuiStep) -> str:
        o = step.observation
        key = (o.image_sha256, o.left, o.top, o.width, o.height)
        if key in self._done:
            return self._done[key]
        data = self.source.get(o.image_sha256, o.image_ext)
        ext = o.image_ext
        whole = o.left == 0 and o.top == 0 and (o.width, o.height) == Image.open(io.BytesIO(data)).size
        if not whole:
            window = decode_rgb(data, o.top + o.height)[o.top : o.top + o.height, o.left : o.left + o.width]
            buf = io.BytesIO()
            Image.fromarray(window).save(buf, format="PNG")
            data, ext = buf.getvalue(), "png"
        sha = hashlib.sha256(data).hexdigest()
        rel = f"{NAME}/images/{sha[:2]}/{sha}.{ext}"
        target = self.root / rel
        if not target.exists():
            atomic_write_bytes(target, data)
        self._done[key] = rel
        return rel


def episode_row(ep: GuiEpisode, frames: _Frames, platform: str, directory: str) -> dict[str, Any]:
    images = [frames.path(ep.steps[0])]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "index": 0}, {"type": "text", "text": ep.instruction}]}
    ]
    for t, step in enumerate(ep.steps):
        tool, actions = actions_of(step)
        args: dict[str, Any] = {"actions": actions} if tool == "computer" else actions[0]
        call_id = f"call_{t:04d}"
        content: list[dict[str, Any]] = [{"type": "action_description", "text": step.desc}]
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": args}}
            ],
        }
        if step.thought:
            msg["reasoning_content"] = step.thought
        messages.append(msg)
        if t + 1 < len(ep.steps):
            images.append(frames.path(ep.steps[t + 1]))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": [{"type": "image", "index": len(images) - 1}],
                }
            )
    metadata = {
        "metadata_kind": "cua",
        "dims": [platform, "use"],
        "extra_tool_schemas": [{"name": "terminate"}],
        "valid_actions": None,
        "others": {
            "task_id": ep.episode_id,
            "source": ep.source,
            "source_id": ep.episode_id,
            "directory": directory,
            "episode_return": 1.0 if ep.success else 0.0,
            "attrs": ep.attrs,
        },
    }
    return {
        "images": images,
        "messages": json.dumps(messages, ensure_ascii=False),
        "metadata": json.dumps(metadata, ensure_ascii=False),
    }


def write_export(out: Path) -> dict[str, Any]:
    layout = OutLayout(out)
    root = out / EXPORT_DIR
    frames = _Frames(ImageStore(layout.image_store), root)
    files: dict[str, int] = {}
    for info in built_directories(out):
        split_rows = {"train": [], "validation": []}  # type: dict[str, list[dict[str, Any]]]
        parts = {}
        splits = layout.splits(info.directory)
        if splits.is_file():
            parts = dict(
                zip(
                    *(
                        pq.read_table(splits, columns=["episode_id", "part"]).to_pydict()[c]
                        for c in ("episode_id", "part")
                    ),
                    strict=True,
                )
            )
        platform = info.source_record.get("platform") or "browser"
        for ep in iter_episodes(layout.episodes(info.directory)):
            split = "validation" if parts.get(ep.episode_id) == VAL else "train"
            split_rows[split].append(episode_row(ep, frames, platform, info.directory))
        for split, rows in split_rows.items():
            if not rows:
                continue
            rel = f"{NAME}/{platform}/use/{split}/{info.directory}.parquet"
            with atomic_path(root / rel) as tmp:
                pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
            files[rel] = len(rows)
    return {"root": str(root), "files": files}
