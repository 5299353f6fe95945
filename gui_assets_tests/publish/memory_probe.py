"""Write N episodes of W x H frames through the shard writer and print the peak RSS (run as a process).

Usage: python -m gui_assets_tests.publish.memory_probe N_EPISODES STEPS WORKDIR [WIDTH HEIGHT]

The parent puts the PNG pages (of that size) in WORKDIR/images; steps cycle through them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode, GuiStep, Observation, SourceRef
from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def main(n: int, steps: int, work: Path, width: int = 1280, height: int = 1080) -> None:
    store = ImageStore(work / "images")
    shas = sorted(p.stem for p in store.root.rglob("*.png"))  # made by the parent, 3 distinct pages
    ref = SourceRef("r", "f")
    writer = LiberoShardWriter(work / f"out{n}", "d", "test", BuildConfig(), platform="desktop")
    baseline = peak_rss_mb()

    def episodes():
        for e in range(n):
            ep_steps = [
                GuiStep(
                    ActionType.CLICK,
                    ((0.1 + 0.08 * t) % 1.0, 0.5, 0.0, 0.0),
                    POINT_MASK,
                    "",
                    "click",
                    Observation(shas[(e + t) % len(shas)], "png", 0, 0, width, height),
                    (0.0, 0.0),
                    ref,
                )
                for t in range(steps)
            ]
            yield GuiEpisode(f"e{e}", "test", "i", ep_steps)

    writer.write_episodes(episodes(), store)
    entries = writer.close()
    print(
        json.dumps(
            {
                "baseline_mb": baseline,
                "peak_mb": peak_rss_mb(),
                "shards": len(entries),
                "steps": sum(x.steps for x in entries),
                "shard_bytes": [x.bytes for x in entries],
            }
        )
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), *(int(v) for v in sys.argv[4:6]))
