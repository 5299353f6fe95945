"""Realistic 1280x1080-class screenshots for the throughput benchmark, in the Mind2Web layout.

A frame is a rendered web page (header, navigation, headings, body text, form widgets; see
`gui_assets.sources.demo_render`) with photo-like tiles pasted over about a tenth of it: a smoothly
upsampled random colour field plus mild sensor noise, which deflates like the web images and
video stills of real pages. Text-only frames would flatter every compressor and pure noise
would punish it; this mix compresses about as well as the published dataset does.

Frames are deterministic in (index, width, height) and each one is distinct, so nothing is
deduplicated or cached by accident. They are written as PNG (Pillow's default level), the
format the hand-written baseline decodes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from gui_assets.core.atomic import atomic_write_bytes
from gui_assets.sources.demo_render import Widget, draw_widget, encode, render_page
from gui_assets.sources.mind2web.adapter import REPO_ID
from gui_assets.sources.mind2web.demo import SCHEMA

PHOTO_SHARE = 0.10
VERBS = ("CLICK", "CLICK", "TYPE", "CLICK", "SELECT")


def _photo(rng: np.random.Generator, w: int, h: int) -> Image.Image:
    field = rng.integers(0, 256, size=(max(2, h // 24), max(2, w // 24), 3), dtype=np.uint8)
    smooth = np.asarray(Image.fromarray(field).resize((w, h), Image.Resampling.BICUBIC), dtype=np.int16)
    noisy = smooth + rng.normal(0.0, 2.0, size=smooth.shape).round().astype(np.int16)
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def _target(index: int, width: int, height: int) -> Widget:
    rng = random.Random(index * 7919)
    kind = ("button", "input", "select", "link")[index % 4]
    w, h = rng.randrange(120, 360), rng.randrange(32, 56)
    return Widget(
        kind, f"target {index}", rng.randrange(240, width - w - 20), rng.randrange(90, height - h - 20), w, h
    )


def screenshot(index: int, width: int, height: int) -> tuple[bytes, Widget]:
    """PNG bytes of frame `index` and the widget the step acts on."""
    target = _target(index, width, height)
    page = render_page(index, width, height, [target], f"site-{index % 37}.example")
    rng = np.random.default_rng(index)
    covered, goal = 0, PHOTO_SHARE * width * height
    while covered < goal:
        tw, th = int(rng.integers(160, 420)), int(rng.integers(100, 280))
        x, y = int(rng.integers(230, max(231, width - tw))), int(rng.integers(80, max(81, height - th)))
        page.paste(_photo(rng, tw, th), (x, y))
        covered += tw * th
    draw_widget(ImageDraw.Draw(page), target)  # the target stays visible over any tile
    return encode(page, "png"), target


_BASES: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
BASE_PAGES = 48  # rendered once per process; every frame is one of them, made distinct


def _bases(width: int, height: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(page, photo tile) pairs rendered once per worker process."""
    if (width, height) not in _BASES:
        pairs = []
        for i in range(BASE_PAGES):
            page = np.asarray(render_page(i, width, height, [], f"site-{i % 37}.example")).copy()
            tile = np.asarray(_photo(np.random.default_rng(i), 320, 200))
            pairs.append((page, tile))
        _BASES[(width, height)] = pairs
    return _BASES[(width, height)]


def cheap_screenshot(index: int, width: int, height: int) -> tuple[bytes, Widget]:
    """A distinct frame at a fraction of `screenshot`'s cost, for mirrors of tens of thousands of
    steps: one of BASE_PAGES rendered pages, its photo tile pasted at a place of its own, the
    target widget drawn, and a band whose pixels spell `index` (no two frames are equal), encoded
    by the project's own PNG writer (Up filter + ISA-L, a few ms a frame)."""
    from gui_assets.publish.rgb_png import encode_rgb

    page, tile = _bases(width, height)[index % BASE_PAGES]
    frame = page.copy()
    rng = random.Random(index)
    th, tw = tile.shape[:2]
    y, x = rng.randrange(80, max(81, height - th)), rng.randrange(230, max(231, width - tw))
    frame[y : y + th, x : x + tw] = tile
    bits = np.array([(index >> b) & 1 for b in range(32)], dtype=np.uint8) * 200 + 30
    frame[height - 12 : height - 4, 8 : 8 + 32 * 8] = np.repeat(bits, 8)[None, :, None]
    target = _target(index, width, height)
    im = Image.fromarray(frame)
    draw_widget(ImageDraw.Draw(im), target)
    return encode_rgb(np.asarray(im)), target


def _candidate(w: Widget) -> str:
    rect = f"{w.x},{w.y},{w.w},{w.h}"
    attrs = {"backend_node_id": "42", "bounding_box_rect": rect, "class": w.kind}
    return json.dumps({"tag": w.kind, "attributes": json.dumps(attrs)})


