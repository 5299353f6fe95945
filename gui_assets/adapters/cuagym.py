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

A shard that cannot be opened fails the partition by name. The episode succeeded iff
metadata.others.episode_return > 0.5 (the publisher's filter).

Drop reasons:
    incomplete                a row whose metadata.others.exclude_reason says incomplete
    malformed_json            a row whose messages or metadata do not parse
    malformed_record          a row whose messages or metadata have the wrong shape
    unsafe_reference          an image path that leaves the mirror
    duplicate_row             a row with the same images and messages as an earlier one
    duplicate_across_splits   a validation row identical to a train row (never kept twice)
    non_gui_tool              a tool call of a tool that is not a GUI action
    malformed_step            a tool call or action whose fields are missing or mistyped
    missing_screenshot        a call made with no screenshot on screen (none, or one with no bytes)
    undecodable_image         a call made while the image on screen does not decode
    unsupported_image_format  likewise, an image that is no PNG, JPEG or WebP
    image_too_large           likewise, an image beyond the largest this source produces
    coordinate_out_of_range   a coordinate outside [0, 1000]
    no_action_equivalent      mouse_down / mouse_up / key_down / key_up
    unknown_action_verb       an action name outside the table above
    empty_episode             a row none of whose calls made a step
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets import assembly
from gui_assets.assembly import AdapterRun, Steps
from gui_assets.drops import Drop, DropReason, UngroundedReason
from gui_assets.images import ImageError
from gui_assets.ir import (
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    step_builder,
    wheel_step,
)
from gui_assets.mirror import RawInputError

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


DROPS = frozenset(
    {
        DropReason.INCOMPLETE,
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_RECORD,
        DropReason.UNSAFE_REFERENCE,
        DropReason.DUPLICATE_ROW,
        DropReason.DUPLICATE_ACROSS_SPLITS,
        DropReason.NON_GUI_TOOL,
        DropReason.MALFORMED_STEP,
        DropReason.MISSING_SCREENSHOT,
        DropReason.COORDINATE_OUT_OF_RANGE,
        DropReason.NO_ACTION_EQUIVALENT,
        DropReason.UNKNOWN_ACTION_VERB,
    }
    | assembly.DROPS
)


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
        raise Drop(DropReason.MALFORMED_STEP, "coordinate")
    x, y = v
    if not (0 <= x <= 1000 and 0 <= y <= 1000):
        raise Drop(DropReason.COORDINATE_OUT_OF_RANGE)
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
            raise Drop(DropReason.UNSAFE_REFERENCE, item[:200])
        p = mirror_root / rel
        return p.read_bytes() if p.is_file() else None
    return None


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Train shards first, then validation: content already seen in train is not repeated."""
    raw = run.raw
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
            rows = (rec for batch in batches for rec in batch.to_pylist())
            for row_no, rec in run.candidates(enumerate(rows)):
                ref = SourceRef(raw.repo_id, raw.revision, f.path, row=row_no)
                try:
                    row = _row(run, rec, ref, split, mirror_root)
                except Drop as e:
                    run.drop(e.reason)
                    continue
                except (ValueError, TypeError):
                    run.drop(DropReason.MALFORMED_JSON)
                    continue
                except (AttributeError, KeyError, IndexError):  # a JSON value of the wrong shape
                    run.drop(DropReason.MALFORMED_RECORD)
                    continue
                if row.content in seen:
                    dup = (
                        DropReason.DUPLICATE_ACROSS_SPLITS
                        if split == "validation"
                        else DropReason.DUPLICATE_ROW
                    )
                    run.drop(dup)
                    continue
                seen.add(row.content)
                episode = run.episode(row.local_id, row.instruction, row.steps, row.success, row.attrs)
                if episode is not None:
                    yield episode


@dataclass(slots=True)
class _Row:
    content: str  # a hash of the images and messages: identical rows never straddle splits
    local_id: str
    instruction: str
    steps: Steps
    success: bool
    attrs: dict[str, str]


def _screens(run: AdapterRun, rec: dict[str, Any], mirror_root: Path) -> list[Observation | Drop]:
    """The row's images as stored observations, or why one is unusable: a step made while it is
    on screen is dropped by that reason (missing_screenshot for an image with no bytes)."""
    screens: list[Observation | Drop] = []
    for item in rec.get("images") or []:
        data = _image_bytes(item, mirror_root)
        try:
            screens.append(run.observe(data) if data is not None else Drop(DropReason.MISSING_SCREENSHOT))
        except ImageError as e:
            screens.append(e)
    return screens


def _row(run: AdapterRun, rec: dict[str, Any], ref: SourceRef, split: str, mirror_root: Path) -> _Row:
    messages = _json(rec.get("messages"))
    meta = _json(rec.get("metadata")) or {}
    if not isinstance(messages, list) or not isinstance(meta, dict):
        raise Drop(DropReason.MALFORMED_RECORD, "messages or metadata")
    others = meta.get("others") if isinstance(meta.get("others"), dict) else {}
    exclude = str(others.get("exclude_reason") or "")
    if "incomplete" in exclude:
        raise Drop(DropReason.INCOMPLETE)
    screens = _screens(run, rec, mirror_root)
    content = hashlib.sha256(
        json.dumps(
            [[s.image_sha256 if isinstance(s, Observation) else None for s in screens], messages],
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    steps = Steps()
    instruction = _messages(run, messages, screens, ref, steps)
    ret = others.get("episode_return")
    attrs = {
        "task_id": str(others.get("task_id", "")),
        "upstream_split": split,
        "stale_steps": str(sum(s.obs_stale for s in steps.items)),
        "episode_return": json.dumps(ret),
        "exclude_reason": exclude,
        "os": str(others.get("os", "")),
        "platform": json.dumps(meta.get("dims", [])),
    }
    local_id = f"{split}/{attrs['task_id'] or content[:16]}#{ref.row}:{Path(ref.file).stem}"
    success = isinstance(ret, int | float) and ret > 0.5
    return _Row(content, local_id, instruction, steps, success, attrs)


def _messages(
    run: AdapterRun, messages: list[Any], screens: list[Observation | Drop], ref: SourceRef, steps: Steps
) -> str:
    """Walk the conversation: the instruction is returned, each action is added to `steps`."""
    instruction = ""
    current: int | None = None  # index of the image on screen now
    for m_i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise Drop(DropReason.MALFORMED_RECORD, f"messages[{m_i}]")
        content_parts = msg.get("content") if isinstance(msg.get("content"), list) else []
        for part in content_parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image" and isinstance(part.get("index"), int | float):
                current = int(part["index"])
            if msg.get("role") == "user" and part.get("type") == "text" and not instruction:
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
            screen = screens[current] if current is not None and 0 <= current < len(screens) else None
            try:
                _call(run, call, screen, ref, m_i, thought, described, steps)
            except Drop as e:
                run.drop(e.reason)
    return instruction


def _call(
    run: AdapterRun,
    call: Any,
    screen: Observation | Drop | None,
    ref: SourceRef,
    m_i: int,
    thought: str,
    described: str,
    steps: Steps,
) -> None:
    """One tool call: each of its actions a step; only the first sees its own pre-action screen."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        raise Drop(DropReason.MALFORMED_STEP, "a tool call that is no {function: {...}}")
    name = str(fn.get("name", ""))
    if name not in GUI_TOOLS and name not in ("terminate", "response"):
        raise Drop(DropReason.NON_GUI_TOOL, name[:80])
    try:
        args = _json(fn.get("arguments")) or {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        raise Drop(DropReason.MALFORMED_STEP, "arguments that are no JSON object")
    actions = args.get("actions") if name in GUI_TOOLS else [{"action": name, **args}]
    if not isinstance(actions, list) or not actions:
        raise Drop(DropReason.MALFORMED_STEP, "a computer call that carries no action")
    if screen is None:
        raise Drop(DropReason.MISSING_SCREENSHOT, "no image on screen")
    if isinstance(screen, Drop):
        raise screen
    first = True
    for a_i, action in enumerate(actions):
        member = f"messages[{m_i}].tool_calls.{fn.get('name')}.actions[{a_i}]"
        step_ref = SourceRef(ref.repo_id, ref.revision, ref.file, ref.row, member)
        try:
            step = _step(action, screen, steps.pointer, step_ref, thought, described, stale=not first)
        except Drop as e:
            run.drop(e.reason)
            continue
        if step is None:
            continue
        first = False
        steps.add(step)


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
        raise Drop(DropReason.MALFORMED_STEP, "an action that is not an object")
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
        raise Drop(DropReason.NO_ACTION_EQUIVALENT, name)
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
            raise Drop(DropReason.MALFORMED_STEP, "scroll direction or amount")
        view = {"down": (0, amount), "up": (0, -amount), "right": (amount, 0), "left": (-amount, 0)}[
            direction
        ]
        return wheel_step(make, _coord(a.get("coordinate")) or pointer, view, (SCROLL_UNIT, SCROLL_UNIT))
    if name == "type":
        return make(ActionType.TYPE, text=str(a.get("text", "")))
    if name in ("key", "hold_key"):
        keys = a.get("keys")
        if not isinstance(keys, list) or not keys:
            raise Drop(DropReason.MALFORMED_STEP, "key without keys")
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
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, name[:80])
