"""Pango: raw events aggregated into steps by rule, sessions apart, thoughts on their steps."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gui_assets.adapters import pango
from gui_assets.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType
from gui_assets.sources import PANGO
from gui_assets_tests.conftest import page_bytes, run_adapter


def run(mirror: Path, tmp: Path, **cfg):
    return run_adapter(PANGO, mirror, "sample", tmp, **cfg)


def mirror_of(tmp: Path, events: list[dict], **row) -> Path:
    repo = tmp / "m" / pango.REPO_ID
    (repo / "shots").mkdir(parents=True)
    (repo / "shots" / "a.png").write_bytes(page_bytes(1000, 500))
    for e in events:
        e.setdefault("screenshot_url", "shots/a.png")
    rec = {
        "id": "s1",
        "input_metadata": json.dumps({"actions": events}),
        "synthetically_generated_instruction": "do it",
        **row,
    }
    pq.write_table(pa.Table.from_pylist([rec]), repo / "rows.parquet")
    return tmp / "m"


def test_the_demo_sessions_aggregate_by_rule(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    assert [e.episode_id for e in eps] == [
        "pango/pango-demo-0",
        "pango/pango-demo-1",
        "pango/pango-demo-2/a",
        "pango/pango-demo-2/b",
    ]
    ep = eps[0]
    assert [(s.action_type.name, s.text) for s in ep.steps] == [
        ("CLICK", ""),
        ("TYPE", "Revenue"),
        ("PRESS_ENTER", "Enter"),
        ("PRESS_KEY", "ControlLeft+KeyC"),
        ("CLICK", ""),
        ("PRESS_KEY", "Escape"),
        ("CLICK", ""),
        ("TYPE", "12"),
        ("DRAG", ""),
        ("SCROLL", ""),
        ("CLICK", ""),
    ]
    assert ep.steps[4].desc.startswith("right_click(") and ep.steps[6].desc.startswith("double_click(")
    assert ep.steps[0].params[:2] == pytest.approx((420 / 1280, 176 / 800))
    assert ep.steps[0].thought.startswith("Label the first column") and ep.steps[3].thought.startswith("Copy")
    assert ep.instruction == "In Sheets, label the revenue column and fill it."
    assert ep.attrs["quest_type"] == "Sheets" and ep.attrs["profession"] == "Financial analyst"
    assert len(eps[3].steps) == 2  # session b: its own three events (an input run is one step), never mixed
    assert stats.drops == {
        r: 3
        for r in (
            "drag_without_coordinates",
            "missing_coordinates",
            "missing_screenshot",
            "mouseover",
            "unknown_action_verb",
            "unpaired_drag",
        )
    }


def test_input_metadata_inline_by_path_and_by_url_read_alike(demo_mirror, tmp_path):
    eps, _ = run(demo_mirror, tmp_path)
    shapes = [[(s.action_type, s.text) for s in e.steps] for e in eps[:2]]
    assert shapes[0] == shapes[1]  # row 0 inline, row 1 a repo path; rows 2 and 3 came from a URL
    assert eps[2].steps[0].action_type == ActionType.CLICK


def test_scroll_runs_sum_their_deltas_in_the_dom_convention(tmp_path):
    events = [
        {"type": "scroll", "x": 500.0, "y": 250.0, "delta_y": 100, "relative_timestamp_ms": 1},
        {"type": "scroll", "x": 500.0, "y": 250.0, "deltaY": 50, "relative_timestamp_ms": 2},
        {"type": "click", "x": 10.0, "y": 10.0, "relative_timestamp_ms": 3},
        {"type": "scroll", "x": 500.0, "y": 250.0, "deltaX": -300, "relative_timestamp_ms": 4},
    ]
    (ep,), _ = run(mirror_of(tmp_path, events), tmp_path)
    down, click, left = ep.steps
    assert down.desc == "scroll(down)" and down.params == pytest.approx((0.5, 0.5, 0.5, 0.2))  # 150 px of 500
    assert left.desc == "scroll(left)" and left.params == pytest.approx((0.5, 0.5, 0.8, 0.5))
    assert down.mask == left.mask == SPAN_MASK and click.mask == POINT_MASK


def test_mouseover_pairs_are_hover_steps_when_switched_on(tmp_path):
    events = [
        {"type": "mouseover_start", "x": 100.0, "y": 100.0, "relative_timestamp_ms": 1},
        {"type": "mouseover_end", "x": 120.0, "y": 100.0, "relative_timestamp_ms": 2},
    ]
    mirror = mirror_of(tmp_path, events)
    (ep,), _ = run(mirror, tmp_path, pango_hover=True)
    assert [(s.action_type, s.params[:2]) for s in ep.steps] == [
        (ActionType.HOVER, pytest.approx((0.1, 0.2)))
    ]
    eps, stats = run(mirror, tmp_path / "off")
    assert eps == [] and stats.drops == {"mouseover": 1, "empty_episode": 1}


def test_incremental_input_concatenates_and_key_press_and_chords(tmp_path):
    events = [
        {"type": "input", "input_data": "a", "relative_timestamp_ms": 1},
        {"type": "input", "input_data": "b", "relative_timestamp_ms": 2},
        {"type": "key_down", "key_code": "ShiftLeft", "relative_timestamp_ms": 3},
        {"type": "key_down", "key_code": "ControlLeft", "relative_timestamp_ms": 4},
        {"type": "key_down", "key_code": "KeyZ", "relative_timestamp_ms": 5},
        {"type": "key_up", "key_code": "KeyZ", "relative_timestamp_ms": 6},
        {"type": "key_up", "key_code": "ControlLeft", "relative_timestamp_ms": 7},
        {"type": "key_up", "key_code": "ShiftLeft", "relative_timestamp_ms": 8},
        {"type": "key_press", "key_code": "Tab", "relative_timestamp_ms": 9},
    ]
    (ep,), _ = run(mirror_of(tmp_path, events), tmp_path)
    assert [(s.action_type, s.text, s.mask) for s in ep.steps] == [
        (ActionType.TYPE, "ab", NO_MASK),
        (ActionType.PRESS_KEY, "ControlLeft+ShiftLeft+KeyZ", NO_MASK),
        (ActionType.PRESS_KEY, "Tab", NO_MASK),
    ]


def test_references_cannot_leave_the_repo(tmp_path):
    events = [
        {
            "type": "click",
            "x": 1.0,
            "y": 1.0,
            "screenshot_url": "../../etc/passwd",
            "relative_timestamp_ms": 1,
        }
    ]
    eps, stats = run(mirror_of(tmp_path, events), tmp_path)
    assert eps == [] and stats.drops == {"unsafe_screenshot_reference": 1, "empty_episode": 1}
