"""WebLINX (`McGill-NLP/WebLINX-zipped`): one zip per demonstration, read from its replay.json.

Files: `splits.json` at the repo root names the demos of each split (the partition keys are
`train` and `valid`, used as they ship); each demo is `<demo_id>.zip` anywhere in the repo
(commonly `demonstrations/`), with entries at the zip root or under `<demo_id>/`:
`replay.json` and `screenshots/screenshot-N-M.png`. The zip is read in place, one member at a time.

Turns: `type` is chat, browser or extension (the types the WebLINX library knows). Chat turns
are not actions: the instructor's first utterance is the instruction and later instructor
utterances are appended to it in order (one line each); navigator utterances are skipped; a
chat turn of another speaker, or whose utterance is no text, is `malformed_step`. Extension
turns are the recorder's own events, not demonstrated actions: skipped. A turn with no type or
another one is `unknown_turn_type`, counted, never passed over. A browser turn is one step,
observed through the screenshot its own `state` names, captured when the event fired, before
its effect. A turn whose screenshot is missing (`missing_screenshot`) or marked `broken`
(`broken_screenshot`) is dropped.

Intents (every one, with its rule; anything else is `unknown_action_verb`):
    click            CLICK at the element box centre, else at the mouse
    hover            HOVER, likewise
    textInput        TYPE `text` (or `value`), at the element when there is one
    change           SELECT on a <select> element, else TYPE, with `value`
    submit           PRESS_ENTER (a form submitted; the key is what a policy would press)
    scroll           SCROLL: the view moves by the change of `scrollX`/`scrollY` (page offsets,
                     tracked per tab, reset by a load); the gesture starts at the mouse, else the
                     causal cursor, and the content travels the opposite way (`empty_scroll` if
                     the offset did not change)
    load             GOTO with the url (`properties.url`, else `url`)
    copy / paste     PRESS_KEY "ctrl+c" / "ctrl+v"; the copied or pasted text stays in action_desc
    tabcreate        PRESS_KEY "ctrl+t"      tabremove  PRESS_KEY "ctrl+w"
    tabswitch        PRESS_KEY "ctrl+tab"; the tab ids stay in action_desc
    say (browser)    not an action, skipped like chat

Coordinates: element boxes and the mouse are CSS px relative to the viewport; screenshots are
device px. The scale is measured per turn, frame width / viewportWidth (which is the zoom level
when the frame is in device px and 1 when it is not), falling back to `zoomLevel` (metadata or
properties) when the viewport is not recorded (absent or 0). Points are normalized by the
frame; a box is clipped to the frame first, and a box outside it leaves the step ungrounded.

Numbers are checked where they are read: a viewport in [1, 65536] CSS px, a zoom in [0.1, 10],
mouse, scroll offsets and boxes within 2**25 CSS px (the largest layout a browser makes). A
value outside, NaN, infinite or no number drops the step (`malformed_step`), except in a box:
the step is then located by the mouse, else left ungrounded as `malformed_bbox`.

Drop reasons:
    missing_demo_archive      a demo splits.json lists with no zip in the mirror
    truncated_archive         a demo zip that cannot be opened
    missing_replay            a demo zip without replay.json
    malformed_json            a replay.json that does not parse or has no `data` list
    malformed_step            a turn that is not an object, a chat turn of no known speaker or
                              without text, or a browser turn missing the field its intent needs
                              (text, value, url, scroll offsets) or with a number it cannot use
    unknown_turn_type         a turn whose type is missing or not chat, browser or extension
    unknown_action_verb       a browser intent outside the table above
    missing_screenshot        a browser turn whose screenshot is not named or not in the zip
    broken_screenshot         a screenshot the recorder marked broken
    empty_scroll              a scroll whose offsets did not change
    unsafe_archive_member     the archive's refusals of a screenshot member
    encrypted_archive_member
    unsupported_compression
    archive_member_too_large
    truncated_archive_member
    undecodable_image         screenshot bytes that do not decode
    unsupported_image_format  screenshot bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             a demo none of whose turns made a step
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gui_assets.core.drops import Drop, DropReason, UngroundedReason
from gui_assets.core.ir import (
    POINT_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    step_builder,
    wheel_step,
)
from gui_assets.sources import archives, assembly
from gui_assets.sources.archives import ArchiveError, ZipImages
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError

REPO_ID = "McGill-NLP/WebLINX-zipped"
PARTITIONS = ("train", "valid")
SPLITS_FILE = "splits.json"
NOT_ACTIONS = ("extension",)  # turn types that are no demonstrated action (besides chat)
SPEAKERS = ("instructor", "navigator")
MAX_VIEWPORT = 65_536.0  # CSS px
ZOOM = (0.1, 10.0)  # browsers zoom from 0.25 (Chrome) or 0.3 (Firefox) to 5
MAX_CSS_PX = float(2**25)  # the largest layout coordinate a browser makes
KEYS = {
    "copy": "ctrl+c",
    "paste": "ctrl+v",
    "tabcreate": "ctrl+t",
    "tabremove": "ctrl+w",
    "tabswitch": "ctrl+tab",
}


def file_patterns(split: str) -> list[str]:
    return [SPLITS_FILE]


def demo_ids(root: Path, split: str) -> list[str]:
    try:
        splits = json.loads((root / SPLITS_FILE).read_text(encoding="utf-8"))
        ids = splits[split]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RawInputError(
            f"{REPO_ID}/{SPLITS_FILE}: no split {split!r} ({type(e).__name__}: {e})"
        ) from None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise RawInputError(f"{REPO_ID}/{SPLITS_FILE}: split {split!r} is not a list of demo ids")
    return ids


def resolve_patterns(root: Path, split: str) -> list[str]:
    """The split's demo zips, wherever they sit in the repo."""
    return [p for d in demo_ids(root, split) for p in (f"{d}.zip", f"*/{d}.zip")]


