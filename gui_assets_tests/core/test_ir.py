"""IR invariants: the mask table, never an invented coordinate, descriptions."""

from __future__ import annotations

import pytest

from gui_assets.core.ir import (
    ACTION_TYPE_NAMES,
    NO_MASK,
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiStep,
    Observation,
    SourceRef,
    allowed_masks,
    describe,
    direction_scroll,
    step_builder,
    view_direction,
)

OBS = Observation("0" * 64, "png", 0, 0, 10, 10)
REF = SourceRef("r", "f")


def test_action_type_order_is_the_spec_order():
    assert ACTION_TYPE_NAMES == [
        "CLICK",
        "TYPE",
        "SELECT",
        "HOVER",
        "SCROLL",
        "DRAG",
        "PRESS_BACK",
        "PRESS_HOME",
        "PRESS_ENTER",
        "PRESS_KEY",
        "GOTO",
        "WAIT",
        "STOP",
        "FAIL",
    ]


@pytest.mark.parametrize(
    ("t", "masks"),
    [
        (ActionType.CLICK, {POINT_MASK, NO_MASK}),
        (ActionType.TYPE, {POINT_MASK, NO_MASK}),
        (ActionType.SCROLL, {SPAN_MASK, NO_MASK}),
        (ActionType.DRAG, {SPAN_MASK, NO_MASK}),
        (ActionType.PRESS_ENTER, {NO_MASK}),
        (ActionType.GOTO, {NO_MASK}),
        (ActionType.STOP, {NO_MASK}),
    ],
)
def test_mask_table(t, masks):
    assert allowed_masks(t) == masks


def test_a_step_refuses_a_mask_outside_its_row():
    with pytest.raises(ValueError, match="cannot carry mask"):
        GuiStep(ActionType.PRESS_ENTER, (0.1, 0.1, 0, 0), POINT_MASK, "", "", OBS, (0, 0), REF)


def test_a_step_refuses_an_invented_coordinate():
    with pytest.raises(ValueError, match="invented coordinate"):
        GuiStep(ActionType.CLICK, (0.1, 0.2, 0.3, 0.0), POINT_MASK, "", "", OBS, (0, 0), REF)


def test_a_step_refuses_coordinates_outside_the_frame():
    with pytest.raises(ValueError, match="outside"):
        GuiStep(ActionType.CLICK, (1.2, 0.2, 0, 0), POINT_MASK, "", "", OBS, (0, 0), REF)


def test_scroll_desc_names_the_view_direction_the_inverse_of_the_gesture():
    assert view_direction((0.5, 0.8, 0.5, 0.2)) == "down"
    assert view_direction((0.5, 0.2, 0.5, 0.8)) == "up"
    assert view_direction((0.8, 0.5, 0.2, 0.5)) == "right"
    assert describe(ActionType.SCROLL, (0.5, 0.8, 0.5, 0.2), SPAN_MASK, "") == "scroll(down)"
    assert describe(ActionType.CLICK, (0.714, 0.78, 0, 0), POINT_MASK, "") == "click(0.71, 0.78)"
    assert describe(ActionType.CLICK, (0, 0, 0, 0), NO_MASK, "") == "click()"


def test_the_wheel_gesture_is_the_content_travelling_opposite_to_the_view():
    from gui_assets.core.ir import wheel_gesture

    # the view moves down 300 px of a 750 px frame: the content travels up 0.4, from the pointer
    assert wheel_gesture((0.5, 0.6), (0, 300), (1 / 1280, 1 / 750)) == ((0.5, 0.6, 0.5, 0.2), "down")
    # the axis is chosen in the source's own units (here 100 px across beats 90 px down),
    # not after normalizing by an oblong frame
    params, direction = wheel_gesture((0.5, 0.5), (100, 90), (1 / 1280, 1 / 750))
    assert direction == "right" and params == (0.5, 0.5, 0.5 - 100 / 1280, 0.5)
    # travel is clipped at the frame edge; none left keeps only the direction
    assert wheel_gesture((0.5, 0.1), (0, 500), (1, 1 / 750)) == ((0.5, 0.1, 0.5, 0.0), "down")
    assert wheel_gesture((0.5, 1.0), (0, -3), (0.05, 0.05)) == (None, "up")


def test_a_demo_names_its_repo_file_and_rows_and_no_revision():
    """The file's revision is in dataset_info.json: a demo's bytes never depend on it."""
    import json

    from gui_assets.core.ir import GuiEpisode

    steps = [
        GuiStep(ActionType.PRESS_ENTER, (0, 0, 0, 0), NO_MASK, "", "", OBS, (0, 0), SourceRef("o/r", f, i))
        for i, f in enumerate(["a", "b"])
    ]
    ref = json.loads(GuiEpisode("e", "s", "do it", steps).source_ref_json())
    assert ref == {"repo_id": "o/r", "file": "a", "row": 0, "steps": [["a", 0], ["b", 1]]}


@pytest.mark.parametrize("direction", ["up", "down", "left", "right"])
def test_a_direction_only_scroll_has_no_gesture_and_names_its_direction(direction):
    step = direction_scroll(step_builder(OBS, REF), direction)
    assert step.action_type is ActionType.SCROLL and step.mask == NO_MASK and step.params == (0, 0, 0, 0)
    assert step.desc == f"scroll({direction})" and step.ungrounded_reason == ""


def test_a_direction_only_scroll_refuses_a_direction_it_does_not_know():
    with pytest.raises(ValueError, match="view direction"):
        direction_scroll(step_builder(OBS, REF), "sideways")
