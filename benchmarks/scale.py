"""Scale: one partition at about 4,000 and 40,000 steps, stage by stage, as users run them.

    python -m benchmarks.scale --steps 4000 --steps 40000 [--celery 4000]

For each size, a Mind2Web mirror of that many distinct 1280x1080 steps is generated cheaply
(`benchmarks.frames.cheap_screenshot`: a few ms a frame, cached under --work), then every stage
of the chain runs as its own CLI command (`dagster asset materialize -m gui_assets --select
<stage> --partition train`, with the stage's checks), each measured on its own:
  - wall seconds and steps/s;
  - peak RSS of the command itself (benchmarks.peak_rss);
  - bytes it wrote to storage (its rusage block output) against the bytes it left on disk;
  - the most disk it held while running (the file system's used blocks, sampled every 0.2 s)
    against what it left: the temporary disk;
  - the seconds of the asset's own steps and of its checks' steps, from the command's log.
With --rebuild N, the N-step partition is built, then rebuilt after a one-row edit of one
upstream file and then after a new file of 5% more steps, each compared with a build of the same inputs from
scratch and reported with what the shard stage wrote and linked (shards.json); with
--realistic that partition has the throughput benchmark's realistic screenshots, whose decoding
is what a first build mostly spends.
With --celery N, the N-step build runs once more with GUI_ASSETS_EXECUTOR=celery on two
Celery workers (Redis broker, as the scale-out deployment) and its shards must equal the
single-process build's byte for byte. Each build's output is removed once measured (--keep keeps
it): 40,000 steps need about 11 GB of mirror and 24 GB of output. Results go to
<work>/results-scale.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.frames import write_mirror
from benchmarks.peak_rss import run_measured_io
from benchmarks.throughput import _machine
from gui_assets.core.memory import build_process_env
from gui_assets.sources.mind2web.demo import SCHEMA

REPO = Path(__file__).resolve().parent.parent
STAGES = ("mind2web", "mind2web_episodes", "mind2web_splits", "mind2web_shards", "mind2web_dataset_info")
EPISODE_LEN = 20


class DiskSampler:
    """The file system's used bytes, sampled on a thread: the peak while a command ran."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.peak = self.used()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def used(self) -> int:
        st = os.statvfs(self.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self.used())

    def __enter__(self) -> DiskSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.used())


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _env(
    work: Path, mirror: Path, tag: str, executor: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    out, home = work / f"out-{tag}", work / f"home-{tag}"
    for p in (out, home):
        shutil.rmtree(p, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUI_ASSETS_", "DAGSTER_"))}
    return build_process_env(env) | {
        "GUI_ASSETS_MIRROR": str(mirror),
        "GUI_ASSETS_OUT": str(out),
        "GUI_ASSETS_EXECUTOR": executor,
        "DAGSTER_HOME": str(home),
        **(extra or {}),
    }


def _materialize(select: str) -> list[str]:
    return [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets",
            "--select", select, "--partition", "train"]  # fmt: skip


def run_stages(work: Path, mirror: Path, steps: int, keep: bool = False) -> dict[str, Any]:
    env = _env(work, mirror, str(steps), "in_process")
    out = Path(env["GUI_ASSETS_OUT"])
    out.mkdir(parents=True)
    stages = _stage_commands(work, env, out, steps, str(steps))
    shards = sorted((out / "mind2web_train").glob("mind2web_train_*.hdf5"))
    total = sum(s["seconds"] for s in stages.values())
    result = {
        "steps": steps,
        "stages": stages,
        "seconds": round(total, 2),
        "ms_per_step": round(1000 * total / steps, 3),
        "peak_rss_mb": max(s["peak_rss_mb"] for s in stages.values()),
        "shard_bytes": sum(p.stat().st_size for p in shards),
        "shard_sha256": {p.name: _sha256(p) for p in shards},
        "output_bytes": _du(out),
    }
    if not keep:  # 40,000 steps leave about 24 GB; the next size needs the room
        shutil.rmtree(out, ignore_errors=True)
    return result


_STEP_DONE = re.compile(r'Finished execution of step "([^"]+)" in ([0-9.]+)(ms|s)\.')


def _step_seconds(log: Path, stage: str) -> tuple[float, float]:
    """From a command's Dagster log: the seconds of the asset's own steps (for the shards, plan,
    units and publish) and of its checks' steps, leaving out the command's start-up."""
    asset = checks = 0.0
    for name, value, unit in _STEP_DONE.findall(log.read_text(encoding="utf-8", errors="replace")):
        seconds = float(value) / (1000 if unit == "ms" else 1)
        if name == stage or name.startswith(f"{stage}."):
            asset += seconds
        elif name.startswith(f"{stage}_"):
            checks += seconds
    return round(asset, 2), round(checks, 2)


def _stage_commands(work: Path, env: dict[str, str], out: Path, steps: int, tag: str) -> dict[str, Any]:
    """Each stage of the chain as its own measured CLI command, in order."""
    stages: dict[str, Any] = {}
    for stage in STAGES:
        log = work / f"scale-{tag}-{stage}.log"
        before_bytes = _du(out)
        os.sync()  # the last command's writes reach the disk first: each is timed on its own
        with DiskSampler(out) as disk, log.open("wb") as fh:
            start_used = disk.peak
            t = time.perf_counter()
            code, rss, written = run_measured_io(_materialize(stage), REPO, env, fh)
            seconds = time.perf_counter() - t
        if code:
            raise SystemExit(f"{stage} failed at {steps} steps; see {log}")
        left = _du(out) - before_bytes
        asset_seconds, checks_seconds = _step_seconds(log, stage)
        stages[stage] = {
            "seconds": round(seconds, 2),
            "asset_seconds": asset_seconds,
            "checks_seconds": checks_seconds,
            "steps_per_s": round(steps / seconds, 1),
            "ms_per_step": round(1000 * seconds / steps, 3),
            "peak_rss_mb": round(rss),
            "written_bytes": written,
            "left_bytes": left,
            "temporary_bytes": max(0, disk.peak - start_used - max(left, 0)),
        }
        print(
            f"  {steps} steps, {stage}: {seconds:.1f} s, {rss:.0f} MB, wrote {written / 1e9:.2f} GB",
            flush=True,
        )
    return stages


def _shard_hashes(out: Path) -> dict[str, str]:
    return {p.name: _sha256(p) for p in sorted((out / "mind2web_train").glob("mind2web_train_*.hdf5"))}


def _edited_copy(mirror: Path, dest: Path) -> Path:
    """The mirror with one row's typed text changed (hard links but for the one file rewritten)."""
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run(["cp", "-al", str(mirror), str(dest)], check=True)
    first = sorted(dest.rglob("train-*.parquet"))[0]
    table = pq.read_table(first)
    rows = table.to_pylist()
    typed = next(i for i, r in enumerate(rows) if json.loads(r["operation"])["op"] == "TYPE")
    rows[typed]["operation"] = json.dumps(
        {**json.loads(rows[typed]["operation"]), "value": "an edited query"}
    )
    tmp = first.with_name(f".{first.name}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), tmp)
    os.replace(tmp, first)  # a new file: the original mirror's hard link is untouched
    return dest


def _grown_copy(mirror: Path, dest: Path, steps: int, extra: int, cheap: bool) -> Path:
    """The mirror with `extra` new steps in a new file (whole episodes), as an upstream that grew."""
    from benchmarks.frames import _row

    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run(["cp", "-al", str(mirror), str(dest)], check=True)
    data = next(dest.rglob("data"))
    rows = [_row(i, 1280, 1080, EPISODE_LEN, cheap) for i in range(steps, steps + extra)]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), data / "train-99999-of-99999.parquet")
    return dest


def run_rebuilds(work: Path, mirror: Path, steps: int, cheap: bool = True) -> dict[str, Any]:
    """A build, then the same partition rebuilt after a one-row edit and after 5% more steps,
    stage by stage; each rebuild's shards are compared with a build of the same data from scratch."""
    env = _env(work, mirror, f"rebuild-{steps}", "in_process")
    out = Path(env["GUI_ASSETS_OUT"])
    out.mkdir(parents=True)
    first = _stage_commands(work, env, out, steps, f"rebuild-{steps}-first")
    shards_first = first["mind2web_shards"]
    result: dict[str, Any] = {
        "steps": steps,
        "first_shards_seconds": shards_first["seconds"],
        "first_shards_asset_seconds": shards_first["asset_seconds"],
    }
    extra = steps // 20 - (steps // 20) % EPISODE_LEN
    edited = _edited_copy(mirror, work / f"{mirror.name}-edited")
    changes = {  # one upstream history: a row edited, then a file appended
        "one_row_edited": edited,
        "grown_5_percent": _grown_copy(edited, work / f"{mirror.name}-grown", steps, extra, cheap),
    }
    for name, changed in changes.items():
        again = _stage_commands(
            work, env | {"GUI_ASSETS_MIRROR": str(changed)}, out, steps, f"rebuild-{name}"
        )
        shards = _shard_hashes(out)
        scratch_env = _env(work, changed, f"scratch-{name}", "in_process")
        Path(scratch_env["GUI_ASSETS_OUT"]).mkdir(parents=True)
        _stage_commands(work, scratch_env, Path(scratch_env["GUI_ASSETS_OUT"]), steps, f"scratch-{name}")
        seconds, asset = again["mind2web_shards"]["seconds"], again["mind2web_shards"]["asset_seconds"]
        manifest = json.loads((out / "_work/mind2web_train/shards.json").read_text(encoding="utf-8"))
        result[name] = {
            "shards_seconds": seconds,
            "share_of_first": round(seconds / result["first_shards_seconds"], 3),
            "asset_seconds": asset,
            "asset_share_of_first": round(asset / max(result["first_shards_asset_seconds"], 1e-9), 3),
            "units": manifest.get("reuse", {}),
            "identical_to_scratch": shards == _shard_hashes(Path(scratch_env["GUI_ASSETS_OUT"])),
        }
        if result[name]["identical_to_scratch"]:
            shutil.rmtree(scratch_env["GUI_ASSETS_OUT"], ignore_errors=True)
        else:  # kept for a look: the rebuild's shards are copied beside the scratch build
            shutil.copytree(out / "mind2web_train", work / f"rebuilt-{name}", dirs_exist_ok=True)
        print(f"  rebuild after {name}: {seconds:.1f} s (asset {asset:.1f} s), {result[name]}", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    return result


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_celery(work: Path, mirror: Path, steps: int, workers: int = 2) -> dict[str, Any]:
    """The whole chain on `workers` Celery workers (Redis broker): seconds and the shards' sha256."""
    if shutil.which("redis-server") is None:
        raise SystemExit("--celery needs redis-server (Debian's redis-server)")
    port = _free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    conf = work / "celery.yaml"
    conf.write_text(
        f'execution:\n  config:\n    broker: "{broker}"\n    backend: "{broker}"\n', encoding="utf-8"
    )
    extra = {
        "GUI_ASSETS_CELERY_BROKER": broker,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    env = _env(work, mirror, f"celery-{steps}", "celery", extra)
    procs = []
    try:
        # The storage schema is made once, before three processes race to make it.
        subprocess.run([sys.executable, "-m", "dagster", "instance", "migrate"], env=env, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
        for i in range(workers):
            log = (work / f"celery-worker-{i}.log").open("wb")
            procs.append(subprocess.Popen(
                ["dagster-celery", "worker", "start", "-A", "dagster_celery.app", "-y", str(conf),
                 "-n", f"w{i}@%h", "--", "--concurrency=1"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))  # fmt: skip
        log = work / f"celery-{steps}.log"
        t = time.perf_counter()
        with log.open("wb") as fh:
            code = subprocess.run(_materialize(",".join(STAGES)), cwd=REPO, env=env,
                                  stdout=fh, stderr=subprocess.STDOUT).returncode  # fmt: skip
        seconds = time.perf_counter() - t
        if code:
            raise SystemExit(f"the Celery build failed; see {log}")
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
        redis.terminate()
        redis.wait()
    shards = sorted((Path(env["GUI_ASSETS_OUT"]) / "mind2web_train").glob("mind2web_train_*.hdf5"))
    return {"steps": steps, "workers": workers, "seconds": round(seconds, 2),
            "shard_sha256": {p.name: _sha256(p) for p in shards}}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, action="append", help="partition sizes (default 4000 and 40000)")
    ap.add_argument("--celery", type=int, default=0, help="also build this size on two Celery workers")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gui_assets_bench/scale"))
    ap.add_argument("--keep", action="store_true", help="keep each build's output (removed once measured)")
    ap.add_argument(
        "--rebuild", type=int, default=0, help="also rebuild this size after a one-row edit and 5%% growth"
    )
    ap.add_argument(
        "--rebuild-files",
        type=int,
        default=0,
        help="the --rebuild mirror in this many upstream files (default: files of 200 steps)",
    )
    ap.add_argument(
        "--realistic",
        action="store_true",
        help="the --rebuild mirror with the throughput benchmark's realistic screenshots, not cheap frames",
    )
    args = ap.parse_args(argv)
    sizes = args.steps or [4000, 40000]
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"machine": _machine(), "runs": {}}
    mirrors = {}
    for steps in sorted(set(sizes) | ({args.celery} if args.celery else set())):
        t = time.perf_counter()
        mirrors[steps] = work / f"mirror-{steps}"
        write_mirror(mirrors[steps], steps, 1280, 1080, EPISODE_LEN, os.cpu_count() or 1, cheap=True)
        print(f"{steps} frames ready in {time.perf_counter() - t:.0f} s", flush=True)
    for steps in sizes:
        result["runs"][str(steps)] = run_stages(work, mirrors[steps], steps, args.keep)
        (work / "results-scale.json").write_text(json.dumps(result, indent=1) + "\n")
    if len(sizes) >= 2:
        small, large = (result["runs"][str(n)] for n in (min(sizes), max(sizes)))
        result["growth"] = {
            "ms_per_step": round(large["ms_per_step"] / small["ms_per_step"] - 1, 4),
            "peak_rss_mb": round(large["peak_rss_mb"] / small["peak_rss_mb"] - 1, 4),
        }
    if args.rebuild:
        cheap = not args.realistic
        rebuild_mirror = mirrors.get(args.rebuild) if cheap and not args.rebuild_files else None
        if rebuild_mirror is None:
            files = f"-{args.rebuild_files}files" if args.rebuild_files else ""
            rebuild_mirror = work / f"mirror-{args.rebuild}{'' if cheap else '-realistic'}{files}"
            t = time.perf_counter()
            jobs = os.cpu_count() or 1
            write_mirror(
                rebuild_mirror,
                args.rebuild,
                1280,
                1080,
                EPISODE_LEN,
                jobs,
                cheap=cheap,
                files=args.rebuild_files or None,
            )
            print(f"{args.rebuild} frames ready in {time.perf_counter() - t:.0f} s", flush=True)
        result["rebuild"] = run_rebuilds(work, rebuild_mirror, args.rebuild, cheap)
    if args.celery:
        celery = run_celery(work, mirrors[args.celery], args.celery)
        single = result["runs"].get(str(args.celery)) or run_stages(
            work, mirrors[args.celery], args.celery, args.keep
        )
        celery["identical_to_one_process"] = celery["shard_sha256"] == single["shard_sha256"]
        result["celery"] = celery
    (work / "results-scale.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1, default=str)[:6000])
    return result


if __name__ == "__main__":
    main()
