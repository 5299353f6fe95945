"""Playwright trace shapes recorded here, now, with Playwright for Python driving Debian's
chromium against trace_recorder's board page (fixed CSS geometry, `BOARD`): dragAndDrop with
its two input points, calls with no step counted by name, a viewport changed mid-trace, a
window with no viewport, a recording with no screencast frames, and pages the trace does not
tie calls to. Every trace is v10: `before` events with class + method and no apiName.

Points are checked against the page's own layout (CSS px of its boxes, the browser's own
innerWidth), never against what the trace says: within 2 px of the element in the frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gui_assets.core.ir import POINT_MASK, SPAN_MASK, ActionType
from gui_assets.sources.webarena import trace_recorder
from gui_assets.sources.webarena.playwright_trace import open_trace
from gui_assets.sources.webarena.trace_recorder import BOARD
from gui_assets_tests.sources.webarena.test_webarena import mirror_with, needs_chromium, run

pytestmark = needs_chromium
PAUSE = 300  # ms for the screencast to paint what a call will act on


def centre(name: str) -> tuple[float, float]:
    x, y, w, h = BOARD[name]
    return x + w / 2, y + h / 2


def recorded(tmp: Path, session: Any, **options: Any):
    """(episode or None, stats, trace path) of one recording made now."""
    path = trace_recorder.record(tmp / "9.zip", session, **options)
    eps, stats = run(mirror_with(tmp, {"9.zip": path.read_bytes()}, [9]), tmp)
    return (eps[0] if eps else None), stats, path


def on_frame(step, css: tuple[float, float], scale: float, i: int = 0) -> None:
    """Point i of `step` lies within 2 px of CSS point `css` drawn at `scale` on its frame."""
    x, y = step.params[2 * i] * step.observation.width, step.params[2 * i + 1] * step.observation.height
    assert (x, y) == pytest.approx((css[0] * scale, css[1] * scale), abs=2), step.desc


def test_drag_and_drop_is_one_drag_between_its_elements_and_unconverted_calls_are_counted(tmp_path):
    def session(page: Any, context: Any, base: str) -> None:
        page.goto(base + "board.html")
        page.wait_for_timeout(PAUSE)
        page.drag_and_drop("#card", "#zone")
        page.wait_for_timeout(PAUSE)
        page.locator("#card").drag_to(page.locator("#zone"), target_position={"x": 10, "y": 20})
        page.focus("#note")
        page.dispatch_event("#note", "click")
        page.set_input_files("#file", files=[{"name": "a.txt", "mimeType": "text/plain", "buffer": b"x"}])
        page.mouse.down()
        page.mouse.up()
        page.keyboard.down("Shift")
        page.keyboard.up("Shift")
        page.bring_to_front()
        page.once("dialog", lambda dialog: dialog.accept())
        page.evaluate("alert('saved')")  # internal, as are the waits and queries below
        page.wait_for_selector("#zone")
        page.locator("#zone").bounding_box()

    ep, stats, _ = recorded(tmp_path, session)
    drags = [s for s in ep.steps if s.action_type == ActionType.DRAG]
    assert len(drags) == 2 and all(d.mask == SPAN_MASK for d in drags)
    scale = 800 / 1024  # the 1024x640 viewport in an 800x500 JPEG
    zone_x, zone_y = BOARD["zone"][:2]
    # targetPosition is an offset from the zone's padding box, inside its 3 px border
    offset_target = (zone_x + 3 + 10, zone_y + 3 + 20)
    for drag, target in zip(drags, (centre("zone"), offset_target), strict=True):
        on_frame(drag, centre("card"), scale, 0)
        on_frame(drag, target, scale, 1)
    assert stats.ignored_calls == {
        "Frame.focus": 1,
        "Frame.dispatchEvent": 1,
        "Frame.setInputFiles": 1,
        "Page.mouseDown": 1,
        "Page.mouseUp": 1,
        "Page.keyboardDown": 1,
        "Page.keyboardUp": 1,
        "Page.bringToFront": 1,
        "Dialog.accept": 1,
    }
    assert json.loads(ep.attrs["ignored_calls"]) == dict(stats.ignored_calls)
    assert [s.action_type for s in ep.steps if s.action_type != ActionType.GOTO] == [ActionType.DRAG] * 2


def test_a_viewport_changed_mid_trace_places_each_step_on_its_own_frame(tmp_path):
    def session(page: Any, context: Any, base: str) -> None:
        page.goto(base + "board.html")
        page.wait_for_timeout(PAUSE)
        page.click("#zone")
        page.set_viewport_size({"width": 1200, "height": 700})
        # The renderer has the new size, then the screencast gets time to send a frame of it: on
        # a loaded machine that frame once came after the click, 300 ms later.
        page.wait_for_function("() => innerWidth === 1200 && innerHeight === 700")
        page.wait_for_timeout(4 * PAUSE)
        page.click("#zone")
        page.hover("#card")

    ep, _, _ = recorded(tmp_path, session)
    before, after, hover = (s for s in ep.steps if s.action_type in (ActionType.CLICK, ActionType.HOVER))
    assert (before.observation.width, before.observation.height) == (800, 500)
    assert after.observation.width == 800 and after.observation.height < 500  # 1200x700 fit into 800
    on_frame(before, centre("zone"), 800 / 1024)
    on_frame(after, centre("zone"), 800 / 1200)
    on_frame(hover, centre("card"), 800 / 1200)
    assert all(s.mask == POINT_MASK for s in (before, after, hover))


def test_a_window_with_no_viewport(tmp_path):
    """noDefaultViewport: context-options names no viewport and the page is the window; traced
    without snapshots, so only the frames' declared size can place a point."""
    inner: list[float] = []

    def session(page: Any, context: Any, base: str) -> None:
        page.goto(base + "board.html")
        page.wait_for_timeout(PAUSE)
        inner.extend(page.evaluate("[innerWidth, innerHeight]"))
        page.click("#zone")
        page.fill("#note", "hello")

    ep, stats, path = recorded(tmp_path, session, viewport=None, window=(1280, 900), snapshots=False)
    archive, trace = open_trace(path)
    archive.close()
    assert {c.viewport for c in trace.calls} == {None}
    click, typed = (s for s in ep.steps if s.action_type in (ActionType.CLICK, ActionType.TYPE))
    assert inner[0] > 800 and click.observation.width == 800  # a window wider than the JPEG
    on_frame(click, centre("zone"), 800 / inner[0])
    on_frame(typed, centre("note"), 800 / inner[0])
    assert typed.text == "hello" and stats.drops.get("unattributed_call", 0) == 0


def test_a_recording_without_screencast_frames(tmp_path):
    def session(page: Any, context: Any, base: str) -> None:
        page.goto(base + "board.html")
        page.click("#zone")
        page.fill("#note", "x")
        page.focus("#note")

    ep, stats, _ = recorded(tmp_path, session, screenshots=False)
    assert ep is None
    assert stats.drops == {"no_frame": 3, "empty_episode": 1} and stats.ignored_calls == {"Frame.focus": 1}


def test_several_pages_traced_without_snapshots_are_not_guessed(tmp_path):
    """v10 without snapshots names no call's page: with two pages open, no call is tied to one."""

    def session(page: Any, context: Any, base: str) -> None:
        page.goto(base + "board.html")
        page.wait_for_timeout(PAUSE)
        page.click("#zone")
        other = context.new_page()
        other.goto(base + "deals.html")
        other.wait_for_timeout(PAUSE)
        other.click("#claim")

    ep, stats, _ = recorded(tmp_path, session, snapshots=False)
    assert ep is None and stats.drops == {"unattributed_call": 4, "empty_episode": 1}
