"""WebArena human demonstrations: Playwright trace archives joined to the task configs.

Files (a mirror only: the traces are distributed outside the hub):
    webarena/human_trajectories/<task_id>.zip     one Playwright trace per task
    webarena/config_files/test.raw.json           the 812 task configs (intent, template, sites)

Steps come from the trace's Playwright calls, in start order; each is observed through the last
screencast frame of its page at or before the call started (o_t), and its point, in viewport
CSS px, is rescaled to that frame (frames may be downscaled). Mapping:
    click / tap / mouseClick            CLICK (clickCount 2 and dblclick: 'double_click' in desc)
    dblclick                            CLICK
    hover / mouseMove                   HOVER
    check / uncheck / setChecked        CLICK ('check' / 'uncheck' in desc)
    fill / type / keyboardType /        TYPE with the value; grounded at the element's box when
      keyboardInsertText                the trace recorded one
    press / keyboardPress               PRESS_ENTER for Enter, else PRESS_KEY with the key
    selectOption                        SELECT with the chosen values, at the element's box
    goto                                GOTO with the url
    goBack / goForward / reload         PRESS_BACK / PRESS_KEY "alt+ArrowRight" / PRESS_KEY "F5"
    mouseWheel                          SCROLL at the last pointer position on that page, the
                                        content travelling opposite to deltaX/deltaY
    dragAndDrop                         DRAG from its source point to its target point
Every other call (waits, evaluations, queries, new pages, context setup) is not a user action:
it makes no step and is counted in the episode's `ignored_calls`. A call that failed (its
`after` has an error) is dropped as `failed_call`; a call on a page with no frame yet (the very
first goto on about:blank) as `no_frame`; a pointer call with no point keeps its type, ungrounded.
Typed values are kept in action_text as recorded (the dataset is the record) and never logged.

Limit: a scripted Playwright call that scrolls its target into view acts on a screen the trace
may not show before the call; human traces are recorded by hand and scroll as separate steps.
A missing or unreadable config file fails the partition by name.

Drop reasons:
    task_not_in_config        a trace whose task_id the configs do not hold
    truncated_archive         a trace zip that cannot be opened
    missing_trace             a zip with no trace events in it
    malformed_trace_event     a trace line that parses but is no event
    failed_call               a user call whose `after` carries an error
    no_frame                  a call on a page with no screencast frame before it
    missing_screenshot        a frame the archive does not hold
    unsafe_archive_member     the archive's refusals of a frame member
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gui_assets import archives, assembly
from gui_assets.adapters import playwright_trace
from gui_assets.adapters.playwright_trace import Call, Trace, open_trace
from gui_assets.archives import ZipImages
from gui_assets.assembly import AdapterRun, Steps
from gui_assets.cursor import SCREEN_CENTRE
from gui_assets.drops import Drop, DropReason, UngroundedReason
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

REPO_ID = "webarena"
PARTITIONS = ("human",)
CONFIG = "config_files/test.raw.json"
TRACES = "human_trajectories/"

DROPS = frozenset(
    {
        DropReason.TASK_NOT_IN_CONFIG,
        DropReason.MALFORMED_TRACE_EVENT,
        DropReason.FAILED_CALL,
        DropReason.NO_FRAME,
        DropReason.MISSING_SCREENSHOT,
    }
    | playwright_trace.DROPS
    | archives.OPEN_DROPS
    | archives.MEMBER_DROPS
    | assembly.DROPS
)
_CLICK = {"click", "tap", "mouseclick", "dblclick"}
_HOVER = {"hover", "mousemove"}
_CHECK = {"check": "check", "uncheck": "uncheck", "setchecked": "set_checked"}
_TYPE = {"fill", "type", "keyboardtype", "keyboardinserttext"}
_PRESS = {"press", "keyboardpress"}
_NAV = {
    "goback": (ActionType.PRESS_BACK, ""),
    "goforward": (ActionType.PRESS_KEY, "alt+ArrowRight"),
    "reload": (ActionType.PRESS_KEY, "F5"),
}
# Every call that is a user action; anything else a trace records is not a step.
USER_METHODS = (
    _CLICK
    | _HOVER
    | set(_CHECK)
    | _TYPE
    | _PRESS
    | set(_NAV)
    | {"selectoption", "goto", "mousewheel", "dragandrop"}
)


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
        if trace.malformed_events:
            run.drop(DropReason.MALFORMED_TRACE_EVENT, trace.malformed_events)
        try:
            episode = _episode(run, f.path, task_id, cfg, archive, trace)
        finally:
            archive.close()
        if episode is not None:
            yield episode


def _observation(
    archive: ZipImages, trace: Trace, call: Call, run: AdapterRun
) -> tuple[Observation, float, float]:
    """The frame the call acted on, and the CSS px -> frame px scale."""
    frame = trace.frame_before(call.page or "", call.start)
    if frame is None:
        raise Drop(DropReason.NO_FRAME, f"{call.method} at {call.start} ms")
    if frame.member not in archive.members and frame.member not in archive.refused:
        raise Drop(DropReason.MISSING_SCREENSHOT, frame.member)
    obs = run.observe(archive.read(frame.member))  # a refused member raises its reason
    vw, vh = trace.viewport_of(call.page or "")
    return obs, obs.width / vw, obs.height / vh


def _norm(p: tuple[float, float], sx: float, sy: float, w: int, h: int) -> tuple[float, float] | None:
    x, y = p[0] * sx / w, p[1] * sy / h
    return (x, y) if 0 <= x <= 1 and 0 <= y <= 1 else None


def _episode(
    run: AdapterRun, path: str, task_id: str, cfg: dict[str, Any], archive: ZipImages, trace: Trace
) -> GuiEpisode | None:
    raw = run.raw
    steps = Steps()
    ignored = 0
    mouse: dict[str, tuple[float, float]] = {}  # per page: where the pointer is, CSS px
    for call in trace.calls:
        method = call.method.lower()
        if method not in USER_METHODS:
            ignored += 1
            continue
        try:
            if call.error:
                raise Drop(DropReason.FAILED_CALL)
            obs, sx, sy = _observation(archive, trace, call, run)
        except Drop as e:
            run.drop(e.reason)
            continue
        ref = SourceRef(raw.repo_id, raw.revision, path, member=f"trace.trace#{call.call_id}")
        steps.add(_step(call, method, obs, sx, sy, mouse, ref))
        if call.point is not None and call.page:
            mouse[call.page] = call.point
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
            "ignored_calls": str(ignored),
            "success": "unknown",
        },
    )


def _eval_types(value: Any) -> list[Any]:
    types = value.get("eval_types") if isinstance(value, dict) else None
    return types if isinstance(types, list) else []


def _step(
    call: Call,
    method: str,
    obs: Observation,
    sx: float,
    sy: float,
    mouse: dict[str, tuple[float, float]],
    ref: SourceRef,
) -> GuiStep:
    w, h = obs.width, obs.height
    p = call.params

    make = step_builder(obs, ref)

    def at(kind: ActionType, point: tuple[float, float] | None, text: str = "", name: str = "") -> GuiStep:
        if point is None:
            return make(kind, text=text, name=name, ungrounded=UngroundedReason.NO_CANDIDATE)
        norm = _norm(point, sx, sy, w, h)
        if norm is None:
            return make(kind, text=text, name=name, ungrounded=UngroundedReason.OUTSIDE_SCREENSHOT)
        return make(kind, norm, POINT_MASK, text, name)

    point = call.point
    if point is None and method == "mouseclick" and isinstance(p.get("x"), int | float):
        point = (float(p["x"]), float(p["y"]))
    box_centre = (call.box[0] + call.box[2] / 2, call.box[1] + call.box[3] / 2) if call.box else None
    if method in _CLICK:
        double = method == "dblclick" or p.get("clickCount") == 2
        return at(ActionType.CLICK, point, name="double_click" if double else "click")
    if method in _HOVER:
        if point is None and isinstance(p.get("x"), int | float):
            point = (float(p["x"]), float(p["y"]))
        return at(ActionType.HOVER, point)
    if method in _CHECK:
        return at(ActionType.CLICK, point, name=_CHECK[method])
    if method in _TYPE:
        text = p.get("value", p.get("text", ""))
        text = text if isinstance(text, str) else str(text)
        return at(ActionType.TYPE, box_centre, text) if box_centre else make(ActionType.TYPE, text=text)
    if method in _PRESS:
        key = str(p.get("key", ""))
        return make(
            ActionType.PRESS_ENTER if key in ("Enter", "NumpadEnter") else ActionType.PRESS_KEY, text=key
        )
    if method == "selectoption":
        values = (call.result or {}).get("values") if isinstance(call.result, dict) else None
        if not values:
            values = (
                [
                    o.get("valueOrLabel") or o.get("value") or o.get("label")
                    for o in p.get("options", [])
                    if isinstance(o, dict)
                ]
                or p.get("values")
                or []
            )
        return at(ActionType.SELECT, box_centre or point, ", ".join(str(v) for v in values))
    if method == "goto":
        return make(ActionType.GOTO, text=str(p.get("url", "")))
    if method in _NAV:
        kind, key = _NAV[method]
        return make(kind, text=key, name=method)
    if method == "mousewheel":
        dx, dy = float(p.get("deltaX") or 0), float(p.get("deltaY") or 0)
        start = mouse.get(call.page or "")
        at_pointer = _norm(start, sx, sy, w, h) if start else None
        x, y = at_pointer or SCREEN_CENTRE  # the wheel turns where the pointer is
        return wheel_step(make, (x, y), (dx, dy), (sx / w, sy / h))
    # dragAndDrop: the trace records the source point; the target point comes in its params
    target = p.get("targetPosition") if isinstance(p.get("targetPosition"), dict) else None
    if point is None or target is None:
        return make(ActionType.DRAG, ungrounded=UngroundedReason.NO_CANDIDATE)
    a, b = _norm(point, sx, sy, w, h), _norm((float(target["x"]), float(target["y"])), sx, sy, w, h)
    if a is None or b is None:
        return make(ActionType.DRAG, ungrounded=UngroundedReason.OUTSIDE_SCREENSHOT)
    return make(ActionType.DRAG, (*a, *b), SPAN_MASK)
