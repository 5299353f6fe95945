"""The cua-lite export (seed 001's canonical local layout) of every built directory.

    <out>/cua_lite/cua-lite/GuiAgent/images/<sha256[:2]>/<sha256>.<ext>      content-addressed frames
    <out>/cua_lite/cua-lite/GuiAgent/<platform>/use/<split>/<directory>.parquet

One row per episode: `images` (paths relative to `<out>/cua_lite`), `messages` and `metadata` as
JSON strings, in the shape cua-lite's publish gate accepts. `metadata` holds exactly
metadata_kind, dims (`[platform, "use"]`, the path's), extra_tool_schemas (the platform's
standalone tools in cua-lite's nested shape), valid_actions (null) and others (ids, source,
outcome; never a split). The user turn shows the first screen and the instruction; each
assistant turn is one tool call (`call_0000`, ...), its dataset reasoning in `inline_reasoning`
and its step's desc in `action_description` parts; the `tool` result after a non-finish call
shows the next screen; the row ends on an assistant turn. An observation that is a whole
screenshot keeps its original bytes; a window of one (Mind2Web's viewport slices) is cropped and
stored as PNG. How steps become calls, how a row finishes and the rule for a step cua-lite cannot
express are in `cua_lite_actions`; key names in `cua_lite_keys`.

Splits: cua-lite's only splits are `train` and `validation`, and its reader takes a file under
any other folder as training data, so only those two folders are written (and stale parquet
files of an earlier export are removed). By the directory's `build.source.split_role`: a
"train" directory's main shards -> train, its holdout (`_val_`) shards -> validation; a
"validation" directory (a benchmark's test or validation split) -> validation; an "evaluation"
directory (a benchmark's evaluation tasks) is left out, or exported as validation when
`evaluation_as_validation` asks for it, never as train. A directory built before split roles
were recorded has no role: it is split by its holdout only (main -> train), and reported with
`split_role: null` so it can be rebuilt.

Left out and counted (the `left_out` result, by reason): episodes of an evaluation directory
(`evaluation_split`), of a directory whose platform is not recorded (`unknown_platform`) or is
`mobile` (`unsupported_platform`: this export writes the desktop/browser action set only), and
episodes with no assistant turn (`no_action`); steps by the reasons in `cua_lite_actions`; key
chords by the reasons in `cua_lite_keys`. `truncated` counts the rows that end early, by reason.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.atomic import atomic_path, atomic_write_bytes
from gui_assets.episode_store import ImageStore, iter_episodes
from gui_assets.images import decode_rgb, window_pixels
from gui_assets.ir import GuiEpisode, GuiStep
from gui_assets.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.source_spec import SPLIT_ROLES
from gui_assets.splits import VAL
from gui_assets.writers.cua_lite_actions import (
    DONE,
    FINISH_TOOLS,
    PLATFORM_TOOLS,
    Call,
    RowPlan,
    extra_tool_schemas,
    plan_episode,
)

EXPORT_DIR = "cua_lite"
NAME = "cua-lite/GuiAgent"
SCHEMA = pa.schema([("images", pa.list_(pa.string())), ("messages", pa.string()), ("metadata", pa.string())])
TRAIN, VALIDATION = "train", "validation"
EVALUATION_SPLIT = "evaluation_split"
UNKNOWN_PLATFORM = "unknown_platform"
UNSUPPORTED_PLATFORM = "unsupported_platform"


def export_split(role: str | None, holdout: bool, evaluation_as_validation: bool = False) -> str | None:
    """The cua-lite split of an episode: by its directory's split role and whether it is in the
    holdout; None when it is left out (an evaluation directory not asked for)."""
    if role is not None and role not in SPLIT_ROLES:
        raise ValueError(f"split_role {role!r} is none of {SPLIT_ROLES}: teach the cua-lite export about it")
    if role == "evaluation":
        return VALIDATION if evaluation_as_validation else None
    return VALIDATION if holdout or role == "validation" else TRAIN


class Frames:
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
            window = window_pixels(decode_rgb(data, o.top + o.height), o.left, o.top, o.width, o.height)
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


def _assistant(call: Call, call_id: str) -> dict[str, Any]:
    """One assistant turn: reasoning and description parts, then its single tool call."""
    thoughts = list(dict.fromkeys(s.thought for s in call.steps if s.thought))
    content = [{"type": "inline_reasoning", "text": t} for t in thoughts]
    content.append({"type": "action_description", "text": "; ".join(s.desc for s in call.steps)})
    function = {"name": call.tool, "arguments": call.arguments}
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _messages(ep: GuiEpisode, plan: RowPlan, frames: Frames) -> tuple[list[str], list[dict[str, Any]]]:
    images = [frames.path(ep.steps[0])]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "index": 0}, {"type": "text", "text": ep.instruction}]}
    ]
    for i, call in enumerate(plan.calls):
        call_id = f"call_{i:04d}"
        messages.append(_assistant(call, call_id))
        after = plan.calls[i + 1].steps[0] if i + 1 < len(plan.calls) else plan.done
        if after is None or call.tool in FINISH_TOOLS:
            continue  # the last turn: its result is never shown
        images.append(frames.path(after))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": [{"type": "image", "index": len(images) - 1}],
            }
        )
    if plan.done is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": DONE}]})
    return images, messages


def episode_row(
    ep: GuiEpisode, frames: Frames, platform: str, directory: str
) -> tuple[dict[str, Any], RowPlan]:
    """(the row, its plan) of one episode; the row is empty when the plan leaves the episode out."""
    plan = plan_episode(ep.steps, platform)
    if plan.left_out:
        return {}, plan
    images, messages = _messages(ep, plan, frames)
    metadata = {
        "metadata_kind": "cua",
        "dims": [platform, "use"],
        "extra_tool_schemas": extra_tool_schemas(platform),
        "valid_actions": None,
        "others": {
            "id": ep.episode_id,
            "task_id": ep.episode_id,
            "source": ep.source,
            "source_id": ep.episode_id,
            "directory": directory,
            "episode_return": 1.0 if ep.success else 0.0,
            "attrs": ep.attrs,
            **plan.others,
        },
    }
    row = {
        "images": images,
        "messages": json.dumps(messages, ensure_ascii=False),
        "metadata": json.dumps(metadata, ensure_ascii=False),
    }
    return row, plan


@dataclass(slots=True)
class _Tally:
    """What the export left out, by reason, and the rows that end early."""

    episodes: Counter[str] = field(default_factory=Counter)
    steps: Counter[str] = field(default_factory=Counter)
    keys: Counter[str] = field(default_factory=Counter)
    truncated: Counter[str] = field(default_factory=Counter)

    def leave_out(self, ep: GuiEpisode, reason: str) -> None:
        self.episodes[reason] += 1
        self.steps[reason] += len(ep.steps)

    def add(self, plan: RowPlan) -> None:
        self.steps.update(plan.steps_left_out)
        self.keys.update(plan.keys_dropped)
        if plan.left_out:
            self.episodes[plan.left_out] += 1
        elif plan.others.get("truncated"):
            self.truncated[plan.others["truncated_reason"]] += 1

    def to_dict(self) -> dict[str, Any]:
        def plain(c: Counter[str]) -> dict[str, int]:
            return dict(sorted(c.items()))

        return {
            "left_out": {
                "episodes": plain(self.episodes),
                "steps": plain(self.steps),
                "keys": plain(self.keys),
            },
            "truncated": plain(self.truncated),
        }


def _parts(layout: OutLayout, directory: str) -> dict[str, str]:
    """episode_id -> main/val from the directory's split table (all main without one)."""
    path = layout.splits(directory)
    if not path.is_file():
        return {}
    table = pq.read_table(path, columns=["episode_id", "part"]).to_pydict()
    return dict(zip(table["episode_id"], table["part"], strict=True))


