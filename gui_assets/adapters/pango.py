"""Pango (`chakra-labs/pango-sample`): raw browser event streams aggregated into steps.

Rows (parquet or JSON lines anywhere in the repo): id, task_description, quest_type,
profession, synthetically_generated_instruction (the instruction), input_metadata (a JSON
document `{"actions": [...]}`, inline or as a path / URL to one: a path is relative to the repo
root, a URL names the mirror file of its path part) and, optionally,
synthetically_generated_thought_metadata. Events carry type, x, y (screenshot px),
relative_timestamp_ms and screenshot_url (resolved like input_metadata).

Events are taken in time order, one session at a time (a `session_id` field splits a row's
events; sessions never mix), and aggregated into steps:
    click                       CLICK at (x, y); button_right and click_count 2 / 3 stay in desc
    input (a run of them)       one TYPE: cumulative values (each extends the last) keep the
                                last, other runs are concatenated
    key_down ... key_up         one PRESS step per run until every key is released: the DOM
                                codes pressed, joined by "+"; PRESS_ENTER for Enter alone
    key_press                   one PRESS step with its code
    drag_start + drag_end       DRAG from start to end (`unpaired_drag` or
                                `drag_without_coordinates` when that fails)
    scroll (consecutive ones)   one SCROLL: deltas summed (delta_x / delta_y, or deltaX / deltaY,
                                DOM WheelEvent sign: positive y moves the view down), the gesture
                                at the event point (else the causal cursor), content travelling
                                opposite to the view
    mouseover_start + _end      HOVER at the start point when BuildConfig.pango_hover, else
                                dropped as `mouseover` (they are mostly pointer noise)
A step's observation is the screenshot of its first event (taken before it). Events with no
coordinates where a point is needed are `missing_coordinates`; unknown types
`unknown_action_verb`. Thoughts (generated every gamma steps over a window) are attached to
their target step by its index; they fill `step_thought`.
An unreadable parquet file fails the partition by name.

Drop reasons:
    malformed_json            a JSON line or events document that does not parse
    malformed_record          a row without an id, or whose input_metadata is not a document
                              or has no list of events
    missing_input_metadata    an events document the row names that is not there
    unsafe_reference          an input_metadata reference that leaves the repository folder
    malformed_event           an event that is not an object
    unpaired_drag             a drag_start or drag_end without its other half
    mouseover                 mouseover events (pointer noise) unless pango_hover is set
    unknown_action_verb       an event type the aggregation does not know
    missing_screenshot        a step whose first event names no screenshot, or one not there
    unsafe_screenshot_reference  a screenshot reference that leaves the repository folder
    missing_coordinates       a click or hover without x, y
    coordinate_out_of_range   a point outside its screenshot
    drag_without_coordinates  a drag pair missing a point
    empty_scroll              a run of scroll events whose deltas sum to nothing
    malformed_step            a key run without a key code
    undecodable_image         screenshot bytes that do not decode
    unsupported_image_format  screenshot bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             a session none of whose steps survived
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets import assembly
from gui_assets.assembly import AdapterRun, Steps
from gui_assets.drops import Drop, DropReason
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
from gui_assets.mirror import RawInputError, RawPartition

REPO_ID = "chakra-labs/pango-sample"
PARTITIONS = ("sample",)
ROW_PATTERNS = ["*.parquet", "*.jsonl"]
_KEYS = {"key_down", "key_up"}
_MODIFIER_ORDER = ("Control", "Meta", "Alt", "Shift")


def file_patterns(partition: str) -> list[str]:
    return list(ROW_PATTERNS)


DROPS = frozenset(
    {
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_RECORD,
        DropReason.MISSING_INPUT_METADATA,
        DropReason.UNSAFE_REFERENCE,
        DropReason.MALFORMED_EVENT,
        DropReason.UNPAIRED_DRAG,
        DropReason.MOUSEOVER,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.MISSING_SCREENSHOT,
        DropReason.UNSAFE_SCREENSHOT_REFERENCE,
        DropReason.MISSING_COORDINATES,
        DropReason.COORDINATE_OUT_OF_RANGE,
        DropReason.DRAG_WITHOUT_COORDINATES,
        DropReason.EMPTY_SCROLL,
        DropReason.MALFORMED_STEP,
    }
    | assembly.DROPS
)


def _resolve(root: Path, ref: str, unsafe: DropReason) -> Path:
    """A path relative to the repo root, or a URL whose path part names a mirror file."""
    rel = urlsplit(ref).path if "://" in ref else ref
    p = PurePosixPath(rel.lstrip("/"))
    if ".." in p.parts or not p.parts:
        raise Drop(unsafe, ref[:200])
    if len(rel) > 4096 or any(len(part.encode("utf-8", "replace")) > 255 for part in p.parts):
        raise Drop(unsafe, "name too long")  # no file system holds such a name
    return root / p


def _read_reference(root: Path, ref: str, missing: DropReason, unsafe: DropReason) -> bytes:
    """The bytes of a mirror file a record points to; `missing` / `unsafe` name the drop otherwise."""
    path = _resolve(root, ref, unsafe)
    try:
        return path.read_bytes()
    except OSError:  # absent, a directory, unreadable: the record's reference is dangling
        raise Drop(missing, ref[:200]) from None


def _load_document(value: Any, root: Path) -> Any:
    if isinstance(value, dict | list):
        return value
    if not isinstance(value, str) or not value.strip():
        raise Drop(DropReason.MALFORMED_RECORD, "no input_metadata")
    text = value.strip()
    try:
        if text[0] in "[{":
            return json.loads(text)
        data = _read_reference(root, text, DropReason.MISSING_INPUT_METADATA, DropReason.UNSAFE_REFERENCE)
        return json.loads(data.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        raise Drop(DropReason.MALFORMED_JSON, "input_metadata") from None


def _rows(raw: RawPartition) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for f in sorted(raw.files, key=lambda f: f.path):
        if f.path.endswith(".parquet"):
            try:
                table = pq.read_table(f.local)
            except (OSError, pa.ArrowInvalid) as e:
                raise RawInputError(f"{raw.repo_id}/{f.path}: not a readable parquet file ({e})") from None
            for i, rec in enumerate(table.to_pylist()):
                yield f.path, i, rec
        else:
            with open(f.local, encoding="utf-8", errors="replace") as fh:
                for i, line in enumerate(fh):
                    if line.strip():
                        try:
                            rec = json.loads(line)
                        except ValueError:
                            rec = None
                        yield f.path, i, rec if isinstance(rec, dict) else {"__malformed__": True}


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Every row's sessions, rows in file order; a row that cannot be read is one candidate."""
    raw = run.raw
    for path, row_no, rec in _rows(raw):
        ref = SourceRef(raw.repo_id, raw.revision, path, row=row_no)
        try:
            if rec.get("__malformed__"):
                raise Drop(DropReason.MALFORMED_JSON, f"{path} line {row_no}")
            if not isinstance(rec.get("id"), str | int):
                raise Drop(DropReason.MALFORMED_RECORD, "no id")
            doc = _load_document(rec.get("input_metadata"), raw.root)
            events = doc.get("actions") if isinstance(doc, dict) else doc
            if not isinstance(events, list):
                raise Drop(DropReason.MALFORMED_RECORD, "no list of events")
        except Drop as e:
            run.reject(e.reason)
            continue
        thoughts = _thoughts(rec.get("synthetically_generated_thought_metadata"))
        sessions: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            if isinstance(e, dict):
                sessions.setdefault(str(e.get("session_id", "")), []).append(e)
            else:
                run.drop(DropReason.MALFORMED_EVENT)
        for session, evs in run.candidates(sessions.items() or [("", [])]):
            episode = _episode(run, rec, session, evs, thoughts, ref)
            if episode is not None:
                yield episode


