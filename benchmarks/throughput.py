"""Throughput benchmark: the project's CLI builds against the hand-written h5py script.

    python -m benchmarks.throughput --steps 1200 --scale 4

Generates (once, cached under --work) `--steps` realistic screenshots in the Mind2Web layout
(and `--scale` times as many, when given), then in the same run times
  1. the hand-written script (benchmarks/handwritten.py: Pillow, h5py gzip-4, one process);
  2. the chain: `dagster asset materialize -m gui_assets --select <chain> --partition train`,
     adapter to dataset_info.json with every asset check, no publishing;
  3. the user's command: `dagster asset materialize --select 'mind2web*' --partition train`,
     the chain plus publishing (upload to <out>/hub/, preview, card, hub card, cua-lite export),
     with the seconds of each of its steps read from the run log;
and prints steps/s, bytes per step and peak RSS of each, with their ratio to the script. With
--scale, the script and the user's command run again on the larger mirror, and the marginal
rate (the extra steps over the extra seconds) is reported apart from start-up costs, against
the decode-and-deflate bound measured in the same run (just before and just after the larger
command, averaged): the steps/s at which every usable CPU decodes the larger mirror's
screenshots, cuts the eye crop and deflates both at the build's level, with no I/O, HDF5 or
Dagster at all. Every output is read back with plain h5py and
compared pixel for pixel with the script's on sampled frames. Last, the screen fingerprint and
pixel checksum the writer adds to each step (for the screen-overlap audit) are timed against the
step's decode, crop and deflate on the same screenshots: the share they add to the shard stage.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from benchmarks.frames import iter_frames, write_mirror
from benchmarks.peak_rss import run_measured
from gui_assets.core.config import BuildConfig, usable_cpus
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.fingerprint import screen_fingerprint
from gui_assets.core.images import decode_rgb
from gui_assets.core.memory import build_process_env
from gui_assets.pipeline.frames import frame_deflater

REPO = Path(__file__).resolve().parent.parent
CHAIN = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards,mind2web_dataset_info"
USERS = "mind2web*"  # the selection users type: the chain and everything downstream of it
EXECUTORS = ("in_process", "multiprocess")  # GUI_ASSETS_EXECUTOR for the CLI run
# Steps whose seconds count as publishing in the user's command.
PUBLISHING = (
    "mind2web_upload",
    "preview",
    "dataset_card",
    "hub_card",
    "cua_lite_export",
    "lerobot_export",
    "hub_lerobot",
)
_STEP_DONE = re.compile(r'STEP_SUCCESS - Finished execution of step "([^"]+)" in ([0-9.]+)(ms|s|m)')


def _run(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float, int]:
    """Wall seconds, the command's own peak RSS in MB (see peak_rss), exit status.

    Every timed run starts with nothing of another run still being written back, so it pays for
    its own disk writes only, not for the script's gigabytes of output (or a predecessor's
    deletions) landing in whichever of its steps happens to be reading."""
    os.sync()
    start = time.perf_counter()
    with log.open("wb") as out:
        code, peak = run_measured(cmd, REPO, env, out)
    return time.perf_counter() - start, peak, code


def _clear_outputs(work: Path) -> None:
    """Remove every output an earlier benchmark left, once, before any run, and let the disk
    take the deletions. Deleting a run's thousands of files right before the next run would bill
    that run for their write-back and for ext4 searching past just-freed inodes (a few percent
    of its adapter stage)."""
    for p in [*work.glob("out-*"), *work.glob("dagster-home-*"), *work.glob("handwritten-*.hdf5")]:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    os.sync()


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


def _step_seconds(log: Path) -> dict[str, float]:
    """Seconds of each step of a run, from Dagster's STEP_SUCCESS lines in the CLI's output."""
    seconds: dict[str, float] = {}
    for m in _STEP_DONE.finditer(log.read_text(encoding="utf-8", errors="replace")):
        value = float(m.group(2)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(3)]
        seconds[m.group(1)] = seconds.get(m.group(1), 0.0) + value
    return seconds


def _script(work: Path, repo: Path, steps: int, env: dict[str, str], tag: str) -> dict[str, Any]:
    out = work / f"handwritten-{tag}.hdf5"
    out.unlink(missing_ok=True)
    log = work / f"handwritten-{tag}.log"
    secs, rss, rc = _run([sys.executable, "-m", "benchmarks.handwritten", str(repo), str(out)], env, log)
    if rc:
        raise SystemExit(f"the hand-written script failed; see {log}")
    print(f"hand-written script ({steps} steps): {secs:.1f}s", flush=True)
    return {
        "steps": steps,
        "seconds": round(secs, 2),
        "steps_per_s": round(steps / secs, 2),
        "bytes_per_step": round(out.stat().st_size / steps),
        "peak_rss_mb": round(rss),
        "output": str(out),
    }


def _cli(
    work: Path,
    mirror: Path,
    steps: int,
    env: dict[str, str],
    script: dict[str, Any],
    *,
    select: str,
    executor: str,
    tag: str,
    samples: int,
    deflate_level: int | None = None,
) -> dict[str, Any]:
    out = work / f"out-{tag}"
    home = work / f"dagster-home-{tag}"
    for p in (out, home):
        shutil.rmtree(p, ignore_errors=True)
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets",
           "--select", select, "--partition", "train"]  # fmt: skip
    if deflate_level is not None:
        build = {"resources": {"build": {"config": {"libdeflate_level": deflate_level}}}}
        cmd += ["--config-json", json.dumps(build)]
    run_env = {
        **build_process_env(env),  # the allocator settings a build process starts with
        "GUI_ASSETS_MIRROR": str(mirror),
        "GUI_ASSETS_OUT": str(out),
        "GUI_ASSETS_EXECUTOR": executor,
        "DAGSTER_HOME": str(home),
    }
    log = work / f"cli-{tag}.log"
    secs, rss, rc = _run(cmd, run_env, log)
    if rc:
        raise SystemExit(f"the CLI build ({tag}) failed; see {log}")
    info = json.loads((out / "mind2web_train" / "dataset_info.json").read_text(encoding="utf-8"))
    shards = sorted((out / "mind2web_train").glob("mind2web_train_*.hdf5"))
    built = info["stats"]["steps"]
    if built != steps:
        raise SystemExit(f"the build wrote {built} steps of {steps}; see {log}")
    hand = Path(script["output"])
    size = sum(p.stat().st_size for p in shards)
    result: dict[str, Any] = {
        "select": select,
        "steps": steps,
        "seconds": round(secs, 2),
        "steps_per_s": round(steps / secs, 2),
        "bytes_per_step": round(size / steps),
        "peak_rss_mb": round(rss),
        "shards": len(shards),
        "libdeflate_level": info["build"]["config"]["libdeflate_level"],
        "speedup": round(script["seconds"] / secs, 2),
        "size_ratio": round(size / hand.stat().st_size, 4),
        "readback": _sample_equal(shards, hand, samples, seed=0),
    }
    step_seconds = _step_seconds(log)
    if step_seconds:
        result["step_seconds"] = {
            k: round(v, 2) for k, v in sorted(step_seconds.items(), key=lambda kv: -kv[1])
        }
        publishing = sum(v for k, v in step_seconds.items() if k in PUBLISHING)
        if select == USERS:
            result["publishing_seconds"] = round(publishing, 2)
            result["publishing_share"] = round(publishing / secs, 4)
    print(f"CLI {select!r} ({executor}, {steps} steps): {secs:.1f}s", flush=True)
    return result


def decode_deflate_bound(repo: Path, frames: int, level: int) -> dict[str, Any]:
    """Steps/s of the shard writer's per-step CPU work alone, on every usable CPU: decode a
    screenshot, cut its eye crop, deflate both at `level`. `frames` screenshots of `repo` are
    read first, so the time holds no I/O; the decoder and deflater are the writer's own and
    release the GIL, as they do in the writer's thread pool."""
    deflate = frame_deflater(BuildConfig(libdeflate_level=level))
    pngs = [png for _, _, png, _ in itertools.islice(iter_frames(repo), frames)]

    def step(png: bytes) -> int:
        page = decode_rgb(png)
        eye = np.ascontiguousarray(page[:EYE_SIZE, :EYE_SIZE])
        return len(deflate(memoryview(page).cast("B"))) + len(deflate(memoryview(eye).cast("B")))

    threads = usable_cpus()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(step, pngs[: 2 * threads]))  # warm: imports, allocator, page cache
        start = time.perf_counter()
        deflated = sum(pool.map(step, pngs))
        seconds = time.perf_counter() - start
    return {
        "frames": len(pngs),
        "threads": threads,
        "libdeflate_level": level,
        "steps_per_s": round(len(pngs) / seconds, 2),
        "bytes_per_step": round(deflated / len(pngs)),
    }


