"""The Mind2Web adapter on small real-format parquet inputs, one edge case per test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, GuiEpisode, view_direction
from gui_assets.core.stats import BuildStats
from gui_assets.sources.mind2web import adapter as mind2web
from gui_assets.sources.mind2web.adapter import Target, expand_action, locate_target, parse_bbox, parse_index
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.mirror import RawInputError
from gui_assets_tests.conftest import REPO, candidate, m2w_row, page_bytes, run_adapter

CFG = MIND2WEB.resolve_config(BuildConfig())  # expand_action reads Mind2Web's options


def run(mirror: Path, tmp_path: Path, split: str = "train") -> tuple[list[GuiEpisode], BuildStats]:
    return run_adapter(MIND2WEB, mirror, split, tmp_path)


# --- grouping and ordering ---------------------------------------------------------------


def test_rows_group_by_annotation_and_order_by_int_index_across_files(write_m2w, tmp_path):
    """Indices are strings: "10" sorts after "9", and a task's rows may sit in two files.
    Episodes come in upstream order (where each task's first row is), not by id: a file
    appended upstream then adds episodes after every earlier one."""
    shot = page_bytes()
    f0 = [
        m2w_row("b", "10", screenshot=shot),
        m2w_row("a", "1", screenshot=shot),
        m2w_row("b", "9", screenshot=shot),
    ]
    f1 = [m2w_row("a", "0", screenshot=shot), m2w_row("b", "2", screenshot=shot)]
    eps, stats = run(write_m2w([f0, f1]), tmp_path)
    assert [e.episode_id for e in eps] == ["mind2web/b", "mind2web/a"]
    b = eps[0]
    assert json.loads(b.attrs["recorded_action_indices"]) == [2, 9, 10]
    rows = [(s.ref.file.split("-")[1], s.ref.row) for s in b.steps]
    assert rows == [("00001", 1), ("00000", 2), ("00000", 0)]
    assert stats.files_in == 2 and stats.episodes_in == 2


@pytest.mark.parametrize(("value", "want"), [("0", 0), ("12", 12), (3, 3), (["4"], 4), (7.0, 7)])
def test_parse_index_accepts_every_shape_the_card_history_had(value, want):
    assert parse_index(value) == want


@pytest.mark.parametrize("value", [None, "x", "-1", ["1", "2"], [], True, 1.5])
def test_parse_index_rejects_garbage(value):
    with pytest.raises((ValueError, TypeError)):
        parse_index(value)


def test_episode_attrs_and_lineage(write_m2w, tmp_path):
    eps, _ = run(write_m2w([[m2w_row("t1", "0", task="Book a flight")]]), tmp_path)
    ep = eps[0]
    assert ep.instruction == "Book a flight"
    assert ep.attrs["annotation_id"] == "t1" and ep.attrs["website"] == "site"
    ref = json.loads(ep.source_ref_json())
    assert ref["repo_id"] == REPO and "revision" not in ref  # the file's revision is in dataset_info
    assert ref["file"].startswith("data/train-") and ref["row"] == 0


# --- targets and masks -------------------------------------------------------------------


def test_click_point_is_box_centre_in_viewport_coordinates(write_m2w, tmp_path):
    eps, _ = run(write_m2w([[m2w_row(rect="100,200,300,40")]]), tmp_path)
    (step,) = eps[0].steps
    assert step.action_type == ActionType.CLICK and step.mask == POINT_MASK
    assert step.params[0] == pytest.approx(250 / 1280) and step.params[1] == pytest.approx(220 / 1080)
    assert step.desc == "click(0.20, 0.20)"


@pytest.mark.parametrize(
    ("cands", "reason"),
    [
        ([], "no_candidate"),
        ([candidate("-1,-1,-1,-1")], "hidden_element"),
        ([candidate("10,10,0,0")], "hidden_element"),
        ([candidate("a,b,c,d")], "malformed_bbox"),
        (["{not json"], "malformed_bbox"),
        ([candidate("1300,100,50,20")], "outside_viewport_x"),
        ([candidate("100,5000,50,20")], "outside_screenshot"),
    ],
)
def test_unlocatable_targets_keep_type_with_zero_mask(write_m2w, tmp_path, cands, reason):
    eps, stats = run(write_m2w([[m2w_row(op="TYPE", value="hi", pos_candidates=cands)]]), tmp_path)
    (step,) = eps[0].steps
    assert step.action_type == ActionType.TYPE and step.text == "hi"
    assert step.mask == NO_MASK and step.params == (0.0, 0.0, 0.0, 0.0)
    assert step.ungrounded_reason == reason
    assert stats.ungrounded_steps == 1 and stats.ungrounded_by_reason == {reason: 1}


def test_original_target_preferred_and_hidden_candidates_skipped():
    cands = [
        candidate("-1,-1,-1,-1"),
        candidate("0,0,100,100", original=False),
        candidate("200,300,100,100", original=True),
    ]
    assert locate_target(cands, 1280, 1080, 1280) == Target(250, 350)
    assert locate_target(cands[:2], 1280, 1080, 1280) == Target(50, 50)


def test_wide_box_is_clipped_to_the_viewport_and_page():
    # An element spanning far right of the viewport: click the centre of its visible part.
    assert locate_target([candidate("1000,100,5000,40")], 6000, 1080, 1280) == Target(1140, 120)
    assert locate_target([candidate("-50,-10,100,40")], 1280, 1080, 1280) == Target(25, 15)


def test_parse_bbox():
    assert parse_bbox("283.1875,220.390625,93.59375,33") == (283.1875, 220.390625, 93.59375, 33.0)
    assert parse_bbox("-1,-1,-1,-1") is None
    for bad in ("1,2,3", "nan,1,2,3", "", "1,2,inf,4"):
        with pytest.raises(ValueError):
            parse_bbox(bad)


def test_select_and_type_carry_their_value_click_does_not(write_m2w, tmp_path):
    rows = [
        m2w_row(index=0, op="TYPE", value="Brooklyn"),
        m2w_row(index=1, op="SELECT", value="April 9"),
        m2w_row(index=2, op="CLICK", value="ignored"),
    ]
    eps, _ = run(write_m2w([rows]), tmp_path)
    assert [(s.action_type.name, s.text) for s in eps[0].steps] == [
        ("TYPE", "Brooklyn"),
        ("SELECT", "April 9"),
        ("CLICK", ""),
    ]
    assert eps[0].steps[0].desc == 'type(0.16, 0.12, "Brooklyn")'


def test_original_op_hover_and_enter_are_not_folded_into_click(write_m2w, tmp_path):
    rows = [
        m2w_row(index=0, op="CLICK", original_op="HOVER"),
        m2w_row(index=1, op="CLICK", original_op="ENTER"),
    ]
    eps, _ = run(write_m2w([rows]), tmp_path)
    hover, enter = eps[0].steps
    assert hover.action_type == ActionType.HOVER and hover.mask == POINT_MASK
    assert enter.action_type == ActionType.PRESS_ENTER and enter.mask == NO_MASK and enter.text == "Enter"
    assert enter.ungrounded_reason == ""  # a key press has no coordinates to lose


# --- below the fold ----------------------------------------------------------------------


def test_target_below_the_fold_is_reached_by_scroll_steps(write_m2w, tmp_path):
    eps, stats = run(write_m2w([[m2w_row(rect="300,2000,200,50", page=(1280, 3000))]]), tmp_path)
    steps = eps[0].steps
    assert [s.action_type.name for s in steps] == ["SCROLL", "SCROLL", "CLICK"]
    offsets = [s.observation.top for s in steps]
    assert offsets == [0, 810, 1620]
    for s in steps[:2]:
        assert s.mask == SPAN_MASK and s.desc == "scroll(down)" and view_direction(s.params) == "down"
        # a wheel at the pointer (the screen centre at step 0): the content travels up by the
        # 0.75 of a viewport the view moved down, clipped at the frame's top edge
        assert s.params == pytest.approx((0.5, 0.5, 0.5, 0.0))
    click = steps[-1]
    cy_in_view = 2025 - 1620
    assert click.params[1] == pytest.approx(cy_in_view / 1080)
    assert all(s.observation.height == 1080 and s.observation.width == 1280 for s in steps)
    assert [s.scroll for s in steps] == [(0.0, 0.0), (0.0, 810.0), (0.0, 1620.0)]
    assert stats.scroll_histogram == {"down": {"0.25-0.50": 2}}


def test_the_wheel_turns_where_the_last_click_left_the_pointer_and_leaves_it_there(write_m2w, tmp_path):
    rows = [
        m2w_row(index=0, rect="600,900,100,40"),  # click at (650, 920): pointer y 0.85
        m2w_row(index=1, rect="600,1500,100,40", page=(1280, 2000)),
    ]
    eps, _ = run(write_m2w([rows]), tmp_path)
    click0, scroll, click1 = eps[0].steps
    assert scroll.action_type == ActionType.SCROLL
    assert scroll.params[:2] == pytest.approx(click0.params[:2])  # starts at the pointer
    assert scroll.params[1] - scroll.params[3] == pytest.approx(810 / 1080)  # unclipped: exact travel
    assert click1.observation.top == 810


def test_repeated_clicks_on_one_element_below_the_fold_keep_it_in_the_eye_window(write_m2w, tmp_path):
    """The pointer stays on the element across the wheel steps, so the crop shows the target:
    the leak the alignment check is there to catch, below the fold as above it."""
    from gui_assets.core.cursor import causal_cursor, eye_rect, eye_window, inside

    rows = [m2w_row(index=i, rect="100,1900,100,40", page=(1280, 2500)) for i in range(4)]
    eps, _ = run(write_m2w([rows]), tmp_path)
    steps = eps[0].steps
    clicks = [
        (s, c) for s, c in zip(steps, causal_cursor(steps), strict=True) if s.action_type == ActionType.CLICK
    ]
    hits = [inside(s.params[:2], eye_rect(*eye_window(c, 1280, 1080), 1280, 1080)) for s, c in clicks]
    assert hits == [False, True, True, True]


def test_scroll_clamps_at_the_page_bottom(write_m2w, tmp_path):
    eps, _ = run(write_m2w([[m2w_row(rect="300,1440,200,50", page=(1280, 1500))]]), tmp_path)
    scroll, click = eps[0].steps
    assert click.observation.top == 420  # page_h - viewport_h, not a full 810 px step
    assert scroll.params[1] - scroll.params[3] == pytest.approx(420 / 1080)
    assert click.params[1] == pytest.approx((1465 - 420) / 1080)


def test_target_in_first_viewport_needs_no_scroll_and_ungrounded_never_scrolls(write_m2w, tmp_path):
    rows = [
        m2w_row(index=0, rect="10,1000,20,20", page=(1280, 4000)),
        m2w_row(index=1, pos_candidates=[], page=(1280, 4000)),
    ]
    eps, _ = run(write_m2w([rows]), tmp_path)
    assert [s.action_type.name for s in eps[0].steps] == ["CLICK", "CLICK"]
    assert all(s.observation.top == 0 for s in eps[0].steps)


def test_every_recorded_action_starts_at_offset_zero(write_m2w, tmp_path):
    rows = [
        m2w_row(index=0, rect="10,2500,20,20", page=(1280, 3000)),
        m2w_row(index=1, rect="10,2500,20,20", page=(1280, 3000)),
    ]
    eps, _ = run(write_m2w([rows]), tmp_path)
    tops = [s.observation.top for s in eps[0].steps]
    assert tops[0] == 0 and tops[len(tops) // 2] == 0 and tops.count(0) == 2


def test_short_and_wide_pages_use_the_real_viewport():
    """A page 700 px tall is seen in the whole 1280x1080 viewport (the writer fills below it)."""
    row = mind2web._Row(
        0,
        ActionType.CLICK,
        "",
        Target(50, 50),
        "s" * 64,
        "png",
        1600,
        700,
        mind2web.SourceRef(REPO, "f"),
    )
    (step,) = expand_action(row, CFG, (0.5, 0.5))
    o = step.observation
    assert (o.left, o.top, o.width, o.height) == (0, 0, 1280, 1080)
    assert step.params[:2] == pytest.approx((50 / 1280, 50 / 1080))


# --- drops -------------------------------------------------------------------------------


def test_bad_rows_are_dropped_by_named_reason_and_good_rows_kept(write_m2w, tmp_path):
    shot = page_bytes()
    rows = [
        m2w_row("t", "0", screenshot=shot),
        m2w_row("t", "1", screenshot=b""),  # null screenshot
        m2w_row("t", "2", screenshot=b"\x89PNG\r\n\x1a\n" + b"\0" * 40),  # PNG magic, broken body
        m2w_row("t", "3", screenshot=b"GIF89a" + b"\0" * 40),  # not a screenshot format we decode
        m2w_row("t", "4", operation='{"op": "CLI'),  # operation JSON cut short
        m2w_row("t", "5", op="SCROLL", screenshot=shot),  # not a Mind2Web verb
        m2w_row("t", "6", screenshot=shot),
        m2w_row("t", "6", screenshot=shot),  # the same step twice
        m2w_row("t", "x", screenshot=shot),  # index that is no integer
        m2w_row("", "7", screenshot=shot),  # no annotation id
        m2w_row("gone", "0", screenshot=b""),  # every row of this task dropped
    ]
    eps, stats = run(write_m2w([rows]), tmp_path)
    assert [e.episode_id for e in eps] == ["mind2web/t"]
    assert len(eps[0].steps) == 2
    assert dict(stats.drops) == {
        "missing_screenshot": 2,
        "undecodable_image": 1,
        "unsupported_image_format": 1,
        "malformed_step": 3,  # the cut operation JSON, the non-integer index, the missing id
        "unknown_action_verb": 1,
        "duplicate_step": 1,
        "empty_episode": 1,
    }
    assert stats.episodes_in == 2


def test_jpeg_screenshots_are_stored_as_their_original_bytes(write_m2w, tmp_path):
    shot = page_bytes(fmt="jpg")
    eps, _ = run(write_m2w([[m2w_row(screenshot=shot)]]), tmp_path)
    o = eps[0].steps[0].observation
    assert o.image_ext == "jpg"
    assert ImageStore(tmp_path / "images").get(o.image_sha256, "jpg") == shot


def test_unreadable_parquet_fails_naming_the_file(write_m2w, tmp_path):
    mirror = write_m2w([[m2w_row()]])
    bad = mirror / REPO / "data" / "train-00001-of-00002-ffff.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(RawInputError, match=r"train-00001-of-00002-ffff\.parquet"):
        run(mirror, tmp_path)


def test_parquet_without_required_columns_fails_naming_the_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "mirror" / REPO / "data"
    data.mkdir(parents=True)
    pq.write_table(pa.table({"annotation_id": ["a"]}), data / "train-00000-of-00001-x.parquet")
    with pytest.raises(RawInputError, match=r"train-00000-of-00001-x.parquet: missing columns"):
        run(tmp_path / "mirror", tmp_path)


@pytest.mark.parametrize("folder", ["default/test_task", "default/partial-test_task"])
def test_refs_convert_parquet_layout_is_read_too(tmp_path, folder):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gui_assets.sources.mind2web.demo import SCHEMA

    d = tmp_path / "mirror" / REPO / folder
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([m2w_row()], schema=SCHEMA), d / "0000.parquet")
    (tmp_path / "mirror" / REPO / "default" / "train").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist([m2w_row("other")], schema=SCHEMA),
        tmp_path / "mirror" / REPO / "default" / "train" / "0000.parquet",
    )
    eps, _ = run(tmp_path / "mirror", tmp_path, split="test_task")
    assert len(eps) == 1 and eps[0].steps[0].ref.file == f"{folder}/0000.parquet"  # not train's file


# --- hostile numbers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        -5,
        10**30,
        1e300,
        "nan",
        "inf",
        "-inf",
        "1e400",
        "1" + "0" * 30,
        "9" * 5000,
    ],
)
def test_parse_index_refuses_nan_inf_negative_and_huge(value):
    with pytest.raises(ValueError):
        parse_index(value)


@pytest.mark.parametrize("index", ["nan", "inf", "-inf", "-5", "1" + "0" * 30, "100001"])
def test_a_row_with_an_unusable_index_is_malformed_and_its_task_kept(write_m2w, tmp_path, index):
    shot = page_bytes()
    rows = [m2w_row("t", "0", screenshot=shot), m2w_row("t", index, screenshot=shot)]
    (ep,), stats = run(write_m2w([rows]), tmp_path)
    assert len(ep.steps) == 1 and stats.drops == {"malformed_step": 1}


@pytest.mark.parametrize(
    ("rect", "reason"),
    [
        ("nan,100,200,50", "malformed_bbox"),
        ("100,inf,200,50", "malformed_bbox"),
        ("-inf,100,200,50", "malformed_bbox"),
        ("1e400,100,200,50", "malformed_bbox"),  # parses to infinity
        ("100,100,1e400,50", "malformed_bbox"),
        ("1e300,100,200,50", "outside_viewport_x"),  # finite: a box far right of the page
        ("100,1e300,200,50", "outside_screenshot"),
        ("1e308,1e308,1e308,1e308", "outside_screenshot"),  # x + w overflows to inf: still off the page
        ("100,100,-200,50", "hidden_element"),  # no positive size
    ],
)
def test_bounding_boxes_with_nan_inf_or_huge_values_are_ungrounded_by_name(rect, reason):
    target = locate_target([candidate(rect)], 1280, 4000, 1280)
    assert target.ungrounded == reason


def test_a_box_reaching_left_of_the_page_is_clipped_not_refused():
    target = locate_target([candidate("-100,100,300,50")], 1280, 4000, 1280)
    assert (target.x, target.y, target.ungrounded) == (100.0, 125.0, "")


def test_json_nested_past_the_recursion_limit_is_counted(write_m2w, tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    shot = page_bytes()
    rows = [
        m2w_row("t", "0", screenshot=shot, operation=deep),
        m2w_row("t", "1", screenshot=shot, pos_candidates=[deep]),
        m2w_row("t", "2", screenshot=shot),
    ]
    (ep,), stats = run(write_m2w([rows]), tmp_path)
    assert stats.drops == {"malformed_step": 1}
    assert [s.ungrounded_reason for s in ep.steps] == ["malformed_bbox", ""]


def test_interleaved_tasks_keep_the_attrs_of_their_first_kept_row(write_m2w, tmp_path):
    """Rows of two tasks alternate, and a task's first row drops: its attrs come from its first
    kept row, whatever rows of other tasks came between."""
    shot = page_bytes()
    f0 = [
        m2w_row("a", "0", task="first a", screenshot=b"not an image"),  # dropped: attrs not from it
        m2w_row("b", "0", task="first b", screenshot=shot),
        m2w_row("a", "1", task="kept a", screenshot=shot),
        m2w_row("b", "1", task="later b", screenshot=shot),
        m2w_row("a", "2", task="later a", screenshot=shot),
    ]
    eps, stats = run(write_m2w([f0]), tmp_path)
    assert {e.episode_id: e.instruction for e in eps} == {"mind2web/a": "kept a", "mind2web/b": "first b"}
    assert stats.drops == {"unsupported_image_format": 1}