def _platform_problem(platform: object) -> str:
    if platform is None:
        return UNKNOWN_PLATFORM
    return "" if platform in PLATFORM_TOOLS else UNSUPPORTED_PLATFORM


def _export_directory(
    info: DatasetInfo, layout: OutLayout, frames: Frames, evaluation_as_validation: bool, tally: _Tally
) -> dict[str, list[dict[str, Any]]]:
    """The rows of one built directory by split; what is left out goes to `tally`."""
    platform = info.source_record.get("platform")
    role = info.source_record.get("split_role")
    problem = _platform_problem(platform)
    parts = _parts(layout, info.directory)
    rows: dict[str, list[dict[str, Any]]] = {TRAIN: [], VALIDATION: []}
    for ep in iter_episodes(layout.episodes(info.directory)):
        split = export_split(role, parts.get(ep.episode_id) == VAL, evaluation_as_validation)
        if problem or split is None:
            tally.leave_out(ep, problem or EVALUATION_SPLIT)
            continue
        row, plan = episode_row(ep, frames, str(platform), info.directory)
        tally.add(plan)
        if row:
            rows[split].append(row)
    return rows


def _prune(export_root: Path, keep: set[str]) -> list[str]:
    """Remove the parquet files of an earlier export this one did not write (a split folder of
    the old layout would otherwise stay readable as training data)."""
    removed = []
    for p in sorted((export_root / NAME).rglob("*.parquet")):
        rel = p.relative_to(export_root).as_posix()
        if rel not in keep:
            p.unlink()
            removed.append(rel)
    return removed


def write_export(out: Path, evaluation_as_validation: bool = False) -> dict[str, Any]:
    """Export every built directory under `out`.

    `evaluation_as_validation`: export "evaluation" directories (a benchmark's evaluation tasks,
    such as WebArena's) as validation instead of leaving them out; never as train.

    Returns root, files (relative path -> rows), directories (platform, split_role, rows by
    split), left_out (episodes, steps and key chords by reason), truncated (rows ending early by
    reason) and removed (stale files of an earlier export).
    """
    layout = OutLayout(out)
    root = out / EXPORT_DIR
    frames = Frames(ImageStore(layout.image_store), root)
    tally = _Tally()
    files: dict[str, int] = {}
    directories: dict[str, Any] = {}
    for info in built_directories(out):
        split_rows = _export_directory(info, layout, frames, evaluation_as_validation, tally)
        platform = info.source_record.get("platform")
        directories[info.directory] = {
            "platform": platform,
            "split_role": info.source_record.get("split_role"),
            "rows": {split: len(rows) for split, rows in split_rows.items()},
        }
        for split, rows in split_rows.items():
            if not rows:
                continue
            rel = f"{NAME}/{platform}/use/{split}/{info.directory}.parquet"
            with atomic_path(root / rel) as tmp:
                pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
            files[rel] = len(rows)
    removed = _prune(root, set(files))
    return {
        "root": str(root),
        "files": files,
        "directories": directories,
        **tally.to_dict(),
        "removed": removed,
    }
