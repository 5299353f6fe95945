"""Lite.CUAGym (`cua-lite/Lite.CUAGym`): agent rollouts as chat messages with batched tool calls.

Files: `<platform>/use/<split>/[<variant>/]shard-NNNNN-of-NNNNN.parquet`, partitions `browser_use`
and `desktop_use`, splits train, validation, eval. Columns: `images` (HF Image structs {bytes,
path}, or paths relative to the mirror root), `messages` and `metadata` (JSON strings, or parquet
list / struct columns, where a key a row lacks is null: null is absent). Metadata has `dims`, or
the older `platform` and `task_type`: kept as the `upstream_dims` attr, the JSON list
[platform, task_type] of the row's place in the cua-lite layout (the demo's own `platform` is the
partition's, as for every source); declared tools (`extra_tool_schemas`, older `extra_tools`)
are not read: the tool table below decides what is a GUI action.

Splits: train rows go to the main shards; validation and eval (a benchmark evaluation split)
rows to the `_val_` shards, never to training, named in the `upstream_split` attr. Eval is read
first, then train, then validation: a row identical to an eval row is `benchmark_overlap` (the
benchmark copy is kept), a validation row identical to a train row `duplicate_across_splits`.

One row is one episode. The user turn gives the instruction and the first screenshot; each
assistant tool call is a `computer` batch of actions, or one action named by the tool itself
(`{"name": "click", "arguments": {...}}`; ids are not needed: the screen is the last image
shown, and the `tool` message after a call carries the next). The first action of a call
observes that screen; later ones of its batch reuse it, flagged `obs_stale` (their own screen
was never captured) and counted in `stale_steps`. Coordinates in [0, 1000] are divided by 1000.
Roles: system, developer, user, assistant, tool; content parts (a string is one text part):
text, image, metadata, action_description, inline_reasoning, history_summary. Any other role
or part drops the row (`unknown_message_type`): an unread part could be the screen.

Mapping: click -> CLICK (button and clicks 1-3 in desc); mouse_move -> HOVER; drag -> DRAG
(start_coordinate -> coordinate; without a start it is ungrounded); scroll -> SCROLL at its
coordinate (else the causal cursor), the content travelling 0.05 of the frame per amount unit
(0 < amount <= 1000) opposite to `direction` (the view's); type -> TYPE (a trailing newline is
Enter, kept in the text); key -> PRESS_ENTER for ["enter"], else PRESS_KEY "ctrl+c"; hold_key
-> PRESS_KEY; wait -> WAIT (durations in [0, 3600] s); the finish tools terminate (success /
failure) -> STOP / FAIL, response -> STOP with its text. screenshot and cursor_position only
observe: no step. mouse_down / mouse_up / key_down / key_up are `no_action_equivalent`; other
tools (a shell, ...) `non_gui_tool`; other action names `unknown_action_verb`. A number that is
NaN, infinite, fractional for a count or out of range is `malformed_step` (a bad image index:
for each call made while it is shown), and so is a `tool` result that answers no call of the
assistant turn before it (that call was lost from the record). A shard that cannot be opened
fails the partition by name. Success iff metadata.others.episode_return > 0.5 (the publisher's
filter); a return that is neither null nor a finite number drops the row (`malformed_record`).

Drop reasons:
    incomplete                a row whose metadata.others.exclude_reason says incomplete
    malformed_json            a row whose messages or metadata do not parse
    malformed_record          a row whose messages, metadata or images have the wrong shape
    unknown_message_type      a row with a message role or content part type outside the table
    unsafe_reference          an image path that leaves the mirror
    duplicate_row             a row with the same images and messages as an earlier one
    duplicate_across_splits   a validation row identical to a train row (never kept twice)
    benchmark_overlap         a train or validation row identical to an eval row
    non_gui_tool              a tool call of a tool that is not a GUI action
    malformed_step            a tool call or action whose fields are missing, mistyped or absurd
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
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.drops import Drop, DropReason, UngroundedReason
from gui_assets.core.images import ImageError
from gui_assets.core.ir import (
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
from gui_assets.sources import assembly
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError

REPO_ID = "cua-lite/Lite.CUAGym"
PARTITIONS = ("browser_use", "desktop_use")
SPLITS = ("train", "validation", "eval")
READ_ORDER = ("eval", "train", "validation")  # the benchmark first: its copy of a row is kept
GUI_TOOLS = ("computer",)
FINISH_TOOLS = ("terminate", "response")
SCROLL_UNIT = 0.05
MAX_SCROLL_AMOUNT = 1000  # wheel units; 0.05 of the frame each, so far past any real scroll
MAX_DURATION = 3600.0  # seconds a wait or a held key lasts
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
PART_TYPES = frozenset(
    {"text", "image", "metadata", "action_description", "inline_reasoning", "history_summary"}
)
_CLICK_NAMES = {1: "click", 2: "double_click", 3: "triple_click"}  # left clicks by count
_STEP = DropReason.MALFORMED_STEP
_DUPLICATE = {True: DropReason.BENCHMARK_OVERLAP, False: DropReason.DUPLICATE_ACROSS_SPLITS}
_NO_EQUIVALENT = {"mouse_down", "mouse_up", "key_down", "key_up"}
_OBSERVE_ONLY = {"screenshot", "cursor_position"}
_ACTING = {"click", "mouse_move", "drag", "scroll", "type", "key", "hold_key", "wait"}
Screen = Observation | Drop | None  # the image on screen, or why it is unusable
ACTIONS = frozenset(_ACTING | _NO_EQUIVALENT | _OBSERVE_ONLY | set(FINISH_TOOLS))


def file_patterns(partition: str) -> list[str]:
    platform = partition.split("_")[0]
    return [f"{platform}/use/{split}/*.parquet" for split in SPLITS]


DROPS = frozenset(
    {
        DropReason.INCOMPLETE,
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_RECORD,
        DropReason.UNKNOWN_MESSAGE_TYPE,
        DropReason.UNSAFE_REFERENCE,
        DropReason.DUPLICATE_ROW,
        DropReason.DUPLICATE_ACROSS_SPLITS,
        DropReason.BENCHMARK_OVERLAP,
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
    if not isinstance(value, str | bytes):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        raise Drop(DropReason.MALFORMED_JSON) from None


def _number(v: Any, what: str, lo: float, hi: float, whole: bool = False, why: DropReason = _STEP) -> float:
    """`v`, a number in [lo, hi] (whole if asked), else Drop(why); ints compare exactly, so a
    400-digit one is out of range, never an OverflowError."""
    ok = isinstance(v, int | float) and not isinstance(v, bool)
    if ok and isinstance(v, float):
        ok = math.isfinite(v) and (v.is_integer() or not whole)
    if not ok or not lo <= v <= hi:
        raise Drop(why, f"{what} {str(v)[:40]}")
    return v


def _coord(v: Any) -> tuple[float, float] | None:
    if v is None:
        return None
    if not isinstance(v, list | tuple) or len(v) != 2:
        raise Drop(DropReason.MALFORMED_STEP, "coordinate")
    x, y = (_number(c, "coordinate", -math.inf, math.inf) for c in v)
    if not (0 <= x <= 1000 and 0 <= y <= 1000):
        raise Drop(DropReason.COORDINATE_OUT_OF_RANGE)
    return float(x) / 1000.0, float(y) / 1000.0


def _image_bytes(item: Any, mirror_root: Path) -> bytes | None:
    """An `images` entry: an HF Image struct, raw bytes, or a path relative to the mirror root."""
    if isinstance(item, dict):
        data = item.get("bytes")
        if isinstance(data, bytes | bytearray | memoryview) and data:
            return bytes(data)
        item = item.get("path")
    if isinstance(item, bytes | bytearray):
        return bytes(item)
    if isinstance(item, str) and item:
        rel = PurePosixPath(item)
        if rel.is_absolute() or ".." in rel.parts:
            raise Drop(DropReason.UNSAFE_REFERENCE, item[:200])
        p = mirror_root / rel
        try:
            return p.read_bytes() if p.is_file() else None
        except (OSError, ValueError):  # a name too long, or with a NUL: no such file
            return None
    return None


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Eval shards first, then train, then validation: content already kept is not repeated."""
    raw = run.raw
    mirror_root = raw.root.parent.parent  # images paths are relative to <mirror> (cua-lite/<Name>/images/...)
    seen: dict[str, str] = {}  # content hash -> the split that kept it
    for split in READ_ORDER:
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
                ref = SourceRef(raw.repo_id, f.path, row=row_no)
                try:
                    content, row = _row(run, rec, ref, split, mirror_root)
                except Drop as e:
                    run.drop(e.reason)
                    continue
                except (ValueError, TypeError, RecursionError):
                    run.drop(DropReason.MALFORMED_JSON)
                    continue
                except (AttributeError, KeyError, IndexError):  # a JSON value of the wrong shape
                    run.drop(DropReason.MALFORMED_RECORD)
                    continue
                if content in seen:  # identical rows never straddle splits
                    kept = seen[content]
                    run.drop(_DUPLICATE[kept == "eval"] if kept != split else DropReason.DUPLICATE_ROW)
                    continue
                seen[content] = split
                episode = run.episode(*row)
                if episode is not None:
                    yield episode