def _thoughts(value: Any) -> dict[int, str]:
    """Generated thoughts by target step: a list of {target step index, thought} or a mapping."""
    try:
        doc = json.loads(value) if isinstance(value, str) and value.strip() else value
    except ValueError:
        return {}
    out: dict[int, str] = {}
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, item in items:
        if isinstance(item, dict):
            idx = next(
                (
                    item[k]
                    for k in ("target_step", "target_step_index", "step_index", "step", "index")
                    if isinstance(item.get(k), int)
                ),
                None,
            )
            text = next(
                (item[k] for k in ("thought", "text", "content") if isinstance(item.get(k), str)), None
            )
        else:
            idx, text = (int(key) if str(key).isdigit() else None), item if isinstance(item, str) else None
        if idx is not None and text:
            out[int(idx)] = text
    return out


def _xy(e: dict[str, Any]) -> tuple[float, float] | None:
    x, y = e.get("x"), e.get("y")
    if any(isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) for v in (x, y)):
        return None
    return float(x), float(y)  # type: ignore[arg-type]


def _group(
    events: list[dict[str, Any]], hover: bool, run: AdapterRun
) -> list[tuple[str, list[dict[str, Any]]]]:
    """Consecutive events that make one action, as (kind, events)."""
    evs = sorted(
        events,
        key=lambda e: (
            (e.get("relative_timestamp_ms") or 0)
            if isinstance(e.get("relative_timestamp_ms"), int | float)
            else 0
        ),
    )
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    i = 0
    while i < len(evs):
        e = evs[i]
        kind = str(e.get("type", ""))
        if kind in ("input", "scroll"):
            j = i
            while j < len(evs) and evs[j].get("type") == kind:
                j += 1
            groups.append((kind, evs[i:j]))
            i = j
        elif kind in _KEYS:
            down: set[str] = set()
            j = i
            while j < len(evs) and evs[j].get("type") in _KEYS:
                code = str(evs[j].get("key_code", ""))
                down.add(code) if evs[j]["type"] == "key_down" else down.discard(code)
                j += 1
                if not down:
                    break
            groups.append(("keys", evs[i:j]))
            i = j
        elif kind in ("drag_start", "mouseover_start"):
            end = kind.replace("_start", "_end")
            if i + 1 < len(evs) and evs[i + 1].get("type") == end:
                groups.append((kind.split("_")[0], evs[i : i + 2]))
                i += 2
            else:
                run.drop(DropReason.UNPAIRED_DRAG if kind == "drag_start" else DropReason.MOUSEOVER)
                i += 1
        elif kind in ("drag_end", "mouseover_end"):
            run.drop(DropReason.UNPAIRED_DRAG if kind == "drag_end" else DropReason.MOUSEOVER)
            i += 1
        else:
            groups.append((kind, [e]))
            i += 1
    if not hover:
        kept = []
        for kind, g in groups:
            if kind == "mouseover":
                run.drop(DropReason.MOUSEOVER)
            else:
                kept.append((kind, g))
        groups = kept
    return groups


