"""Pango (`chakra-labs/pango-sample`): raw browser event streams aggregated into steps.

Rows: `train.csv` at the repo root (the real layout, read as CSV: quoted fields, embedded
newlines, UTF-8) or parquet / JSON lines exports of them anywhere in the repo: id,
task_description, quest_type, profession, duration_ms, synthetically_generated_instruction (the
instruction), input_metadata, optionally synthetically_generated_thought_metadata. input_metadata
is the events document (`{"actions": [...]}` or a bare list): inline JSON, a repo path, or an
https URL on the collector's bucket (`https://<bucket>/finalized/<id>/actions_v3.json`). Events
carry type, x, y (screenshot px), relative_timestamp_ms and screenshot_url (a URL or repo path).
A repo path is read under the repo folder, never outside it; a URL, in a mirror, as the file its
path part names (`<repo>/finalized/<id>/actions_v3.json`), in hub mode as the copy the raw stage
fetched over https (`remote_files` names them; the raw manifest's `remote` entries hold each
copy's size and sha256, checked again when read, and `refused` the URLs without one).

Events are taken in time order, one session at a time (a `session_id` field splits a row's
events; sessions never mix), and aggregated into steps:
    click                       CLICK at (x, y); button_right and click_count 2 / 3 stay in desc
                                (no button: left; no click_count: 1)
    input (a run of them)       one TYPE: cumulative values (each extends the last) keep the
                                last, other runs are concatenated (no input_data: "")
    key_down ... key_up         one PRESS step per run until every key is released: the DOM
                                codes pressed, joined by "+"; PRESS_ENTER for Enter alone
    key_press                   one PRESS step with its code
    drag_start + drag_end       DRAG from start to end
    scroll (consecutive ones)   one SCROLL: deltas summed (delta_x / delta_y, or deltaX / deltaY,
                                an axis absent is 0; DOM WheelEvent sign: positive y moves the
                                view down) at the event point (else the causal cursor)
    mouseover_start + _end      HOVER at the start point with the `hover` option, else
                                dropped as `mouseover` (they are mostly pointer noise)
A step's observation is the screenshot of its first event (taken before it). Numbers are checked
where they are read: x, y finite and inside the screenshot; timestamps and duration_ms in
[0, a week]; wheel deltas within 1e6 px; click_count an integer in 1..100. Thoughts are attached
to their target step by its index (`step_thought`). A row file that cannot be read (not
parquet, CSV quoting that never closes, no header) fails the partition by name.

Drop reasons:
    malformed_json            a JSON line or events document that does not parse
    malformed_record          a row without an id, a CSV row with a wrong field count or not
                              UTF-8, a bad duration_ms, input_metadata with no list of events
    duplicate_id              a row whose id an earlier row (another export of it) had
    missing_input_metadata    an events document the row names that is not there (404 included)
    unsafe_reference          an input_metadata reference that leaves the repository folder
    refused_url               an input_metadata URL not fetched: not https, a host the
                              declaration does not allow, or over the size cap
    malformed_event           an event that is not an object
    malformed_timestamp       an event whose relative_timestamp_ms is absent or bad
    unpaired_drag             a drag_start or drag_end without its other half
    mouseover                 mouseover events (pointer noise) unless the `hover` option is set
    unknown_action_verb       an event whose type is absent or one the aggregation does not know
    missing_screenshot        a step whose first event names no screenshot, or one not there
    unsafe_screenshot_reference  a screenshot reference that leaves the repository folder
    refused_screenshot_url    a screenshot URL not fetched (as refused_url)
    missing_coordinates       a click or hover without x, y
    coordinate_out_of_range   a point outside its screenshot
    drag_without_coordinates  a drag pair missing a point
    empty_scroll              a run of scroll events whose deltas sum to nothing
    malformed_step            a mistyped or absurd field: x, y, a delta, click_count, button,
                              input_data, a key code; a key run releasing a key never pressed
    no_action_equivalent      a click of another button than left or right; input that ends empty
    undecodable_image         screenshot bytes that do not decode
    unsupported_image_format  screenshot bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             a session none of whose steps survived
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core import ir
from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import POINT_MASK, SPAN_MASK, ActionType, GuiEpisode, GuiStep, Observation, SourceRef
from gui_assets.sources import assembly
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError, RawPartition
from gui_assets.sources.remote import References, RefReasons, fetch_target, peek

REPO_ID = "chakra-labs/pango-sample"
PARTITIONS = ("sample",)
ROW_PATTERNS = ["*.csv", "*.parquet", "*.jsonl"]
EVENT_TYPES = frozenset(
    "click input key_down key_up key_press drag_start drag_end mouseover_start mouseover_end scroll".split()
)
_KEYS = {"key_down", "key_up"}
_MODIFIER_ORDER = ("Control", "Meta", "Alt", "Shift")
_MAX_MS = 7 * 24 * 3600 * 1000  # a week: a timestamp or a duration beyond it is absurd
_MAX_DELTA = 1e6  # px one wheel event moves the view, at most
_MAX_CLICKS = 100
_STEP_KEYS = ("target_step", "target_step_index", "step_index", "step", "index")  # a thought's step
_CSV_FIELD_LIMIT = 1 << 30  # an inline events document is one CSV field
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, as surrogate escapes


def file_patterns(partition: str) -> list[str]:
    return list(ROW_PATTERNS)


_OWN_DROPS = """malformed_json malformed_record duplicate_id missing_input_metadata unsafe_reference
    refused_url malformed_event malformed_timestamp unpaired_drag mouseover unknown_action_verb
    missing_screenshot unsafe_screenshot_reference refused_screenshot_url missing_coordinates
    coordinate_out_of_range drag_without_coordinates empty_scroll malformed_step no_action_equivalent"""
DROPS = frozenset(map(DropReason, _OWN_DROPS.split())) | assembly.DROPS  # test_source_docs checks both ways

_DOC = RefReasons(DropReason.MISSING_INPUT_METADATA, DropReason.UNSAFE_REFERENCE, DropReason.REFUSED_URL)
_SHOT = RefReasons(
    DropReason.MISSING_SCREENSHOT, DropReason.UNSAFE_SCREENSHOT_REFERENCE, DropReason.REFUSED_SCREENSHOT_URL
)


def _csv_rows(path: Path, name: str) -> Iterator[dict[str, Any] | Drop]:
    """Rows of a CSV file: RFC 4180 quoting (commas, quotes, newlines in a field), UTF-8, a BOM."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
        reader = csv.reader(fh, strict=True)
        try:
            header = next(reader, None)
            if not header or len(set(header)) != len(header):
                raise RawInputError(f"{name}: no CSV header, or a column named twice")
            for row in reader:
                if not row:
                    continue  # a blank line is no record
                if len(row) != len(header):
                    yield Drop(DropReason.MALFORMED_RECORD, f"{len(row)} fields, {len(header)} columns")
                elif _ESCAPED.search("".join(row)):  # bytes that were not UTF-8
                    yield Drop(DropReason.MALFORMED_RECORD, "not UTF-8")
                else:
                    yield dict(zip(header, row, strict=True))
        except csv.Error as e:  # quoting that never closes: where the next row starts is unknown
            raise RawInputError(f"{name}: not readable as CSV at line {reader.line_num} ({e})") from None