def _norm_intent(intent: Any) -> str:
    return str(intent or "").lower().replace("_", "").strip()


def _num(v: Any, what: str, lo: float = -MAX_CSS_PX, hi: float = MAX_CSS_PX) -> float | None:
    """A numeric field (numbers, or numeric strings): None when absent, the value when it is a
    finite number in [lo, hi], else Drop(malformed_step) naming the field."""
    if v is None:
        return None
    try:
        f = float(v) if isinstance(v, int | float | str) and not isinstance(v, bool) else math.nan
    except (ValueError, OverflowError):  # OverflowError: an int of 400 digits
        f = math.nan
    if not (math.isfinite(f) and lo <= f <= hi):
        raise Drop(DropReason.MALFORMED_STEP, f"{what} {str(v)[:40]}")
    return f


def _viewport(v: Any, what: str) -> float | None:
    """A viewport side in CSS px: None when not recorded (absent or 0), else in [1, MAX_VIEWPORT]."""
    f = _num(v, what, 0.0, MAX_VIEWPORT)
    if f is not None and 0 < f < 1:  # a sliver would scale a point past any frame
        raise Drop(DropReason.MALFORMED_STEP, f"{what} {f}")
    return f or None


class _Turn:
    """One browser turn's fields, read defensively (any of them may be missing or mistyped)."""

    def __init__(self, turn: dict[str, Any]) -> None:
        action = turn.get("action") if isinstance(turn.get("action"), dict) else {}
        self.intent = _norm_intent(action.get("intent"))
        self.args = action.get("arguments") if isinstance(action.get("arguments"), dict) else {}
        meta = self.args.get("metadata")
        props = self.args.get("properties")
        self.meta = meta if isinstance(meta, dict) else {}
        self.props = props if isinstance(props, dict) else {}
        el = self.args.get("element")
        self.element = el if isinstance(el, dict) else {}
        state = turn.get("state")
        self.state = state if isinstance(state, dict) else {}

    def zoom(self) -> float:
        z = self.meta.get("zoomLevel")
        z = self.props.get("zoomLevel") if z is None else z
        return _num(z, "zoomLevel", *ZOOM) or 1.0

    def scale(self, width: int, height: int) -> tuple[float, float]:
        """CSS px -> frame px, measured from the frame when the viewport was recorded."""
        vw, vh = (_viewport(self.meta.get(k), k) for k in ("viewportWidth", "viewportHeight"))
        return (width / vw if vw else self.zoom(), height / vh if vh else self.zoom())

    def tab(self) -> str:
        return str(self.meta.get("tabId", self.props.get("tabId", "-1")))

    def mouse(self) -> tuple[float, float] | None:
        x, y = _num(self.meta.get("mouseX"), "mouseX"), _num(self.meta.get("mouseY"), "mouseY")
        return (x, y) if x is not None and y is not None else None

    def box(self) -> tuple[float, float, float, float] | None:
        """The element's box (None without one, or a hidden one); Drop when a number is bad."""
        b = self.element.get("bbox")
        if not isinstance(b, dict):
            return None
        left = _num(b.get("left", b.get("x")), "bbox left")
        top = _num(b.get("top", b.get("y")), "bbox top")
        w, h = _num(b.get("width"), "bbox width"), _num(b.get("height"), "bbox height")
        if left is None or top is None or w is None or h is None or w <= 0 or h <= 0:
            return None
        return left, top, w, h