def _screens(run: AdapterRun, rec: dict[str, Any], mirror_root: Path) -> list[Observation | Drop]:
    """The row's images as observations, or the Drop a call made while one is shown counts."""
    images = rec.get("images")
    if images is not None and not isinstance(images, list):
        raise Drop(DropReason.MALFORMED_RECORD, "images is no list")
    screens: list[Observation | Drop] = []
    for item in images or []:
        data = _image_bytes(item, mirror_root)
        try:
            screens.append(run.observe(data) if data is not None else Drop(DropReason.MISSING_SCREENSHOT))
        except ImageError as e:
            screens.append(e)
    return screens


def _text(v: Any) -> str:
    """A metadata value as text; null (absent in a struct column) is empty."""
    return "" if v is None else str(v)


def _row(
    run: AdapterRun, rec: dict[str, Any], ref: SourceRef, split: str, mirror_root: Path
) -> tuple[str, Any]:
    """(a hash of the row's images and messages, run.episode's arguments)."""
    messages = _json(rec.get("messages"))
    meta = _json(rec.get("metadata")) or {}
    if not isinstance(messages, list) or not isinstance(meta, dict):
        raise Drop(DropReason.MALFORMED_RECORD, "messages or metadata")
    others = meta.get("others") if isinstance(meta.get("others"), dict) else {}
    exclude = _text(others.get("exclude_reason"))
    if "incomplete" in exclude:
        raise Drop(DropReason.INCOMPLETE)
    ret = others.get("episode_return")
    if ret is not None:  # any sign, any size: it only decides success, and is kept as recorded
        ret = _number(ret, "episode_return", -math.inf, math.inf, why=DropReason.MALFORMED_RECORD)
    screens = _screens(run, rec, mirror_root)
    shas = [s.image_sha256 if isinstance(s, Observation) else None for s in screens]
    content = hashlib.sha256(json.dumps([shas, messages], sort_keys=True, default=str).encode()).hexdigest()
    steps = Steps()
    instruction = _messages(run, messages, screens, ref, steps)
    dims = meta.get("dims")  # [platform, task_type]; older rows have the two keys instead
    if not (isinstance(dims, list) and all(isinstance(d, str) for d in dims)):
        dims = [v for v in (meta.get("platform"), meta.get("task_type")) if isinstance(v, str)]
    attrs = {
        "task_id": _text(others.get("task_id")),
        "upstream_split": split,
        "stale_steps": str(sum(s.obs_stale for s in steps.items)),
        "episode_return": json.dumps(ret),
        "exclude_reason": exclude,
        "os": _text(others.get("os")),
        "upstream_dims": json.dumps(dims),
    }
    local_id = f"{split}/{attrs['task_id'] or content[:16]}#{ref.row}:{Path(ref.file).stem}"
    return content, (local_id, instruction, steps, ret is not None and ret > 0.5, attrs)