def _json_rows(path: Path, name: str) -> Iterator[dict[str, Any] | Drop]:
    with open(path, "rb") as fh:
        for line in filter(bytes.strip, fh):
            try:
                rec = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError):
                rec = Drop(DropReason.MALFORMED_JSON, "a line")
            yield rec if isinstance(rec, dict | Drop) else Drop(DropReason.MALFORMED_RECORD, "not an object")


def _parquet_rows(path: Path, name: str) -> Iterator[dict[str, Any] | Drop]:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise RawInputError(f"{name}: not a readable parquet file ({e})") from None
    yield from table.to_pylist()


def _rows(raw: RawPartition) -> Iterator[tuple[str, int, dict[str, Any] | Drop]]:
    """(repo path, row number, the row or the Drop it is) for every row of every row file (the
    manifest also lists, in hub mode, the files rows reference by repo path: not row files)."""
    for f in sorted(raw.files, key=lambda f: f.path):
        name = f"{raw.repo_id}/{f.path}"
        read = {".csv": _csv_rows, ".parquet": _parquet_rows, ".jsonl": _json_rows}.get(Path(f.path).suffix)
        if read is None:
            continue
        try:
            yield from ((f.path, i, rec) for i, rec in enumerate(read(f.local, name)))
        except OSError as e:
            raise RawInputError(f"{name}: cannot be read ({e})") from None


