"""A small Lite.CUAGym mirror in the hub layout, generated deterministically.

    cua-lite/Lite.CUAGym/<platform>/use/<split>/<platform>.use.demo/shard-00000-of-00001.parquet

Rows use every `computer` action name, a batch of two actions in one call (the second one
stale), a shell tool call, the finish tools, `reasoning_content` and `inline_reasoning`, and the
drops: an `incomplete` row, a validation row identical to a train row, and a row whose
screenshot is missing. One desktop row uses the local canonical layout: image paths relative
to the mirror root (`cua-lite/Lite.CUAGym/images/ab/ab....png`). The `eval` split (a benchmark
split of sibling cua-lite datasets) holds one row in their older shape: tool calls named by the
action without the `computer` batch and without ids, metadata with `platform`, `task_type` and
`extra_tools`; a train row repeats it (dropped as `benchmark_overlap`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.sources.cuagym.adapter import REPO_ID
from gui_assets.sources.demo_render import Widget, encode, render_page

SCHEMA = pa.schema(
    [
        ("images", pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))),
        ("messages", pa.string()),
        ("metadata", pa.string()),
    ]
)


def _shot(seed: int, w: int = 1280, h: int = 800) -> bytes:
    widgets = [
        Widget("button", "Save", w * 0.62, h * 0.5, 140, 44),
        Widget("input", "Name", w * 0.2, h * 0.2, 320, 36),
    ]
    return encode(render_page(seed, w, h, widgets, "App"), "png")


def _call(i: int, actions: list[dict[str, Any]], tool: str = "computer") -> dict[str, Any]:
    args = {"actions": actions} if tool == "computer" else actions[0]
    return {"id": f"call_{i:04d}", "type": "function", "function": {"name": tool, "arguments": args}}


def _row(
    task: str,
    instruction: str,
    calls: list[list[dict[str, Any]] | tuple[str, dict[str, Any]]],
    seed: int,
    others: dict[str, Any],
    reasoning: str = "content",
) -> tuple[list[bytes], list[dict[str, Any]]]:
    images = [_shot(seed)]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "index": 0}, {"type": "text", "text": instruction}]}
    ]
    for i, actions in enumerate(calls):
        tool, acts = (actions[0], [actions[1]]) if isinstance(actions, tuple) else ("computer", actions)
        thought = f"Step {i}: I will {tool} next."
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": [{"type": "action_description", "text": f"do {i}"}],
            "tool_calls": [_call(i, acts, tool)],
        }
        if reasoning == "content":
            msg["reasoning_content"] = thought
        else:
            msg["content"].insert(0, {"type": "inline_reasoning", "text": thought})
        messages.append(msg)
        images.append(_shot(seed * 10 + i + 1))
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{i:04d}", "content": [{"type": "image", "index": i + 1}]}
        )
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    return images, messages


def _bare_row(platform: str) -> dict[str, Any]:
    """The eval row, in the older sibling shape."""
    task = f"{platform}-e1"
    seed = int(hashlib.md5(task.encode()).hexdigest()[:6], 16)
    calls = [
        ("click", {"coordinate": [640, 520]}),
        ("type", {"text": "report"}),
        ("terminate", {"status": "success"}),
    ]
    images = [_shot(seed)]
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "image", "index": 0}, {"type": "text", "text": "Find the report"}],
        }
    ]
    for i, (name, args) in enumerate(calls):
        call = {"type": "function", "function": {"name": name, "arguments": args}}
        messages.append({"role": "assistant", "content": [], "tool_calls": [call]})
        images.append(_shot(seed * 10 + i + 1))
        messages.append({"role": "tool", "content": [{"type": "image", "index": i + 1}]})
    meta = {
        "metadata_kind": "cua",
        "platform": platform,
        "task_type": "use",
        "extra_tools": [],
        "others": {"task_id": task, "episode_return": 1.0, "os": "ubuntu"},
    }
    return {
        "images": [{"bytes": b, "path": None} for b in images],
        "messages": json.dumps(messages),
        "metadata": json.dumps(meta),
    }


def _meta(task: str, platform: str, **others: Any) -> str:
    return json.dumps(
        {
            "metadata_kind": "cua",
            "dims": [platform, "use"],
            "extra_tool_schemas": [],
            "others": {"task_id": task, "episode_return": 1.0, "os": "ubuntu", **others},
        }
    )


def rows(platform: str, split: str) -> list[dict[str, Any]]:
    out = []
    settings = (
        f"{platform}-t2",
        "Open the settings",
        [
            [{"action": "click", "coordinate": [120, 80]}],
            [{"action": "scroll", "direction": "up", "amount": 3}],
            ("response", {"text": "The settings are open."}),
        ],
        {},
        "inline",
    )
    if split == "train":
        specs = [
            (
                f"{platform}-t1",
                "Rename the file to notes.txt",
                [
                    [{"action": "click", "coordinate": [320, 225]}],
                    [
                        {"action": "click", "coordinate": [320, 225], "clicks": 2},
                        {"action": "type", "text": "notes.txt\n"},
                    ],  # a batch: the type is stale
                    [{"action": "key", "keys": ["ctrl", "s"]}],
                    [{"action": "scroll", "direction": "down", "amount": 5, "coordinate": [500, 600]}],
                    [{"action": "drag", "start_coordinate": [100, 100], "coordinate": [400, 300]}],
                    [{"action": "mouse_move", "coordinate": [670, 520]}],
                    [{"action": "click", "coordinate": [670, 520], "button": "right"}],
                    [{"action": "screenshot"}, {"action": "wait", "duration": 1}],
                    [{"action": "mouse_down", "button": "left"}],
                    [{"action": "hold_key", "keys": ["shift"], "duration": 1}],
                    ("bash", {"command": "ls -la"}),
                    [{"action": "key", "keys": ["enter"]}],
                    ("terminate", {"status": "success"}),
                ],
                {},
                "content",
            ),
            settings,
            (
                f"{platform}-t3",
                "An unfinished task",
                [[{"action": "click", "coordinate": [1, 1]}]],
                {"exclude_reason": "incomplete,footgun:loop"},
                "content",
            ),
        ]
    else:
        specs = [
            settings,  # identical to a train row: never kept twice
            (
                f"{platform}-v1",
                "Close the dialog",
                [
                    [{"action": "click", "coordinate": [640, 520]}],
                    ("terminate", {"status": "failure"}),
                ],
                {"episode_return": 0.0},
                "content",
            ),
        ]
    for task, instruction, calls, others, reasoning in specs:
        seed = int(hashlib.md5(task.encode()).hexdigest()[:6], 16)
        images, messages = _row(task, instruction, calls, seed, others, reasoning)
        meta = _meta(task, platform, **others)
        out.append(
            {
                "images": [{"bytes": b, "path": None} for b in images],
                "messages": json.dumps(messages),
                "metadata": meta,
            }
        )
    return out


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    for platform in ("desktop", "browser"):
        for split in ("train", "validation", "eval"):
            folder = repo / platform / "use" / split / f"{platform}.use.demo"
            folder.mkdir(parents=True, exist_ok=True)
            data = [_bare_row(platform)] if split == "eval" else rows(platform, split)
            if split == "train":
                data.append(_bare_row(platform))  # the benchmark row again: never training data
            if platform == "desktop" and split == "validation":
                # the local canonical layout: content-addressed image paths relative to the mirror root
                local = data[1]
                paths = []
                for img in local["images"]:
                    sha = hashlib.sha256(img["bytes"]).hexdigest()
                    p = repo / "images" / sha[:2] / f"{sha}.png"
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_bytes(img["bytes"])
                    paths.append({"bytes": None, "path": f"{REPO_ID}/images/{sha[:2]}/{sha}.png"})
                local["images"] = paths
                missing = dict(local)
                missing["images"] = [{"bytes": None, "path": f"{REPO_ID}/images/00/gone.png"}]
                missing["metadata"] = _meta(f"{platform}-v2", platform)
                data.append(missing)
            pq.write_table(pa.Table.from_pylist(data, schema=SCHEMA), folder / "shard-00000-of-00001.parquet")
    return repo
