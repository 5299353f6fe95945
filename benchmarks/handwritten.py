"""The conversion a user would write by hand, as the benchmark's baseline.

One process, the textbook h5py recipe: read the Mind2Web parquet, decode each screenshot with
Pillow, crop a 128x128 eye-in-hand window around the target, and write one LIBERO demo per
task with gzip-4 (h5py's filter) and one chunk per frame. No adapter checks, no IR, no
statistics: it is the floor a hand-written script sets, not a feature-equal build.

    python -m benchmarks.handwritten MIRROR_REPO OUT.hdf5
"""

from __future__ import annotations

import io
import sys
from collections import defaultdict
from pathlib import Path

import h5py
import numpy as np
from PIL import Image

from benchmarks.frames import iter_frames

EYE = 128


def convert(repo: Path, out: Path) -> int:
    episodes: dict[str, list[tuple[int, bytes, tuple[float, ...]]]] = defaultdict(list)
    for annotation_id, index, png, box in iter_frames(repo):
        episodes[annotation_id].append((index, png, box))
    steps = 0
    with h5py.File(out, "w") as f:
        data = f.create_group("data")
        for i, (_, rows) in enumerate(sorted(episodes.items())):
            rows.sort(key=lambda r: r[0])
            demo = data.create_group(f"demo_{i}")
            T = len(rows)
            agentview = eye = None
            actions = np.zeros((T, 7), np.float32)
            for t, (_, png, (x, y, w, h)) in enumerate(rows):
                frame = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
                H, W = frame.shape[:2]
                if agentview is None:
                    agentview = demo.create_dataset(
                        "obs/agentview_rgb",
                        (T, H, W, 3),
                        np.uint8,
                        chunks=(1, H, W, 3),
                        compression="gzip",
                        compression_opts=4,
                    )
                    eye = demo.create_dataset(
                        "obs/eye_in_hand_rgb",
                        (T, EYE, EYE, 3),
                        np.uint8,
                        chunks=(1, EYE, EYE, 3),
                        compression="gzip",
                        compression_opts=4,
                    )
                cx, cy = x + w / 2, y + h / 2
                x0 = int(min(max(cx - EYE / 2, 0), W - EYE))
                y0 = int(min(max(cy - EYE / 2, 0), H - EYE))
                agentview[t] = frame
                eye[t] = frame[y0 : y0 + EYE, x0 : x0 + EYE]
                actions[t, :2] = (cx / W, cy / H)
            demo.create_dataset("actions", data=actions)
            demo.attrs["num_samples"] = T
            steps += T
        data.attrs["total"] = steps
    return steps


if __name__ == "__main__":
    print(convert(Path(sys.argv[1]), Path(sys.argv[2])))