def _duration(value: Any) -> str:
    """duration_ms as text ("" when absent); a Drop when it is no count of ms within a week."""
    if value is None or value == "":
        return ""
    try:
        ms = _finite(float(value) if isinstance(value, str) else value, 0, _MAX_MS)
    except ValueError:  # text that is no number
        ms = None
    if ms is None:
        raise Drop(DropReason.MALFORMED_RECORD, "duration_ms")
    return str(int(ms)) if ms.is_integer() else str(ms)


def _parse_events(value: Any) -> list[Any]:
    """The events of a document given as JSON text or bytes, or already parsed."""
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # UnicodeDecodeError included
            raise Drop(DropReason.MALFORMED_JSON, "input_metadata") from None
    events = value.get("actions") if isinstance(value, dict) else value
    if not isinstance(events, list):
        raise Drop(DropReason.MALFORMED_RECORD, "no list of events")
    return events


def _reference(value: Any) -> str | None:
    """input_metadata's reference (a path or URL), or None when it is a document itself."""
    text = value.strip() if isinstance(value, str) else ""
    return text if text and text[0] not in "[{" else None


def _events(value: Any, files: References) -> list[Any]:
    ref = _reference(value)
    if ref is not None:
        return _parse_events(files.read(ref, _DOC))
    if (isinstance(value, str) and value.strip()) or isinstance(value, dict | list):
        return _parse_events(value)
    raise Drop(DropReason.MALFORMED_RECORD, "no input_metadata")


@dataclass(frozen=True, slots=True)
class _Row:
    """What the sessions of one row share."""

    row_id: str
    instruction: str
    attrs: dict[str, str]
    thoughts: dict[int, str]
    ref: SourceRef


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Every row's sessions, rows in file order; a row that cannot be read is one candidate."""
    raw = run.raw
    files = References(raw)
    seen: set[str] = set()
    for path, row_no, rec in _rows(raw):
        try:
            if isinstance(rec, Drop):
                raise rec
            row_id = str(rec.get("id")).strip() if type(rec.get("id")) in (str, int) else ""
            if not row_id:
                raise Drop(DropReason.MALFORMED_RECORD, "no id")
            if row_id in seen:
                raise Drop(DropReason.DUPLICATE_ID, row_id[:200])
            duration = _duration(rec.get("duration_ms"))
            events = _events(rec.get("input_metadata"), files)
        except Drop as e:
            run.reject(e.reason)
            continue
        seen.add(row_id)
        attrs = {k: str(rec.get(k) or "") for k in ("task_description", "quest_type", "profession")}
        attrs.update(pango_id=row_id, duration_ms=duration)
        instruction = str(rec.get("synthetically_generated_instruction") or "")
        thoughts = _thoughts(rec.get("synthetically_generated_thought_metadata"))
        row = _Row(row_id, instruction, attrs, thoughts, SourceRef(raw.repo_id, path, row_no))
        for session, evs in run.candidates(_sessions(events, run.drop).items() or [("", [])]):
            episode = _episode(run, files, row, session, evs)
            if episode is not None:
                yield episode


def _sessions(events: list[Any], drop: Callable[[DropReason], None]) -> dict[str, list[dict[str, Any]]]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if isinstance(e, dict):
            sid = e.get("session_id")
            sessions.setdefault("" if sid is None else str(sid), []).append(e)
        else:
            drop(DropReason.MALFORMED_EVENT)
    return sessions


def _thoughts(value: Any) -> dict[int, str]:
    """Generated thoughts by target step: a list of {target step index, thought} or a mapping."""
    try:
        doc = json.loads(value) if isinstance(value, str) and value.strip() else value
    except (ValueError, RecursionError):
        return {}
    out: dict[int, str] = {}
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, item in items:
        if isinstance(item, dict):
            idx = next((item[k] for k in _STEP_KEYS if type(item.get(k)) is int), None)
            text = next(
                (item[k] for k in ("thought", "text", "content") if isinstance(item.get(k), str)), None
            )
        else:
            idx, text = (int(key) if str(key).isdigit() else None), item if isinstance(item, str) else None
        if idx is not None and text:
            out[int(idx)] = text
    return out


def _timed(events: list[dict[str, Any]], drop: Callable[[DropReason], None]) -> list[dict[str, Any]]:
    """Events of a known type in time order (ties keep document order); the others dropped."""
    kept = []
    for e in events:
        t, kind = e.get("relative_timestamp_ms"), e.get("type")
        if not isinstance(kind, str) or kind not in EVENT_TYPES:  # absent, mistyped or unknown
            drop(DropReason.UNKNOWN_ACTION_VERB)
        elif _finite(t, 0, _MAX_MS) is None:
            drop(DropReason.MALFORMED_TIMESTAMP)
        else:
            kept.append(e)
    return sorted(kept, key=lambda e: e["relative_timestamp_ms"])