def frame_png(index: int, width: int, height: int, cheap: bool = False, frames: Path | None = None) -> bytes:
    """PNG bytes of frame `index` (`screenshot`'s, or `cheap_screenshot`'s). A frame is a function
    of its index and size alone, so `frames`, a folder kept across calls, can hold the ones drawn
    before: a frame found there is read instead of drawn again, and one drawn is added to it."""
    draw = cheap_screenshot if cheap else screenshot
    if frames is None:
        return draw(index, width, height)[0]
    path = frames / f"{'cheap' if cheap else 'page'}-{width}x{height}" / f"{index:07d}.png"
    if path.is_file():  # written whole or not at all (atomic_write_bytes)
        return path.read_bytes()
    png = draw(index, width, height)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, png)
    return png


def _row(
    index: int, width: int, height: int, episode_len: int, cheap: bool = False, frames: Path | None = None
) -> dict[str, Any]:
    png, target = frame_png(index, width, height, cheap, frames), _target(index, width, height)
    episode, step = divmod(index, episode_len)
    verb = VERBS[index % len(VERBS)]
    value = {"TYPE": f"query {index}", "SELECT": "option 2"}.get(verb, "")
    annotation_id = f"bench-{episode:05d}"
    return {
        "action_uid": f"{annotation_id}-{step}",
        "raw_html": "",
        "cleaned_html": "",
        "operation": json.dumps({"original_op": verb, "value": value, "op": verb}),
        "pos_candidates": [_candidate(target)],
        "neg_candidates": [],
        "website": f"site-{episode % 37}",
        "domain": "Travel",
        "subdomain": "Airlines",
        "annotation_id": annotation_id,
        "confirmed_task": f"benchmark task {episode}",
        "screenshot": {"bytes": png, "path": None},
        "action_reprs": [],
        "target_action_index": str(step),
        "target_action_reprs": f"[{target.kind}] {target.label} -> {verb}",
    }


def write_mirror(
    root: Path,
    steps: int,
    width: int,
    height: int,
    episode_len: int,
    jobs: int,
    *,
    cheap: bool = False,
    files: int | None = None,
    frames: Path | None = None,
) -> Path:
    """A Multimodal-Mind2Web mirror of `steps` rows under root; reused when already complete.
    `cheap`: frames from `cheap_screenshot` (for the scale benchmark's tens of thousands).
    `files`: that many upstream files of whole episodes (else files of about 200 rows).
    `frames`: a folder of frames drawn before, shared with other mirrors (`frame_png`); the
    mirror's bytes are the same with it or without it."""
    repo = root / REPO_ID
    data = repo / "data"
    params = {"steps": steps, "width": width, "height": height, "episode_len": episode_len, "v": 1}
    if cheap:
        params["cheap"] = 1
    if files:
        params["files"] = files
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    marker = repo / f".complete-{key}"
    if marker.exists():
        return repo
    if data.exists():
        for old in data.iterdir():
            old.unlink()
    data.mkdir(parents=True, exist_ok=True)
    rows_per_file = 200 - 200 % episode_len or episode_len  # a file holds whole episodes
    if files:
        episodes = -(-steps // episode_len)
        rows_per_file = -(-episodes // files) * episode_len
    n_files = -(-steps // rows_per_file)
    row = functools.partial(
        _row, width=width, height=height, episode_len=episode_len, cheap=cheap, frames=frames
    )
    with ProcessPoolExecutor(jobs) as pool:
        for f in range(n_files):
            lo, hi = f * rows_per_file, min(steps, (f + 1) * rows_per_file)
            rows = list(pool.map(row, range(lo, hi)))
            name = f"train-{f:05d}-of-{n_files:05d}.parquet"
            tmp = data / f".{name}.tmp"
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp, row_group_size=50)
            os.replace(tmp, data / name)
    for old in repo.glob(".complete-*"):
        old.unlink()
    marker.write_text(json.dumps(params) + "\n", encoding="utf-8")
    return repo


def iter_frames(repo: Path) -> Any:
    """(annotation_id, step index, png bytes, bbox x,y,w,h) in file order: the baseline's input."""
    for path in sorted((repo / "data").glob("train-*.parquet")):
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(
            batch_size=50, columns=["annotation_id", "target_action_index", "screenshot", "pos_candidates"]
        ):
            for r in batch.to_pylist():
                attrs = json.loads(json.loads(r["pos_candidates"][0])["attributes"])
                box = tuple(float(v) for v in attrs["bounding_box_rect"].split(","))
                yield r["annotation_id"], int(r["target_action_index"]), r["screenshot"]["bytes"], box
