"""WebArena: Playwright traces (v3 to v10) joined to the task configs, on real recorded traces.

More trace shapes: test_playwright_shapes.py (hand-made), test_playwright_recorded.py (recorded
here), test_playwright_robustness.py (bad values).

The demo's traces are real recordings shipped with the package; tests that record new ones drive
Debian's chromium with Playwright and run wherever chromium is installed (scripts/test installs it).
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from gui_assets.core.drops import DropReason
from gui_assets.core.ir import POINT_MASK, ActionType
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.archives import ZipImages
from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.webarena import adapter as webarena
from gui_assets.sources.webarena import trace_recorder
from gui_assets.sources.webarena.playwright_trace import open_trace, read_trace
from gui_assets.sources.webarena.source import SPEC as WEBARENA
from gui_assets_tests.conftest import page_bytes, run_adapter

DEMO = Path(webarena.__file__).resolve().parent / "data"
needs_chromium = pytest.mark.skipif(not Path(trace_recorder.CHROMIUM).exists(), reason="Debian's chromium")


def run(mirror: Path, tmp: Path):
    return run_adapter(WEBARENA, mirror, "human", tmp)


def mirror_with(tmp: Path, traces: dict[str, bytes], tasks: list[int]) -> Path:
    repo = tmp / "mirror" / webarena.REPO_ID
    (repo / "human_trajectories").mkdir(parents=True)
    (repo / "config_files").mkdir()
    cfg = [
        {
            "task_id": t,
            "intent": f"task {t}",
            "intent_template_id": 100 + t,
            "sites": ["shopping"],
            "intent_template": "task {{n}}",
            "eval": {"eval_types": ["string_match"]},
        }
        for t in tasks
    ]
    (repo / "config_files" / "test.raw.json").write_text(json.dumps(cfg))
    for name, data in traces.items():
        (repo / "human_trajectories" / name).write_bytes(data)
    return tmp / "mirror"


def zip_of(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in members.items():
            z.writestr(k, v)
    return buf.getvalue()


def lines(*events: dict) -> bytes:
    return "\n".join(json.dumps(e) for e in events).encode()


# --- the reader -----------------------------------------------------------------------------


def test_a_real_v10_trace_maps_calls_to_pages_and_frames():
    archive, trace = open_trace(DEMO / "274.zip")
    try:
        assert trace.version >= 10 and not trace.refused
        user = [c for c in trace.calls if c.method in ("click", "fill", "dblclick", "mouseWheel")]
        assert user and all(c.page for c in user)  # v10 has no before.pageId: joined via snapshots
        assert len({c.page for c in user}) == 2  # the deals tab is a second page
        assert {c.viewport for c in trace.calls} == {(1024.0, 640.0)}  # context-options
        for c in user:
            frame = trace.frame_before(c.page, c.start)
            assert frame is not None and frame.time <= c.start and frame.member in archive.members
            assert trace.css_size(frame, c) == (1024.0, 640.0)  # declared by the frame (its JPEG: 800x500)
    finally:
        archive.close()


def test_legacy_v3_and_v4_events_read_alike(tmp_path):
    frame = page_bytes(800, 500)
    v3 = lines(
        {"type": "context-options", "version": 3, "options": {"viewport": {"width": 1600, "height": 1000}}},
        {
            "type": "screencast-frame",
            "pageId": "p1",
            "sha1": "aa11",
            "width": 800,
            "height": 500,
            "timestamp": 5,
        },
        {
            "type": "action",
            "metadata": {
                "id": "c1",
                "type": "Frame",
                "method": "click",
                "startTime": 10,
                "endTime": 12,
                "pageId": "p1",
                "point": {"x": 400, "y": 300},
                "params": {},
            },
        },
    )
    v4 = lines(
        {"type": "context-options", "version": 4, "options": {"viewport": {"width": 1600, "height": 1000}}},
        {
            "type": "screencast-frame",
            "pageId": "p1",
            "sha1": "aa11",
            "width": 800,
            "height": 500,
            "timestamp": 5,
        },
        {
            "type": "before",
            "callId": "c1",
            "startTime": 10,
            "class": "Frame",
            "method": "click",
            "params": {},
            "pageId": "p1",
            "wallTime": 1,
        },
        {"type": "input", "callId": "c1", "point": {"x": 400, "y": 300}},
        {"type": "after", "callId": "c1", "endTime": 12, "log": ["waiting for selector"]},
    )
    for data in (v3, v4):
        arc = tmp_path / "t.zip"
        arc.write_bytes(zip_of({"trace.trace": data + b"\n{torn", "resources/aa11": frame}))
        z = ZipImages(arc)
        trace = read_trace(z)
        (call,) = trace.calls
        assert (call.method, call.page, call.point) == ("click", "p1", (400.0, 300.0))
        assert trace.frame_before("p1", call.start).member == "aa11"
        assert trace.refused == {DropReason.MALFORMED_JSON: 1}  # the torn line, counted
        z.close()


def test_downscaled_frames_rescale_points(tmp_path):
    """Playwright fits frames into 800 px and declares the CSS size they show: a CSS point is
    scaled onto the smaller JPEG. Internal calls are not counted; unconverted user calls are."""
    frame = page_bytes(800, 500)
    trace = lines(
        {"type": "context-options", "version": 5, "options": {"viewport": {"width": 1600, "height": 1000}}},
        {
            "type": "screencast-frame",
            "pageId": "p1",
            "sha1": "f1",
            "width": 1600,
            "height": 1000,
            "timestamp": 1,
        },
        {
            "type": "before",
            "callId": "c1",
            "startTime": 10,
            "class": "Frame",
            "method": "click",
            "params": {},
            "pageId": "p1",
        },
        {"type": "input", "callId": "c1", "point": {"x": 400, "y": 300}},
        {"type": "after", "callId": "c1", "endTime": 11},
        {
            "type": "before",
            "callId": "c2",
            "startTime": 20,
            "class": "Frame",
            "method": "evaluateExpression",
            "params": {},
            "pageId": "p1",
        },
        {"type": "after", "callId": "c2", "endTime": 21},
        {
            "type": "before",
            "callId": "c3",
            "startTime": 30,
            "class": "Frame",
            "method": "click",
            "params": {},
            "pageId": "p1",
        },
        {"type": "after", "callId": "c3", "endTime": 31, "error": {"error": {"message": "Timeout 30000ms"}}},
        {
            "type": "before",
            "callId": "c4",
            "startTime": 40,
            "class": "Frame",
            "method": "focus",
            "params": {"selector": "#q"},
            "pageId": "p1",
        },
        {"type": "after", "callId": "c4", "endTime": 41},
    )
    mirror = mirror_with(tmp_path, {"7.zip": zip_of({"trace.trace": trace, "resources/f1": frame})}, [7])
    (ep,), stats = run(mirror, tmp_path)
    (step,) = ep.steps
    assert step.params[:2] == pytest.approx((0.25, 0.3)) and step.mask == POINT_MASK
    assert (step.observation.width, step.observation.height) == (800, 500)
    assert stats.drops == {"failed_call": 1}
    assert stats.ignored_calls == {"Frame.focus": 1} and json.loads(ep.attrs["ignored_calls"]) == {
        "Frame.focus": 1
    }


# --- the adapter on the demo's real traces -----------------------------------------------


def test_one_step_per_user_action_in_order(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    ep = eps[0]
    assert (ep.episode_id, ep.instruction, ep.attrs["intent_template_id"]) == (
        "webarena/274",
        'Search for "usb wifi"',
        "212",
    )
    assert [(s.action_type.name, s.text) for s in ep.steps] == [
        ("CLICK", ""),
        ("TYPE", "usb wifi"),
        ("PRESS_ENTER", "Enter"),
        ("SELECT", "Price"),
        ("HOVER", ""),
        ("HOVER", ""),
        ("SCROLL", ""),
        ("CLICK", ""),
        ("SCROLL", ""),
        ("CLICK", ""),
        ("CLICK", ""),
        ("PRESS_KEY", "Escape"),
    ]
    assert ep.steps[10].desc.startswith("double_click(")
    assert [s.desc for s in ep.steps if s.action_type == ActionType.SCROLL] == ["scroll(down)", "scroll(up)"]
    assert ep.steps[6].params[:2] == pytest.approx(ep.steps[5].params[:2])  # the wheel turns at the pointer
    assert not ep.success and ep.attrs["success"] == "unknown"
    assert stats.drops == {"no_frame": 2, "task_not_in_config": 1, "truncated_archive": 1}
    assert stats.ignored_calls == {} and ep.attrs["ignored_calls"] == "{}"  # waits and new pages: internal


def test_every_grounded_point_is_on_its_element_in_the_frame(demo_mirror, tmp_path):
    """The trace records each target's box (CSS px): the step's point, on its frame, lies inside it."""
    info = build_directory(WEBARENA, "human", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    assert info.extra["heldout_ids"] == {"task_ids": [274, 275], "intent_template_ids": [212]}
    eps, _ = run(demo_mirror, tmp_path)
    checked = 0
    for ep in eps:
        archive, trace = open_trace(DEMO / f"{ep.attrs['task_id']}.zip")
        archive.close()
        calls = {c.call_id: c for c in trace.calls}
        for s in ep.steps:
            call = calls[s.ref.member.split("#", 1)[1]]
            if not s.grounded or s.action_type == ActionType.SCROLL or call.box is None:
                continue
            vw, vh = trace.css_size(trace.frame_before(call.page, call.start), call)
            fx, fy = s.observation.width / vw, s.observation.height / vh
            x, y = s.params[0] * s.observation.width, s.params[1] * s.observation.height
            bx, by, bw, bh = call.box
            assert bx * fx <= x <= (bx + bw) * fx and by * fy <= y <= (by + bh) * fy, (ep.episode_id, s.desc)
            checked += 1
    assert checked >= 12


def test_hub_mode_is_refused_with_where_the_traces_are():
    with pytest.raises(RawInputError, match="webarena cannot be fetched with GUI_ASSETS_SOURCE=hub"):
        build_directory(WEBARENA, "human", Path("/nonexistent"), RawSettings(mode="hub", mirror=Path()))


def test_a_missing_config_fails_the_partition_by_name(tmp_path):
    repo = tmp_path / "m" / webarena.REPO_ID / "human_trajectories"
    repo.mkdir(parents=True)
    shutil.copy(DEMO / "274.zip", repo / "274.zip")
    with pytest.raises(RawInputError, match=r"config_files/test\.raw\.json: missing"):
        run(tmp_path / "m", tmp_path)


# --- traces recorded here, now ----------------------------------------------------------


@needs_chromium
def test_a_trace_recorded_now_with_chromium(tmp_path):
    def session(page, context, base):
        page.goto(base + "index.html")
        page.wait_for_timeout(400)
        page.fill("#q", "hunter2-secret")  # typed values are data: they land in action_text only
        page.wait_for_timeout(400)
        page.click("#go")
        page.wait_for_timeout(400)
        page.mouse.move(300, 300)
        page.mouse.wheel(0, 500)
        page.wait_for_timeout(400)
        page.go_back()
        page.wait_for_timeout(400)

    trace_recorder.record(tmp_path / "9.zip", session)
    mirror = mirror_with(tmp_path, {"9.zip": (tmp_path / "9.zip").read_bytes()}, [9])
    (ep,), stats = run(mirror, tmp_path)
    steps = [(s.action_type.name, s.text) for s in ep.steps]
    # The first goto acts on about:blank: a step when chromium painted a frame of it before the
    # call (it does under load), else dropped for having no frame. Either is the recording.
    blank_goto = steps[0][0] == "GOTO"
    assert steps[blank_goto:] == [
        ("TYPE", "hunter2-secret"),
        ("CLICK", ""),
        ("HOVER", ""),
        ("SCROLL", ""),
        ("PRESS_BACK", ""),
    ]
    scroll, hover = ep.steps[3 + blank_goto], ep.steps[2 + blank_goto]
    assert scroll.desc == "scroll(down)" and scroll.params[:2] == pytest.approx(hover.params[:2])
    assert stats.drops == ({} if blank_goto else {"no_frame": 1})
