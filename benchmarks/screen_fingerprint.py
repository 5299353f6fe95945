"""Which screen fingerprint, and which threshold: measured on real screenshots.

    python -m benchmarks.screen_fingerprint            # the table for every candidate grid
    python -m benchmarks.screen_fingerprint --json OUT # and the figures as JSON

Base frames: the real screenshots the repository carries (the AgentNet trajectory's step,
gui_assets_tests/samples/agentnet; the Playwright screencast frames of the recorded traces,
gui_assets_tests/samples/playwright and gui_assets/sources/webarena/data, byte-identical frames
counted once) and rendered pages in the Mind2Web layout at the sizes of the web, desktop and
phone sources (gui_assets.sources.demo_render, the generator of every demo mirror, whose mobile
sources draw their screens the same way).

Near-duplicate pairs (must match): each base frame against itself JPEG re-encoded (quality 75
and 90), with one character typed (a glyph drawn where it has room), with the pointer moved (an
arrow cursor drawn at one place, then another), and typed + re-encoded together.
Different pairs (must not match): every two distinct base frames, and a tall page against itself
scrolled by an eighth of a viewport or more (the smallest scroll the sources record is about a
fifth: Mind2Web's SCROLL views and WebArena's wheel steps move by 150 px and more). Two real
frames of one trace can be the same screen (a character typed into the search box between them),
so real pairs are labelled by their pixels: at most 1% of pixels changed (by more than 24 in a
channel) is the same screen, a near-duplicate; at least 5% is a different one; in between is
reported, not scored. Real frames of different sizes are not paired.
A frame pair's distance is the Hamming distance of the fingerprints; a candidate is good when
the largest near-duplicate distance is well below the smallest different-pair distance.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from gui_assets.core.fingerprint import MATCH_THRESHOLD, screen_fingerprint
from gui_assets.core.images import decode_rgb
from gui_assets.sources.demo_render import render_page

ROOT = Path(__file__).resolve().parents[1]
REAL_PNGS = [ROOT / "gui_assets_tests/samples/agentnet/cot_example/10.png"]
REAL_TRACES = [
    ROOT / "gui_assets_tests/samples/playwright/v7_mouse_click.zip",
    ROOT / "gui_assets/sources/webarena/data/274.zip",
    ROOT / "gui_assets/sources/webarena/data/275.zip",
]
RENDER_SIZES = ((1280, 720), (1920, 1080), (1080, 2400))  # web, desktop, phone
RENDERED_PER_SIZE = 12
SCROLL_FRACTIONS = (0.125, 0.25, 0.5, 1.0)
# (grid, margin, gradients): the project's fingerprint is (16, 8, "hv"); the others are what it
# was chosen over (a plain 256-bit horizontal dHash, no margin, a coarser grid).
CANDIDATES = ((16, 0, "h"), (16, 0, "hv"), (16, 8, "h"), (16, 8, "hv"), (12, 8, "hv"))
SAME_SCREEN, DIFFERENT_SCREEN = 0.01, 0.05  # share of pixels changed


def fingerprint_of(frame: np.ndarray, grid: int, margin: int, gradients: str) -> np.ndarray:
    """A candidate's bits (the project's is core.fingerprint.screen_fingerprint, checked equal)."""
    n = grid + 1
    bh, bw = frame.shape[0] // n, frame.shape[1] // n
    rows = frame[: n * bh].reshape(n, bh, *frame.shape[1:])[:, ::4].sum(axis=1, dtype=np.uint32)
    s = rows[:, : n * bw].reshape(n, n, bw, 3)[:, :, ::2].sum(axis=2, dtype=np.int64)
    sums = s[..., 0] + 2 * s[..., 1] + s[..., 2]
    limit = margin * len(range(0, bh, 4)) * len(range(0, bw, 2))
    bits = [((sums[:-1, 1:] - sums[:-1, :-1]) > limit).ravel()]
    if "v" in gradients:
        bits.append(((sums[1:, :-1] - sums[:-1, :-1]) > limit).ravel())
    return np.concatenate(bits)


def changed_share(a: np.ndarray, b: np.ndarray) -> float:
    return float((np.abs(a.astype(np.int16) - b).max(axis=2) > 24).mean())


def real_frames() -> list[tuple[str, np.ndarray]]:
    frames: dict[bytes, tuple[str, np.ndarray]] = {}
    for path in REAL_PNGS:
        data = path.read_bytes()
        frames[data] = (path.name, decode_rgb(data))
    for path in REAL_TRACES:
        with zipfile.ZipFile(path) as z:
            for name in sorted(n for n in z.namelist() if n.endswith(".jpeg")):
                data = z.read(name)
                frames.setdefault(data, (f"{path.name}:{name.rsplit('-', 1)[-1]}", decode_rgb(data)))
    return list(frames.values())


def rendered_frames() -> list[tuple[str, np.ndarray]]:
    out = []
    for w, h in RENDER_SIZES:
        for seed in range(RENDERED_PER_SIZE):
            page = render_page(1000 * w + seed, w, h, [], f"site-{seed % 3}.example")
            out.append((f"render {w}x{h} #{seed}", np.asarray(page)))
    return out


def _jpeg(frame: np.ndarray, quality: int) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="JPEG", quality=quality)
    return decode_rgb(buf.getvalue())


def _typed(frame: np.ndarray, rng: random.Random) -> np.ndarray:
    im = Image.fromarray(frame)
    x, y = rng.randrange(20, im.width - 40), rng.randrange(20, im.height - 40)
    ImageDraw.Draw(im).text((x, y), rng.choice("aeomwk"), fill=(20, 20, 20), font=ImageFont.load_default(18))
    return np.asarray(im)


def _pointer(frame: np.ndarray, x: int, y: int) -> np.ndarray:
    im = Image.fromarray(frame)
    arrow = [(0, 0), (0, 17), (4, 13), (7, 20), (10, 19), (7, 12), (12, 12)]
    ImageDraw.Draw(im).polygon([(x + a, y + b) for a, b in arrow], fill=(0, 0, 0), outline=(255, 255, 255))
    return np.asarray(im)


def near_pairs(frame: np.ndarray, rng: random.Random) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    h, w = frame.shape[:2]
    yield "jpeg q75", frame, _jpeg(frame, 75)
    yield "jpeg q90", frame, _jpeg(frame, 90)
    yield "typed character", frame, _typed(frame, rng)
    p1 = (rng.randrange(0, w - 20), rng.randrange(0, h - 24))
    p2 = (rng.randrange(0, w - 20), rng.randrange(0, h - 24))
    yield "pointer moved", _pointer(frame, *p1), _pointer(frame, *p2)
    yield "typed + jpeg q75", frame, _jpeg(_typed(frame, rng), 75)


def scroll_pairs() -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """A tall page's viewport against the same page scrolled (rendered, and the real frames cut
    into a top and a lower window of three quarters of their height)."""
    for w, h in RENDER_SIZES:
        for seed in range(4):
            page = np.asarray(render_page(7 + seed, w, 3 * h, [], "scroll.example"))
            for frac in SCROLL_FRACTIONS:
                dy = int(frac * h)
                yield f"scroll {frac:g}", page[:h], page[dy : dy + h]
    for _, frame in real_frames():
        h = frame.shape[0]
        view = 3 * h // 4
        for frac in (0.125, 0.25):
            dy = int(frac * view)
            if dy + view <= h:
                yield f"scroll {frac:g}", frame[:view], frame[dy : dy + view]


Pairs = dict[str, list[tuple[str, np.ndarray, np.ndarray]]]


def labelled_pairs() -> Pairs:
    """The measured pairs by label: "near" (must match), "different" (must not), "unsure"."""
    rng = random.Random(0)
    real, rendered = real_frames(), rendered_frames()
    pairs: Pairs = {"near": [], "different": [], "unsure": []}
    for _, frame in real + rendered:
        pairs["near"] += list(near_pairs(frame, rng))
    for (_, a), (_, b) in itertools.combinations(real, 2):
        if a.shape == b.shape:
            share = changed_share(a, b)
            label = "near" if share <= SAME_SCREEN else "different" if share >= DIFFERENT_SCREEN else "unsure"
            pairs[label].append(("real same screen" if label == "near" else "different pages", a, b))
    others = [*itertools.combinations(rendered, 2), *itertools.product(real, rendered)]
    pairs["different"] += [("different pages", a, b) for (_, a), (_, b) in others]
    for kind, a, b in scroll_pairs():  # a blank stretch scrolled is the same screen: not scored
        pairs["different" if changed_share(a, b) >= DIFFERENT_SCREEN else "unsure"].append((kind, a, b))
    return pairs


def measure(pairs: Pairs, candidate: tuple[int, int, str]) -> dict[str, Any]:
    cache: dict[int, np.ndarray] = {}

    def bits(frame: np.ndarray) -> np.ndarray:
        if id(frame) not in cache:
            cache[id(frame)] = fingerprint_of(frame, *candidate)
        return cache[id(frame)]

    by_kind: dict[str, dict[str, list[int]]] = {}
    for label, listed in pairs.items():
        for kind, a, b in listed:
            by_kind.setdefault(label, {}).setdefault(kind, []).append(int((bits(a) != bits(b)).sum()))
    near = [d for ds in by_kind["near"].values() for d in ds]
    far = [d for ds in by_kind["different"].values() for d in ds]
    return {
        "candidate": f"grid {candidate[0]}, margin {candidate[1]}, {candidate[2]} "
        f"({len(bits(pairs['near'][0][1]))} bits)",
        "near_pairs": len(near),
        "different_pairs": len(far),
        "unsure_pairs": len(pairs["unsure"]),
        "near_max": {k: max(v) for k, v in by_kind["near"].items()},
        "different_min": {k: min(v) for k, v in by_kind["different"].items()},
        "max_near": max(near),
        "min_different": min(far),
        "near": near,
        "far": far,
    }


def rates(result: dict[str, Any], threshold: int) -> dict[str, float]:
    near, far = result["near"], result["far"]
    assert isinstance(near, list) and isinstance(far, list)
    return {
        "threshold": threshold,
        "miss_rate": sum(d > threshold for d in near) / len(near),
        "false_match_rate": sum(d <= threshold for d in far) / len(far),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures here as well")
    args = ap.parse_args()
    pairs = labelled_pairs()
    for _, a, _ in pairs["near"][:20]:  # the project's function is the chosen candidate
        assert screen_fingerprint(a) == np.packbits(fingerprint_of(a, 16, 8, "hv")).tobytes()
    print(
        f"{len(pairs['near'])} near-duplicate pairs, {len(pairs['different'])} different, "
        f"{len(pairs['unsure'])} unsure (not scored)"
    )
    results = []
    for candidate in CANDIDATES:
        r = measure(pairs, candidate)
        midpoint = (r["max_near"] + r["min_different"]) // 2
        r["rates"] = rates(r, MATCH_THRESHOLD if candidate == (16, 8, "hv") else midpoint)
        print(f"{r['candidate']}: largest near {r['max_near']}, smallest different {r['min_different']}")
        print(f"    near, largest by kind: {r['near_max']}")
        print(f"    different, smallest by kind: {r['different_min']}")
        print(f"    {r['rates']}")
        results.append({k: v for k, v in r.items() if k not in ("near", "far")})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
