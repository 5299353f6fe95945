"""Multimodal-Mind2Web (`osunlp/Multimodal-Mind2Web`, `data/<split>-NNNNN-of-NNNNN[-<hash>].parquet`).

One parquet row is one recorded action. Rows are grouped into episodes by `annotation_id` and
ordered by `int(target_action_index)` across all of the split's files (a task's rows may sit in
two shard files, in any order). Episodes come in upstream order: where each task first appears.

The screenshot is the FULL page (1:1 CSS px, 1280 px or wider, often thousands of px tall);
the capture viewport was 1280x1080, so rows [S, S+1080) of the render are exactly what was on
screen at scroll offset S. Every observation is that 1280x1080 window: below a page shorter than
the viewport (or right of a narrower one) the frame shows the page's background, as the browser
did, never a shorter frame. The source records no scroll state, so every recorded action starts
at offset 0; a target whose centre is below the fold is reached by emitted SCROLL steps (equal
wheel steps of `scroll_step_fraction` of the viewport, the last one clamped at the page bottom),
each observing the view at its own offset, then the action at the final offset. A SCROLL is a
wheel turned where the pointer is (the causal cursor): its params start there and travel up by
the share of the viewport the view moved down, clipped at the frame edge; it leaves the pointer
where it was.

The click point is the centre of the target's bounding box clipped to the viewport columns and
the page. A step whose element cannot be located keeps its type with an all-zero mask and a
named ungrounded reason: no candidate, a hidden one (`-1,-1,-1,-1` or zero size), a malformed
box, a box outside the screenshot, or one entirely right of the viewport (Mind2Web records no
horizontal scroll, so none is invented).

`original_op` HOVER becomes HOVER and ENTER becomes PRESS_ENTER (Mind2Web's `op` folds both
into CLICK, which would mislabel them).

Numbers are checked where they are read: `target_action_index` is a whole number in
[0, 100000] (no task comes near it; NaN, infinite, negative, fractional or beyond is
`malformed_step`); a bounding box with a NaN or infinite value is `malformed_bbox`, one whose
width or height is not positive is hidden, and a finite one off the page is outside the
screenshot. JSON nested past the parser's recursion limit is malformed like any other.

A parquet file that cannot be opened fails the partition with its name.

Drop reasons:
    malformed_step            a row whose ids, index or `operation` JSON is unusable (a missing or
                              unknown `op` is unknown_action_verb)
    unknown_action_verb       an `op` other than CLICK, TYPE, SELECT
    missing_screenshot        a row with no screenshot bytes
    undecodable_image         screenshot bytes that do not decode
    unsupported_image_format  screenshot bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    duplicate_step            the same annotation_id and index twice
    empty_episode             an annotation_id none of whose rows survived
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.config import BuildConfig
from gui_assets.core.drops import Drop, DropReason, UngroundedReason
from gui_assets.core.ir import (
    NO_MASK,
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    describe,
    wheel_gesture,
)
from gui_assets.sources import assembly
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError, RawPartition

REPO_ID = "osunlp/Multimodal-Mind2Web"
SPLITS = ("train", "test_task", "test_website", "test_domain")
# Only what the adapter needs: raw_html/cleaned_html/neg_candidates reach megabytes per row.
COLUMNS = [
    "annotation_id",
    "action_uid",
    "confirmed_task",
    "website",
    "domain",
    "subdomain",
    "operation",
    "pos_candidates",
    "target_action_index",
    "screenshot",
]
# Rows are handed on one at a time: a batch's screenshot buffer grows by doubling, and at eight
# 1280x1080 screenshots it crossed glibc's mmap threshold, paying page faults for each batch.
_BATCH_ROWS = 1
# Read a column chunk through a buffer of this size, page by page. Without it, pyarrow reads
# every row group of the file for the chosen columns at once (pre_buffer): a whole upstream file
# of screenshots in memory (109 MB for a 74 MB file of 200 1280x1080 PNGs, 40 MB with it).
_READ_BUFFER = 1 << 20
MAX_ACTION_INDEX = 100_000

DROPS = frozenset(
    {
        DropReason.MALFORMED_STEP,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.MISSING_SCREENSHOT,
        DropReason.DUPLICATE_STEP,
    }
    | assembly.DROPS
)
_OPS = {"CLICK": ActionType.CLICK, "TYPE": ActionType.TYPE, "SELECT": ActionType.SELECT}
_ORIGINAL_OPS = {"HOVER": ActionType.HOVER, "ENTER": ActionType.PRESS_ENTER}


def file_patterns(split: str) -> list[str]:
    """The split's files in either hub layout: push_to_hub names, or the auto-converted
    refs/convert/parquet branch (`default/<split>/`, `default/partial-<split>/` when truncated)."""
    return [
        f"data/{split}-*.parquet",
        f"default/{split}/*.parquet",
        f"default/partial-{split}/*.parquet",
        f"{split}/*.parquet",
    ]


@dataclass(frozen=True, slots=True)
class Target:
    """Where the action's element is, in full-page px, or why it is not locatable."""

    x: float = 0.0
    y: float = 0.0
    ungrounded: str = ""


