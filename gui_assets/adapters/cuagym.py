"""Lite.CUAGym (`cua-lite/Lite.CUAGym`): agent rollouts as chat messages with batched tool calls.

Files: `<platform>/use/<split>/<variant>/shard-NNNNN-of-NNNNN.parquet` (and the older 4-level
`<platform>/use/<split>/shard-...`), partitions `browser_use` and `desktop_use`; `split` is
`train` or `validation`. Columns: `images` (HF Image structs {bytes, path}; a local canonical
export has relative paths `cua-lite/<Name>/images/ab/ab....png` instead), `messages` and
`metadata` (JSON strings).

One row is one episode. The user turn gives the instruction and the first screenshot; each
assistant `tool_calls` entry of the `computer` tool holds a batch of actions, and the `tool`
message after it carries the next screenshot. Every action of a batch is a step; the screen
shown before the call is the first action's observation, and the later actions of the batch
reuse it, flagged `obs_stale` (their own pre-action screen was never captured) and counted in
the episode's `stale_steps`. Coordinates are integers in [0, 1000], divided by 1000.

Mapping: click -> CLICK (button and clicks in desc); mouse_move -> HOVER; drag -> DRAG
(start_coordinate -> coordinate; without a start it is ungrounded); scroll -> SCROLL at its
coordinate (else the causal cursor), the content travelling 0.05 of the frame per amount unit
opposite to `direction` (the view direction); type -> TYPE (a trailing newline is Enter, kept in
the text); key -> PRESS_ENTER for ["enter"], else PRESS_KEY "ctrl+c"; hold_key -> PRESS_KEY;
wait -> WAIT; the finish tools terminate (success / failure) -> STOP / FAIL and response ->
STOP with its text. screenshot and cursor_position observe, they do not act: no step.
mouse_down / mouse_up / key_down / key_up have no equivalent in the action space
(`no_action_equivalent`); non-GUI tools (a shell, other declared extra tools) are
`non_gui_tool`; an action name outside the table is `unknown_action_verb`.

Row drops: `incomplete` (metadata.others.exclude_reason contains it), malformed_json,
malformed_record, missing_screenshot, empty_episode; a validation row with the same images
and messages as a train row is `duplicate_across_splits`, so content never straddles splits.
The episode succeeded iff metadata.others.episode_return > 0.5 (the publisher's filter).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.config import BuildConfig
from gui_assets.cursor import SCREEN_CENTRE, next_cursor
from gui_assets.episode_store import ImageStore
from gui_assets.images import ImageError, inspect
from gui_assets.ir import (
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    DropReason,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    UngroundedReason,
    step_builder,
    wheel_step,
)
from gui_assets.mirror import RawInputError, RawPartition
from gui_assets.stats import BuildStats

REPO_ID = "cua-lite/Lite.CUAGym"
PARTITIONS = ("browser_use", "desktop_use")
SPLITS = ("train", "validation")
GUI_TOOLS = ("computer",)
SCROLL_UNIT = 0.05
_CLICK_NAMES = {
    (1, "left"): "click",
    (2, "left"): "double_click",
    (3, "left"): "triple_click",
    (1, "right"): "right_click",
    (1, "middle"): "middle_click",
}
_NO_EQUIVALENT = {"mouse_down", "mouse_up", "key_down", "key_up"}
_OBSERVE_ONLY = {"screenshot", "cursor_position"}


def file_patterns(partition: str) -> list[str]:
    platform = partition.split("_")[0]
    return [f"{platform}/use/{split}/*.parquet" for split in SPLITS]


class _Bad(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _coord(v: Any) -> tuple[float, float] | None:
    if v is None:
        return None
    if not (
        isinstance(v, list | tuple)
        and len(v) == 2
        and all(isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c) for c in v)
    ):
        raise _Bad(DropReason.MALFORMED_RECORD)
    x, y = v
    if not (0 <= x <= 1000 and 0 <= y <= 1000):
        raise _Bad("coordinate_out_of_range")
    return x / 1000.0, y / 1000.0


def _image_bytes(item: Any, mirror_root: Path) -> bytes | None:
    """An `images` entry: an HF Image struct, raw bytes, or a path relative to the mirror root."""
    if isinstance(item, dict):
        if item.get("bytes"):
            return bytes(item["bytes"])
        item = item.get("path")
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str) and item:
        rel = PurePosixPath(item)
        if rel.is_absolute() or ".." in rel.parts:
            raise _Bad("unsafe_image_path")
        p = mirror_root / rel
        return p.read_bytes() if p.is_file() else None
    return None


def episodes(
    raw: RawPartition, store: ImageStore, stats: BuildStats, config: BuildConfig
) -> Iterator[GuiEpisode]:
    """Train shards first, then validation: content already seen in train is not repeated."""
    mirror_root = raw.root.parent.parent  # images paths are relative to <mirror> (cua-lite/<Name>/images/...)
    seen: set[str] = set()
    for split in SPLITS:
        files = sorted((f for f in raw.files if f"/use/{split}/" in f"/{f.path}"), key=lambda f: f.path)
        for f in files:
            try:
                pf = pq.ParquetFile(f.local)
                batches = pf.iter_batches(batch_size=16, columns=["images", "messages", "metadata"])
            except (OSError, pa.ArrowInvalid, KeyError) as e:
                raise RawInputError(
                    f"{raw.repo_id}/{f.path}: not a readable Lite.CUAGym shard ({e})"
                ) from None
            stats.files_in += 1
            row_no = 0
            for batch in batches:
                for rec in batch.to_pylist():
                    ref = SourceRef(raw.repo_id, raw.revision, f.path, row=row_no)
                    row_no += 1
                    stats.episodes_in += 1
                    try:
                        ep, content = _episode(rec, ref, split, mirror_root, store, stats)
                    except _Bad as e:
                        stats.drop(e.reason)
                        continue
                    except (ValueError, TypeError):
                        stats.drop(DropReason.MALFORMED_JSON)
                        continue
                    except (AttributeError, KeyError, IndexError):  # a JSON value of the wrong shape
                        stats.drop(DropReason.MALFORMED_RECORD)
                        continue
                    if content in seen:
                        stats.drop("duplicate_across_splits" if split == "validation" else "duplicate_row")
                        continue
                    seen.add(content)
                    if ep is None:
                        stats.drop(DropReason.EMPTY_EPISODE)
                        continue
                    yield ep


def _episode(
    rec: dict[str, Any], ref: SourceRef, split: str, mirror_root: Path, store: ImageStore, stats: BuildStats
) -> tuple[GuiEpisode | None, str]:
    messages = _json(rec.get("messages"))
    meta = _json(rec.get("metadata")) or {}
    if not isinstance(messages, list) or not isinstance(meta, dict):
        raise _Bad(DropReason.MALFORMED_RECORD)
    others = meta.get("others") if isinstance(meta.get("others"), dict) else {}
    exclude = str(others.get("exclude_reason") or "")
    if "incomplete" in exclude:
        raise _Bad("incomplete")
    images = rec.get("images") or []
    shas: list[tuple[str, str, int, int] | None] = []
    for item in images:
        data = _image_bytes(item, mirror_root)
        if data is None:
            shas.append(None)
            continue
        try:
            header = inspect(data)
        except ImageError:
            shas.append(None)
            continue
        shas.append((store.put(data, header.ext), header.ext, header.width, header.height))
    content = hashlib.sha256(
        json.dumps([[s[0] if s else None for s in shas], messages], sort_keys=True, default=str).encode()
    ).hexdigest()
    instruction = ""
    current: int | None = None  # index of the image on screen now
    steps: list[GuiStep] = []
    stale = 0
    pointer = SCREEN_CENTRE
    for m_i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise _Bad(DropReason.MALFORMED_RECORD)
        content_parts = msg.get("content") if isinstance(msg.get("content"), list) else []
        for part in content_parts:
            if (
                isinstance(part, dict)
                and part.get("type") == "image"
                and isinstance(part.get("index"), int | float)
            ):
                current = int(part["index"])
            if (
                msg.get("role") == "user"
                and isinstance(part, dict)
                and part.get("type") == "text"
                and not instruction
            ):
                instruction = str(part.get("text", ""))
        if msg.get("role") != "assistant":
            continue
        thought = msg.get("reasoning_content") if isinstance(msg.get("reasoning_content"), str) else ""
        thought = thought or " ".join(
            str(p.get("text", ""))
            for p in content_parts
            if isinstance(p, dict) and p.get("type") == "inline_reasoning"
        )
        described = " ".join(
            str(p.get("text", ""))
            for p in content_parts
            if isinstance(p, dict) and p.get("type") == "action_description"
        )
        calls = msg.get("tool_calls") or []
        for call in calls if isinstance(calls, list) else [None]:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                stats.drop(DropReason.MALFORMED_RECORD)  # a tool call that is no {"function": {...}}
                continue
            name = str(fn.get("name", ""))
            if name not in GUI_TOOLS and name not in ("terminate", "response"):
                stats.drop("non_gui_tool")
                continue
            try:
                args = _json(fn.get("arguments")) or {}
            except ValueError:
                args = None
            if not isinstance(args, dict):
                stats.drop(DropReason.MALFORMED_JSON)  # arguments that are no JSON object
                continue
            actions = args.get("actions") if name in GUI_TOOLS else [{"action": name, **args}]
            if not isinstance(actions, list) or not actions:
                stats.drop(DropReason.MALFORMED_RECORD)  # a computer call that carries no action
                continue
            if current is None or current >= len(shas) or shas[current] is None:
                stats.drop(DropReason.MISSING_SCREENSHOT)
                continue
            sha, ext, width, height = shas[current]  # type: ignore[misc]
            obs = Observation(sha, ext, 0, 0, width, height)
            first = True
            for a_i, action in enumerate(actions or []):
                member = f"messages[{m_i}].tool_calls.{fn.get('name')}.actions[{a_i}]"
                step_ref = SourceRef(ref.repo_id, ref.revision, ref.file, ref.row, member)
                try:
                    step = _step(action, obs, pointer, step_ref, thought, described, stale=not first)
                except _Bad as e:
                    stats.drop(e.reason)
                    continue
                if step is None:
                    continue
                stale += step.obs_stale
                first = False
                steps.append(step)
                pointer = next_cursor(pointer, step.action_type, step.params, step.grounded)
    if not steps:
        return None, content
    ret = others.get("episode_return")
    success = isinstance(ret, int | float) and ret > 0.5
    attrs = {
        "task_id": str(others.get("task_id", "")),
        "upstream_split": split,
        "stale_steps": str(stale),
        "episode_return": json.dumps(ret),
        "exclude_reason": exclude,
        "os": str(others.get("os", "")),
        "platform": json.dumps(meta.get("dims", [])),
    }
    episode_id = f"cuagym/{split}/{attrs['task_id'] or content[:16]}#{ref.row}:{Path(ref.file).stem}"
    return GuiEpisode(episode_id, "cuagym", instruction, steps, success, attrs), content


def _step(
    a: Any,
    obs: Observation,
    pointer: tuple[float, float],
    ref: SourceRef,
    thought: str,
    described: str,
    stale: bool,
) -> GuiStep | None:
    if not isinstance(a, dict):
        raise _Bad(DropReason.MALFORMED_RECORD)
    name = str(a.get("action", ""))
    notes = json.dumps({"action_description": described}, ensure_ascii=False) if described else ""

    make = step_builder(obs, ref, thought=thought, obs_stale=stale, annotations=notes)

    def at(kind: ActionType, label: str = "") -> GuiStep:
        point = _coord(a.get("coordinate"))
        if point is None:
            return make(kind, name=label, ungrounded=UngroundedReason.NO_CANDIDATE)
        return make(kind, point, POINT_MASK, name=label)

    if name in _OBSERVE_ONLY:
        return None
    if name in _NO_EQUIVALENT:
        raise _Bad("no_action_equivalent")
    if name == "click":
        clicks, button = int(a.get("clicks") or 1), str(a.get("button") or "left")
        return at(ActionType.CLICK, _CLICK_NAMES.get((clicks, button), f"{button}_click_x{clicks}"))
    if name == "mouse_move":
        return at(ActionType.HOVER)
    if name == "drag":
        start, end = _coord(a.get("start_coordinate")), _coord(a.get("coordinate"))
        if start is None or end is None:
            return make(ActionType.DRAG, ungrounded=UngroundedReason.NO_CANDIDATE)
        return make(ActionType.DRAG, (*start, *end), SPAN_MASK)
    if name == "scroll":
        direction = str(a.get("direction", ""))
        amount = a.get("amount", 1)
        if (
            direction not in ("up", "down", "left", "right")
            or isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or amount <= 0
        ):
            raise _Bad(DropReason.MALFORMED_RECORD)
        view = {"down": (0, amount), "up": (0, -amount), "right": (amount, 0), "left": (-amount, 0)}[
            direction
        ]
        return wheel_step(make, _coord(a.get("coordinate")) or pointer, view, (SCROLL_UNIT, SCROLL_UNIT))
    if name == "type":
        return make(ActionType.TYPE, text=str(a.get("text", "")))
    if name in ("key", "hold_key"):
        keys = a.get("keys")
        if not isinstance(keys, list) or not keys:
            raise _Bad(DropReason.MALFORMED_RECORD)
        text = "+".join(str(k) for k in keys)
        if name == "key" and [str(k).lower() for k in keys] in (["enter"], ["return"]):
            return make(ActionType.PRESS_ENTER, text=text)
        return make(ActionType.PRESS_KEY, text=text, name="hold_key" if name == "hold_key" else "")
    if name == "wait":
        return make(ActionType.WAIT, desc=f"wait({a.get('duration', '')})")
    if name == "terminate":
        ok = str(a.get("status", "success")).lower() in ("success", "succeeded")
        return make(ActionType.STOP if ok else ActionType.FAIL)
    if name == "response":
        return make(ActionType.STOP, text=str(a.get("text", a.get("response", ""))), name="response")
    raise _Bad(DropReason.UNKNOWN_ACTION_VERB)
