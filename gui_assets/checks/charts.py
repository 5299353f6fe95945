"""Small PNG charts for check metadata (Pillow only: no plotting stack to install)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import h5py
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from gui_assets.core.atomic import atomic_write_bytes
from gui_assets.core.ir import view_direction
from gui_assets.core.stats import SCROLL_BUCKETS

_COLOURS = [(66, 133, 244), (52, 168, 83), (251, 188, 5), (234, 67, 53)]
DIRECTIONS = ("down", "up", "left", "right")


def scroll_histogram_png(hist: dict[str, dict[str, int]], title: str) -> bytes:
    """Grouped bars: one group per view direction, one bar per gesture-magnitude bucket."""
    w, h, left, bottom, top = 560, 260, 48, 44, 34
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    font, small = ImageFont.load_default(size=14), ImageFont.load_default(size=11)
    d.text((left, 8), title, fill=(20, 20, 20), font=font)
    buckets = [lbl for _, lbl in SCROLL_BUCKETS]
    peak = max([v for row in hist.values() for v in row.values()] + [1])
    plot_h = h - bottom - top
    d.line([left, h - bottom, w - 130, h - bottom], fill=(80, 80, 80))
    d.line([left, top, left, h - bottom], fill=(80, 80, 80))
    d.text((4, top - 6), str(peak), fill=(80, 80, 80), font=small)
    d.text((4, h - bottom - 6), "0", fill=(80, 80, 80), font=small)
    group_w = (w - 130 - left) / len(DIRECTIONS)
    bar_w = (group_w - 16) / len(buckets)
    for gi, direction in enumerate(DIRECTIONS):
        x0 = left + gi * group_w + 8
        for bi, bucket in enumerate(buckets):
            v = hist.get(direction, {}).get(bucket, 0)
            bh = plot_h * v / peak
            bx = x0 + bi * bar_w
            if v:
                d.rectangle([bx, h - bottom - bh, bx + bar_w - 2, h - bottom], fill=_COLOURS[bi])
                d.text((bx, h - bottom - bh - 13), str(v), fill=(40, 40, 40), font=small)
        d.text((x0 + group_w / 2 - 20, h - bottom + 6), direction, fill=(20, 20, 20), font=font)
    d.text(
        (left, h - 18), "view direction (action_desc); bars: gesture magnitude", fill=(90, 90, 90), font=small
    )
    for bi, bucket in enumerate(buckets):
        y = top + bi * 20
        d.rectangle([w - 120, y, w - 108, y + 12], fill=_COLOURS[bi])
        d.text((w - 102, y - 1), bucket, fill=(20, 20, 20), font=small)
    buf = io.BytesIO()
    im.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


EYE_GREEN = (40, 200, 90)
POINT_RED = (230, 30, 30)
GESTURE_ORANGE = (255, 128, 0)
OUTLINE = (20, 20, 20)
POINT_MASK = (1, 1, 0, 0)
GESTURE_MASK = (1, 1, 1, 1)
SHEET_COLS = 4
SHEET_GAP = 6
LABEL_H = 34


def _mask_is(mask: Sequence[float], want: tuple[int, ...]) -> bool:
    return tuple(1 if m else 0 for m in mask) == want


def draw_step_overlay(
    im: Image.Image,
    type_name: str,
    params: Sequence[float],
    mask: Sequence[float],
    eye_rect: Sequence[float],
) -> None:
    """Draw a step's action and eye-in-hand window on its frame (any size), as the viewer does:
    the eye_rect as a green box; a crosshair at (x1, y1) for a step whose mask is [1,1,0,0];
    an arrow from (x1, y1) to (x2, y2) for a SCROLL or DRAG gesture (mask [1,1,1,1]), a SCROLL
    labelled with its view direction (the inverse of the gesture). Every mark has a dark
    outline so it reads on light and dark pages; an ungrounded step gets no point."""
    d = ImageDraw.Draw(im)
    w, h = im.size
    r = [eye_rect[0] * w, eye_rect[1] * h, eye_rect[2] * w, eye_rect[3] * h]
    d.rectangle([r[0] - 1, r[1] - 1, r[2] + 1, r[3] + 1], outline=OUTLINE, width=4)
    d.rectangle(r, outline=EYE_GREEN, width=2)
    if _mask_is(mask, POINT_MASK):
        cx, cy = params[0] * w, params[1] * h
        for colour, width, arm in ((OUTLINE, 5, 9), (POINT_RED, 3, 8)):
            d.line([cx - arm, cy, cx + arm, cy], fill=colour, width=width)
            d.line([cx, cy - arm, cx, cy + arm], fill=colour, width=width)
    elif _mask_is(mask, GESTURE_MASK):
        x1, y1, x2, y2 = params[0] * w, params[1] * h, params[2] * w, params[3] * h
        _arrow(d, (x1, y1), (x2, y2))
        label = gesture_label(type_name, params)
        if label is not None:
            font = ImageFont.load_default(size=12)
            tx, ty = min((x1 + x2) / 2 + 8, w - 80), (y1 + y2) / 2 - 8
            box = d.textbbox((tx, ty), label, font=font)
            d.rectangle(
                [box[0] - 3, box[1] - 2, box[2] + 3, box[3] + 2], fill=GESTURE_ORANGE, outline=OUTLINE
            )
            d.text((tx, ty), label, fill=(255, 255, 255), font=font)


def gesture_label(type_name: str, params: Sequence[float]) -> str | None:
    """A SCROLL's label: the direction the VIEW moves, the inverse of the gesture drawn."""
    if type_name != "SCROLL":
        return None
    return f"view {view_direction((params[0], params[1], params[2], params[3]))}"


