"""Frame codecs: the bytes every downloader pays for against the build's speed.

    python -m benchmarks.codecs --frames 48

On held-out 1280x1080 frames at indices no other benchmark or test uses, of two kinds
(`screenshots`: the throughput benchmark's pages with photo-like tiles over a tenth; `pages`:
the rendered web page alone, text and flat colour), for each codec and level:
  - deflated bytes of the agentview frame plus its 128x128 eye crop, against zlib level 4 (the
    hand-written script's h5py gzip-4 filter);
  - milliseconds per frame on one thread, and frames/s on every usable CPU (the codecs release
    the GIL, as the shard writer's thread pool uses them);
then the shard writer itself (decode, crop, deflate, write_direct_chunk / h5py's filter) at each
codec's default level: steps/s and bytes per step. Every output is zlib-format and inflates to
the same pixels; that is checked on every frame. Results go to <work>/results-codecs.json.
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.frames import screenshot
from benchmarks.throughput import _machine
from gui_assets.config import BuildConfig, usable_cpus
from gui_assets.cursor import EYE_SIZE
from gui_assets.demo.render import render_page
from gui_assets.images import decode_rgb

HELD_OUT = 900_000  # first frame index: far beyond the mirrors the other benchmarks generate
LEVELS: dict[str, tuple[int, ...]] = {"zlib": (1, 4, 6), "isal": (1, 2, 3), "libdeflate": (1, 4, 6, 9)}


def _compressor(codec: str, level: int) -> Callable[[memoryview], bytes]:
    if codec == "isal":
        from isal import isal_zlib

        return lambda data: isal_zlib.compress(data, level)
    if codec == "libdeflate":
        from imagecodecs import deflate_encode

        return lambda data: deflate_encode(data, level=level)
    return lambda data: zlib.compress(data, level)


def _page(kind: str, index: int, width: int, height: int) -> np.ndarray:
    if kind == "pages":  # the web page alone: text, widgets, flat colour
        return np.asarray(render_page(index, width, height, [], f"site-{index % 37}.example"))
    return decode_rgb(screenshot(index, width, height)[0])  # with photo-like tiles over a tenth


def _frames(kind: str, n: int, width: int, height: int) -> list[tuple[memoryview, memoryview]]:
    out = []
    for i in range(n):
        page = _page(kind, HELD_OUT + i, width, height)
        eye = np.ascontiguousarray(page[:EYE_SIZE, :EYE_SIZE])
        out.append((memoryview(np.ascontiguousarray(page)).cast("B"), memoryview(eye).cast("B")))
    return out


def measure_codec(codec: str, level: int, frames: list[tuple[memoryview, memoryview]]) -> dict[str, Any]:
    compress = _compressor(codec, level)
    t = time.perf_counter()
    sizes = []
    for page, eye in frames:
        a, b = compress(page), compress(eye)
        if zlib.decompress(a) != page or zlib.decompress(b) != eye:
            raise AssertionError(f"{codec} {level}: output does not inflate to the frame")
        sizes.append(len(a) + len(b))
    one_thread = time.perf_counter() - t  # includes the checking inflate; timed again below
    t = time.perf_counter()
    for page, eye in frames:
        compress(page), compress(eye)
    one_thread = time.perf_counter() - t
    threads = usable_cpus()
    with ThreadPoolExecutor(threads) as pool:
        t = time.perf_counter()
        list(pool.map(lambda f: (compress(f[0]), compress(f[1])), frames))
        parallel = time.perf_counter() - t
    return {
        "codec": codec,
        "level": level,
        "bytes_per_frame": float(np.mean(sizes)),
        "ms_per_frame": 1000 * one_thread / len(frames),
        "frames_per_s_all_cpus": len(frames) / parallel,
        "threads": threads,
    }


def measure_writer(config: BuildConfig, steps: int, work: Path) -> dict[str, Any]:
    """The shard writer on `steps` distinct held-out steps under `config`: steps/s, bytes/step."""
    from gui_assets.episode_store import ImageStore
    from gui_assets.ir import POINT_MASK, ActionType, GuiEpisode, GuiStep, Observation, SourceRef
    from gui_assets.writers.libero_hdf5 import LiberoShardWriter

    store = ImageStore(work / "images")
    ref = SourceRef("bench", "frames")
    episodes = []
    for e in range(0, steps, 10):
        ep_steps = []
        for i in range(e, min(steps, e + 10)):
            png = screenshot(HELD_OUT + i, 1280, 1080)[0]
            obs = Observation(store.put(png, "png"), "png", 0, 0, 1280, 1080)
            point = (0.1 + 0.08 * (i % 10), 0.5, 0.0, 0.0)
            ep_steps.append(GuiStep(ActionType.CLICK, point, POINT_MASK, "", "click", obs, (0.0, 0.0), ref))
        episodes.append(GuiEpisode(f"e{e}", "bench", "held-out frames", ep_steps))
    out = work / f"shards-{config.frame_codec}"
    writer = LiberoShardWriter(out, "bench", "bench", config)
    t = time.perf_counter()
    writer.write_episodes(episodes, store)
    pieces = writer.close()
    seconds = time.perf_counter() - t
    size = sum(p.bytes for p in pieces)
    return {"codec": config.frame_codec, "steps_per_s": steps / seconds, "bytes_per_step": size / steps}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=48, help="held-out frames per codec and level")
    ap.add_argument("--writer-steps", type=int, default=120, help="steps through the shard writer")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_bench/codecs"))
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for kind in ("screenshots", "pages"):
        frames = _frames(kind, args.frames, 1280, 1080)
        table = [
            measure_codec(c, lvl, frames) | {"frames": kind} for c, levels in LEVELS.items() for lvl in levels
        ]
        base = next(r for r in table if r["codec"] == "zlib" and r["level"] == 4)
        print(f"{len(frames)} held-out 1280x1080 {kind} (+ eye crops); bytes against zlib level 4")
        print(f"{'codec':<11}{'level':>6}{'KB/frame':>10}{'x zlib-4':>10}{'ms/frame':>10}{'frames/s':>10}")
        for r in table:
            r["bytes_vs_zlib4"] = r["bytes_per_frame"] / base["bytes_per_frame"]
            print(
                f"{r['codec']:<11}{r['level']:>6}{r['bytes_per_frame'] / 1024:>10.0f}"
                f"{r['bytes_vs_zlib4']:>10.3f}{r['ms_per_frame']:>10.1f}{r['frames_per_s_all_cpus']:>10.1f}"
            )
        rows += table
    writer = [
        measure_writer(BuildConfig(frame_codec=codec), args.writer_steps, args.work)
        for codec in ("isal", "libdeflate", "gzip")
    ]
    print(f"shard writer, {args.writer_steps} steps, default levels:")
    for w in writer:
        kb = w["bytes_per_step"] / 1024
        print(f"  {w['codec']:<11}{w['steps_per_s']:>8.1f} steps/s {kb:>8.0f} KB/step")
    result = {"machine": _machine(), "frames": args.frames, "codecs": rows, "writer": writer}
    (args.work / "results-codecs.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
