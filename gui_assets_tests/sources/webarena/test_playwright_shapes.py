"""Playwright trace shapes no recorder here can produce, on small hand-made traces: the test
runner's layout, apiNames as each SDK spells them, v3 on a large monotonic clock, v8 titles,
declared frame sizes (fractional, changing, absent), pages without frames, drags of v3 and v4.

The events follow Playwright's trace.ts / traceModernizer field for field; what the recorder
here really writes (v10) is covered by test_playwright_recorded.py on traces recorded now.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType
from gui_assets.sources.archives import ZipImages
from gui_assets.sources.webarena.playwright_trace import api_call, read_trace
from gui_assets_tests.conftest import page_bytes
from gui_assets_tests.sources.webarena.test_webarena import lines, mirror_with, run, zip_of


def ctx(version: int, viewport: tuple[float, float] | None = None, origin: str = "library") -> dict:
    options = {"viewport": {"width": viewport[0], "height": viewport[1]}} if viewport else {}
    return {"type": "context-options", "version": version, "origin": origin, "options": options}


def frame(page: str, sha1: str, t: float, w: float | None, h: float | None) -> dict:
    e: dict[str, Any] = {"type": "screencast-frame", "pageId": page, "sha1": sha1, "timestamp": t}
    if w is not None:
        e |= {"width": w, "height": h}
    return e


def before(cid: str, t: float, cls: str, method: str, params: dict | None = None, **extra: Any) -> dict:
    return {"type": "before", "callId": cid, "startTime": t, "class": cls, "method": method} | {
        "params": params or {},
        **extra,
    }


def inp(cid: str, point: tuple[float, float] | None = None, box: tuple | None = None) -> dict:
    e: dict[str, Any] = {"type": "input", "callId": cid}
    if point:
        e["point"] = {"x": point[0], "y": point[1]}
    if box:
        e["box"] = dict(zip(("x", "y", "width", "height"), box, strict=True))
    return e


def after(cid: str, t: float, **extra: Any) -> dict:
    return {"type": "after", "callId": cid, "endTime": t, **extra}


def action(cid: str, t: float, cls: str, method: str, **metadata: Any) -> dict:
    """A v3 call: one event, its fields in `metadata`."""
    return {
        "type": "action",
        "metadata": {"id": cid, "startTime": t, "type": cls, "method": method} | metadata,
    }


def adapt(tmp: Path, members: dict[str, Any]):
    """(episode or None, stats) of one trace zip whose members are event lists or bytes."""
    data = {k: lines(*v) if isinstance(v, list) else v for k, v in members.items()}
    mirror = mirror_with(tmp, {"5.zip": zip_of(data)}, [5])
    eps, stats = run(mirror, tmp)
    return (eps[0] if eps else None), stats


def pixel(step, i: int = 0) -> tuple[float, float]:
    """Point i of a step in pixels of its own frame."""
    return step.params[2 * i] * step.observation.width, step.params[2 * i + 1] * step.observation.height


# --- layout ------------------------------------------------------------------------------


def test_the_test_runner_layout_reads_each_context_and_skips_the_runners_steps(tmp_path):
    """`test.trace` (the runner's steps, class Test) + `0-trace.trace` and `1-trace.trace` (one
    per context, both with a `call@5`) + `0-trace.network`, and no `trace.trace`."""
    runner = [
        ctx(8, origin="testRunner"),
        {"type": "before", "callId": "pw:api@3", "startTime": 9, "class": "Test", "method": "pw:api"}
        | {"title": "page.click", "params": {"selector": "#go"}},
        {"type": "after", "callId": "pw:api@3", "endTime": 12},
        {"type": "stdout", "timestamp": 13, "text": "done"},
    ]
    first = [
        ctx(8, (1280, 720)),
        frame("page@a", "fa", 5, 1280, 720),
        before("call@5", 10, "Frame", "click", {"selector": "#go"}, pageId="page@a", stepId="pw:api@3"),
        inp("call@5", (320, 180)),
        after("call@5", 11),
    ]
    second = [
        ctx(8, (1000, 500)),
        frame("page@b", "fb", 20, 1000, 500),
        before("call@5", 30, "Frame", "fill", {"selector": "#q", "value": "hat"}, pageId="page@b"),
        inp("call@5", box=(100, 100, 200, 50)),
        after("call@5", 31),
    ]
    network = b'{"type":"resource-snapshot","snapshot":{"request":{"url":"http://x/"}}}'
    members = {
        "test.trace": runner,
        "0-trace.trace": first,
        "0-trace.network": network,
        "1-trace.trace": second,
        "resources/fa": page_bytes(800, 450, "jpeg"),
        "resources/fb": page_bytes(800, 400, "jpeg"),
    }
    path = tmp_path / "runner.zip"
    path.write_bytes(zip_of({k: lines(*v) if isinstance(v, list) else v for k, v in members.items()}))
    archive = ZipImages(path)
    trace = read_trace(archive)
    archive.close()
    assert [(c.source, c.call_id, c.name) for c in trace.calls] == [
        ("0-trace.trace", "call@5", "Frame.click"),
        ("1-trace.trace", "call@5", "Frame.fill"),
    ]  # the runner's own step is no call
    ep, stats = adapt(tmp_path, members)
    assert [(s.action_type, s.text, s.ref.member) for s in ep.steps] == [
        (ActionType.CLICK, "", "0-trace.trace#call@5"),
        (ActionType.TYPE, "hat", "1-trace.trace#call@5"),
    ]
    assert ep.steps[0].params[:2] == pytest.approx((0.25, 0.25))
    assert ep.steps[1].params[:2] == pytest.approx((0.2, 0.25))  # the box centre, on its own frame
    assert stats.drops == {} and ep.attrs["trace_version"] == "8"


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        ("Locator.click", ("Locator", "click")),  # Python
        ("Locator.select_option", ("Locator", "selectoption")),
        ("Page.go_back", ("Page", "goback")),
        ("Frame.click", ("Frame", "click")),  # Java
        ("Page.navigate", ("Page", "goto")),
        ("Locator.dragTo", ("Locator", "draganddrop")),
        ("page.click", ("page", "click")),  # JavaScript
        ("locator.fill", ("locator", "fill")),
        ("page.mouse.wheel", ("Page", "mousewheel")),
        ("Keyboard.PressAsync", ("Page", "keyboardpress")),  # .NET
        ("Mouse.dblclick", ("Page", "dblclick")),
    ],
)
def test_api_names_of_every_sdk_name_the_protocol_method(api, expected):
    assert api_call(api) == expected


def test_calls_map_alike_whatever_sdk_recorded_them(tmp_path):
    """Python, Java and JavaScript apiNames beside class + method (v7), then lines holding only
    an apiName: each becomes the same step; an unconverted one is counted by its name."""
    spelled = [
        ("Locator.click", "Frame", "click", {"selector": "#a"}),
        ("Frame.click", "Frame", "click", {"selector": "#a"}),
        ("page.click", "Frame", "click", {"selector": "#a"}),
        ("Page.navigate", "Frame", "goto", {"url": "http://shop/"}),
        ("locator.fill", "Frame", "fill", {"selector": "#q", "value": "tea"}),
    ]
    events: list[dict] = [ctx(7, (800, 600)), frame("p", "f1", 1, 800, 600)]
    for i, (api, cls, method, params) in enumerate(spelled):
        events += [
            before(f"c{i}", 10 + i, cls, method, params, apiName=api, pageId="p"),
            inp(f"c{i}", (80, 60)),
        ]
        events.append(after(f"c{i}", 10.5 + i, point={"x": 80, "y": 60}))
    only_api = [
        ("Page.navigate", {"url": "http://shop/b"}),
        ("locator.click", {"selector": "#a"}),
        ("Keyboard.PressAsync", {"key": "Enter"}),
        ("Locator.select_option", {"options": [{"valueOrLabel": "Red"}]}),
        ("page.focus", {"selector": "#q"}),
    ]
    for i, (api, params) in enumerate(only_api):
        cid = f"a{i}"
        events.append(
            {"type": "before", "callId": cid, "startTime": 20 + i, "apiName": api} | {"pageId": "p"}
        )
        events[-1]["params"] = params
        events += [inp(cid, (80, 60)), after(cid, 20.5 + i)]
    ep, stats = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    assert [(s.action_type.name, s.text) for s in ep.steps] == [
        ("CLICK", ""),
        ("CLICK", ""),
        ("CLICK", ""),
        ("GOTO", "http://shop/"),
        ("TYPE", "tea"),
        ("GOTO", "http://shop/b"),
        ("CLICK", ""),
        ("PRESS_ENTER", "Enter"),
        ("SELECT", "Red"),
    ]
    assert all(
        s.params[:2] == pytest.approx((0.1, 0.1)) for s in ep.steps if s.action_type == ActionType.CLICK
    )
    assert stats.ignored_calls == {"page.focus": 1} and stats.drops == {}


def test_v8_before_events_with_a_title_and_no_api_name(tmp_path):
    events = [
        ctx(8, (1000, 800)),
        frame("p", "f1", 1, 1000, 800),
        before("c1", 5, "Frame", "hover", {"selector": "#m"}, title="Hover menu", pageId="p"),
        inp("c1", (500, 200)),
        after("c1", 6),
        before("c2", 7, "Page", "keyboardType", {"text": "abc"}, pageId="p"),
        inp("c2"),
        after("c2", 8),
    ]
    ep, _ = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 640, "jpeg")})
    assert [s.action_type for s in ep.steps] == [ActionType.HOVER, ActionType.TYPE]
    assert ep.steps[0].params[:2] == pytest.approx((0.5, 0.25)) and ep.steps[1].text == "abc"


# --- clocks and versions -----------------------------------------------------------------


def test_v3_actions_on_a_large_monotonic_clock(tmp_path):
    """v3 (Playwright <= 1.1x): one `action` per call, startTime on hrtime (ms since boot); the
    frame before the call is found on that clock; internal and tracing calls are not calls."""
    t0 = 263_914_207.0
    v3 = [
        ctx(3, (1600, 1000)),
        frame("page@1", "before.jpeg", t0 - 80, 1600, 1000),
        frame("page@1", "after.jpeg", t0 + 40, 1600, 1000),
        action("call@1", t0, "Frame", "click", endTime=t0 + 30, pageId="page@1", point={"x": 400, "y": 500}),
        action("call@2", t0 + 50, "Frame", "evaluateExpression", internal=True, params={}),
        action("call@3", t0 + 60, "Tracing", "tracingStop", params={}),
        {"type": "event", "metadata": {"type": "Page", "method": "console", "startTime": t0, "params": {}}},
    ]
    resources = {"resources/before.jpeg": page_bytes(800, 500, "jpeg"), "resources/after.jpeg": b"unread"}
    ep, stats = adapt(tmp_path, {"trace.trace": v3, **resources})
    (step,) = ep.steps
    assert step.action_type == ActionType.CLICK and step.params[:2] == pytest.approx((0.25, 0.5))
    assert (step.observation.width, step.observation.height) == (800, 500)  # the frame before, not after
    assert stats.drops == {} and ep.attrs["trace_version"] == "3"


# --- frame sizes -------------------------------------------------------------------------


def test_fractional_declared_sizes_place_points_on_the_smaller_jpeg(tmp_path):
    """A frame declares 1283.2x715.2 CSS px (a zoomed window, no viewport set) and stores 800x446."""
    events = [
        ctx(6),
        frame("p", "f1", 1, 1283.2, 715.2),
        before("c1", 5, "Frame", "click", pageId="p"),
        inp("c1", (641.6, 357.6)),
        after("c1", 6),
        before("c2", 7, "Frame", "click", pageId="p"),
        inp("c2", (320.8, 536.4)),
        after("c2", 8),
    ]
    ep, _ = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 446, "jpeg")})
    assert pixel(ep.steps[0]) == pytest.approx((400, 223), abs=0.5)
    assert pixel(ep.steps[1]) == pytest.approx((200, 334.5), abs=0.5)


def test_frames_whose_size_changes_mid_trace(tmp_path):
    """An early 800x396 frame before 800x450 ones, all declaring 1280x720: the early one was
    taken mid-resize and holds the top 633.6 CSS px at the same 800/1280 scale (as recorded here
    after setViewportSize: 1200x700 declared, 800x409 stored). Each step is placed on its own
    frame; a point below what the early frame holds is off it."""
    events = [
        ctx(7, (1280, 720)),
        frame("p", "early", 1, 1280, 720),
        before("c1", 5, "Frame", "click", pageId="p"),
        inp("c1", (640, 360)),
        after("c1", 6),
        before("c2", 7, "Frame", "hover", pageId="p"),
        inp("c2", (640, 700)),
        after("c2", 8),
        frame("p", "late", 20, 1280, 720),
        before("c3", 25, "Frame", "click", pageId="p"),
        inp("c3", (640, 360)),
        after("c3", 26),
    ]
    jpegs = {"resources/early": page_bytes(800, 396, "jpeg"), "resources/late": page_bytes(800, 450, "jpeg")}
    ep, _ = adapt(tmp_path, {"trace.trace": events, **jpegs})
    early, below, late = ep.steps
    assert [(s.observation.width, s.observation.height) for s in ep.steps] == [
        (800, 396),
        (800, 396),
        (800, 450),
    ]
    assert pixel(early) == pytest.approx((400, 225), abs=0.5) and pixel(late) == pytest.approx(
        (400, 225), abs=0.5
    )
    assert (below.action_type, below.mask, below.ungrounded_reason) == (
        ActionType.HOVER,
        NO_MASK,
        "outside_screenshot",
    )


def test_no_viewport_anywhere_keeps_pointer_steps_ungrounded(tmp_path):
    """noDefaultViewport, frames of a version that declared no size, no snapshot: nothing says
    which CSS size the frame shows, so no point is placed (never a guessed default)."""
    events = [
        ctx(5),
        frame("p", "f1", 1, None, None),
        before("c1", 5, "Frame", "click", pageId="p"),
        inp("c1", (100, 100)),
        after("c1", 6),
        before("c2", 7, "Frame", "fill", {"value": "x"}, pageId="p"),
        after("c2", 8),
        {
            "type": "frame-snapshot",
            "snapshot": {"callId": "c3", "pageId": "p", "isMainFrame": True}
            | {"viewport": {"width": 400, "height": 300}},
        },
        before("c3", 9, "Frame", "click", pageId="p"),
        inp("c3", (100, 150)),
        after("c3", 10),
    ]
    ep, stats = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    click, typed, snapped = ep.steps
    assert (click.action_type, click.mask, click.ungrounded_reason) == (
        ActionType.CLICK,
        NO_MASK,
        "no_viewport",
    )
    assert typed.text == "x" and typed.mask == NO_MASK
    assert snapped.mask == POINT_MASK and snapped.params[:2] == pytest.approx((0.25, 0.5))  # its snapshot's
    assert stats.ungrounded_by_reason == {"no_viewport": 1}  # the TYPE claims no location at all


# --- pages ---------------------------------------------------------------------------------


def test_a_page_with_no_screencast_frames(tmp_path):
    """A popup that never painted: its calls have no frame (dropped, counted); the other page's
    calls still make steps."""
    events = [
        ctx(5, (800, 600)),
        frame("main", "f1", 1, 800, 600),
        before("c1", 5, "Frame", "click", pageId="main"),
        inp("c1", (400, 300)),
        after("c1", 6),
        before("c2", 7, "Frame", "click", pageId="popup"),
        inp("c2", (10, 10)),
        after("c2", 8),
        before("c3", 9, "Page", "keyboardPress", {"key": "Escape"}, pageId="popup"),
        after("c3", 10),
    ]
    ep, stats = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    assert [s.action_type for s in ep.steps] == [ActionType.CLICK]
    assert stats.drops == {"no_frame": 2}


def v10_without_snapshots(pages: list[str]) -> list[dict]:
    """A v10 trace recorded without snapshots: `before` names no page, page events name them."""
    announced = [
        {"type": "event", "time": 1, "class": "BrowserContext", "method": "page", "params": {"pageId": p}}
        for p in pages
    ]
    return [
        ctx(10, (800, 600)),
        *announced,
        frame(pages[0], "f1", 2, 800, 600),
        before("c1", 5, "Frame", "click", {"selector": "#a"}),
        inp("c1", (200, 150)),
        after("c1", 6),
        before("c2", 7, "Page", "keyboardPress", {"key": "a"}),
        after("c2", 8),
    ]


def test_v10_calls_without_snapshots_belong_to_the_only_page(tmp_path):
    events = v10_without_snapshots(["p1"])
    ep, stats = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    assert [(s.action_type, s.params[:2]) for s in ep.steps] == [
        (ActionType.CLICK, pytest.approx((0.25, 0.25))),
        (ActionType.PRESS_KEY, (0.0, 0.0)),
    ]
    assert stats.drops == {}


def test_v10_calls_without_snapshots_among_several_pages_are_unattributed(tmp_path):
    events = v10_without_snapshots(["p1", "p2"])
    ep, stats = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    assert ep is None and stats.drops == {"unattributed_call": 2, "empty_episode": 1}


# --- drags ----------------------------------------------------------------------------------


def test_a_v4_drag_is_one_drag_from_source_to_target(tmp_path):
    """v4 on: one input per pointer placement, the source then the target; a retried press
    repeats the source (same box) and the source is its last attempt."""
    src, dst = (50, 50, 100, 100), (500, 300, 200, 100)
    events = [
        ctx(7, (1000, 500)),
        frame("p", "f1", 1, 1000, 500),
        before("d1", 5, "Frame", "dragAndDrop", {"source": "#s", "target": "#t"}, pageId="p"),
        inp("d1", (100, 100), src),
        inp("d1", (600, 350), dst),
        after("d1", 6, point={"x": 600, "y": 350}),
        before("d2", 7, "Frame", "dragAndDrop", {"source": "#s", "target": "#t"}, pageId="p"),
        inp("d2", (90, 95), src),
        inp("d2", (100, 100), src),
        inp("d2", (510, 320), dst),
        after("d2", 8),
        before("d3", 9, "Frame", "dragAndDrop", {"source": "#s", "target": "#far"}, pageId="p"),
        inp("d3", (100, 100), src),
        inp("d3", (1500, 100), (1400, 50, 200, 100)),
        after("d3", 10),
    ]
    ep, _ = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 400, "jpeg")})
    first, retried, far = ep.steps
    assert first.action_type == ActionType.DRAG and first.mask == SPAN_MASK
    assert first.params == pytest.approx((0.1, 0.2, 0.6, 0.7))
    assert retried.params == pytest.approx((0.1, 0.2, 0.51, 0.64))
    assert (far.action_type, far.mask, far.ungrounded_reason) == (
        ActionType.DRAG,
        NO_MASK,
        "outside_screenshot",
    )


def test_a_v3_drag_keeps_only_its_drop_point_and_stays_ungrounded(tmp_path):
    """v3 overwrote metadata.point at each placement: the one point left is the drop point, and
    params.targetPosition is an offset inside the target element, not a screen point."""
    v3 = [
        ctx(3, (800, 600)),
        frame("p", "f1", 1, 800, 600),
        action(
            "d",
            5,
            "Frame",
            "dragAndDrop",
            pageId="p",
            point={"x": 610, "y": 400},
            params={"source": "#s", "target": "#t", "targetPosition": {"x": 10, "y": 20}},
        ),
    ]
    ep, _ = adapt(tmp_path, {"trace.trace": v3, "resources/f1": page_bytes(800, 600, "jpeg")})
    (drag,) = ep.steps
    assert (drag.action_type, drag.mask, drag.ungrounded_reason) == (ActionType.DRAG, NO_MASK, "no_point")


def test_the_reader_keeps_every_input_of_a_call(tmp_path):
    events = [
        ctx(7, (1000, 500)),
        before("d", 5, "Frame", "dragAndDrop", pageId="p"),
        inp("d", (1, 2)),
        inp("d"),
        inp("d", (3, 4), (0, 0, 10, 10)),
        after("d", 6, point={"x": 3, "y": 4}),
    ]
    path = tmp_path / "t.zip"
    path.write_bytes(zip_of({"trace.trace": lines(*events)}))
    archive = ZipImages(path)
    (call,) = read_trace(archive).calls
    archive.close()
    assert call.points == [(1.0, 2.0), (3.0, 4.0)] and call.box == (0.0, 0.0, 10.0, 10.0)
    assert call.drag_points() == ((1.0, 2.0), (3.0, 4.0)) and json.dumps(call.params) == "{}"


def test_a_raw_mouse_click_in_a_real_v7_trace_lands_on_its_own_point(tmp_path):
    """Playwright 1.45 (trace v7) records `page.mouse.click(x, y)` with no input event and an
    `after.point` repeating the previous call's point: the step must sit at its own x, y."""
    sample = Path(__file__).parents[2] / "samples" / "playwright" / "v7_mouse_click.zip"
    mirror = mirror_with(tmp_path, {"5.zip": sample.read_bytes()}, [5])
    (ep,), _ = run(mirror, tmp_path)
    clicks = [s for s in ep.steps if s.action_type == ActionType.CLICK]
    hovers = [s for s in ep.steps if s.action_type == ActionType.HOVER]
    want = [(140, 120), (550, 450), (620, 90)]  # the button's centre, then each mouse.click's x, y
    # in pixels of the step's own frame (the screencast JPEG shows the viewport's CSS px 1:1 here)
    assert [tuple(round(v) for v in pixel(s)) for s in clicks] == want
    assert [tuple(round(v) for v in pixel(s)) for s in hovers] == [(300, 200)]
    assert all(s.mask == POINT_MASK for s in clicks + hovers)