def _parts(msg: dict[str, Any], m_i: int) -> list[dict[str, Any]]:
    """A message's content parts, every role and part type checked against the table."""
    role = msg.get("role")
    if not (isinstance(role, str) and role in ROLES):
        raise Drop(DropReason.UNKNOWN_MESSAGE_TYPE, f"messages[{m_i}].role {str(role)[:40]}")
    content = msg.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
        raise Drop(DropReason.MALFORMED_RECORD, f"messages[{m_i}].content")
    for part in content:
        kind = part.get("type")
        if not (isinstance(kind, str) and kind in PART_TYPES):
            raise Drop(DropReason.UNKNOWN_MESSAGE_TYPE, f"messages[{m_i}] part type {str(kind)[:40]}")
    return content


def _messages(
    run: AdapterRun, messages: list[Any], screens: list[Observation | Drop], ref: SourceRef, steps: Steps
) -> str:
    """Walk the conversation: the instruction is returned, each action is added to `steps`."""
    instruction = ""
    screen: Screen = None
    unanswered = 0  # calls of the last assistant turn that no tool result has answered yet
    for m_i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise Drop(DropReason.MALFORMED_RECORD, f"messages[{m_i}]")
        parts = _parts(msg, m_i)
        if msg["role"] == "tool":
            if unanswered == 0:  # a result whose call is not in the record: that call was lost
                run.drop(DropReason.MALFORMED_STEP)
            unanswered = max(0, unanswered - 1)
        elif msg["role"] == "assistant":
            calls = msg.get("tool_calls")
            unanswered = 0 if calls is None else len(calls) if isinstance(calls, list) else 1
        for part in parts:
            if part["type"] == "image":  # an index, possibly stored as a float (0.0)
                try:
                    index = int(_number(part.get("index"), "image index", 0, math.inf, whole=True))
                    screen = screens[index] if index < len(screens) else Drop(DropReason.MISSING_SCREENSHOT)
                except Drop as e:
                    screen = e
            elif part["type"] == "text" and msg["role"] == "user" and not instruction:
                instruction = _text(part.get("text"))
        if msg["role"] != "assistant" or msg.get("tool_calls") is None:
            continue
        reasoning = msg.get("reasoning_content")
        thought = reasoning if isinstance(reasoning, str) else ""
        thought = thought or " ".join(_text(p.get("text")) for p in parts if p["type"] == "inline_reasoning")
        described = " ".join(_text(p.get("text")) for p in parts if p["type"] == "action_description")
        calls = msg["tool_calls"]
        msg_ref = SourceRef(ref.repo_id, ref.file, ref.row, f"messages[{m_i}]")
        for call in calls if isinstance(calls, list) else [None]:
            try:
                _call(run, call, screen, msg_ref, (thought, described), steps)
            except Drop as e:
                run.drop(e.reason)
    return instruction