def _group(
    events: list[dict[str, Any]], hover: bool, drop: Callable[[DropReason], None]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """Consecutive events that make one action, as (kind, events)."""
    evs = _timed(events, drop)
    groups: list[tuple[str, list[dict[str, Any]]]] = []
    i = 0
    while i < len(evs):
        kind = evs[i]["type"]
        j = i + 1
        if kind in ("input", "scroll"):
            while j < len(evs) and evs[j]["type"] == kind:
                j += 1
        elif kind in _KEYS:
            down = {str(evs[i].get("key_code"))} if kind == "key_down" else set()
            while down and j < len(evs) and evs[j]["type"] in _KEYS:  # until all are released
                code, pressed = str(evs[j].get("key_code")), evs[j]["type"] == "key_down"
                j += 1
                if not pressed and code not in down:
                    break  # a key released that was never pressed: this run's step is malformed
                down.add(code) if pressed else down.discard(code)
            kind = "keys"
        elif kind in ("drag_start", "mouseover_start"):
            if j < len(evs) and evs[j]["type"] == kind.replace("_start", "_end"):
                kind, j = kind.split("_")[0], j + 1
            else:
                kind = ""
        elif kind in ("drag_end", "mouseover_end"):
            kind = ""
        if not kind:  # half a pair
            drop(DropReason.UNPAIRED_DRAG if evs[i]["type"].startswith("drag") else DropReason.MOUSEOVER)
        elif kind == "mouseover" and not hover:
            drop(DropReason.MOUSEOVER)
        else:
            groups.append((kind, evs[i:j]))
        i = j
    return groups


def _episode(
    run: AdapterRun, files: References, row: _Row, session: str, events: list[dict[str, Any]]
) -> GuiEpisode | None:
    steps = Steps()
    cache: dict[str, Observation] = {}
    for kind, group in _group(events, run.config.options["hover"], run.drop):
        first = group[0]
        shot = first.get("screenshot_url")
        try:
            if not isinstance(shot, str) or not shot.strip():
                raise Drop(DropReason.MISSING_SCREENSHOT, "no screenshot_url")
            obs = cache.get(shot)
            if obs is None:
                obs = cache[shot] = run.observe(files.read(shot.strip(), _SHOT))
            ref = dataclasses.replace(
                row.ref, member=f"input_metadata.actions@{first['relative_timestamp_ms']}"
            )
            steps.add(_step(kind, group, obs, steps.pointer, ref, row.thoughts.get(len(steps), "")))
        except Drop as e:
            run.drop(e.reason)
    local_id = f"{row.row_id}/{session}" if session else row.row_id
    return run.episode(local_id, row.instruction, steps, True, {**row.attrs, "session_id": session})


def _finite(value: Any, low: float, high: float) -> float | None:
    """A number within [low, high]; None for anything else (a bool, text, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past any float
        return None
    return number if math.isfinite(number) and low <= number <= high else None


def _number(value: Any, what: str, low: float, high: float) -> float:
    """A number within [low, high]; a Drop (malformed_step) otherwise."""
    found = _finite(value, low, high)
    if found is None:
        raise Drop(DropReason.MALFORMED_STEP, what)
    return found


def _xy(e: dict[str, Any]) -> tuple[float, float] | None:
    """The event's point in px: None when it has none; a Drop when it is no two finite numbers."""
    if e.get("x") is None and e.get("y") is None:
        return None
    return _number(e.get("x"), "x", -math.inf, math.inf), _number(e.get("y"), "y", -math.inf, math.inf)


def _click_name(e: dict[str, Any]) -> str:
    button = "button_left" if e.get("button") in (None, "") else e["button"]
    clicks = e.get("click_count")
    count = 1.0 if clicks is None else _number(clicks, "click_count", 1, _MAX_CLICKS)
    if not isinstance(button, str) or not count.is_integer():
        raise Drop(DropReason.MALFORMED_STEP, "button or click_count")  # a mistype, or 2.5 clicks
    if button not in ("button_left", "button_right"):
        raise Drop(DropReason.NO_ACTION_EQUIVALENT, f"a click of {button[:40]}")
    right = "right_" if button == "button_right" else ""
    return right + {1: "click", 2: "double_click", 3: "triple_click"}.get(int(count), "click")


def _typed(group: list[dict[str, Any]]) -> str:
    values = [g.get("input_data") if g.get("input_data") is not None else "" for g in group]
    if not all(isinstance(v, str) for v in values):
        raise Drop(DropReason.MALFORMED_STEP, "input_data")
    cumulative = all(values[k + 1].startswith(values[k]) for k in range(len(values) - 1))
    text = values[-1] if cumulative else "".join(values)
    if not text:
        raise Drop(DropReason.NO_ACTION_EQUIVALENT, "input that ends empty")
    return text


def _keys(group: list[dict[str, Any]]) -> list[str]:
    codes: list[str] = []
    for g in group:
        code = g.get("key_code")
        if not isinstance(code, str) or not code.strip() or len(code) > 64:
            raise Drop(DropReason.MALFORMED_STEP, "a key event without a key code")
        if g["type"] == "key_up" and code not in codes:
            raise Drop(DropReason.MALFORMED_STEP, "a key released that was never pressed")
        codes += [] if code in codes else [code]
    return sorted(codes, key=lambda c: next((i for i, m in enumerate(_MODIFIER_ORDER) if c.startswith(m)), 9))


def _delta(g: dict[str, Any], *keys: str) -> float:
    value = next((g[k] for k in keys if g.get(k) is not None), 0)
    return _number(value, "scroll delta", -_MAX_DELTA, _MAX_DELTA)


def _step(
    kind: str,
    group: list[dict[str, Any]],
    obs: Observation,
    pointer: tuple[float, float],
    ref: SourceRef,
    thought: str,
) -> GuiStep:
    w, h = obs.width, obs.height
    make = ir.step_builder(obs, ref, thought=thought)

    def norm(xy: tuple[float, float] | None) -> tuple[float, float]:
        if xy is None:
            raise Drop(DropReason.MISSING_COORDINATES)
        x, y = xy[0] / w, xy[1] / h
        if not (0 <= x <= 1 and 0 <= y <= 1):
            raise Drop(DropReason.COORDINATE_OUT_OF_RANGE)
        return x, y

    e = group[0]
    if kind == "click":
        name = _click_name(e)
        return make(ActionType.CLICK, norm(_xy(e)), POINT_MASK, name=name)
    if kind == "input":
        return make(ActionType.TYPE, text=_typed(group))
    if kind in ("keys", "key_press"):
        codes = _keys(group)
        enter = codes in (["Enter"], ["NumpadEnter"])
        return make(ActionType.PRESS_ENTER if enter else ActionType.PRESS_KEY, text="+".join(codes))
    if kind == "drag":
        a, b = _xy(group[0]), _xy(group[1])
        if a is None or b is None:
            raise Drop(DropReason.DRAG_WITHOUT_COORDINATES)
        return make(ActionType.DRAG, (*norm(a), *norm(b)), SPAN_MASK)
    if kind == "mouseover":
        return make(ActionType.HOVER, norm(_xy(e)), POINT_MASK)
    dx = sum(_delta(g, "delta_x", "deltaX") for g in group)  # scroll: the only kind left
    dy = sum(_delta(g, "delta_y", "deltaY") for g in group)
    if dx == 0 and dy == 0:
        raise Drop(DropReason.EMPTY_SCROLL)
    xy = _xy(e)
    return ir.wheel_step(make, norm(xy) if xy else pointer, (dx, dy), (1 / w, 1 / h))


def remote_files(part: RawPartition, fetched: Mapping[str, Path]) -> list[str]:
    """Everything the rows reference outside the row files: each referenced events document and,
    once a document can be read, the screenshot of every step it can make (hovers included)."""
    refs: set[str] = set()
    for _, _, rec in _rows(part):
        if isinstance(rec, Drop):
            continue
        value = rec.get("input_metadata")
        ref = _reference(value)
        if ref is not None:
            target = fetch_target(ref)
            if target is None:
                continue
            refs.add(target)
            value = peek(part.root, fetched, target)
        try:
            events = _parse_events(value) if value else []
        except Drop:
            continue
        for evs in _sessions(events, lambda _: None).values():  # the adapter stage counts drops
            shots = (g[0].get("screenshot_url") for _, g in _group(evs, True, lambda _: None))
            refs.update(t for shot in shots if isinstance(shot, str) and (t := fetch_target(shot.strip())))
    return sorted(refs)
