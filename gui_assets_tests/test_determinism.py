"""The same inputs give the same bytes under load: a partition rebuilt from scratch five times,
with a CPU hog and a memory hog running beside it, writer threads at 1, 2 and 4, in-process and
multiprocess, through the CLI as a user runs it. Every shard's sha256 and every chain asset's
data version must be the same each time (a difference would be a false "stale" downstream)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from benchmarks.frames import write_mirror
from gui_assets_tests.conftest import clean_env, dagster_materialize

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
CHAIN = ["mind2web", "mind2web_episodes", "mind2web_splits", "mind2web_shards", "mind2web_dataset_info"]
# Every executor and thread count once, and the most concurrent twice (where timing varies most):
# in-process at 1, 2 and 4 writer threads, multiprocess at 4, in-process at 4 again. One
# multiprocess run: its 17 steps each load the code location in a process of their own, so a
# second one would cost as much as the other runs together.
RUNS = [("in_process", 1), ("in_process", 2), ("in_process", 4), ("multiprocess", 4), ("in_process", 4)]
# Shards of about 4 MB: several units, written apart and numbered at publish.
SMALL_SHARDS = json.dumps({"resources": {"build": {"config": {"shard_cap_mb": 4}}}})
# Both hogs stop when their parent, the test worker, is gone (a worker killed mid-test never
# runs the fixture's teardown). The CPU hog spins and rests in bursts of random length (5 to 50
# ms each, seeded): the cores the build gets come and go at moments no run repeats, which moves
# the writer threads' interleaving more than a steady hog would, at half a core instead of one.
CPU_HOG = (
    "import os, random, sys, time\n"
    "rng = random.Random(20261205)\n"
    "while os.getppid() == int(sys.argv[1]):\n"
    "    end = time.perf_counter() + rng.uniform(0.005, 0.05)\n"
    "    while time.perf_counter() < end:\n"
    "        pass\n"
    "    time.sleep(rng.uniform(0.005, 0.05))\n"
)
# Holds about 3 GB, so the page cache and the allocator are under pressure, and keeps writing to
# it, a 256 MB block every 50 ms in turn (all 3 GB every 0.6 s took 40% of a core: with no swap,
# touching a page more often keeps it no more resident).
MEMORY_HOG = (
    "import itertools, numpy as np, os, sys, time\n"
    "blocks = [np.ones(256 << 20, np.uint8) for _ in range(12)]\n"
    "for b in itertools.cycle(blocks):\n"
    "    if os.getppid() != int(sys.argv[1]):\n"
    "        break\n"
    "    b[::4096] += 1\n"
    "    time.sleep(0.05)\n"
)


@pytest.fixture
def hogs() -> Iterator[None]:
    worker = str(os.getpid())
    procs = [subprocess.Popen([sys.executable, "-c", code, worker]) for code in (CPU_HOG, MEMORY_HOG)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _hdf5_difference(a: Path, b: Path) -> str:
    """Where two shards that should be equal differ: objects, attributes, values, stored chunk
    bytes, then raw byte ranges, so a failure in CI names its cause without the files."""
    import h5py
    import numpy as np

    notes: list[str] = []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names_a: list[str] = []
        names_b: list[str] = []
        fa.visit(names_a.append)
        fb.visit(names_b.append)
        if names_a != names_b:
            notes.append(f"objects differ: {sorted(set(names_a) ^ set(names_b))[:10]}")
        for name in [n for n in names_a if n in set(names_b)]:
            oa, ob = fa[name], fb[name]
            if dict(oa.attrs) != dict(ob.attrs):
                notes.append(f"{name}: attributes differ")
            if isinstance(oa, h5py.Dataset):
                if oa.shape != ob.shape or not np.array_equal(oa[()], ob[()]):
                    notes.append(f"{name}: values differ")
                elif oa.id.get_offset() != ob.id.get_offset():
                    notes.append(f"{name}: stored at {oa.id.get_offset()} vs {ob.id.get_offset()}")
                if oa.chunks and oa.shape == ob.shape:
                    for i in range(oa.id.get_num_chunks()):
                        ca, cb = oa.id.get_chunk_info(i), ob.id.get_chunk_info(i)
                        mask_a, chunk_a = oa.id.read_direct_chunk(ca.chunk_offset)
                        mask_b, chunk_b = ob.id.read_direct_chunk(cb.chunk_offset)
                        if (mask_a, chunk_a) != (mask_b, chunk_b):
                            at = next(
                                (k for k, (x, y) in enumerate(zip(chunk_a, chunk_b, strict=False)) if x != y),
                                min(len(chunk_a), len(chunk_b)),
                            )
                            notes.append(
                                f"{name}: stored chunk {ca.chunk_offset} bytes differ "
                                f"({len(chunk_a)} vs {len(chunk_b)}), first at byte {at}"
                            )
                        elif ca.byte_offset != cb.byte_offset:
                            notes.append(
                                f"{name}: chunk {ca.chunk_offset} at {ca.byte_offset} vs {cb.byte_offset}"
                            )
    ba, bb = a.read_bytes(), b.read_bytes()
    diff = [i for i in range(min(len(ba), len(bb))) if ba[i] != bb[i]]
    notes.append(f"sizes {len(ba)} vs {len(bb)}; {len(diff)} differing bytes, first at {diff[:8]}")
    return "\n".join(notes[:40])


def _versions(home: Path) -> dict[str, str]:
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        out = {}
        for name in CHAIN:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=["train"]), limit=1
            ).records
            out[name] = records[0].event_log_entry.asset_materialization.tags["dagster/data_version"]
        return out


def test_rebuilds_under_load_give_the_same_bytes_and_versions(tmp_path, hogs, mirror_frames):
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=30, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames)
    seen: list[tuple[str, int, dict[str, str], dict[str, str]]] = []
    for i, (executor, threads) in enumerate(RUNS):
        out, home = tmp_path / f"out{i}", tmp_path / f"home{i}"
        home.mkdir()
        env = clean_env(
            GUI_ASSETS_MIRROR=str(mirror),
            GUI_ASSETS_OUT=str(out),
            DAGSTER_HOME=str(home),
            GUI_ASSETS_EXECUTOR=executor,
            GUI_ASSETS_WRITE_THREADS=str(threads),
        )
        args = ["--select", ",".join(CHAIN), "--partition", "train", "--config-json", SMALL_SHARDS]
        r = dagster_materialize(args, REPO_ROOT, env)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        shards = {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "mind2web_train").glob("*.hdf5"))
        }
        seen.append((executor, threads, shards, _versions(home)))
    _, _, first_shards, first_versions = seen[0]
    assert len(first_shards) >= 4
    for i, (executor, threads, shards, versions) in enumerate(seen[1:], start=1):
        differ = sorted(n for n in first_shards if shards.get(n) != first_shards[n])
        first_dir, this_dir = tmp_path / "out0/mind2web_train", tmp_path / f"out{i}/mind2web_train"
        explain = [f"{n}: {_hdf5_difference(first_dir / n, this_dir / n)}" for n in differ if n in shards]
        assert shards == first_shards, (executor, threads, differ, "\n".join(explain))
        assert versions == first_versions, (executor, threads)