def _episode(
    run: AdapterRun,
    rec: dict[str, Any],
    session: str,
    events: list[dict[str, Any]],
    thoughts: dict[int, str],
    ref: SourceRef,
) -> GuiEpisode | None:
    steps = Steps()
    cache: dict[str, Observation] = {}
    for kind, group in _group(events, run.config.pango_hover, run):
        first = group[0]
        shot = first.get("screenshot_url")
        try:
            if not isinstance(shot, str) or not shot:
                raise Drop(DropReason.MISSING_SCREENSHOT, "no screenshot_url")
            obs = cache.get(shot)
            if obs is None:
                data = _read_reference(
                    run.raw.root, shot, DropReason.MISSING_SCREENSHOT, DropReason.UNSAFE_SCREENSHOT_REFERENCE
                )
                obs = cache[shot] = run.observe(data)
            step_ref = SourceRef(
                ref.repo_id,
                ref.revision,
                ref.file,
                ref.row,
                f"input_metadata.actions@{first.get('relative_timestamp_ms')}",
            )
            steps.add(_step(kind, group, obs, steps.pointer, step_ref, thoughts.get(len(steps), "")))
        except Drop as e:
            run.drop(e.reason)
    attrs = {k: str(rec.get(k) or "") for k in ("task_description", "quest_type", "profession")}
    attrs.update(pango_id=str(rec["id"]), session_id=session)
    suffix = f"/{session}" if session else ""
    return run.episode(
        f"{rec['id']}{suffix}", str(rec.get("synthetically_generated_instruction") or ""), steps, True, attrs
    )