def locate(t: _Turn, width: int, height: int) -> tuple[tuple[float, float] | None, str]:
    """The turn's point normalized by the frame, or (None, ungrounded reason)."""
    sx, sy = t.scale(width, height)
    try:
        box, bad_box = t.box(), False
    except Drop:
        box, bad_box = None, True
    if box is not None:
        left, top, w, h = box
        x0, x1 = max(left * sx, 0.0), min((left + w) * sx, float(width))
        y0, y1 = max(top * sy, 0.0), min((top + h) * sy, float(height))
        if x0 >= x1 or y0 >= y1:
            return None, UngroundedReason.OUTSIDE_SCREENSHOT
        return ((x0 + x1) / 2 / width, (y0 + y1) / 2 / height), ""
    mouse = t.mouse()
    if mouse is not None:
        x, y = mouse[0] * sx, mouse[1] * sy
        if not (0 <= x <= width and 0 <= y <= height):
            return None, UngroundedReason.OUTSIDE_SCREENSHOT
        return (x / width, y / height), ""
    return None, UngroundedReason.MALFORMED_BBOX if bad_box else UngroundedReason.NO_CANDIDATE


DROPS = frozenset(
    {
        DropReason.MISSING_DEMO_ARCHIVE,
        DropReason.MISSING_REPLAY,
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_STEP,
        DropReason.UNKNOWN_TURN_TYPE,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.MISSING_SCREENSHOT,
        DropReason.BROKEN_SCREENSHOT,
        DropReason.EMPTY_SCROLL,
    }
    | archives.OPEN_DROPS
    | archives.MEMBER_DROPS
    | assembly.DROPS
)


