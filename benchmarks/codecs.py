"""Frame deflate: the bytes every downloader pays for against the build's speed.

    python -m benchmarks.codecs --frames 48

Deterministic deflate implementations (each call's output a function of its input and level):
zlib (what HDF5's gzip filter and the hand-written script use), zlib-ng and libdeflate, both
through imagecodecs.

On held-out 1280x1080 frames at indices no other benchmark or test uses, of two kinds
(`screenshots`: the throughput benchmark's pages with photo-like tiles over a tenth; `pages`:
the rendered web page alone, text and flat colour), for each codec and level:
  - deflated bytes of the agentview frame plus its 128x128 eye crop, against zlib level 4 (the
    hand-written script's h5py gzip-4 filter);
  - milliseconds per frame on one thread (wall and the thread's CPU time, which other load on
    a shared machine disturbs less), and frames/s on every usable CPU (the codecs release the
    GIL, as the shard writer's thread pool uses them);
then the shard writer itself (decode, crop, deflate, write_direct_chunk) at libdeflate levels
around the default: steps/s and bytes per step. Every output is zlib-format and inflates to
the same pixels; that is checked on every frame. Results go to <work>/results-codecs.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from benchmarks.frames import screenshot
from benchmarks.throughput import _machine
from gui_assets.core.config import BuildConfig, usable_cpus
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.deflate import zlib_deflater
from gui_assets.core.images import decode_rgb
from gui_assets.sources.demo_render import render_page

HELD_OUT = 900_000  # first frame index: far beyond the mirrors the other benchmarks generate
LEVELS: dict[str, tuple[int, ...]] = {
    "zlib": (1, 4, 6),
    "zlib-ng": (4, 6, 7, 9),
    "libdeflate": (1, 4, 5, 6, 7, 8, 9),
}
WRITER_LEVELS = (1, 5, 6, 7)  # libdeflate levels the shard writer is timed at


def _compressor(codec: str, level: int) -> Callable[[memoryview], bytes]:
    if codec == "libdeflate":
        return zlib_deflater(level)
    if codec == "zlib-ng":
        from imagecodecs import zlibng_encode

        return lambda data: zlibng_encode(data, level=level)
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
    t, cpu = time.perf_counter(), time.thread_time()
    for page, eye in frames:
        compress(page), compress(eye)
    one_thread, cpu = time.perf_counter() - t, time.thread_time() - cpu
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
        "cpu_ms_per_frame": 1000 * cpu / len(frames),  # the thread's CPU: steadier on a shared machine
        "frames_per_s_all_cpus": len(frames) / parallel,
        "threads": threads,
    }


def _writer_input(steps: int, work: Path) -> tuple[list[Any], Any]:
    """`steps` distinct held-out screenshots as click episodes of ten steps, in an image store."""
    from gui_assets.core.episode_store import ImageStore
    from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode, GuiStep, Observation, SourceRef

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
    return episodes, store


def measure_writer(config: BuildConfig, episodes: list[Any], store: Any, work: Path) -> dict[str, Any]:
    """The shard writer on the episodes under `config`: steps/s, bytes/step."""
    from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter

    steps = sum(len(e.steps) for e in episodes)
    out = work / f"shards-{config.libdeflate_level}"
    shutil.rmtree(out, ignore_errors=True)
    writer = LiberoShardWriter(out, "bench", "bench", config, platform="browser")
    t = time.perf_counter()
    writer.write_episodes(episodes, store)
    pieces = writer.close()
    seconds = time.perf_counter() - t
    size = sum(p.bytes for p in pieces)
    return {"level": config.libdeflate_level, "steps_per_s": steps / seconds, "bytes_per_step": size / steps}


def measure_script_recipe(episodes: list[Any], store: Any, work: Path) -> dict[str, Any]:
    """The same episodes the hand-written script's way (benchmarks/handwritten.py): one process,
    h5py's gzip-4 filter, one chunk per frame, the eye crop centred on the click. The bytes a
    shard is held against; its steps/s are h5py's filter on one core."""
    path = work / "script-recipe.hdf5"
    steps = 0
    t = time.perf_counter()
    with h5py.File(path, "w") as f:
        for i, ep in enumerate(episodes):
            T = len(ep.steps)
            demo = f.create_group(f"data/demo_{i}")
            gzip4 = {"compression": "gzip", "compression_opts": 4, "dtype": np.uint8}
            agentview = demo.create_dataset(
                "obs/agentview_rgb", (T, 1080, 1280, 3), chunks=(1, 1080, 1280, 3), **gzip4
            )
            eye = demo.create_dataset(
                "obs/eye_in_hand_rgb", (T, EYE_SIZE, EYE_SIZE, 3), chunks=(1, EYE_SIZE, EYE_SIZE, 3), **gzip4
            )
            actions = np.zeros((T, 7), np.float32)
            for t_, s in enumerate(ep.steps):
                frame = decode_rgb(store.get(s.observation.image_sha256, "png"))
                cx, cy = s.params[0] * 1280, s.params[1] * 1080
                x0 = int(min(max(cx - EYE_SIZE / 2, 0), 1280 - EYE_SIZE))
                y0 = int(min(max(cy - EYE_SIZE / 2, 0), 1080 - EYE_SIZE))
                agentview[t_] = frame
                eye[t_] = frame[y0 : y0 + EYE_SIZE, x0 : x0 + EYE_SIZE]
                actions[t_, :2] = s.params[:2]
            demo.create_dataset("actions", data=actions)
            steps += T
    seconds = time.perf_counter() - t
    return {"steps_per_s": steps / seconds, "bytes_per_step": path.stat().st_size / steps}


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
        head = f"{'codec':<11}{'level':>6}{'KB/frame':>10}{'x zlib-4':>10}{'ms/frame':>10}{'CPU ms':>8}"
        print(f"{head}{'frames/s':>10}")
        for r in table:
            r["bytes_vs_zlib4"] = r["bytes_per_frame"] / base["bytes_per_frame"]
            print(
                f"{r['codec']:<11}{r['level']:>6}{r['bytes_per_frame'] / 1024:>10.0f}"
                f"{r['bytes_vs_zlib4']:>10.3f}{r['ms_per_frame']:>10.1f}{r['cpu_ms_per_frame']:>8.1f}"
                f"{r['frames_per_s_all_cpus']:>10.1f}"
            )
        rows += table
    episodes, store = _writer_input(args.writer_steps, args.work)
    script = measure_script_recipe(episodes, store, args.work)
    writer = [
        measure_writer(BuildConfig(libdeflate_level=lvl), episodes, store, args.work) for lvl in WRITER_LEVELS
    ]
    default = BuildConfig().libdeflate_level
    print(f"shard writer, {args.writer_steps} steps of screenshots (default level {default}); bytes against")
    print("the hand-written script's recipe (h5py gzip-4 filter, one core) on the same steps:")
    kb = script["bytes_per_step"] / 1024
    print(f"  script recipe {script['steps_per_s']:>8.1f} steps/s {kb:>8.0f} KB/step     1.000")
    for w in writer:
        w["bytes_vs_script"] = w["bytes_per_step"] / script["bytes_per_step"]
        kb = w["bytes_per_step"] / 1024
        print(
            f"  libdeflate {w['level']:>2} {w['steps_per_s']:>8.1f} steps/s {kb:>8.0f} KB/step "
            f"{w['bytes_vs_script']:>9.3f}"
        )
    result = {
        "machine": _machine(),
        "frames": args.frames,
        "codecs": rows,
        "script_recipe": script,
        "writer": writer,
    }
    (args.work / "results-codecs.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
