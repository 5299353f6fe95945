"""Deterministic UI-like screenshots for demo mirrors: real PNG/JPEG bytes of pages with a
header, navigation, text, image blocks, buttons, inputs and selects. Not noise, not flat.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

_WORDS = (
    "search flights hotels car rental deals account sign in help support compare price reviews "
    "checkout cart shipping returns order track menu settings profile travel booking dates "
    "guests rooms filter sort results popular destinations offers members newsletter contact"
).split()


@dataclass(frozen=True, slots=True)
class Widget:
    """An interactive element drawn on a page; (x, y, w, h) in page px."""

    kind: str  # button | input | select | link
    label: str
    x: float
    y: float
    w: float
    h: float


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def render_page(seed: int, width: int, height: int, widgets: list[Widget], site: str) -> Image.Image:
    rng = random.Random(seed)
    hue = rng.randrange(0, 200)
    im = Image.new("RGB", (width, height), (250, 250, 252))
    d = ImageDraw.Draw(im)
    head = (20 + hue % 60, 40 + hue % 90, 90 + hue % 120)
    d.rectangle([0, 0, width, 72], fill=head)
    d.text((24, 20), site, fill=(255, 255, 255), font=_font(28))
    x = 320
    for word in rng.sample(_WORDS, 6):
        d.text((x, 28), word.title(), fill=(230, 235, 245), font=_font(17))
        x += 120
    d.rectangle([0, 72, 220, height], fill=(238, 240, 245))
    for i in range(min(40, height // 60)):
        d.text((20, 100 + i * 48), " ".join(rng.sample(_WORDS, 2)), fill=(70, 80, 100), font=_font(15))
    y = 110
    body = _font(16)
    while y < height - 60:
        d.text((260, y), " ".join(rng.sample(_WORDS, 4)).title(), fill=(25, 30, 40), font=_font(24))
        y += 40
        for _ in range(rng.randint(2, 5)):
            d.text((260, y), " ".join(rng.choice(_WORDS) for _ in range(14)), fill=(60, 64, 72), font=body)
            y += 24
        if rng.random() < 0.5:  # a photo-like block: a smooth gradient with texture
            bx, bw, bh = 260 + rng.randrange(0, 300), rng.randrange(180, 420), rng.randrange(90, 160)
            base = (rng.randrange(60, 200), rng.randrange(60, 200), rng.randrange(60, 200))
            for row in range(bh):
                c = tuple(min(255, v + row // 3 + rng.randrange(0, 6)) for v in base)
                d.line([bx, y + row, bx + bw, y + row], fill=c)
            y += bh + 10
        y += 36
    for w in widgets:
        draw_widget(d, w)
    return im


def draw_widget(d: ImageDraw.ImageDraw, w: Widget) -> None:
    box = [w.x, w.y, w.x + w.w, w.y + w.h]
    font = _font(max(12, min(22, int(w.h * 0.45))))
    if w.kind == "button":
        d.rounded_rectangle(box, radius=6, fill=(13, 110, 253), outline=(8, 70, 170), width=2)
        d.text((w.x + 12, w.y + w.h / 2), w.label, fill=(255, 255, 255), font=font, anchor="lm")
    elif w.kind == "input":
        d.rectangle(box, fill=(255, 255, 255), outline=(120, 128, 140), width=2)
        d.text((w.x + 10, w.y + w.h / 2), w.label, fill=(150, 155, 165), font=font, anchor="lm")
    elif w.kind == "select":
        d.rectangle(box, fill=(255, 255, 255), outline=(120, 128, 140), width=2)
        d.text((w.x + 10, w.y + w.h / 2), w.label, fill=(40, 40, 40), font=font, anchor="lm")
        d.polygon(
            [
                (w.x + w.w - 24, w.y + w.h / 2 - 4),
                (w.x + w.w - 12, w.y + w.h / 2 - 4),
                (w.x + w.w - 18, w.y + w.h / 2 + 4),
            ],
            fill=(40, 40, 40),
        )
    else:  # a link: its box is what the DOM reports, so it is drawn whole (a tinted banner)
        d.rectangle(box, fill=(225, 236, 252))
        d.text((w.x + 8, w.y + w.h / 2), w.label, fill=(0, 90, 200), font=font, anchor="lm")
        d.line([w.x, w.y + w.h - 3, w.x + w.w, w.y + w.h - 3], fill=(0, 90, 200), width=1)


def encode(im: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "png":
        im.save(buf, format="PNG", compress_level=6)
    else:
        im.save(buf, format="JPEG", quality=90)
    return buf.getvalue()