class _Demo:
    """One demonstration zip: replay.json and the screenshots it names."""

    def __init__(self, path: Path, demo_id: str) -> None:
        self.zip = ZipImages(path)  # indexes members by file name; refuses unsafe paths
        self.demo_id = demo_id

    def replay(self) -> dict[str, Any]:
        if "replay.json" not in self.zip.members:
            raise Drop(DropReason.MISSING_REPLAY, "no replay.json")
        try:
            doc = json.loads(self.zip.read("replay.json").decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            raise Drop(DropReason.MALFORMED_JSON, "replay.json") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
            raise Drop(DropReason.MALFORMED_JSON, "replay.json has no data list")
        return doc

    def observe(self, shot: Any, run: AdapterRun) -> Observation:
        """The screenshot a turn's state names, as a stored observation; Drop if unusable."""
        if not isinstance(shot, str) or not shot:
            raise Drop(DropReason.MISSING_SCREENSHOT, "no screenshot named")
        name = shot.rsplit("/", 1)[-1]
        if name not in self.zip.members and name not in self.zip.refused:
            raise Drop(DropReason.MISSING_SCREENSHOT, name)
        return run.observe(self.zip.read(name))


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """The split's demos in splits.json order; a listed demo with no zip is counted, not fatal."""
    raw = run.raw
    if not raw.find(SPLITS_FILE):
        raise RawInputError(f"{raw.repo_id}: no {SPLITS_FILE}")
    zips = {Path(f.path).stem: f for f in raw.files if f.path.endswith(".zip")}
    for demo_id in run.candidates(demo_ids(raw.root, raw.partition)):
        f = zips.get(demo_id)
        if f is None:
            run.drop(DropReason.MISSING_DEMO_ARCHIVE)
            continue
        try:
            demo = _Demo(f.local, demo_id)
        except ArchiveError as e:
            run.drop(e.reason)
            continue
        try:
            doc = demo.replay()
            episode = _episode(run, f.path, demo, doc["data"])
        except Drop as e:
            run.drop(e.reason)
            continue
        finally:
            demo.zip.close()
        if episode is not None:
            yield episode


def _episode(run: AdapterRun, repo_path: str, demo: _Demo, turns: list[Any]) -> GuiEpisode | None:
    raw = run.raw
    instruction: list[str] = []
    steps = Steps()
    offsets: dict[str, tuple[float, float]] = {}  # per tab: the page offset the view is at
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            run.drop(DropReason.MALFORMED_STEP)
            continue
        kind = turn.get("type")
        if kind == "chat":
            speaker, said = turn.get("speaker"), turn.get("utterance")
            if speaker not in SPEAKERS or not isinstance(said, str):
                run.drop(DropReason.MALFORMED_STEP)
            elif speaker == "instructor":
                instruction.append(said.strip())
            continue
        if kind in NOT_ACTIONS:
            continue
        if kind != "browser":
            run.drop(DropReason.UNKNOWN_TURN_TYPE)
            continue
        t = _Turn(turn)
        if t.intent == "say":
            continue
        tab = t.tab()
        ref = SourceRef(raw.repo_id, repo_path, member=f"replay.json#data[{i}]")
        try:
            if t.state.get("screenshot_status") == "broken" and isinstance(t.state.get("screenshot"), str):
                raise Drop(DropReason.BROKEN_SCREENSHOT)
            obs = demo.observe(t.state.get("screenshot"), run)
            if t.intent == "load":
                offsets[tab] = (0.0, 0.0)
            steps.add(_step(t, obs, offsets.get(tab, (0.0, 0.0)), steps.pointer, offsets, tab, ref))
        except Drop as e:
            run.drop(e.reason)
    return run.episode(
        demo.demo_id,
        "\n".join(u for u in instruction if u),
        steps,
        True,
        {"demo_id": demo.demo_id, "instructor_turns": str(len(instruction))},
    )


def _step(
    t: _Turn,
    obs: Observation,
    scroll: tuple[float, float],
    pointer: tuple[float, float],
    offsets: dict[str, tuple[float, float]],
    tab: str,
    ref: SourceRef,
) -> GuiStep:
    """The step of one browser turn; raises Drop when the turn cannot make one."""
    w, h = obs.width, obs.height

    make = step_builder(obs, ref, scroll=scroll)

    def pointed(kind: ActionType, text: str = "") -> GuiStep:
        point, why = locate(t, w, h)
        if point is None:
            return make(kind, text=text, ungrounded=why)
        return make(kind, point, POINT_MASK, text)

    intent = t.intent
    if intent == "click":
        return pointed(ActionType.CLICK)
    if intent == "hover":
        return pointed(ActionType.HOVER)
    if intent == "textinput":
        text = t.args.get("text", t.args.get("value"))
        if not isinstance(text, str):
            raise Drop(DropReason.MALFORMED_STEP, "textInput without text")
        if not t.element:
            return make(ActionType.TYPE, text=text)
        return pointed(ActionType.TYPE, text)
    if intent == "change":
        value = t.args.get("value")
        if not isinstance(value, str):
            raise Drop(DropReason.MALFORMED_STEP, "change without value")
        select = str(t.element.get("tagName", "")).upper() == "SELECT"
        return pointed(ActionType.SELECT if select else ActionType.TYPE, value)
    if intent == "submit":
        return make(ActionType.PRESS_ENTER, text="enter", desc="submit()")
    if intent == "load":
        url = t.props.get("url") or t.args.get("url")
        if not isinstance(url, str) or not url:
            raise Drop(DropReason.MALFORMED_STEP, "load without url")
        return make(ActionType.GOTO, text=url)
    if intent == "scroll":
        return _scroll(t, make, pointer, offsets, tab, w, h)
    if intent in KEYS:
        detail = {"copy": t.args.get("selected"), "paste": t.args.get("pasted")}.get(intent)
        if intent == "tabswitch":
            detail = f"{t.props.get('tabIdOrigin')} -> {t.props.get('tabId')}"
        elif intent in ("tabcreate", "tabremove"):
            detail = str(t.props.get("tabId", ""))
        desc = f"{intent}({json.dumps(detail, ensure_ascii=False) if detail not in (None, '') else ''})"
        return make(ActionType.PRESS_KEY, text=KEYS[intent], desc=desc)
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, intent)


def _scroll(
    t: _Turn,
    make: Any,
    pointer: tuple[float, float],
    offsets: dict[str, tuple[float, float]],
    tab: str,
    w: int,
    h: int,
) -> GuiStep:
    sx_new, sy_new = _num(t.args.get("scrollX"), "scrollX"), _num(t.args.get("scrollY"), "scrollY")
    if sx_new is None and sy_new is None:
        raise Drop(DropReason.MALFORMED_STEP, "scroll without offsets")
    before = offsets.get(tab, (0.0, 0.0))
    after = (sx_new if sx_new is not None else before[0], sy_new if sy_new is not None else before[1])
    offsets[tab] = after
    dx, dy = after[0] - before[0], after[1] - before[1]
    if dx == 0 and dy == 0:
        raise Drop(DropReason.EMPTY_SCROLL)
    sx, sy = t.scale(w, h)
    mouse = t.mouse()
    x, y = (
        (min(max(mouse[0] * sx / w, 0.0), 1.0), min(max(mouse[1] * sy / h, 0.0), 1.0)) if mouse else pointer
    )
    return wheel_step(make, (x, y), (dx, dy), (sx / w, sy / h))
