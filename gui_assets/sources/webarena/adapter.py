"""WebArena human demonstrations: Playwright trace archives joined to the task configs.

Files (a mirror only: the traces are distributed outside the hub):
    webarena/human_trajectories/<task_id>.zip     one Playwright trace per task: `trace.trace`, or
                                                  the test runner's `test.trace` + `<n>-trace.trace`
    webarena/config_files/test.raw.json           the 812 task configs (intent, template, sites)

Steps come from the trace's Playwright calls (format v3 to v10, read by playwright_trace), in
start order; each is observed through the last screencast frame of its page at or before the
call started (o_t). Its points, CSS px of the viewport, are placed on that frame by the CSS
size the frame declares (its JPEG is downscaled; setViewportSize or a window without a fixed
viewport resizes it), at one scale (a frame caught mid-resize holds the top-left part of what
it declares), so a step is normalized against its own frame. A call is mapped by its
protocol method, whatever SDK recorded it (Python `Locator.click`, Java `Frame.click` and
JavaScript `page.click` are all `Frame.click`; Java's `Page.navigate` is `Frame.goto`):
    click / tap / dblclick / mouseClick /   CLICK ('double_click' for dblclick and clickCount 2,
      touchscreenTap                        'right_click' / 'middle_click' for those buttons)
    hover / mouseMove                       HOVER
    check / uncheck / setChecked            CLICK ('check' / 'uncheck' / 'set_checked' in desc)
    fill / type / keyboardType /            TYPE with the value; grounded at the element's box when
      keyboardInsertText                    the trace recorded one
    press / keyboardPress                   PRESS_ENTER for Enter, else PRESS_KEY with the key
    selectOption                            SELECT with the chosen values, at the element's box
    goto                                    GOTO with the url
    goBack / goForward / reload             PRESS_BACK / PRESS_KEY "alt+ArrowRight" / PRESS_KEY "F5"
    mouseWheel                              SCROLL at the page's pointer (where its last call with a
                                            point left it; Playwright's mouse starts at 0,0), the
                                            content travelling opposite to deltaX/deltaY
    dragAndDrop (Locator.dragTo)            DRAG from the source point to the target point, the
                                            call's two `input` points (v4 on). A v3 trace keeps only
                                            the drop point, and params.targetPosition is an offset in
                                            the target element, not a screen point: that DRAG stays
                                            ungrounded (`no_point`)
A pointer call whose point cannot be placed keeps its type, ungrounded: `no_point` (none
recorded), `no_viewport` (nothing declares its frame's CSS size), `outside_screenshot`.

User actions this mapping has no step for (focus, blur, dispatchEvent, setInputFiles,
selectText, scrollIntoViewIfNeeded, drop, keyboardDown / keyboardUp, mouseDown / mouseUp,
Page.bringToFront, Page.close, Dialog.accept / dismiss) are counted by name in
stats.ignored_calls (`Frame.focus`: class + method as the protocol names them, the same in
every SDK; a line with no class + method is counted by its apiName); the episode attr
`ignored_calls` is the same breakdown for that episode, as JSON. Every other call (waits,
evaluations, queries, expect, routes, new pages, setViewportSize, context setup, tracing) is
no user action and is not counted. A user call that failed (its `after` has an error) is
dropped as `failed_call`; one on a page with no frame yet (the first goto on about:blank) as
`no_frame`. Typed values are kept in action_text as recorded (the dataset is the record) and
never logged.

Limits: a scripted call that scrolls its target into view acts on a screen the trace may not
show before the call (a drag's target, too); human traces are recorded by hand and scroll as
separate steps. mouseDown, mouseMove, mouseUp made by hand are not joined into one DRAG: the
moves are HOVERs and the presses are counted. A missing or unreadable config file fails the
partition by name.

Drop reasons:
    task_not_in_config        a trace whose task_id the configs do not hold
    truncated_archive         a trace zip that cannot be opened
    missing_trace             a zip with no `*.trace` member
    malformed_json            a trace line that is no JSON (a torn last line)
    malformed_trace_event     a trace line with a missing or unknown type, a required field
                              missing, or an input / after of no call
    invalid_trace_value       a trace event with a mistyped, NaN, infinite, negative or absurd
                              time, point, box, size or params (that value is not used)
    failed_call               a user call whose `after` carries an error
    unattributed_call         a user call no pageId or snapshot ties to one of the trace's pages
    no_frame                  a call on a page with no screencast frame before it
    malformed_step            a user call whose params cannot make its step (a wheel without
                              numeric deltas, a press without a key, a goto without a url)
    empty_scroll              a wheel turned by zero in both directions
    missing_screenshot        a frame the archive does not hold
    unsafe_archive_member     the archive's refusals of a trace or frame member
    encrypted_archive_member
    unsupported_compression
    archive_member_too_large
    truncated_archive_member
    undecodable_image         frame bytes that do not decode
    unsupported_image_format  frame bytes that are no JPEG, PNG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             a trace none of whose user calls made a step
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_assets.core.drops import Drop, DropReason, UngroundedReason
from gui_assets.core.ir import (
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    step_builder,
    wheel_gesture,
    wheel_step,
)
from gui_assets.sources import archives, assembly
from gui_assets.sources.archives import ZipImages
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError, RawPartition
from gui_assets.sources.webarena import playwright_trace
from gui_assets.sources.webarena.playwright_trace import Call, Point, Size, Trace, number, open_trace

REPO_ID = "webarena"
PARTITIONS = ("human",)
CONFIG = "config_files/test.raw.json"
TRACES = "human_trajectories/"

DROPS = frozenset(
    {
        DropReason.TASK_NOT_IN_CONFIG,
        DropReason.FAILED_CALL,
        DropReason.UNATTRIBUTED_CALL,
        DropReason.NO_FRAME,
        DropReason.MALFORMED_STEP,
        DropReason.EMPTY_SCROLL,
        DropReason.MISSING_SCREENSHOT,
    }
    | playwright_trace.DROPS
    | archives.OPEN_DROPS
    | archives.MEMBER_DROPS
    | assembly.DROPS
)
ORIGIN: Point = (0.0, 0.0)  # where Playwright's mouse is before a call moves it
_CLICK = {"click", "tap", "dblclick", "mouseclick", "touchscreentap"}
_HOVER = {"hover", "mousemove"}
_CHECK = {"check": "check", "uncheck": "uncheck", "setchecked": "set_checked"}
_TYPE = {"fill", "type", "keyboardtype", "keyboardinserttext"}
_PRESS = {"press", "keyboardpress"}
_NAV = {
    "goback": (ActionType.PRESS_BACK, ""),
    "goforward": (ActionType.PRESS_KEY, "alt+ArrowRight"),
    "reload": (ActionType.PRESS_KEY, "F5"),
}
# User actions with no step, counted by name: these methods on any class, and those of one class.
UNCONVERTED = frozenset(
    {
        "focus",
        "blur",
        "dispatchevent",
        "setinputfiles",
        "selecttext",
        "scrollintoviewifneeded",
        "drop",
        "keyboarddown",
        "keyboardup",
        "mousedown",
        "mouseup",
    }
)
UNCONVERTED_OF = {"page": frozenset({"bringtofront", "close"}), "dialog": frozenset({"accept", "dismiss"})}


def file_patterns(partition: str) -> list[str]:
    return [CONFIG, f"{TRACES}*.zip"]


def read_configs(raw: RawPartition) -> dict[str, dict[str, Any]]:
    files = raw.find(CONFIG)
    if not files:
        raise RawInputError(f"{raw.repo_id}/{CONFIG}: missing (the task configs the traces join to)")
    try:
        rows = json.loads(Path(files[0].local).read_text(encoding="utf-8"))
        return {str(r["task_id"]): r for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RawInputError(f"{raw.repo_id}/{CONFIG}: unreadable ({type(e).__name__}: {e})") from None


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """One episode per `<task_id>.zip`, in task_id order."""
    raw = run.raw
    configs = read_configs(raw)
    traces = sorted(raw.find(f"{TRACES}*.zip"), key=lambda f: (len(Path(f.path).stem), Path(f.path).stem))
    for f in run.candidates(traces):
        task_id = Path(f.path).stem
        cfg = configs.get(task_id)
        if cfg is None:
            run.drop(DropReason.TASK_NOT_IN_CONFIG)
            continue
        try:
            archive, trace = open_trace(Path(f.local))
        except Drop as e:
            run.drop(e.reason)
            continue
        for reason, n in sorted(trace.refused.items()):
            run.drop(reason, n)
        try:
            episode = _episode(run, f.path, task_id, cfg, archive, trace)
        finally:
            archive.close()
        if episode is not None:
            yield episode


def is_unconverted(call: Call) -> bool:
    """A user action this mapping makes no step for (counted, never passed over)."""
    return call.verb in UNCONVERTED or call.verb in UNCONVERTED_OF.get(call.owner, ())


def _episode(
    run: AdapterRun, path: str, task_id: str, cfg: dict[str, Any], archive: ZipImages, trace: Trace
) -> GuiEpisode | None:
    steps = Steps()
    ignored: Counter[str] = Counter()
    pointer: dict[str, Point] = {}  # per page: where the last call with a point left the mouse
    for call in trace.calls:
        if call.verb in USER_METHODS:
            try:
                steps.add(_convert(run, path, archive, trace, call, pointer.get(call.page or "", ORIGIN)))
            except Drop as e:
                run.drop(e.reason)
        elif is_unconverted(call):
            ignored[call.name] += 1
        if call.page and call_point(call) is not None:
            pointer[call.page] = call_point(call)
    run.stats.ignored_calls.update(ignored)
    sites = cfg.get("sites") or []
    return run.episode(
        task_id,
        str(cfg.get("intent", "")),
        steps,
        False,  # the traces ship no success label (humans solved 78% of the tasks)
        {
            "task_id": task_id,
            "intent_template_id": str(cfg.get("intent_template_id", "")),
            "intent_template": str(cfg.get("intent_template", "")),
            "sites": json.dumps(sites),
            "eval_types": json.dumps(_eval_types(cfg.get("eval"))),
            "trace_version": str(trace.version),
            "ignored_calls": json.dumps(dict(sorted(ignored.items()))),
            "success": "unknown",
        },
    )


def _eval_types(value: Any) -> list[Any]:
    types = value.get("eval_types") if isinstance(value, dict) else None
    return types if isinstance(types, list) else []


def _convert(
    run: AdapterRun, path: str, archive: ZipImages, trace: Trace, call: Call, pointer: Point
) -> GuiStep:
    """The step of a user call, observed through the frame it acted on; a Drop otherwise."""
    if call.error:
        raise Drop(DropReason.FAILED_CALL)
    if call.page is None:
        raise Drop(DropReason.UNATTRIBUTED_CALL, f"{call.name} at {call.start} ms")
    frame = trace.frame_before(call.page, call.start)
    if frame is None:
        raise Drop(DropReason.NO_FRAME, f"{call.name} at {call.start} ms")
    if frame.member not in archive.members and frame.member not in archive.refused:
        raise Drop(DropReason.MISSING_SCREENSHOT, frame.member)
    obs: Observation = run.observe(archive.read(frame.member))  # a refused member raises its reason
    ref = SourceRef(run.raw.repo_id, path, member=f"{call.source}#{call.call_id}")
    canvas = _Canvas(step_builder(obs, ref), _unit(trace.css_size(frame, call), obs.width, obs.height))
    return _MAKERS[call.verb](call, canvas, pointer)


def _unit(css: Size | None, width: int, height: int) -> tuple[float, float] | None:
    """What one CSS px is as a share of a `width` x `height` frame showing a `css` viewport.

    The screencast scales the viewport by one factor to fit its JPEG. A frame taken while the
    viewport was resized declares the new size but holds only its top-left part (seen here:
    1200x700 declared, 800x409 stored, drawn at 800/1200), so its short side is cut, not
    squeezed: the factor is the larger of the two ratios (the same one, to rounding, on every
    other frame)."""
    if css is None:
        return None
    scale = max(width / css[0], height / css[1])
    return scale / width, scale / height


@dataclass(frozen=True, slots=True)
class _Canvas:
    """One call's frame: its step maker and what one CSS px is as a share of the frame (None
    when nothing declares the CSS size the frame shows)."""

    make: Callable[..., GuiStep]
    unit: tuple[float, float] | None

    def place(self, *points: Point | None) -> tuple[Point, ...] | UngroundedReason:
        """The points as shares of the frame, or why they cannot be placed on it."""
        if any(p is None for p in points):
            return UngroundedReason.NO_POINT
        if self.unit is None:
            return UngroundedReason.NO_VIEWPORT
        placed = tuple((p[0] * self.unit[0], p[1] * self.unit[1]) for p in points if p is not None)
        if not all(0 <= x <= 1 and 0 <= y <= 1 for x, y in placed):
            return UngroundedReason.OUTSIDE_SCREENSHOT
        return placed

    def at(self, kind: ActionType, point: Point | None, text: str = "", name: str = "") -> GuiStep:
        placed = self.place(point)
        if isinstance(placed, UngroundedReason):
            return self.make(kind, text=text, name=name, ungrounded=placed)
        return self.make(kind, placed[0], POINT_MASK, text, name)


# Device calls given their own x, y (`page.mouse.click(x, y)`, `page.mouse.move`, a touchscreen
# tap): that is where they act. Their trace records no `input` event, and a v7 `after` repeats
# the previous call's point, so the params win over the call's recorded point.
_OWN_POINT = {"mouseclick", "mousemove", "touchscreentap"}


def call_point(call: Call) -> Point | None:
    """Where a call placed the pointer: its own x, y for a device call, else its recorded point."""
    if call.verb in _OWN_POINT:
        return _param_point(call.params) or call.point
    return call.point


def _param_point(params: dict[str, Any]) -> Point | None:
    """The x, y a mouse or touchscreen call was given (CSS px), when the trace has no input point."""
    x, y = number(params.get("x"), 0.0), number(params.get("y"), 0.0)
    return (x, y) if x is not None and y is not None else None


def _text(value: Any) -> str:
    """A typed or chosen value as text: a string, or a number; nothing else is rendered."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise Drop(DropReason.MALFORMED_STEP, "a value that is no text")