@dataclass(slots=True)
class _Row:
    """One recorded action reduced to what episode assembly needs (no pixels in memory)."""

    index: int
    action_type: ActionType
    text: str
    target: Target
    image_sha256: str
    image_ext: str
    page_w: int
    page_h: int
    ref: SourceRef


def _parse_json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def parse_index(value: Any) -> int:
    """`target_action_index` is a string ("0"); older card revisions declared a sequence."""
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise ValueError(f"target_action_index list of length {len(value)}")
        value = value[0]
    if isinstance(value, bool) or value is None:
        raise ValueError(f"target_action_index {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"target_action_index {value!r}")
    idx = int(value)  # a numeric string of more than 4300 digits is a ValueError, never a hang
    if not 0 <= idx <= MAX_ACTION_INDEX:
        raise ValueError(f"target_action_index {str(idx)[:40]} outside [0, {MAX_ACTION_INDEX}]")
    return idx


def parse_bbox(rect: Any) -> tuple[float, float, float, float] | None:
    """'x,y,w,h' in full-page CSS px -> (x, y, w, h); None when hidden ('-1,-1,-1,-1' or empty)."""
    parts = [float(p) for p in str(rect).split(",")]
    if len(parts) != 4 or not all(math.isfinite(p) for p in parts):
        raise ValueError(f"bounding_box_rect {rect!r}")
    x, y, w, h = parts
    if w <= 0 or h <= 0:
        return None
    return x, y, w, h


def locate_target(pos_candidates: Any, page_w: int, page_h: int, viewport_w: int) -> Target:
    """The click point of the annotated element: the centre of its visible box.

    Candidates marked `is_original_target` are preferred; otherwise the first locatable one.
    The box is clipped to the viewport columns [0, viewport_w) and the page rows [0, page_h).
    """
    if pos_candidates is None or len(pos_candidates) == 0:
        return Target(ungrounded=UngroundedReason.NO_CANDIDATE)
    parsed: list[dict[str, Any]] = []
    malformed = False
    for raw in pos_candidates:
        try:
            cand = _parse_json(raw)
            attrs = _parse_json(cand.get("attributes", {})) or {}
            parsed.append(
                {"original": bool(cand.get("is_original_target")), "rect": attrs["bounding_box_rect"]}
            )
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            malformed = True
    parsed.sort(key=lambda c: not c["original"])  # stable: original targets first
    reason = UngroundedReason.MALFORMED_BBOX if malformed and not parsed else UngroundedReason.HIDDEN_ELEMENT
    width = min(viewport_w, page_w)
    for cand in parsed:
        try:
            box = parse_bbox(cand["rect"])
        except ValueError:
            reason = UngroundedReason.MALFORMED_BBOX
            continue
        if box is None:
            continue
        x, y, w, h = box
        left, right = max(x, 0.0), min(x + w, float(width))
        top, bottom = max(y, 0.0), min(y + h, float(page_h))
        if x >= width and top < bottom:
            reason = UngroundedReason.OUTSIDE_VIEWPORT_X
            continue
        if left >= right or top >= bottom:
            reason = UngroundedReason.OUTSIDE_SCREENSHOT
            continue
        return Target(x=(left + right) / 2, y=(top + bottom) / 2)
    return Target(ungrounded=reason)


def _clamp01(v: float) -> float:
    return min(max(v, 0.0), 1.0)


def _read_row(rec: dict[str, Any], ref: SourceRef, run: AdapterRun) -> tuple[str, _Row, dict[str, str]]:
    """Reduce one parquet row; raises Drop naming why it cannot be used."""
    annotation_id = rec.get("annotation_id")
    try:
        if not isinstance(annotation_id, str) or not annotation_id:
            raise ValueError("annotation_id")
        index = parse_index(rec.get("target_action_index"))
        op = _parse_json(rec.get("operation"))
        verb = str(op.get("op", "")).upper()
        original = str(op.get("original_op", "") or "").upper()
        value = op.get("value", "") or ""
        if not isinstance(value, str):
            value = str(value)
    except (ValueError, TypeError, AttributeError, RecursionError):
        raise Drop(DropReason.MALFORMED_STEP, "ids, index or operation") from None
    if verb not in _OPS:
        raise Drop(DropReason.UNKNOWN_ACTION_VERB, verb)
    action_type = _ORIGINAL_OPS.get(original, _OPS[verb])
    shot = rec.get("screenshot")
    data = shot.get("bytes") if isinstance(shot, dict) else shot if isinstance(shot, bytes) else None
    if not data:
        raise Drop(DropReason.MISSING_SCREENSHOT)
    page = run.observe(data)
    if action_type == ActionType.PRESS_ENTER:
        target, text = Target(), "Enter"
    else:
        viewport_w = run.config.options["viewport_width"]
        target = locate_target(rec.get("pos_candidates"), page.width, page.height, viewport_w)
        text = value if action_type in (ActionType.TYPE, ActionType.SELECT) else ""
    attrs = {
        "annotation_id": annotation_id,
        "website": str(rec.get("website") or ""),
        "domain": str(rec.get("domain") or ""),
        "subdomain": str(rec.get("subdomain") or ""),
        "instruction": str(rec.get("confirmed_task") or ""),
    }
    row = _Row(
        index, action_type, text, target, page.image_sha256, page.image_ext, page.width, page.height, ref
    )
    return annotation_id, row, attrs


def scroll_gesture(pointer: tuple[float, float], delta: float, vh: int) -> tuple[float, float, float, float]:
    """A wheel turned at the pointer, as pointer travel: up by the share of the viewport the view
    moves down, clipped at the frame's top edge (the exact offset is in obs/scroll_states)."""
    x, y = pointer
    y = max(y, 1.0 / vh)  # a pointer on the very top row still shows which way the content moved
    params, _ = wheel_gesture((x, y), (0.0, float(delta)), (0.0, 1.0 / vh))
    assert params is not None  # the nudge leaves at least one pixel of travel
    return params


def expand_action(row: _Row, config: BuildConfig, pointer: tuple[float, float]) -> list[GuiStep]:
    """The SCROLL steps that bring the target into view, then the action itself.

    `pointer` is where the previous action left it: the wheel turns there and leaves it there.
    """
    # The browser window was the viewport whatever the page: a page shorter (or narrower) than it
    # is seen in a full viewport, the rest the page's background (the writer fills it).
    options = config.options
    vw, vh = options["viewport_width"], options["viewport_height"]
    max_offset = max(0, row.page_h - vh)
    step_px = max(1, round(options["scroll_step_fraction"] * vh))

    def step(
        kind: ActionType,
        params: tuple[float, float, float, float],
        mask: tuple[float, float, float, float],
        text: str,
        offset: int,
        why: str = "",
    ) -> GuiStep:
        """A step seen with the page scrolled `offset` px down."""
        return GuiStep(
            action_type=kind,
            params=params,
            mask=mask,
            text=text,
            desc=describe(kind, params, mask, text),
            observation=Observation(row.image_sha256, row.image_ext, 0, offset, vw, vh),
            scroll=(0.0, float(offset)),
            ref=row.ref,
            ungrounded_reason=why,
        )

    steps: list[GuiStep] = []
    offset = 0
    grounded = not row.target.ungrounded and row.action_type != ActionType.PRESS_ENTER
    if grounded and row.target.y >= vh:
        # Wheel down in equal steps until the target sits above the bottom margin.
        while row.target.y - offset > vh * (1 - options["scroll_bottom_margin"]) and offset < max_offset:
            nxt = min(offset + step_px, max_offset)
            params = scroll_gesture(pointer, nxt - offset, vh)
            steps.append(step(ActionType.SCROLL, params, SPAN_MASK, "", offset))
            pointer = (params[0], params[1])
            offset = nxt
    if grounded:
        params = (_clamp01(row.target.x / vw), _clamp01((row.target.y - offset) / vh), 0.0, 0.0)
        mask = POINT_MASK
    else:
        params, mask = (0.0, 0.0, 0.0, 0.0), NO_MASK
    steps.append(step(row.action_type, params, mask, row.text, offset, str(row.target.ungrounded)))
    return steps


def _open(raw: RawPartition, path: Any, name: str) -> pq.ParquetFile:
    try:
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=_READ_BUFFER)
    except (OSError, pa.ArrowInvalid) as e:
        raise RawInputError(f"{raw.repo_id}/{name}: not a readable parquet file ({e})") from None
    missing = {"annotation_id", "operation", "target_action_index", "screenshot"} - set(pf.schema_arrow.names)
    if missing:
        raise RawInputError(f"{raw.repo_id}/{name}: missing columns {sorted(missing)}")
    return pf


