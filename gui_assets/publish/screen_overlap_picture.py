"""The screen-overlap audit's picture: matched evaluation and training frames side by side, read
back from the published shards.

Which matches: the loosest first (the largest distance, where a false match would show), one
evaluation set after another so every set with matches is seen, at most PAIRS rows. Each row is
the evaluation frame, then its training match, both PANEL_WIDTH wide, under a caption naming
both steps and the distance.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw, ImageFont

from gui_assets.core.atomic import atomic_write_bytes
from gui_assets.core.layout import OutLayout
from gui_assets.core.shard_reader import inflate, read_chunk
from gui_assets.pipeline import fingerprints

PICTURE_FILE = "screen_overlap.png"
PAIRS = 6
PANEL_WIDTH = 480
CAPTION = 36  # two lines: the evaluation step, then its training match and the distance


@dataclass(frozen=True, slots=True)
class Where:
    """A frame in the published shards."""

    directory: str
    episode_id: str
    step: int
    row: int  # its row in the directory's fingerprints table (which names shard and demo)


def choose(pairs: list[tuple[Where, Where, int]], count: int = PAIRS) -> list[tuple[Where, Where, int]]:
    """The loosest matches, taken round-robin over the evaluation directories."""
    by_set: dict[str, list[tuple[Where, Where, int]]] = {}
    for p in sorted(pairs, key=lambda p: (-p[2], p[0].directory, p[0].row)):
        by_set.setdefault(p[0].directory, []).append(p)
    chosen: list[tuple[Where, Where, int]] = []
    while len(chosen) < count and any(by_set.values()):
        for listed in by_set.values():
            if listed and len(chosen) < count:
                chosen.append(listed.pop(0))
    return chosen


def _frame(layout: OutLayout, where: Where, tables: dict[str, pa.Table]) -> np.ndarray:
    """The frame, found through its directory's fingerprints table (read once per drawing)."""
    if where.directory not in tables:
        path = fingerprints.directory_table(layout, where.directory)
        tables[where.directory] = pq.read_table(path, columns=["shard", "demo"])
    row = tables[where.directory].slice(where.row, 1).to_pylist()[0]
    with h5py.File(layout.directory(where.directory) / row["shard"], "r") as f:
        dset = f["data"][row["demo"]]["obs"]["agentview_rgb"]
        return inflate(read_chunk(dset, where.step), dset.shape[1:])


def _panel(frame: np.ndarray) -> Image.Image:
    im = Image.fromarray(frame)
    height = max(1, round(im.height * PANEL_WIDTH / im.width))
    return im.resize((PANEL_WIDTH, height), Image.Resampling.BILINEAR)


def draw(out: Path, pairs: list[tuple[Where, Where, int]]) -> bytes | None:
    """The picture's PNG bytes, also written to <out>/screen_overlap.png; None (and no file)
    when nothing matched (or no matched frame could be read back)."""
    path = out / PICTURE_FILE
    layout = OutLayout(out)
    rows = []
    tables: dict[str, pa.Table] = {}
    for e, t, d in pairs:
        try:
            left, right = _panel(_frame(layout, e, tables)), _panel(_frame(layout, t, tables))
        except (OSError, KeyError, ValueError, IndexError, zlib.error):  # a shard gone since: not drawn
            continue
        h = max(left.height, right.height) + CAPTION
        row = Image.new("RGB", (2 * PANEL_WIDTH + 8, h), (255, 255, 255))
        row.paste(left, (0, CAPTION))
        row.paste(right, (PANEL_WIDTH + 8, CAPTION))
        text = (
            f"evaluation: {e.directory} {e.episode_id} step {e.step}\n"
            f"training:   {t.directory} {t.episode_id} step {t.step}   ({d} bits apart)"
        )
        ImageDraw.Draw(row).text((4, 3), text, fill=(0, 0, 0), font=ImageFont.load_default(13), spacing=3)
        rows.append(row)
    if not rows:
        path.unlink(missing_ok=True)
        return None
    sheet = Image.new("RGB", (rows[0].width, sum(r.height + 6 for r in rows)), (200, 200, 200))
    y = 0
    for r in rows:
        sheet.paste(r, (0, y))
        y += r.height + 6
    buf = io.BytesIO()
    sheet.save(buf, format="PNG", optimize=False)
    atomic_write_bytes(path, buf.getvalue())
    return buf.getvalue()
