"""Small PNG charts for check metadata (Pillow only: no plotting stack to install)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

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