def _actions(call: Any) -> tuple[str, list[Any]]:
    """(tool name, its actions): a `computer` batch, or one action named by the tool itself."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        raise Drop(DropReason.MALFORMED_STEP, "a tool call that is no {function: {...}}")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise Drop(DropReason.MALFORMED_STEP, "a tool call without a name")
    if name not in GUI_TOOLS and name not in ACTIONS:
        raise Drop(DropReason.NON_GUI_TOOL, name[:80])
    try:
        args = _json(fn.get("arguments"))
    except Drop:
        args = False
    args = {} if args is None else args
    if not isinstance(args, dict):
        raise Drop(DropReason.MALFORMED_STEP, "arguments that are no JSON object")
    if name not in GUI_TOOLS:
        return name, [{**args, "action": name}]
    actions = args.get("actions")
    if not isinstance(actions, list) or not actions:
        raise Drop(DropReason.MALFORMED_STEP, "a computer call that carries no action")
    return name, actions


def _call(
    run: AdapterRun, call: Any, screen: Screen, ref: SourceRef, notes: tuple[str, str], steps: Steps
) -> None:
    """One tool call: each of its actions a step; only the first sees its own pre-action screen."""
    name, actions = _actions(call)
    if screen is None:
        raise Drop(DropReason.MISSING_SCREENSHOT, "no image on screen")
    if isinstance(screen, Drop):
        raise screen
    first = True
    for a_i, action in enumerate(actions):
        member = f"{ref.member}.tool_calls.{name}.actions[{a_i}]"
        step_ref = SourceRef(ref.repo_id, ref.file, ref.row, member)
        try:
            step = _step(action, screen, steps.pointer, step_ref, notes, stale=not first)
        except Drop as e:
            run.drop(e.reason)
            continue
        if step is None:
            continue
        first = False
        steps.add(step)


def _string(a: dict[str, Any], key: str, default: str | None = None) -> str:
    """A text field; null is absent (`default`, else malformed_step), a non-string is malformed."""
    v = a.get(key)
    if v is None and default is not None:
        return default
    if not isinstance(v, str):
        raise Drop(DropReason.MALFORMED_STEP, f"{a.get('action')} {key}")
    return v


def _duration(a: dict[str, Any]) -> str:
    """A wait's or held key's duration as text, checked: '' when not given."""
    d = a.get("duration")
    return "" if d is None else f"{_number(d, 'duration', 0, MAX_DURATION):g}"


def _scroll_view(a: dict[str, Any]) -> tuple[float, float]:
    """How far the view moves, in wheel units (+x right, +y down)."""
    direction = a.get("direction")
    if direction not in ("up", "down", "left", "right"):
        raise Drop(DropReason.MALFORMED_STEP, "scroll direction")
    amount = a.get("amount")
    amount = 1 if amount is None else _number(amount, "scroll amount", 0, MAX_SCROLL_AMOUNT)
    if amount == 0:
        raise Drop(DropReason.MALFORMED_STEP, "scroll by 0")
    return {"down": (0, amount), "up": (0, -amount), "right": (amount, 0), "left": (-amount, 0)}[direction]


def _step(
    a: Any,
    obs: Observation,
    pointer: tuple[float, float],
    ref: SourceRef,
    notes: tuple[str, str],
    stale: bool,
) -> GuiStep | None:
    """One action's step (None for an action that only observes); Drop when it makes none."""
    if not isinstance(a, dict):
        raise Drop(DropReason.MALFORMED_STEP, "an action that is not an object")
    name = _text(a.get("action"))
    thought, described = notes
    annotations = json.dumps({"action_description": described}, ensure_ascii=False) if described else ""
    make = step_builder(obs, ref, thought=thought, obs_stale=stale, annotations=annotations)

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
        clicks = a.get("clicks")
        clicks = 1 if clicks is None else int(_number(clicks, "clicks", 1, 3, whole=True))
        button = _string(a, "button", "left")
        label = f"{button}_click" + (f"_x{clicks}" if clicks > 1 else "")
        return at(ActionType.CLICK, _CLICK_NAMES[clicks] if button == "left" else label)
    if name == "mouse_move":
        return at(ActionType.HOVER)
    if name == "drag":
        start, end = _coord(a.get("start_coordinate")), _coord(a.get("coordinate"))
        if start is None or end is None:
            return make(ActionType.DRAG, ungrounded=UngroundedReason.NO_CANDIDATE)
        return make(ActionType.DRAG, (*start, *end), SPAN_MASK)
    if name == "scroll":
        view = _scroll_view(a)
        return wheel_step(make, _coord(a.get("coordinate")) or pointer, view, (SCROLL_UNIT, SCROLL_UNIT))
    if name == "type":
        return make(ActionType.TYPE, text=_string(a, "text"))
    if name in ("key", "hold_key"):
        keys = a.get("keys")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            raise Drop(DropReason.MALFORMED_STEP, "key without keys")
        text = "+".join(keys)
        if name == "hold_key":
            _duration(a)
            return make(ActionType.PRESS_KEY, text=text, name="hold_key")
        enter = [k.lower() for k in keys] in (["enter"], ["return"])
        return make(ActionType.PRESS_ENTER if enter else ActionType.PRESS_KEY, text=text)
    if name == "wait":
        return make(ActionType.WAIT, desc=f"wait({_duration(a)})")
    if name == "terminate":
        status = _string(a, "status", "success").lower()
        if status not in ("success", "succeeded", "failure", "fail", "failed"):
            raise Drop(DropReason.MALFORMED_STEP, f"terminate status {status[:40]}")
        return make(ActionType.STOP if status.startswith("succ") else ActionType.FAIL)
    if name == "response":
        text = a.get("text") if a.get("text") is not None else a.get("response")
        if not isinstance(text, str):
            raise Drop(DropReason.MALFORMED_STEP, "response without text")
        return make(ActionType.STOP, text=text, name="response")
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, name[:80])