def fingerprint_overhead(repo: Path, frames: int, level: int, rounds: int = 3) -> dict[str, Any]:
    """The screen fingerprint the shard writer adds to each step (pipeline.frames; its pixel
    checksum is the Adler-32 trailer of the zlib chunk it writes anyway, read for free),
    against the step's decode, crop and deflate, on one thread (CPU time, not wall time) and
    on the same screenshots, the two timed in alternation so a shared machine's drift falls on
    both: milliseconds a step and the share added."""
    deflate = frame_deflater(BuildConfig(libdeflate_level=level))
    pngs = [png for _, _, png, _ in itertools.islice(iter_frames(repo), frames)]
    pages = [decode_rgb(p) for p in pngs[:8]]  # warm the imports and the allocator
    for page in pages:
        screen_fingerprint(page)
    work = {"writer": 0.0, "fingerprint": 0.0}
    for _ in range(rounds):
        for png in pngs:
            start = time.process_time()
            page = decode_rgb(png)
            frame = np.ascontiguousarray(page)
            eye = np.ascontiguousarray(page[:EYE_SIZE, :EYE_SIZE])
            deflate(memoryview(frame).cast("B"))
            deflate(memoryview(eye).cast("B"))
            middle = time.process_time()
            screen_fingerprint(frame)
            end = time.process_time()
            work["writer"] += middle - start
            work["fingerprint"] += end - middle
    steps = rounds * len(pngs)
    return {
        "frames": len(pngs),
        "rounds": rounds,
        "writer_ms": round(1000 * work["writer"] / steps, 3),
        "fingerprint_ms": round(1000 * work["fingerprint"] / steps, 3),
        "share": round(work["fingerprint"] / work["writer"], 4),
    }