def _arrow(d: ImageDraw.ImageDraw, start: tuple[float, float], end: tuple[float, float]) -> None:
    (x1, y1), (x2, y2) = start, end
    length = math.hypot(x2 - x1, y2 - y1)
    ux, uy = ((x2 - x1) / length, (y2 - y1) / length) if length else (0.0, 0.0)
    head = min(12.0, max(6.0, length / 3))
    bx, by = x2 - ux * head, y2 - uy * head
    wing = head * 0.6
    tip = [(x2, y2), (bx - uy * wing, by + ux * wing), (bx + uy * wing, by - ux * wing)]
    for colour, width in ((OUTLINE, 6), (GESTURE_ORANGE, 3)):
        d.line([x1, y1, bx, by], fill=colour, width=width)
    d.polygon(tip, fill=GESTURE_ORANGE, outline=OUTLINE)
    d.ellipse([x1 - 4, y1 - 4, x1 + 4, y1 + 4], fill=(255, 255, 255), outline=OUTLINE, width=2)


def contact_sheet_image(shards: list[Path], samples: int = 8, thumb_w: int = 300) -> Image.Image | None:
    """Sampled frames of the shards (first, middle and last step of each demo, spread over the
    sample count), each with its step's overlay (see `draw_step_overlay`) and desc, four to a
    row; None when the shards hold no frame.

    The point should sit on the control the desc names, and the green box where the previous
    action left the pointer; a frame/action pairing off by one step is visible at a glance.
    """
    picks: list[tuple[Path, str, int]] = []
    for path in shards:
        with h5py.File(path, "r") as f:
            for name in sorted(f["data"], key=lambda n: int(n[5:])):
                T = int(f["data"][name].attrs["num_samples"])
                picks.extend((path, name, t) for t in sorted({0, T // 2, T - 1}))
    if not picks:
        return None
    step = max(1, len(picks) // samples)
    picks = picks[::step][:samples]
    tiles = [_tile(path, name, t, thumb_w) for path, name, t in picks]
    rows = -(-len(tiles) // SHEET_COLS)
    cell_h = max(t.size[1] for t in tiles)
    sheet = Image.new(
        "RGB",
        (SHEET_COLS * (thumb_w + SHEET_GAP) + SHEET_GAP, rows * (cell_h + SHEET_GAP) + SHEET_GAP),
        (225, 228, 232),
    )
    for i, tile in enumerate(tiles):
        col, row = i % SHEET_COLS, i // SHEET_COLS
        sheet.paste(tile, (SHEET_GAP + col * (thumb_w + SHEET_GAP), SHEET_GAP + row * (cell_h + SHEET_GAP)))
    return sheet


def _tile(path: Path, name: str, t: int, thumb_w: int) -> Image.Image:
    with h5py.File(path, "r") as f:
        types = json.loads(f["data"].attrs.get("gui_action_types", "[]"))
        demo = f["data"][name]
        frame = np.asarray(demo["obs/agentview_rgb"][t])
        code = int(demo["action_type"][t])
        params, mask, rect = demo["action_params"][t], demo["action_mask"][t], demo["eye_rect"][t]
        desc = demo["action_desc"][t]
        desc = desc.decode() if isinstance(desc, bytes) else str(desc)
    h, w = frame.shape[:2]
    im = Image.fromarray(frame).resize((thumb_w, max(1, round(h * thumb_w / w))), Image.Resampling.BILINEAR)
    type_name = types[code] if 0 <= code < len(types) else f"#{code}"
    draw_step_overlay(im, type_name, params.tolist(), mask.tolist(), rect.tolist())
    font = ImageFont.load_default(size=12)
    tw, th = im.size
    tile = Image.new("RGB", (tw, th + LABEL_H), (250, 250, 250))
    tile.paste(im, (0, 0))
    ld = ImageDraw.Draw(tile)
    ld.text((4, th + 2), f"{path.stem[-4:]}/{name} t={t}", fill=(60, 60, 60), font=font)
    ld.text((4, th + 17), desc[:52], fill=(10, 10, 10), font=font)
    return tile


def contact_sheet_jpeg(shards: list[Path], samples: int = 8, thumb_w: int = 300) -> bytes | None:
    """`contact_sheet_image` as JPEG bytes (None when there is no frame to draw)."""
    sheet = contact_sheet_image(shards, samples, thumb_w)
    if sheet is None:
        return None
    buf = io.BytesIO()
    # JPEG: a sheet of screenshots is a quarter of its PNG size, and it travels in event metadata.
    sheet.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def write_scroll_chart(hist: dict[str, dict[str, int]], title: str, path: Path) -> bytes:
    """Draw the scroll histogram chart, keep it at `path`, and return its PNG bytes."""
    png = scroll_histogram_png(hist, title)
    atomic_write_bytes(path, png)
    return png


def write_contact_sheet(shards: list[Path], path: Path) -> bytes | None:
    """Draw the shards' contact sheet, keep it at `path`, and return its JPEG bytes (None when
    there is no frame to draw)."""
    sheet = contact_sheet_jpeg(shards)
    if sheet is not None:
        atomic_write_bytes(path, sheet)
    return sheet


def histogram_table(hist: dict[str, dict[str, int]]) -> str:
    """The scroll histogram as a markdown table: direction rows x magnitude bucket columns."""
    buckets = [lbl for _, lbl in SCROLL_BUCKETS]
    lines = ["| view direction | " + " | ".join(buckets) + " | total |", "|---" * (len(buckets) + 2) + "|"]
    for d in ("down", "up", "left", "right"):
        row = hist.get(d, {})
        lines.append(
            f"| {d} | " + " | ".join(str(row.get(b, 0)) for b in buckets) + f" | {sum(row.values())} |"
        )
    return "\n".join(lines)
