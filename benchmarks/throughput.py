"""Throughput benchmark: the project's CLI build against the hand-written h5py script.

    python -m benchmarks.throughput --steps 1000

Generates (once, cached under --work) `--steps` realistic screenshots in the Mind2Web layout,
then in the same run times
  1. the hand-written script (benchmarks/handwritten.py: Pillow, h5py gzip-4, one process), and
  2. the project's whole CLI build of the partition, adapter to dataset_info.json with every
     asset check: `dagster asset materialize -m gui_assets --select <chain> --partition train`,
and prints steps/s, bytes per step and peak RSS of each, with their ratio. Both outputs are
then read back with plain h5py and compared pixel for pixel on sampled frames.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from benchmarks.frames import write_mirror

REPO = Path(__file__).resolve().parent.parent
CHAIN = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards,mind2web_dataset_info"
EXECUTORS = ("in_process", "multiprocess")  # GUI_ASSETS_EXECUTOR for the CLI run


def _run(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB (the process and every descendant it waited for), status."""
    start = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode


def _machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    with contextlib.suppress(OSError):
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "memory": mem,
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),
    }


def _sample_equal(ours: list[Path], theirs: Path, samples: int, seed: int) -> dict[str, Any]:
    """Read both outputs with plain h5py; compare sampled frames by episode and step."""
    by_episode: dict[str, tuple[Path, str]] = {}
    for shard in ours:
        with h5py.File(shard, "r") as f:
            for name, demo in f["data"].items():
                by_episode[str(demo.attrs["episode_id"])] = (shard, name)
    compared = 0
    rng = random.Random(seed)
    with h5py.File(theirs, "r") as ref:
        demos = sorted(ref["data"].keys(), key=lambda n: int(n[5:]))
        ids = sorted(by_episode)
        if len(ids) != len(demos):
            raise AssertionError(f"{len(ids)} episodes built, {len(demos)} by the script")
        for _ in range(samples):
            i = rng.randrange(len(ids))  # both sort episodes by annotation_id
            shard, name = by_episode[ids[i]]
            ref_frames = ref[f"data/{demos[i]}/obs/agentview_rgb"]
            t = rng.randrange(ref_frames.shape[0])
            with h5py.File(shard, "r") as f:
                av = f[f"data/{name}/obs/agentview_rgb"]
                if av.compression != "gzip" or av.chunks != (1, *av.shape[1:]):
                    raise AssertionError(f"{shard.name}/{name}: {av.compression} {av.chunks}")
                if not np.array_equal(av[t], ref_frames[t]):
                    raise AssertionError(f"{shard.name}/{name} step {t} differs from the script's frame")
            compared += 1
    return {"frames_compared": compared, "equal": True}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--episode-len", type=int, default=20)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_bench"))
    ap.add_argument("--executor", choices=EXECUTORS, action="append", help="default: in_process")
    ap.add_argument("--samples", type=int, default=40, help="frames compared between the two outputs")
    args = ap.parse_args(argv)
    executors = args.executor or ["in_process"]

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    repo = write_mirror(
        work / "mirror", args.steps, args.width, args.height, args.episode_len, os.cpu_count() or 1
    )
    print(f"frames ready in {time.perf_counter() - t0:.1f}s: {repo}", flush=True)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUI_ASSETS_", "DAGSTER_"))}
    results: dict[str, Any] = {
        "machine": _machine(),
        "steps": args.steps,
        "frame": f"{args.width}x{args.height}",
    }

    hand_out = work / "handwritten.hdf5"
    hand_out.unlink(missing_ok=True)
    secs, rss, rc = _run(
        [sys.executable, "-m", "benchmarks.handwritten", str(repo), str(hand_out)],
        env,
        work / "handwritten.log",
    )
    if rc:
        raise SystemExit(f"the hand-written script failed; see {work / 'handwritten.log'}")
    results["handwritten"] = {
        "seconds": round(secs, 2),
        "steps_per_s": round(args.steps / secs, 2),
        "bytes_per_step": round(hand_out.stat().st_size / args.steps),
        "peak_rss_mb": round(rss),
    }
    print(f"hand-written script: {secs:.1f}s", flush=True)

    for executor in executors:
        out = work / f"out-{executor}"
        home = work / f"dagster-home-{executor}"
        for p in (out, home):
            shutil.rmtree(p, ignore_errors=True)
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets",
               "--select", CHAIN, "--partition", "train"]  # fmt: skip
        run_env = {
            **env,
            "GUI_ASSETS_MIRROR": str(work / "mirror"),
            "GUI_ASSETS_OUT": str(out),
            "DAGSTER_HOME": str(home),
        }
        log = work / f"cli-{executor}.log"
        secs, rss, rc = _run(cmd, run_env, log)
        if rc:
            raise SystemExit(f"the CLI build ({executor}) failed; see {log}")
        info = json.loads((out / "mind2web_train" / "dataset_info.json").read_text(encoding="utf-8"))
        shards = sorted((out / "mind2web_train").glob("mind2web_train_*.hdf5"))
        steps = info["stats"]["steps"]
        if steps != args.steps:
            raise SystemExit(f"the build wrote {steps} steps of {args.steps}; see {log}")
        results[f"cli_{executor}"] = {
            "seconds": round(secs, 2),
            "steps_per_s": round(steps / secs, 2),
            "bytes_per_step": round(sum(p.stat().st_size for p in shards) / steps),
            "peak_rss_mb": round(rss),
            "shards": len(shards),
            "frame_codec": info["build"]["config"]["frame_codec"],
            "speedup": round(results["handwritten"]["seconds"] / secs, 2),
            "size_ratio": round(sum(p.stat().st_size for p in shards) / hand_out.stat().st_size, 4),
            "readback": _sample_equal(shards, hand_out, args.samples, seed=0),
        }
        print(f"CLI build ({executor}): {secs:.1f}s", flush=True)

    rows = [("hand-written script", results["handwritten"])] + [
        (f"gui_assets CLI ({e})", results[f"cli_{e}"]) for e in executors
    ]
    print(f"\n{args.steps} steps of {args.width}x{args.height}, {results['machine']['cpus']} CPUs "
          f"({results['machine']['cpu_model']})")  # fmt: skip
    head = ("seconds", "steps/s", "KB/step", "peak RSS MB", "speed-up", "size")
    print(f"{'':24} " + " ".join(f"{h:>{w}}" for h, w in zip(head, (8, 8, 8, 12, 9, 7), strict=True)))
    for name, r in rows:
        speed = f"{r['speedup']:.2f}x" if "speedup" in r else "1.00x"
        size = f"{r['size_ratio']:.3f}" if "size_ratio" in r else "1.000"
        print(f"{name:24} {r['seconds']:>8.1f} {r['steps_per_s']:>8.1f} {r['bytes_per_step'] / 1000:>8.0f} "
              f"{r['peak_rss_mb']:>12} {speed:>9} {size:>7}")  # fmt: skip
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nresults: {work / 'results.json'}")
    return results


if __name__ == "__main__":
    main()
