"""lerobot's own writer on the same episodes, for the LeRobot export benchmark; run by lerobot's
Python (its own virtual environment), so it imports nothing of gui_assets.

    <lerobot python> -m benchmarks.lerobot_writer SHARD... --root OUT  ->  prints a JSON line

Reads each demo of the shards with h5py (the frames the export writes), then, as a converter
written against lerobot's API does: `LeRobotDataset.create(..., use_videos=False)` with the
same image and numeric features, `add_frame` per step (its image writer threads save PNGs),
`save_episode` per demo, `finalize`. Reports the whole wall time and the part spent inside
lerobot's calls (the frames' reading apart).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import h5py
import numpy as np
from lerobot.datasets.lerobot_dataset import LeRobotDataset

NUMERIC = {
    "observation.state": ("states", 5),
    "action": ("actions", 7),
    "action_params": ("action_params", 4),
    "action_mask": ("action_mask", 4),
}


def _features(h: int, w: int) -> dict:
    names = ["height", "width", "channels"]
    feats = {
        "observation.images.agentview": {"dtype": "image", "shape": (h, w, 3), "names": names},
        "observation.images.eye_in_hand": {"dtype": "image", "shape": (128, 128, 3), "names": names},
        "action_type": {"dtype": "int64", "shape": (1,), "names": None},
    }
    for key, (_, n) in NUMERIC.items():
        feats[key] = {"dtype": "float32", "shape": (n,), "names": None}
    return feats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shards", nargs="+", type=Path)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=4, help="lerobot's image writer threads")
    args = ap.parse_args()
    start = time.perf_counter()
    inside = 0.0
    ds = None
    frames = 0
    for path in args.shards:
        with h5py.File(path, "r") as f:
            for name in sorted(f["data"], key=lambda k: int(k[5:])):
                d = f["data"][name]
                av, eye = d["obs/agentview_rgb"][()], d["obs/eye_in_hand_rgb"][()]
                arrays = {k: d[src][()].astype(np.float32) for k, (src, _) in NUMERIC.items()}
                types = d["action_type"][()]
                task = d.attrs["language_instruction"]
                task = task.decode() if isinstance(task, bytes) else str(task)
                t0 = time.perf_counter()
                if ds is None:
                    ds = LeRobotDataset.create(
                        "bench/lerobot-writer",
                        fps=1,
                        features=_features(*av.shape[1:3]),
                        root=args.root,
                        use_videos=False,
                        image_writer_threads=args.threads,
                    )
                for t in range(len(av)):
                    frame = {
                        "observation.images.agentview": av[t],
                        "observation.images.eye_in_hand": eye[t],
                        "action_type": np.array([types[t]], np.int64),
                        "task": task,
                        **{k: v[t] for k, v in arrays.items()},
                    }
                    ds.add_frame(frame)
                ds.save_episode()
                frames += len(av)
                inside += time.perf_counter() - t0
    t0 = time.perf_counter()
    ds.finalize()
    inside += time.perf_counter() - t0
    total = time.perf_counter() - start
    print(json.dumps({"frames": frames, "seconds": round(total, 2), "lerobot_seconds": round(inside, 2)}))


if __name__ == "__main__":
    main()