def _marginal(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    """Steps per second of the extra steps: start-up and other fixed costs cancel out."""
    extra_steps = large["steps"] - small["steps"]
    extra_seconds = large["seconds"] - small["seconds"]
    return {
        "extra_steps": extra_steps,
        "extra_seconds": round(extra_seconds, 2),
        "steps_per_s": round(extra_steps / extra_seconds, 2) if extra_seconds > 0 else float("inf"),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--scale", type=int, default=0, help="also run at steps x scale for the marginal rate")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--episode-len", type=int, default=20)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_bench"))
    ap.add_argument("--executor", choices=EXECUTORS, action="append", help="default: in_process")
    ap.add_argument("--no-chain", action="store_true", help="skip the chain-only run")
    ap.add_argument("--samples", type=int, default=40, help="frames compared between the outputs")
    ap.add_argument(
        "--deflate-level",
        type=int,
        help="the builds' libdeflate_level (1-12); default: the knob's default",
    )
    ap.add_argument(
        "--bound-frames", type=int, default=400, help="screenshots the decode-and-deflate bound is timed on"
    )
    args = ap.parse_args(argv)
    executors = args.executor or ["in_process"]

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    sizes = [args.steps] + ([args.steps * args.scale] if args.scale > 1 else [])
    mirrors: dict[int, Path] = {}
    repos: dict[int, Path] = {}
    for steps in sizes:
        t0 = time.perf_counter()
        mirrors[steps] = work / f"mirror-{steps}"
        repos[steps] = write_mirror(
            mirrors[steps], steps, args.width, args.height, args.episode_len, os.cpu_count() or 1
        )
        print(f"{steps} frames ready in {time.perf_counter() - t0:.1f}s: {repos[steps]}", flush=True)

    _clear_outputs(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUI_ASSETS_", "DAGSTER_"))}
    results: dict[str, Any] = {
        "machine": _machine(),
        "steps": args.steps,
        "frame": f"{args.width}x{args.height}",
        "runs": {},
    }
    runs = results["runs"]
    rows: list[tuple[str, dict[str, Any]]] = []
    level = args.deflate_level or BuildConfig().libdeflate_level
    bounds: list[dict[str, Any]] = []  # just before and just after the larger size's commands
    for steps in sizes:
        script = runs[f"script@{steps}"] = _script(work, repos[steps], steps, env, str(steps))
        rows.append((f"hand-written script @{steps}", script))
        if len(sizes) == 2 and steps == sizes[1]:
            bounds.append(decode_deflate_bound(repos[steps], args.bound_frames, level))
        for executor in executors:
            common = {"executor": executor, "samples": args.samples, "deflate_level": args.deflate_level}
            # (run key, selection, row label): the chain only at the first size, when asked
            selections = [("users", USERS, "'mind2web*'")]
            if steps == args.steps and not args.no_chain:
                selections.insert(0, ("chain", CHAIN, "chain"))
            for kind, select, label in selections:
                r = _cli(
                    work,
                    mirrors[steps],
                    steps,
                    env,
                    script,
                    select=select,
                    tag=f"{kind}-{executor}-{steps}",
                    **common,
                )
                runs[f"{kind}-{executor}@{steps}"] = r
                rows.append((f"{label} ({executor}) @{steps}", r))
    if len(sizes) == 2:
        small, large = sizes
        marginal = {"script": _marginal(runs[f"script@{small}"], runs[f"script@{large}"])}
        for executor in executors:
            key = f"users-{executor}"
            marginal[key] = _marginal(runs[f"{key}@{small}"], runs[f"{key}@{large}"])
            marginal[key]["ratio_to_script"] = round(
                marginal[key]["steps_per_s"] / marginal["script"]["steps_per_s"], 2
            )
            rss = (runs[f"{key}@{small}"]["peak_rss_mb"], runs[f"{key}@{large}"]["peak_rss_mb"])
            marginal[key]["peak_rss_growth"] = round(rss[1] / rss[0] - 1, 4)
        results["marginal"] = marginal
        bounds.append(decode_deflate_bound(repos[large], args.bound_frames, level))
        # A shared machine's speed drifts: the bound is the mean of the two, each kept.
        bound = results["bound"] = {
            **bounds[0],
            "steps_per_s": round(sum(b["steps_per_s"] for b in bounds) / len(bounds), 2),
            "before_and_after": [b["steps_per_s"] for b in bounds],
        }
        for executor in executors:
            m = marginal[f"users-{executor}"]
            m["share_of_bound"] = round(m["steps_per_s"] / bound["steps_per_s"], 3)

    fp = results["fingerprint"] = fingerprint_overhead(repos[sizes[-1]], args.bound_frames, level)
    print(f"\n{args.width}x{args.height} frames, {results['machine']['cpus']} CPUs "
          f"({results['machine']['cpu_model']})")  # fmt: skip
    head = ("seconds", "steps/s", "KB/step", "peak RSS MB", "speed-up", "size", "publishing")
    widths = (8, 8, 8, 12, 9, 7, 11)
    print(f"{'':34} " + " ".join(f"{h:>{w}}" for h, w in zip(head, widths, strict=True)))
    for name, r in rows:
        speed = f"{r['speedup']:.2f}x" if "speedup" in r else "1.00x"
        size = f"{r['size_ratio']:.3f}" if "size_ratio" in r else "1.000"
        pub = f"{r['publishing_share'] * 100:.1f}%" if "publishing_share" in r else ""
        print(f"{name:34} {r['seconds']:>8.1f} {r['steps_per_s']:>8.1f} {r['bytes_per_step'] / 1000:>8.0f} "
              f"{r['peak_rss_mb']:>12} {speed:>9} {size:>7} {pub:>11}")  # fmt: skip
    if "bound" in results:
        b = results["bound"]
        around = " and ".join(f"{v:.1f}" for v in b["before_and_after"])
        print(f"decode-and-deflate bound: {b['steps_per_s']:.1f} steps/s ({around} before and after the "
              f"larger command; {b['frames']} screenshots, {b['threads']} threads, libdeflate level "
              f"{b['libdeflate_level']})")  # fmt: skip
    for name, m in results.get("marginal", {}).items():
        extra = f", {m['ratio_to_script']:.2f}x the script's" if "ratio_to_script" in m else ""
        extra += f", {m['share_of_bound'] * 100:.0f}% of the bound" if "share_of_bound" in m else ""
        growth = f", peak RSS {m['peak_rss_growth'] * 100:+.1f}%" if "peak_rss_growth" in m else ""
        print(f"marginal {name}: {m['extra_steps']} extra steps in {m['extra_seconds']:.1f}s = "
              f"{m['steps_per_s']:.1f} steps/s{extra}{growth}")  # fmt: skip
    print(f"screen fingerprint: {fp['fingerprint_ms']:.2f} ms of CPU a step against the "
          f"step's decode, crop and deflate {fp['writer_ms']:.2f} ms: +{fp['share'] * 100:.1f}% "
          f"({fp['frames']} screenshots x {fp['rounds']}, one thread)")  # fmt: skip
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nresults: {work / 'results.json'}")
    return results


if __name__ == "__main__":
    main()
