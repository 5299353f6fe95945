"""Small PNG charts for check metadata (Pillow only: no plotting stack to install)."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from gui_assets.atomic import atomic_write_bytes
from gui_assets.stats import SCROLL_BUCKETS

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


def contact_sheet_jpeg(shards: list[Path], samples: int = 8, thumb_w: int = 300) -> bytes | None:
    """Sampled frames of the shards, each with its action's point (red cross; a DRAG's end in
    orange) and the eye-in-hand window (green box) drawn on it, plus the step's desc.

    The point should sit on the control the desc names, and the green box where the previous
    action left the pointer; a frame/action pairing off by one step is visible at a glance.
    """
    import h5py
    import numpy as np

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
    font = ImageFont.load_default(size=12)
    tiles = []
    for path, name, t in picks:
        with h5py.File(path, "r") as f:
            demo = f["data"][name]
            frame = np.asarray(demo["obs/agentview_rgb"][t])
            params = demo["action_params"][t]
            mask = demo["action_mask"][t]
            rect = demo["eye_rect"][t]
            desc = demo["action_desc"][t]
            desc = desc.decode() if isinstance(desc, bytes) else str(desc)
        h, w = frame.shape[:2]
        scale = thumb_w / w
        im = Image.fromarray(frame).resize((thumb_w, max(1, round(h * scale))), Image.Resampling.BILINEAR)
        d = ImageDraw.Draw(im)
        tw, th = im.size
        d.rectangle([rect[0] * tw, rect[1] * th, rect[2] * tw, rect[3] * th], outline=(0, 200, 0), width=2)
        points = (
            ((params[0], params[1], mask[0]), (230, 0, 0)),
            ((params[2], params[3], mask[2]), (255, 140, 0)),
        )
        for (x, y, m), colour in points:
            if m:
                cx, cy = x * tw, y * th
                d.line([cx - 7, cy, cx + 7, cy], fill=colour, width=3)
                d.line([cx, cy - 7, cx, cy + 7], fill=colour, width=3)
        label = Image.new("RGB", (tw, 34), (250, 250, 250))
        ld = ImageDraw.Draw(label)
        ld.text((4, 2), f"{path.stem[-4:]}/{name} t={t}", fill=(60, 60, 60), font=font)
        ld.text((4, 17), desc[:52], fill=(10, 10, 10), font=font)
        tile = Image.new("RGB", (tw, im.size[1] + 34), (255, 255, 255))
        tile.paste(im, (0, 0))
        tile.paste(label, (0, im.size[1]))
        tiles.append(tile)
    cols = 4
    rows = -(-len(tiles) // cols)
    cell_h = max(t.size[1] for t in tiles)
    sheet = Image.new("RGB", (cols * (thumb_w + 6) + 6, rows * (cell_h + 6) + 6), (225, 228, 232))
    for i, tile in enumerate(tiles):
        sheet.paste(tile, (6 + (i % cols) * (thumb_w + 6), 6 + (i // cols) * (cell_h + 6)))
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
