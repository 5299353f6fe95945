"""Run by lerobot's own Python (its own virtual environment): load each exported dataset with
`LeRobotDataset(repo_id, root=...)` offline, read random items, batch every frame through a torch
DataLoader, and compare what comes back with the shards, read here with h5py.

    <lerobot python> lerobot_client.py REQUEST.json  ->  prints a JSON report

REQUEST: {"seed": int, "items": int, "datasets": [{"name", "root", "demos": [[shard, demo], ...]}]}
with demos in episode order. Image features must equal the shards; a video feature (decoded by
lerobot through torchcodec) is reported by its lowest PSNR. Each dataset's report also carries
what `lerobot-doctor check <root> --json` prints, run through the doctor's own command-line entry
in this process (one torch import for every dataset instead of one per dataset). Imports nothing
of gui_assets: lerobot and its doctor are the judges here.
"""

from __future__ import annotations

import io
import json
import random
import sys
from contextlib import redirect_stdout
from typing import Any

import h5py
import numpy as np
import torch
from lerobot.datasets.lerobot_dataset import LeRobotDataset
from lerobot_doctor.cli import main as doctor_main

IMAGES = (
    ("observation.images.agentview", "agentview_rgb"),
    ("observation.images.eye_in_hand", "eye_in_hand_rgb"),
)
VECTORS = (
    ("action", "actions"),
    ("action_mask", "action_mask"),
    ("action_params", "action_params"),
    ("observation.state", "states"),
)


def _pixels(chw: torch.Tensor) -> np.ndarray:
    """lerobot's float CHW image in [0, 1] back to the HWC uint8 it was made from."""
    return (chw.permute(1, 2, 0).numpy() * 255.0).round().astype(np.uint8)


def _text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * float(np.log10(255.0**2 / mse))


def _compare(item: dict[str, Any], demo: h5py.Group, videos: set[str], psnr: list[float]) -> list[str]:
    """What differs from the shard: exact for image features, PSNR (kept in `psnr`) for videos."""
    t = int(item["frame_index"])
    wrong = []
    for key, name in IMAGES:
        got, want = _pixels(item[key]), demo[f"obs/{name}"][t]
        if key in videos:
            psnr.append(_psnr(got, want))
        elif not np.array_equal(got, want):
            wrong.append(key)
    for key, name in VECTORS:
        if not np.array_equal(item[key].numpy(), demo[name][t]):
            wrong.append(key)
    if int(item["action_type"]) != int(demo["action_type"][t]):
        wrong.append("action_type")
    for key in ("action_text", "action_desc"):
        if item[key] != _text(demo[key][t]):
            wrong.append(key)
    if item["task"] != _text(demo.attrs["language_instruction"]):
        wrong.append("task")
    return wrong


def check(spec: dict[str, Any], items: int, seed: int) -> dict[str, Any]:
    ds = LeRobotDataset(f"gui_assets/{spec['name']}", root=spec["root"])
    demos = spec["demos"]
    report: dict[str, Any] = {"frames": len(ds), "episodes": ds.num_episodes, "mismatches": [], "items": 0}
    videos, psnr = set(ds.meta.video_keys), []
    rng = random.Random(f"{seed}:{spec['name']}")
    for i in rng.sample(range(len(ds)), min(items, len(ds))):
        item = ds[i]
        shard, name = demos[int(item["episode_index"])]
        with h5py.File(shard, "r") as f:
            wrong = _compare(item, f["data"][name], videos, psnr)
        report["items"] += 1
        report["mismatches"] += [f"{spec['name']}[{i}]: {w}" for w in wrong]
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=0)
    rows, shapes = 0, set()
    for batch in loader:
        rows += len(batch["index"])
        shapes.add(tuple(batch["observation.images.agentview"].shape[1:]))
        assert len(batch["task"]) == len(batch["index"])
    report["rows_batched"] = rows
    report["agentview_shapes"] = sorted(shapes)
    report["batches"] = -(-rows // 8)
    report["video_keys"] = sorted(videos)
    report["video_psnr_min"] = min(psnr) if psnr else None
    return report


def doctor(root: str) -> dict[str, Any]:
    """`lerobot-doctor check <root> --json`: its JSON, with the status it exits with."""
    printed = io.StringIO()
    with redirect_stdout(printed):
        try:
            doctor_main(["check", root, "--json"])
            status = 0
        except SystemExit as e:  # the doctor exits 1 on a FAIL or a dataset it cannot load
            status = e.code if isinstance(e.code, int) else 1
    try:
        report = json.loads(printed.getvalue())
    except ValueError:
        report = {"unreadable_output": printed.getvalue()[-2000:]}
    return {**report, "exit_status": status}


def main(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        request = json.load(fh)
    reports = {d["name"]: check(d, request["items"], request["seed"]) for d in request["datasets"]}
    for d in request["datasets"]:
        reports[d["name"]]["doctor"] = doctor(d["root"])
    print(json.dumps(reports))


if __name__ == "__main__":
    main(sys.argv[1])
