"""The same inputs give the same bytes under load: a partition rebuilt from scratch ten times,
with a CPU hog and a memory hog running beside it, writer threads at 1, 2 and 4, in-process and
multiprocess, through the CLI as a user runs it. Every shard's sha256 and every chain asset's
data version must be the same each time (a difference would be a false "stale" downstream)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from benchmarks.frames import write_mirror
from gui_assets_tests.conftest import clean_env, dagster_materialize

REPO_ROOT = Path(__file__).resolve().parents[1]
CHAIN = ["mind2web", "mind2web_episodes", "mind2web_splits", "mind2web_shards", "mind2web_dataset_info"]
# Ten builds: in-process at 1, 2 and 4 writer threads (eight), multiprocess at 1 and 4 (two).
RUNS = [("in_process", t) for t in (1, 2, 4, 1, 2, 4, 1, 2)] + [("multiprocess", 1), ("multiprocess", 4)]
# Shards of about 4 MB: several units, written apart and numbered at publish.
SMALL_SHARDS = json.dumps({"resources": {"build": {"config": {"shard_cap_mb": 4}}}})
CPU_HOG = "while True: pass"
# Holds about 3 GB and keeps touching it, so the page cache and the allocator are under pressure.
MEMORY_HOG = (
    "import numpy as np, time\n"
    "blocks = [np.ones(256 << 20, np.uint8) for _ in range(12)]\n"
    "while True:\n"
    "    for b in blocks: b[::4096] += 1\n"
    "    time.sleep(0.05)\n"
)


@pytest.fixture
def hogs() -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", code]) for code in (CPU_HOG, MEMORY_HOG)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _versions(home: Path) -> dict[str, str]:
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        out = {}
        for name in CHAIN:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=["train"]), limit=1
            ).records
            out[name] = records[0].event_log_entry.asset_materialization.tags["dagster/data_version"]
        return out


@pytest.mark.xfail(
    strict=False,
    reason="open bug (issue 29): in a CI run under load, one in-process rebuild (1 writer thread) "
    "wrote a different mind2web_train_0000.hdf5 than the others; cause not yet found",
)
def test_ten_rebuilds_under_load_give_the_same_bytes_and_versions(tmp_path, hogs):
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=30, width=1280, height=1080, episode_len=6, jobs=2)
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
    for executor, threads, shards, versions in seen[1:]:
        assert shards == first_shards, (executor, threads)
        assert versions == first_versions, (executor, threads)