def _click(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    p = call.params
    button = p.get("button")
    if call.verb == "dblclick" or p.get("clickCount") == 2:
        name = "double_click"
    else:
        name = f"{button}_click" if button in ("right", "middle") else "click"
    return c.at(ActionType.CLICK, call_point(call), name=name)


def _hover(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    return c.at(ActionType.HOVER, call_point(call))


def _check(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    return c.at(ActionType.CLICK, call.point, name=_CHECK[call.verb])


def _type(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    text = _text(call.params.get("value", call.params.get("text")))
    if call.box is None:  # typed into whatever has focus: no element recorded, no location claimed
        return c.make(ActionType.TYPE, text=text)
    x, y, w, h = call.box
    return c.at(ActionType.TYPE, (x + w / 2, y + h / 2), text)


def _press(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    key = call.params.get("key")
    if not isinstance(key, str) or not key:
        raise Drop(DropReason.MALFORMED_STEP, f"{call.name} without a key")
    kind = ActionType.PRESS_ENTER if key in ("Enter", "NumpadEnter") else ActionType.PRESS_KEY
    return c.make(kind, text=key)


def _select(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    result, p = call.result, call.params
    values = result.get("values") if isinstance(result, dict) else None
    if not isinstance(values, list) or not values:
        options = p.get("options") if isinstance(p.get("options"), list) else []
        values = [
            o.get("valueOrLabel") or o.get("value") or o.get("label") for o in options if isinstance(o, dict)
        ]
        values = values or (p.get("values") if isinstance(p.get("values"), list) else [])
    text = ", ".join(_text(v) for v in values if isinstance(v, str | int | float) and not isinstance(v, bool))
    box = call.box
    return c.at(ActionType.SELECT, (box[0] + box[2] / 2, box[1] + box[3] / 2) if box else call.point, text)


def _goto(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    url = call.params.get("url")
    if not isinstance(url, str) or not url:
        raise Drop(DropReason.MALFORMED_STEP, f"{call.name} without a url")
    return c.make(ActionType.GOTO, text=url)


def _nav(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    kind, key = _NAV[call.verb]
    return c.make(kind, text=key, name=call.verb)


def _wheel(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    """SCROLL at the page's pointer; the content travels opposite to the deltas."""
    p, limit = call.params, playwright_trace.MAX_CSS_PX
    dx, dy = number(p.get("deltaX", 0), -limit), number(p.get("deltaY", 0), -limit)
    if dx is None or dy is None:
        raise Drop(DropReason.MALFORMED_STEP, f"{call.name} without numeric deltas")
    if dx == dy == 0:
        raise Drop(DropReason.EMPTY_SCROLL)
    placed = c.place(pointer)
    if isinstance(placed, UngroundedReason) or c.unit is None:
        direction = wheel_gesture((0.5, 0.5), (dx, dy), (0.0, 0.0))[1]
        reason = placed if isinstance(placed, UngroundedReason) else UngroundedReason.NO_VIEWPORT
        return c.make(ActionType.SCROLL, desc=f"scroll({direction})", ungrounded=reason)
    return wheel_step(c.make, placed[0], (dx, dy), c.unit)


def _drag(call: Call, c: _Canvas, pointer: Point) -> GuiStep:
    placed = c.place(*call.drag_points())
    if isinstance(placed, UngroundedReason):
        return c.make(ActionType.DRAG, ungrounded=placed)
    (x1, y1), (x2, y2) = placed
    return c.make(ActionType.DRAG, (x1, y1, x2, y2), SPAN_MASK)


_Maker = Callable[[Call, _Canvas, Point], GuiStep]
_MAKERS: dict[str, _Maker] = {
    **dict.fromkeys(_CLICK, _click),
    **dict.fromkeys(_HOVER, _hover),
    **dict.fromkeys(_CHECK, _check),
    **dict.fromkeys(_TYPE, _type),
    **dict.fromkeys(_PRESS, _press),
    **dict.fromkeys(_NAV, _nav),
    "selectoption": _select,
    "goto": _goto,
    "mousewheel": _wheel,
    "draganddrop": _drag,
}
# Every call that is a user action with a step (protocol methods, lower case).
USER_METHODS = frozenset(_MAKERS)
