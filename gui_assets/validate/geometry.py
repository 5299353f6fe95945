"""The eye-in-hand rules: the causal cursor, the window eye_rect records, and the crop's pixels.

The cursor before a_t is where a_{t-1} left the pointer (format.LEAVES_POINTER_AT_*), step 0 at
the centre. The window is EYE_SIZE native pixels a side (the whole frame where the frame is
smaller), centred on that cursor and shifted only as far as it must to stay inside the frame;
eye_rect is that window normalized by native_hw, so it is judged in native pixels whatever size
agentview was stored at. The crop is compared with agentview where the frame is at native size.
"""

from __future__ import annotations

import h5py
import numpy as np

from gui_assets.validate.context import DemoArrays, DemoContext, DemoSummary
from gui_assets.validate.format import (
    AGENTVIEW,
    AIMED_TYPES,
    EYE_SIZE,
    LEAVES_POINTER_AT_END,
    LEAVES_POINTER_AT_START,
    SCREEN_CENTRE,
)
from gui_assets.validate.values import short

EYE = "obs/eye_in_hand_rgb"
CURSOR_TOL = 1e-6  # the cursor is a float32 copy of a float32 param
SPAN_TOL = 0.01  # native pixels: float32 rounding of a normalized edge, even on an 8k-pixel frame
ROUNDING = 0.5  # a window's corner sits on a whole pixel: the centre may be half a pixel off


def causal_cursors(names: list[str | None], params: np.ndarray, grounded: np.ndarray) -> np.ndarray:
    """The cursor before every step, from the actions before it."""
    cursors = np.empty((len(names), 2), dtype=np.float64)
    cursor = SCREEN_CENTRE
    for t, name in enumerate(names):
        cursors[t] = cursor
        if grounded[t] and name in LEAVES_POINTER_AT_START:
            cursor = (float(params[t, 0]), float(params[t, 1]))
        elif grounded[t] and name in LEAVES_POINTER_AT_END:
            cursor = (float(params[t, 2]), float(params[t, 3]))
    return cursors


def check(
    ctx: DemoContext, a: DemoArrays, demo: h5py.Group, pixel_steps: set[int], summary: DemoSummary
) -> None:
    if not a.has("action_type", "action_mask", "action_params"):
        return
    names, grounded, params = a.type_names(), a.grounded(), a["action_params"]
    cursors = causal_cursors(names, params, grounded)
    if a.has("states"):
        ctx.check("demo.cursor.causal")
        stored = a["states"][:, 0:2].astype(np.float64)
        for t in np.flatnonzero(np.any(np.abs(stored - cursors) > CURSOR_TOL, axis=1)):
            why = "step 0 starts at the centre" if t == 0 else f"step {t - 1} left the pointer there"
            ctx.find(
                "demo.cursor.causal", f"cursor {short(stored[t])}, want {short(cursors[t])} ({why})", int(t)
            )
    if not a.has("eye_rect", "native_hw"):
        return
    rects, native = a["eye_rect"].astype(np.float64), a["native_hw"]
    ctx.check("demo.native_hw", "demo.eye_rect.size", "demo.eye_rect.centre")
    sized = np.zeros(a.steps, dtype=bool)
    for t in range(a.steps):
        h, w = int(native[t, 0]), int(native[t, 1])
        if h <= 0 or w <= 0:
            ctx.find("demo.native_hw", f"native_hw is {short(native[t])}", t)
            continue
        sized[t] = _rect(ctx, t, rects[t], (h, w), cursors[t])
        if grounded[t] and names[t] in AIMED_TYPES:
            summary.aimed += 1
            point = params[t, 0:2].astype(np.float64)
            lo, hi = rects[t, 0:2], rects[t, 2:4]
            if np.all((lo + CURSOR_TOL <= point) & (point <= hi - CURSOR_TOL)):
                summary.aimed_inside += 1
            elif np.all((lo - CURSOR_TOL <= point) & (point <= hi + CURSOR_TOL)):
                summary.aimed_edge += 1
    if EYE in a.fitting and AGENTVIEW in a.fitting:
        _pixels(ctx, a, demo, sorted(t for t in pixel_steps if t < a.steps and sized[t]))


def _rect(ctx: DemoContext, t: int, rect: np.ndarray, hw: tuple[int, int], cursor: np.ndarray) -> bool:
    """Judge one step's window; True when its size is right (its pixels can then be compared)."""
    if np.any(~np.isfinite(rect)) or np.any(rect < -CURSOR_TOL) or np.any(rect > 1 + CURSOR_TOL):
        ctx.find("demo.eye_rect.size", f"eye_rect {short(rect)} leaves [0, 1]", t)
        return False
    sized = True
    for axis, (lo, hi, extent) in enumerate(((rect[0], rect[2], hw[1]), (rect[1], rect[3], hw[0]))):
        side = min(EYE_SIZE, extent)
        span = (hi - lo) * extent
        if abs(span - side) > SPAN_TOL:
            ctx.find(
                "demo.eye_rect.size",
                f"eye_rect {short(rect)} spans {span:.2f} native px on "
                f"{'xy'[axis]}, want {side} (native {hw[0]}x{hw[1]})",
                t,
            )
            sized = False
            continue
        ideal = min(max(float(cursor[axis]) * extent - EYE_SIZE / 2, 0.0), max(extent - EYE_SIZE, 0))
        if abs(lo * extent - ideal) > ROUNDING + SPAN_TOL:
            ctx.find(
                "demo.eye_rect.centre",
                f"eye_rect {short(rect)} starts at {lo * extent:.1f} px on "
                f"{'xy'[axis]}; centred on cursor {short(cursor)} it starts at {ideal:.1f}",
                t,
            )
    return sized


def _pixels(ctx: DemoContext, a: DemoArrays, demo: h5py.Group, steps: list[int]) -> None:
    ctx.check("demo.eye_in_hand.pixels")
    av, eye = demo[AGENTVIEW], demo[EYE]
    rects, native = a["eye_rect"].astype(np.float64), a["native_hw"]
    for t in steps:
        if a.frame_hw != (int(native[t, 0]), int(native[t, 1])):
            ctx.target.figures["pixel_skipped"] += 1  # resized to the demo's frame size: no native pixels
            continue
        h, w = a.frame_hw
        x0, y0 = round(rects[t, 0] * w), round(rects[t, 1] * h)
        side_y, side_x = min(EYE_SIZE, h), min(EYE_SIZE, w)
        crop = av[t, y0 : y0 + side_y, x0 : x0 + side_x]
        got = eye[t][:side_y, :side_x]
        ctx.target.figures["pixel_steps"] += 1
        if crop.shape != got.shape or not np.array_equal(crop, got):
            differ = int(np.any(crop != got, axis=-1).sum()) if crop.shape == got.shape else side_x * side_y
            ctx.find(
                "demo.eye_in_hand.pixels",
                f"{differ} of {side_x * side_y} eye-in-hand pixels differ "
                f"from agentview under eye_rect (window at x={x0}, y={y0})",
                t,
            )
