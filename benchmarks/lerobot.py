"""The LeRobot export against lerobot's own writer, on the same episodes, in one run.

    python -m benchmarks.lerobot --steps 1200

Builds (once, cached under --work) a Mind2Web partition of `--steps` distinct 1280x1080 steps
(the throughput benchmark's mirror), then times, each in its own process with its peak RSS:
  1. ours: `lerobot_export.write_export` from scratch (no dataset reused);
  2. lerobot's: benchmarks/lerobot_writer.py in lerobot's own environment (`LeRobotDataset.create`,
     `add_frame`, `save_episode`, `finalize`, lossless image features, 4 image writer threads),
     writing the same frames read from the same shards.
The speedup is taken against lerobot's time inside its own calls (the frames' reading left out),
the stricter of the two. Results go to <work>/results-lerobot.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.frames import write_mirror
from benchmarks.peak_rss import run_measured
from benchmarks.throughput import _machine
from gui_assets.core.memory import build_process_env

REPO = Path(__file__).resolve().parent.parent
# Started as a build process is, with its allocator settings (gui_assets.core.memory) in the environment.
OURS = (
    "import sys; from pathlib import Path; from gui_assets.publish.lerobot_export import write_export; "
    "write_export(Path(sys.argv[1]), video=sys.argv[2] == 'video')"
)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _build(work: Path, steps: int) -> Path:
    from gui_assets.pipeline.chain import RawSettings, build_directory
    from gui_assets.sources.mind2web.source import SPEC as MIND2WEB

    mirror = write_mirror(work / f"mirror-{steps}", steps, 1280, 1080, 20, os.cpu_count() or 2)
    out = work / f"out-lerobot-{steps}"
    if not (out / "mind2web_train" / "dataset_info.json").is_file():
        build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirror.parent.parent))
    return out


def _ours(out: Path, env: dict[str, str], mode: str = "images") -> dict[str, Any]:
    shutil.rmtree(out / "lerobot", ignore_errors=True)
    shutil.rmtree(out / "_work" / "lerobot", ignore_errors=True)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", OURS, str(out), mode]
    code, rss = run_measured(cmd, REPO, build_process_env(env), None)
    seconds = time.perf_counter() - t0
    if code:
        raise SystemExit("our export failed")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(rss), "bytes": _du(out / "lerobot")}


def _video_quality(out: Path) -> dict[str, Any]:
    """The video file's bytes against the lossless export's agentview bytes, and the PSNR of every
    decoded frame against the shard's."""
    import av
    import h5py
    import numpy as np

    root = out / "lerobot" / "mind2web_train"

    def shard_frames():  # one frame in memory at a time, in export order
        for shard in sorted((out / "mind2web_train").glob("*.hdf5")):
            with h5py.File(shard, "r") as f:
                for name in sorted(f["data"], key=lambda k: int(k[5:])):
                    frames = f["data"][name]["obs/agentview_rgb"]
                    for t in range(len(frames)):
                        yield frames[t]

    videos = sorted((root / "videos").rglob("*.mp4"))
    psnr = []
    decoded = (f.to_ndarray(format="rgb24") for v in videos for f in av.open(str(v)).decode(video=0))
    for got, want in zip(decoded, shard_frames(), strict=True):
        mse = float(np.mean((got.astype(np.float64) - want) ** 2))
        psnr.append(99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse))
    return {
        "video_bytes": sum(v.stat().st_size for v in videos),
        "psnr_mean_db": round(float(np.mean(psnr)), 2),
        "psnr_min_db": round(float(np.min(psnr)), 2),
        "frames": len(psnr),
    }


def _theirs(out: Path, python: Path, work: Path, env: dict[str, str]) -> dict[str, Any]:
    root = work / "lerobot-writer"
    shutil.rmtree(root, ignore_errors=True)
    shards = sorted((out / "mind2web_train").glob("*.hdf5"))
    log = work / "lerobot-writer.log"
    lenv = {**env, "HF_HUB_OFFLINE": "1", "HF_HOME": str(work / "hf-home")}
    lenv.pop("PYTHONPATH", None)
    cmd = [str(python), "-m", "benchmarks.lerobot_writer", *map(str, shards), "--root", str(root)]
    with open(log, "wb") as fh:
        code, rss = run_measured(cmd, REPO, lenv, fh)
    if code:
        raise SystemExit(f"lerobot's writer failed; see {log}")
    report = json.loads(log.read_text().strip().splitlines()[-1])
    return {**report, "peak_rss_mb": round(rss), "bytes": _du(root)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_bench"))
    ap.add_argument("--lerobot-python", type=Path, default=REPO / ".venv-lerobot" / "bin" / "python")
    ap.add_argument("--video", action="store_true", help="also the video option: its time, size and PSNR")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = _build(args.work, args.steps)
    result: dict[str, Any] = {"machine": _machine(), "steps": args.steps, "frame": "1280x1080"}
    result["ours"] = _ours(out, env)
    result["lerobot"] = _theirs(out, args.lerobot_python, args.work, env)
    result["speedup"] = round(result["lerobot"]["lerobot_seconds"] / result["ours"]["seconds"], 2)
    result["speedup_whole"] = round(result["lerobot"]["seconds"] / result["ours"]["seconds"], 2)
    print(f"{'':24}{'seconds':>9}{'peak RSS MB':>13}{'MB written':>12}")
    for name, r in (("ours (lerobot_export)", result["ours"]), ("lerobot's own writer", result["lerobot"])):
        print(f"{name:24}{r['seconds']:>9}{r['peak_rss_mb']:>13}{r['bytes'] >> 20:>12}")
    print(
        f"speedup {result['speedup']}x against lerobot's own calls "
        f"({result['lerobot']['lerobot_seconds']} s), {result['speedup_whole']}x against its whole run"
    )
    if args.video:
        lossless_agentview = result["ours"]["bytes"]
        result["video"] = {**_ours(out, env, "video"), **_video_quality(out)}
        v = result["video"]
        print(
            f"video option: {v['seconds']} s, peak RSS {v['peak_rss_mb']} MB, {v['bytes'] >> 20} MB in all "
            f"(lossless {lossless_agentview >> 20} MB); agentview video {v['video_bytes'] >> 20} MB, "
            f"PSNR {v['psnr_mean_db']} dB mean, {v['psnr_min_db']} dB lowest, over {v['frames']} frames"
        )
    (args.work / "results-lerobot.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