_ATTRS = ("website", "domain", "subdomain", "instruction")


def _to_blob(text: str) -> bytes:
    """A step's text as bytes: a JSON `value` may carry a lone surrogate, which TEXT refuses
    (GuiStep replaces it later; the spill must give back what it was given)."""
    return text.encode("utf-8", "surrogatepass")


def _from_blob(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


class TaskRows:
    """A split's reduced rows, kept on disk and read back task by task in upstream order (where
    each task's first row sits: by file, then row).

    A task's rows may sit in any file in any order, so no episode is complete before the last
    file is read; held in memory until then they grow with the partition. A private
    temporary SQLite database holds them instead: its page cache is bounded, and it is deleted
    when closed (its file is already unlinked, so a killed build leaves nothing). Upstream order,
    not id order, keeps a grown split's plan stable: tasks in an appended file come after every
    task seen before, whatever their ids.
    """

    def __init__(self, files: list[str], cache_kib: int = 4096) -> None:
        self.files = files  # a step's SourceRef names its file by index into this list
        self._last_seen = self._last_attrs = ""  # the task the previous row inserted, updated
        self._seen = 0  # tasks seen so far: a task's place in upstream order
        self._db = sqlite3.connect("")  # "" is SQLite's private temporary on-disk database
        self._db.executescript(
            f"""
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            PRAGMA cache_size = -{cache_kib};
            CREATE TABLE task (
                id TEXT PRIMARY KEY, seen INTEGER, website TEXT, domain TEXT, subdomain TEXT,
                instruction TEXT
            ) WITHOUT ROWID;
            CREATE TABLE step (
                id TEXT, idx INTEGER, action TEXT, text BLOB, x REAL, y REAL, ungrounded TEXT,
                sha TEXT, ext TEXT, page_w INTEGER, page_h INTEGER, file INTEGER, row INTEGER,
                PRIMARY KEY (id, idx)
            ) WITHOUT ROWID;
            """
        )

    def see(self, annotation_id: str) -> None:
        """A task with a usable id: it is an episode candidate even if all its rows drop."""
        if annotation_id != self._last_seen:  # a task's rows mostly come together: one INSERT
            cur = self._db.execute(
                "INSERT OR IGNORE INTO task (id, seen) VALUES (?, ?)", (annotation_id, self._seen)
            )
            self._seen += cur.rowcount
            self._last_seen = annotation_id

    def add(self, annotation_id: str, row: _Row, attrs: dict[str, str], file_no: int) -> bool:
        """Keep a row; False when the task already has a row of that index (the first one stays).
        The task's attrs are those of its first kept row."""
        t = row.target
        cur = self._db.execute(
            "INSERT OR IGNORE INTO step VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (annotation_id, row.index, row.action_type.name, _to_blob(row.text), t.x, t.y, str(t.ungrounded),
             row.image_sha256, row.image_ext, row.page_w, row.page_h, file_no, row.ref.row),
        )  # fmt: skip
        if cur.rowcount == 0:
            return False
        if annotation_id != self._last_attrs:  # the row before was this task's: attrs are set
            self._db.execute(
                "UPDATE task SET website = ?, domain = ?, subdomain = ?, instruction = ? "
                "WHERE id = ? AND instruction IS NULL",
                (*(attrs[k] for k in _ATTRS), annotation_id),
            )
            self._last_attrs = annotation_id
        return True

    def tasks(self) -> Iterator[tuple[str, dict[str, str] | None]]:
        """(annotation_id, attrs or None when no row of it was kept), in upstream order."""
        for annotation_id, *values in self._db.execute(
            f"SELECT id, {', '.join(_ATTRS)} FROM task ORDER BY seen"
        ):
            if values[-1] is None:
                yield annotation_id, None
            else:  # the key order _read_row gives
                yield (
                    annotation_id,
                    {"annotation_id": annotation_id, **dict(zip(_ATTRS, values, strict=True))},
                )

    def rows(self, annotation_id: str, raw: RawPartition) -> list[_Row]:
        """The task's kept rows by index: one episode's worth."""
        found = self._db.execute("SELECT * FROM step WHERE id = ? ORDER BY idx", (annotation_id,))
        return [
            _Row(
                index,
                ActionType[action],
                _from_blob(text),
                Target(x, y, UngroundedReason(ungrounded) if ungrounded else ""),
                sha,
                ext,
                page_w,
                page_h,
                SourceRef(raw.repo_id, self.files[file_no], row=row),
            )
            for _, index, action, text, x, y, ungrounded, sha, ext, page_w, page_h, file_no, row in found
        ]

    def close(self) -> None:
        self._db.close()


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Read every file of the split once, then yield its episodes in upstream order (TaskRows)."""
    raw = run.raw
    spill = TaskRows([f.path for f in raw.files])
    try:
        for file_no, f in enumerate(raw.files):
            pf = _open(raw, f.local, f.path)
            columns = [c for c in COLUMNS if c in pf.schema_arrow.names]
            row_no = 0
            try:
                for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
                    for rec in batch.to_pylist():
                        ref = SourceRef(raw.repo_id, f.path, row=row_no)
                        row_no += 1
                        if isinstance(rec.get("annotation_id"), str) and rec["annotation_id"]:
                            spill.see(rec["annotation_id"])
                        try:
                            annotation_id, row, attrs = _read_row(rec, ref, run)
                        except Drop as e:
                            run.drop(e.reason)
                            continue
                        if not spill.add(annotation_id, row, attrs, file_no):
                            run.drop(DropReason.DUPLICATE_STEP)
            except (OSError, pa.ArrowInvalid) as e:
                raise RawInputError(f"{raw.repo_id}/{f.path}: unreadable at row {row_no} ({e})") from None
        for annotation_id, kept in run.candidates(spill.tasks()):
            rows = spill.rows(annotation_id, raw)
            steps = Steps()
            for row in rows:
                for step in expand_action(row, run.config, steps.pointer):
                    steps.add(step)
            attrs = kept or {"instruction": ""}
            instruction = attrs.pop("instruction")
            attrs["recorded_action_indices"] = json.dumps([r.index for r in rows])
            episode = run.episode(annotation_id, instruction, steps, True, attrs)
            if episode is not None:
                yield episode
    finally:
        spill.close()
