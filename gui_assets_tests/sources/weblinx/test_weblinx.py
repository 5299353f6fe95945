"""The WebLINX adapter: every intent, zoom, a viewport change, chat turns, both zip layouts."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, GuiEpisode
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.weblinx import adapter as weblinx
from gui_assets.sources.weblinx.demo import _browser, _chat
from gui_assets.sources.weblinx.source import SPEC as WEBLINX
from gui_assets_tests.conftest import page_bytes, run_adapter

REPO = weblinx.REPO_ID
SAMPLE_SPLITS = Path(__file__).resolve().parents[2] / "samples" / "weblinx" / "splits.json"


def write_demo(
    root: Path,
    demo_id: str,
    turns: list[dict],
    split: str = "valid",
    prefix: str = "",
    sizes: dict[str, tuple[int, int]] | None = None,
) -> Path:
    repo = root / REPO
    (repo / "demonstrations").mkdir(parents=True, exist_ok=True)
    splits_path = repo / "splits.json"
    splits = json.loads(splits_path.read_text()) if splits_path.exists() else {}
    splits.setdefault(split, []).append(demo_id)
    splits_path.write_text(json.dumps(splits))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(prefix + "replay.json", json.dumps({"data": turns}))
        for t in turns:
            shot = (t.get("state") or {}).get("screenshot")
            if shot:
                w, h = (sizes or {}).get(shot, (1280, 720))
                z.writestr(f"{prefix}screenshots/{shot}", page_bytes(w, h))
    (repo / "demonstrations" / f"{demo_id}.zip").write_bytes(buf.getvalue())
    return root


def run(root: Path, tmp: Path, split: str = "valid") -> tuple[list[GuiEpisode], BuildStats]:
    return run_adapter(WEBLINX, root, split, tmp)


def test_the_real_splits_file_names_train_and_valid():
    assert len(weblinx.demo_ids(SAMPLE_SPLITS.parent, "train")) == 969
    assert weblinx.demo_ids(SAMPLE_SPLITS.parent, "valid")[:2] == ["ygprzve", "saabwsg"]
    pats = weblinx.resolve_patterns(SAMPLE_SPLITS.parent, "valid")
    assert pats[:2] == ["ygprzve.zip", "*/ygprzve.zip"] and len(pats) == 200


def test_every_intent_of_the_demo_in_order(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    ep = eps[0]
    assert ep.episode_id == "weblinx/demoval"
    assert ep.instruction == "Find the cheapest flight to Paris next week\nEconomy class only"
    got = [(s.action_type.name, s.text) for s in ep.steps]
    assert got == [
        ("GOTO", "https://travel.example.com/"),
        ("CLICK", ""),
        ("TYPE", "Paris"),
        ("SCROLL", ""),
        ("SELECT", "Economy"),
        ("PRESS_ENTER", "enter"),
        ("HOVER", ""),
        ("SCROLL", ""),
        ("PRESS_KEY", "ctrl+t"),
        ("PRESS_KEY", "ctrl+tab"),
        ("PRESS_KEY", "ctrl+c"),
        ("PRESS_KEY", "ctrl+v"),
        ("TYPE", "cheapest"),
        ("PRESS_KEY", "ctrl+w"),
        ("CLICK", ""),
    ]
    assert [s.desc for s in ep.steps if s.action_type == ActionType.SCROLL] == ["scroll(down)", "scroll(up)"]
    assert ep.steps[10].desc == 'copy("€ 79")' and ep.steps[9].desc == 'tabswitch("1 -> 2")'
    assert stats.drops == {"broken_screenshot": 1, "missing_screenshot": 1, "unknown_action_verb": 1}


def test_zoom_scales_css_px_onto_device_px_screenshots(demo_mirror, tmp_path):
    (ep, _), _ = run(demo_mirror, tmp_path)
    click = ep.steps[1]  # box (300, 120, 160, 40) CSS at zoom 1.25 on a 1280x750 frame
    assert (click.observation.width, click.observation.height) == (1280, 750)
    assert click.params[:2] == pytest.approx(((300 + 80) * 1.25 / 1280, (120 + 20) * 1.25 / 750))
    scroll = ep.steps[3]  # mouse (500, 300), scrollY 0 -> 450: the content travels 450 * 1.25 px up,
    assert scroll.mask == SPAN_MASK  # more than the 375 px above the mouse: clipped at the top edge
    assert scroll.params == pytest.approx((500 * 1.25 / 1280, 0.5, 500 * 1.25 / 1280, 0.0))
    back = ep.steps[7]  # scrollY 450 -> 150: the view moves up 300 CSS px, the content down 375 px
    assert back.params == pytest.approx((500 * 1.25 / 1280, 0.5, 500 * 1.25 / 1280, 0.5 + 300 * 1.25 / 750))
    assert ep.steps[4].scroll == (0.0, 450.0) and ep.steps[8].scroll == (0.0, 150.0)


def test_a_viewport_that_changes_midway_is_measured_per_turn(demo_mirror, tmp_path):
    (ep, _), _ = run(demo_mirror, tmp_path)
    typed = ep.steps[12]  # viewport 900x560 at zoom 1.25: a 1125x700 frame
    assert (typed.observation.width, typed.observation.height) == (1125, 700)
    assert typed.params[:2] == pytest.approx((250 * 1.25 / 1125, 78 * 1.25 / 700))


def test_points_land_on_their_elements_in_the_built_shards(demo_mirror, tmp_path):
    """The demo draws each element where its box says: the pixel under a point is not page."""
    build_directory(WEBLINX, "valid", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    checked = 0
    for shard in sorted((tmp_path / "weblinx_valid").glob("weblinx_valid_0*.hdf5")):  # a shard per frame size
        checked += _points_on_elements(shard)
    assert checked >= 8


def _points_on_elements(shard: Path) -> int:
    checked = 0
    with h5py.File(shard) as f:
        for name in f["data"]:
            d = f["data"][name]
            av, prm, mask, types = (
                d["obs/agentview_rgb"],
                d["action_params"][:],
                d["action_mask"][:],
                d["action_type"][:],
            )
            h, w = av.shape[1:3]
            for t in np.flatnonzero(mask[:, 0] == 1):
                if types[t] == ActionType.SCROLL:
                    continue
                x, y = int(prm[t, 0] * (w - 1)), int(prm[t, 1] * (h - 1))
                patch = av[t, max(0, y - 3) : y + 4, max(0, x - 3) : x + 4].reshape(-1, 3).astype(int)
                assert (np.abs(patch - [250, 250, 252]).sum(axis=1) > 6).any(), (shard.name, name, t)
                checked += 1
    return checked


def test_zip_entries_under_the_demo_folder_and_at_the_root(tmp_path):
    turns = [
        _chat("instructor", "go", 0),
        _browser("click", "screenshot-0-0.png", vw=1280, vh=720, box=(10, 10, 100, 40)),
    ]
    write_demo(tmp_path, "rootdem", turns)
    write_demo(tmp_path, "pfxdemo", turns, prefix="pfxdemo/")
    eps, _ = run(tmp_path, tmp_path)
    assert [e.episode_id for e in eps] == ["weblinx/rootdem", "weblinx/pfxdemo"]
    assert all(e.steps[0].mask == POINT_MASK for e in eps)


def test_mouse_only_points_text_under_value_and_element_outside_the_frame(tmp_path):
    turns = [
        _browser("click", "s0.png", vw=1000, vh=500, mouse=(250, 125)),  # no element: the mouse
        _browser(
            "textInput", "s1.png", vw=1000, vh=500, args={"value": "hi"}
        ),  # text under value, no element
        _browser("click", "s2.png", vw=1000, vh=500, box=(1200, 10, 50, 20)),  # right of the viewport
        _browser("hover", "s3.png", vw=1000, vh=500),  # no element, no mouse
        _browser("scroll", "s4.png", vw=1000, vh=500, args={"scrollY": 0}),  # nothing moved
        _browser("load", "s5.png", vw=1000, vh=500),  # no url
    ]
    write_demo(tmp_path, "edgesdm", turns, sizes={f"s{i}.png": (1000, 500) for i in range(6)})
    (ep,), stats = run(tmp_path, tmp_path)
    click, typed, outside, hover = ep.steps
    assert click.params[:2] == pytest.approx((0.25, 0.25)) and click.mask == POINT_MASK
    assert (typed.text, typed.mask) == ("hi", NO_MASK)
    assert (outside.mask, outside.ungrounded_reason) == (NO_MASK, "outside_screenshot")
    assert (hover.mask, hover.ungrounded_reason) == (NO_MASK, "no_candidate")
    assert stats.drops == {"empty_scroll": 1, "malformed_step": 1}


def test_a_bad_replay_or_archive_drops_the_demo_by_reason(tmp_path):
    write_demo(tmp_path, "goodone", [_browser("click", "a.png", vw=1280, vh=720, box=(1, 1, 9, 9))])
    repo = tmp_path / REPO
    (repo / "demonstrations" / "notzip.zip").write_bytes(b"PK\x03\x04 garbage")
    with zipfile.ZipFile(repo / "demonstrations" / "badjson.zip", "w") as z:
        z.writestr("replay.json", "{not json")
    splits = json.loads((repo / "splits.json").read_text())
    splits["valid"] += ["notzip", "badjson", "absent"]
    (repo / "splits.json").write_text(json.dumps(splits))
    eps, stats = run(tmp_path, tmp_path)
    assert [e.episode_id for e in eps] == ["weblinx/goodone"]
    assert stats.drops == {"truncated_archive": 1, "malformed_json": 1, "missing_demo_archive": 1}


def test_a_split_missing_from_splits_json_fails_by_name(tmp_path):
    write_demo(tmp_path, "onlytrn", [], split="train")
    with pytest.raises(RawInputError, match=r"splits\.json: no split 'valid'"):
        run(tmp_path, tmp_path)


def test_hub_mode_fetches_splits_json_then_only_the_splits_demos(demo_mirror, tmp_path):
    from gui_assets_tests.hub_server import LocalHub

    with LocalHub(demo_mirror) as hub:
        settings = RawSettings(mode="hub", mirror=Path(), endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        info = build_directory(WEBLINX, "valid", tmp_path / "out", settings)
        got = sorted(
            {
                r.path.rsplit("/", 1)[-1]
                for r in hub.state.requests
                if r.method == "GET" and "/resolve/" in r.path
            }
        )
    assert got == ["demoval.zip", "demozzz.zip", "splits.json"]  # not train's or test_iid's demos
    assert info.build["upstream"]["revision"] == hub.state.commit and info.stats["episodes_out"] == 2


# --- turn types and hostile numbers --------------------------------------------------------


def one_demo(
    tmp_path: Path, turns: list[dict], demo_id: str = "hostile"
) -> tuple[GuiEpisode | None, BuildStats]:
    root = write_demo(
        tmp_path / "m",
        demo_id,
        turns,
        sizes={t["state"]["screenshot"]: (1000, 500) for t in turns if t.get("state")},
    )
    eps, stats = run(root, tmp_path)
    return (eps[0] if eps else None), stats


def click(shot: str = "s0.png", **kw: Any) -> dict:
    kw.setdefault("box", (100, 100, 50, 20))
    return _browser("click", shot, vw=kw.pop("vw", 1000), vh=kw.pop("vh", 500), **kw)


def test_a_turn_whose_type_was_deleted_is_counted_not_lost(tmp_path):
    """The known case: deleting `type` from a replay turn lost that turn silently."""
    untyped = click("s1.png")
    del untyped["type"]
    ep, stats = one_demo(tmp_path, [_chat("instructor", "go", 0), click("s0.png"), untyped, click("s2.png")])
    assert len(ep.steps) == 2 and stats.drops == {"unknown_turn_type": 1}


@pytest.mark.parametrize(
    ("kind", "drops"),
    [
        ("extension", {}),
        ("popup", {"unknown_turn_type": 1}),
        (None, {"unknown_turn_type": 1}),
        (3, {"unknown_turn_type": 1}),
    ],
)
def test_turn_types_chat_browser_extension_and_the_rest(tmp_path, kind, drops):
    other = {"type": kind, "timestamp": 3, "event": "recording paused"}
    ep, stats = one_demo(tmp_path, [_chat("instructor", "go", 0), other, click()])
    assert len(ep.steps) == 1 and stats.drops == drops


@pytest.mark.parametrize(
    "turn",
    [
        {"type": "chat", "speaker": "narrator", "utterance": "hi", "timestamp": 1},
        {"type": "chat", "speaker": "instructor", "timestamp": 1},
        {"type": "chat", "speaker": "instructor", "utterance": 7, "timestamp": 1},
    ],
)
def test_a_chat_turn_of_no_known_speaker_or_without_text_is_counted(tmp_path, turn):
    ep, stats = one_demo(tmp_path, [_chat("instructor", "go", 0), turn, _chat("navigator", "ok", 2), click()])
    assert ep.instruction == "go" and stats.drops == {"malformed_step": 1}


HOSTILE = {
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "negative": -5,
    "huge": 10**400,
    "text": "wide",
}


def _set(turn: dict, path: str, value: Any) -> dict:
    *parents, key = path.split(".")
    node = turn["action"]["arguments"]
    for p in parents:
        node = node[p]
    node[key] = value
    return turn


@pytest.mark.parametrize(
    "value", [*HOSTILE.values(), 5e-324, 0.05], ids=[*HOSTILE.keys(), "denormal", "sliver"]
)
@pytest.mark.parametrize("field", ["metadata.viewportWidth", "metadata.viewportHeight", "metadata.zoomLevel"])
def test_viewport_and_zoom_must_be_positive_finite_and_sane(tmp_path, field, value):
    turn = click()
    if field.endswith("zoomLevel"):  # the zoom is read when the viewport is not recorded
        del turn["action"]["arguments"]["metadata"]["viewportWidth"]
    ep, stats = one_demo(tmp_path, [_set(turn, field, value), click("s1.png")])
    assert len(ep.steps) == 1 and stats.drops == {"malformed_step": 1}


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("field", ["metadata.mouseX", "metadata.mouseY", "scrollY", "scrollX"])
def test_mouse_and_scroll_offsets_must_be_finite_and_within_a_page(tmp_path, field, value):
    if field.startswith("scroll"):
        turn = _browser(
            "scroll", "s0.png", vw=1000, vh=500, mouse=(500, 250), args={"scrollX": 0, "scrollY": 300}
        )
    else:
        turn = _browser("click", "s0.png", vw=1000, vh=500, mouse=(500, 250))  # no box: the mouse locates it
    ep, stats = one_demo(tmp_path, [_set(turn, field, value), click("s1.png")])
    if value == -5:  # a real number: a pointer left of the page, a scroll offset (RTL pages go negative)
        assert len(ep.steps) == 2 and not stats.drops
        if field.startswith("metadata"):
            assert ep.steps[0].ungrounded_reason == "outside_screenshot"
    else:
        assert len(ep.steps) == 1 and stats.drops == {"malformed_step": 1}


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, 10**400, "wide"], ids=["nan", "inf", "-inf", "huge", "text"]
)
@pytest.mark.parametrize("field", ["left", "top", "width", "height"])
def test_a_box_with_a_bad_number_falls_back_to_the_mouse_else_is_ungrounded(tmp_path, field, value):
    with_mouse = click(mouse=(250, 125))
    without = click("s1.png")
    for turn in (with_mouse, without):
        _set(turn, f"element.bbox.{field}", value)
        if field in ("left", "top"):
            _set(turn, f"element.bbox.{'x' if field == 'left' else 'y'}", value)
    ep, stats = one_demo(tmp_path, [with_mouse, without])
    assert not stats.drops
    assert ep.steps[0].params[:2] == pytest.approx((0.25, 0.25)) and ep.steps[0].mask == POINT_MASK
    assert (ep.steps[1].mask, ep.steps[1].ungrounded_reason) == (NO_MASK, "malformed_bbox")


def test_a_replay_nested_past_the_recursion_limit_is_malformed_json(tmp_path):
    root = write_demo(tmp_path / "m", "deepone", [click()])
    with zipfile.ZipFile(root / REPO / "demonstrations" / "deepone.zip", "w") as z:
        z.writestr("replay.json", '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    eps, stats = run(root, tmp_path)
    assert not eps and stats.drops == {"malformed_json": 1}


def test_a_zero_viewport_is_not_recorded_and_the_zoom_scales_instead(tmp_path):
    turn = _set(
        _set(click(box=(100, 100, 50, 20), zoom=2.0), "metadata.viewportWidth", 0),
        "metadata.viewportHeight",
        "0",
    )
    ep, stats = one_demo(tmp_path, [turn])
    assert ep.steps[0].params[:2] == pytest.approx((125 * 2 / 1000, 110 * 2 / 500)) and not stats.drops
