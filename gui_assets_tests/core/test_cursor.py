"""The causal cursor: where the previous action left the pointer, never the current target."""

from __future__ import annotations

from gui_assets.core.cursor import causal_cursor, eye_rect, eye_window
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, GuiStep, Observation, SourceRef

OBS = Observation("0" * 64, "png", 0, 0, 100, 100)
REF = SourceRef("r", "f")


def s(t, params=(0.0, 0.0, 0.0, 0.0), mask=NO_MASK):
    return GuiStep(t, params, mask, "", "", OBS, (0, 0), REF)


def test_cursor_rules_per_action_type():
    steps = [
        s(ActionType.CLICK, (0.1, 0.2, 0, 0), POINT_MASK),  # -> (0.1, 0.2)
        s(ActionType.PRESS_ENTER),  # unchanged
        s(ActionType.DRAG, (0.3, 0.3, 0.7, 0.9), SPAN_MASK),  # -> its end
        s(ActionType.SCROLL, (0.4, 0.8, 0.4, 0.2), SPAN_MASK),  # -> its start: a wheel does not move it
        s(ActionType.CLICK),  # ungrounded: unchanged
        s(ActionType.TYPE, (0.6, 0.6, 0, 0), POINT_MASK),
        s(ActionType.STOP),
    ]
    assert list(causal_cursor(steps)) == [
        (0.5, 0.5),
        (0.1, 0.2),
        (0.1, 0.2),
        (0.7, 0.9),
        (0.4, 0.8),
        (0.4, 0.8),
        (0.6, 0.6),
    ]


def test_eye_window_centres_then_clamps():
    assert eye_window((0.5, 0.5), 1280, 1080) == (576, 476)
    assert eye_window((0.0, 0.0), 1280, 1080) == (0, 0)
    assert eye_window((1.0, 1.0), 1280, 1080) == (1152, 952)
    assert eye_window((0.5, 0.5), 100, 90) == (0, 0)  # a frame smaller than the window
    assert eye_rect(0, 0, 100, 90) == (0.0, 0.0, 1.0, 1.0)