def _step(
    kind: str,
    group: list[dict[str, Any]],
    obs: Observation,
    pointer: tuple[float, float],
    ref: SourceRef,
    thought: str,
) -> GuiStep:
    w, h = obs.width, obs.height

    make = step_builder(obs, ref, thought=thought)

    def norm(xy: tuple[float, float] | None) -> tuple[float, float]:
        if xy is None:
            raise Drop(DropReason.MISSING_COORDINATES)
        x, y = xy[0] / w, xy[1] / h
        if not (0 <= x <= 1 and 0 <= y <= 1):
            raise Drop(DropReason.COORDINATE_OUT_OF_RANGE)
        return x, y

    e = group[0]
    if kind == "click":
        right = e.get("button") == "button_right"
        count = e.get("click_count") if isinstance(e.get("click_count"), int) else 1
        name = ("right_" if right else "") + {1: "click", 2: "double_click", 3: "triple_click"}.get(
            count, "click"
        )
        return make(ActionType.CLICK, norm(_xy(e)), POINT_MASK, name=name)
    if kind == "input":
        values = [str(g.get("input_data") or "") for g in group]
        cumulative = all(values[k + 1].startswith(values[k]) for k in range(len(values) - 1))
        text = values[-1] if cumulative else "".join(values)
        return make(ActionType.TYPE, text=text)
    if kind == "keys" or kind == "key_press":
        codes: list[str] = []
        for g in group:
            code = str(g.get("key_code") or "")
            if g.get("type") in ("key_down", "key_press") and code and code not in codes:
                codes.append(code)
        if not codes:
            raise Drop(DropReason.MALFORMED_STEP, "a key run without a key code")
        codes.sort(key=lambda c: next((i for i, m in enumerate(_MODIFIER_ORDER) if c.startswith(m)), 9))
        text = "+".join(codes)
        if codes in (["Enter"], ["NumpadEnter"]):
            return make(ActionType.PRESS_ENTER, text=text)
        return make(ActionType.PRESS_KEY, text=text)
    if kind == "drag":
        a, b = _xy(group[0]), _xy(group[1])
        if a is None or b is None:
            raise Drop(DropReason.DRAG_WITHOUT_COORDINATES)
        return make(ActionType.DRAG, (*norm(a), *norm(b)), SPAN_MASK)
    if kind == "mouseover":
        return make(ActionType.HOVER, norm(_xy(e)), POINT_MASK)
    if kind == "scroll":

        def delta(g: dict[str, Any], *keys: str) -> float:
            v = next(
                (g[k] for k in keys if isinstance(g.get(k), int | float) and not isinstance(g.get(k), bool)),
                0,
            )
            return float(v) if math.isfinite(v) else 0.0

        dx = sum(delta(g, "delta_x", "deltaX") for g in group)
        dy = sum(delta(g, "delta_y", "deltaY") for g in group)
        if dx == 0 and dy == 0:
            raise Drop(DropReason.EMPTY_SCROLL)
        xy = _xy(e)
        x, y = norm(xy) if xy else pointer
        return wheel_step(make, (x, y), (dx, dy), (1 / w, 1 / h))
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, kind)
