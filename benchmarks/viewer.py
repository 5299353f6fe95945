"""Viewer benchmark: a full-size shard of 1920x1080 frames opened in a real browser.

    python -m benchmarks.viewer [--shard PATH] [--work DIR] [--steps 30]

Without --shard, writes (once, cached under --work) 30 episodes of 24 steps of realistic
1920x1080 screenshots through the project's shard writer, which rolls a cap-sized (500 MB)
first shard, and serves that shard with `gui-assets view --port 0` in its own process.
Headless chromium (Debian's, /usr/bin/chromium) then measures
  - list: from navigation to the demo list rendered, on a freshly started server (the index
    read cold);
  - next step: from the ArrowRight keydown to the new frame's `load` event, over --steps
    steps, paced like a reader (a pause after each step, so prefetching can work) and back
    to back (the next key as soon as the frame shows);
  - jump: from the End keydown to the last step's frame `load` (a step no prefetch touched);
  - open: from navigation to a step's URL until that step is shown (a whole page load).
and prints the median and p95 of each.
"""

from __future__ import annotations

import argparse
import json
import re
import select
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
GUI_ASSETS = Path(sys.executable).with_name("gui-assets")
EPISODES, STEPS_PER_EPISODE, WIDTH, HEIGHT = 30, 24, 1920, 1080
PAGES = 6  # distinct screenshots the steps cycle through (each frame still deflates on its own)

MEASURE_JS = """() => {
  window.__bench = {};
  const now = () => performance.now();
  document.addEventListener('keydown', () => { window.__bench.key = now(); }, {capture: true, once: true});
  const frame = document.getElementById('frame');
  frame.addEventListener('load', () => { window.__bench.load = now(); }, {once: true});
}"""


def build_shard(work: Path) -> Path:
    """The first (cap-sized) shard of 30 x 24 steps of 1920x1080 frames, written once."""
    from benchmarks.frames import screenshot
    from gui_assets.core.config import BuildConfig
    from gui_assets.core.episode_store import ImageStore
    from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode, GuiStep, Observation, SourceRef
    from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter

    out = work / "shards"
    marker = work / "shard.json"
    if marker.exists():
        built = Path(json.loads(marker.read_text())["shard"])
        if built.exists():
            return built
    shutil.rmtree(out, ignore_errors=True)
    store = ImageStore(work / "images")
    shas = [store.put(screenshot(i, WIDTH, HEIGHT)[0], "png") for i in range(PAGES)]
    ref = SourceRef("bench/viewer", "frames")
    writer = LiberoShardWriter(out, "bench", "bench", BuildConfig(), platform="browser")

    def episodes():
        for e in range(EPISODES):
            steps = [
                GuiStep(
                    ActionType.CLICK,
                    ((0.1 + 0.037 * t) % 1.0, (0.2 + 0.029 * e) % 1.0, 0.0, 0.0),
                    POINT_MASK,
                    "",
                    "click",
                    Observation(shas[(e + t) % PAGES], "png", 0, 0, WIDTH, HEIGHT),
                    (0.0, 0.0),
                    ref,
                )
                for t in range(STEPS_PER_EPISODE)
            ]
            yield GuiEpisode(f"bench-{e}", "bench", f"benchmark episode {e}", steps)

    writer.write_episodes(episodes(), store)
    entries = writer.close()
    shard = out / max(entries, key=lambda x: x.bytes).file
    marker.write_text(json.dumps({"shard": str(shard)}))
    return shard


def serve(shard: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [str(GUI_ASSETS), "view", str(shard), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+/\n", line):
        proc.kill()
        raise SystemExit(f"gui-assets view did not print its address (got {line!r})")
    return proc, line.strip()


def key_to_frame_ms(page: Any, key: str, t: int, pause_s: float = 0.0) -> float:
    """ms from the keydown to the load event of the frame it brings (step t)."""
    page.evaluate(MEASURE_JS)
    page.keyboard.press(key)
    page.wait_for_function("window.__bench.load !== undefined")
    page.wait_for_selector(f'#frame[data-step="{t}"]')
    ms = page.evaluate("window.__bench.load - window.__bench.key")
    if pause_s:
        page.wait_for_timeout(pause_s * 1000)
    return float(ms)


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):7.1f} ms   p95 {p95:7.1f} ms   (n={len(ordered)})"


def measure(shard: Path, steps: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    proc, base = serve(shard)
    name = urllib.parse.quote(shard.name)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            start = time.perf_counter()
            page.goto(base)
            page.wait_for_selector("#demo-list[data-ready] tbody tr")
            list_ms = (time.perf_counter() - start) * 1000
            demos = page.locator("#demo-list tbody tr").count()

            series: dict[str, list[float]] = {"paced": [], "back_to_back": [], "jump": [], "open": []}
            for label, demo, pause in (("paced", "demo_0", 0.4), ("back_to_back", "demo_2", 0.0)):
                page.goto(f"{base}?file={name}&demo={demo}&step=0")
                page.wait_for_selector('#frame[data-step="0"]')
                page.wait_for_timeout(400)
                for i in range(steps):
                    t = i % (STEPS_PER_EPISODE - 1) + 1
                    if t == 1 and i:
                        page.keyboard.press("Home")
                        page.wait_for_selector('#frame[data-step="0"]')
                    series[label].append(key_to_frame_ms(page, "ArrowRight", t, pause))
            for i in range(min(steps, 10)):
                # open a demo by URL (a page load), then End: a step no prefetch has touched
                t = (7 * i + 5) % (STEPS_PER_EPISODE - 1)
                start = time.perf_counter()
                page.goto(f"{base}?file={name}&demo=demo_{(4 + i) % demos}&step={t}")
                page.wait_for_selector(f'#frame[data-step="{t}"]')
                series["open"].append((time.perf_counter() - start) * 1000)
                page.wait_for_timeout(300)
                series["jump"].append(key_to_frame_ms(page, "End", STEPS_PER_EPISODE - 1))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {"list_ms": list_ms, "demos": demos, **series}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.viewer", description=__doc__.split("\n\n")[0])
    ap.add_argument("--shard", type=Path, help="an existing shard to open (default: build one)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_viewer_bench"))
    ap.add_argument("--steps", type=int, default=30, help="ArrowRight presses per series")
    ap.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install chromium)")
    shard = args.shard or build_shard(args.work)
    got = measure(shard, args.steps)
    print(f"shard         {shard} ({shard.stat().st_size / 1e6:.0f} MB, {got['demos']} demos)")
    print(f"demo list     {got['list_ms']:7.1f} ms from navigation to the list rendered (cold server)")
    print(f"next (paced)  {summary(got['paced'])}   ArrowRight -> frame load, 0.4 s between steps")
    print(f"next (rapid)  {summary(got['back_to_back'])}   ArrowRight -> frame load, no pause")
    print(f"jump (End)    {summary(got['jump'])}   End -> frame load, a step no prefetch touched")
    print(f"open by URL   {summary(got['open'])}   navigation -> the step shown (a page load)")
    if args.json:
        print(json.dumps(got))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
