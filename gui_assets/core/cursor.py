"""The causal cursor and the eye-in-hand window.

No source records a pointer, so the cursor before a_t is derived from the actions before it:
where a_{t-1} left the pointer (a grounded CLICK/HOVER/SELECT/TYPE at its point, a DRAG at its
end, a SCROLL at its start since a wheel does not move the pointer); other actions leave it
where it was; step 0 starts at the screen centre. The crop is centred there, never on a_t's
own target, which would paint the answer into the observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from gui_assets.core.ir import ActionType, GuiStep

EYE_SIZE = 128
SCREEN_CENTRE = (0.5, 0.5)


_LEAVES_POINTER_AT_START = frozenset(
    {ActionType.CLICK, ActionType.HOVER, ActionType.SELECT, ActionType.TYPE, ActionType.SCROLL}
)


def next_cursor(
    cursor: tuple[float, float], action_type: ActionType, params: Sequence[float], grounded: bool
) -> tuple[float, float]:
    """Where an action leaves the pointer (the one rule, shared by the writer and the checks)."""
    if not grounded:
        return cursor
    if action_type == ActionType.DRAG:
        return (float(params[2]), float(params[3]))
    if action_type in _LEAVES_POINTER_AT_START:
        return (float(params[0]), float(params[1]))
    return cursor


def causal_cursor(steps: Iterable[GuiStep]) -> Iterator[tuple[float, float]]:
    """Yield the normalized cursor position before each step."""
    cursor = SCREEN_CENTRE
    for step in steps:
        yield cursor
        cursor = next_cursor(cursor, step.action_type, step.params, step.grounded)


def eye_window(cursor: tuple[float, float], width: int, height: int, size: int = EYE_SIZE) -> tuple[int, int]:
    """Top-left pixel (x0, y0) of the size x size window centred on the cursor, clamped inside."""
    x0 = round(cursor[0] * width - size / 2)
    y0 = round(cursor[1] * height - size / 2)
    x0 = min(max(x0, 0), max(width - size, 0))
    y0 = min(max(y0, 0), max(height - size, 0))
    return x0, y0


def eye_rect(
    x0: int, y0: int, width: int, height: int, size: int = EYE_SIZE
) -> tuple[float, float, float, float]:
    """The window as normalized [x1, y1, x2, y2] (clipped to the frame when it is smaller)."""
    return (x0 / width, y0 / height, min(x0 + size, width) / width, min(y0 + size, height) / height)


def inside(point: tuple[float, float], rect: tuple[float, float, float, float]) -> bool:
    return rect[0] <= point[0] <= rect[2] and rect[1] <= point[1] <= rect[3]
