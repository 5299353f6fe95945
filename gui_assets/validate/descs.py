"""The rules of action_desc: its form, the coordinates it shows, and a SCROLL's view direction."""

from __future__ import annotations

import re

import numpy as np

from gui_assets.validate.context import DemoArrays, DemoContext, DemoSummary
from gui_assets.validate.format import MASK_ROWS, POINTER_TYPES, SPAN, VIEW_DIRECTIONS

FORM = re.compile(r"[A-Za-z_][\w.]*\(.*\)", re.DOTALL)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
DIRECTION = re.compile(r"\b(" + "|".join(VIEW_DIRECTIONS) + r")\b")
# A desc shows a coordinate to two decimals; this is half its last digit plus float32 rounding.
SHOWN_TOL = 0.005 + 1e-4


def view_direction(params: np.ndarray) -> str | None:
    """The way the VIEW moves for a scroll gesture (x1, y1) -> (x2, y2): the inverse of the pointer's
    travel, along the axis it travels more (vertical on a tie); None for a gesture with no travel."""
    dx, dy = float(params[2] - params[0]), float(params[3] - params[1])
    if dx == 0 and dy == 0:
        return None
    if abs(dy) >= abs(dx):
        return "down" if dy < 0 else "up"
    return "right" if dx < 0 else "left"


def check(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
    if not a.has("action_desc"):
        return
    ctx.check("demo.action_desc.form")
    desc = a["action_desc"]
    for t, text in enumerate(desc):
        if not FORM.fullmatch(text):
            ctx.find("demo.action_desc.form", f"action_desc {text!r} is not of the form verb(...)", t)
    if not a.has("action_type", "action_mask", "action_params"):
        return
    ctx.check("demo.action_desc.coords")
    names, grounded = a.type_names(), a.grounded()
    params = a["action_params"]
    for t, name in enumerate(names):
        if name != "SCROLL" and name in POINTER_TYPES and FORM.fullmatch(desc[t]):
            _coords(ctx, t, name, desc[t], params[t], bool(grounded[t]))
    check_scrolls(ctx, a, summary)


def check_scrolls(ctx: DemoContext, a: DemoArrays, summary: DemoSummary) -> None:
    """The SCROLL rule alone (demo.scroll.desc): what the scroll_histogram asset check asks."""
    if not a.has("action_desc", "action_type", "action_mask", "action_params"):
        return
    ctx.check("demo.scroll.desc")
    grounded = a.grounded()
    for t, name in enumerate(a.type_names()):
        if name == "SCROLL":
            _scroll(ctx, t, a["action_desc"][t], a["action_params"][t], bool(grounded[t]), summary)


def _scroll(
    ctx: DemoContext, t: int, desc: str, params: np.ndarray, grounded: bool, summary: DemoSummary
) -> None:
    said = set(DIRECTION.findall(desc))
    if len(said) != 1:
        ctx.find("demo.scroll.desc", f"SCROLL action_desc {desc!r} names no single view direction", t)
        return
    if not grounded:
        return  # an ungrounded SCROLL keeps its direction in the desc, with nothing to compare it to
    view = view_direction(params)
    if view is None:
        ctx.find("demo.scroll.desc", f"SCROLL gesture {params.tolist()} has no travel: no view direction", t)
        return
    summary.scroll_directions[view] += 1
    if said != {view}:
        ctx.find(
            "demo.scroll.desc",
            f"gesture {params.tolist()} moves the view {view}, action_desc {desc!r} says {said.pop()}",
            t,
        )


def _coords(ctx: DemoContext, t: int, name: str, desc: str, params: np.ndarray, grounded: bool) -> None:
    """The numbers before any quoted argument are coordinates (`type(0.18, 0.16, "xbox")`)."""
    inside = desc[desc.index("(") + 1 : -1]
    shown = [float(n) for n in NUMBER.findall(inside.split('"', 1)[0])]
    if not shown:
        return
    if not grounded:
        ctx.find("demo.action_desc.coords", f"ungrounded {name} shows coordinates in {desc!r}", t)
        return
    want = params[:4] if MASK_ROWS[name] == SPAN else params[:2]
    if len(shown) != len(want) or any(
        abs(s - float(w)) > SHOWN_TOL for s, w in zip(shown, want, strict=False)
    ):
        ctx.find("demo.action_desc.coords", f"{desc!r} does not show the params {want.round(4).tolist()}", t)
