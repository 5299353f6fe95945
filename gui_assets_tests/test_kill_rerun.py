"""SIGKILL a real CLI build at random moments, check what it left, rerun, compare.

A build runs for hours; machines die. After every kill nothing under a final name may be
partial (shards open and hold what their attributes say, JSON and Parquet parse, every image
in the store hashes to its name), and the rerun must produce exactly the arrays and the
dataset_info.json of a build that was never interrupted.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest

from benchmarks.frames import write_mirror
from gui_assets_tests.conftest import clean_env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CHAIN = "mind2web,mind2web_episodes,mind2web_splits,mind2web_shards,mind2web_dataset_info"
DIRECTORY = "mind2web_train"
KILLS = 8


def _cli(out: Path, mirror: Path, home: Path) -> subprocess.Popen:
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(out), DAGSTER_HOME=str(home))
    cmd = [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "gui_assets", "--select", CHAIN,
           "--partition", "train", "--config-json",
           json.dumps({"resources": {"build": {"config": {"shard_cap_mb": 2}}}})]  # fmt: skip
    # The CLI's events go to a file: a pipe nobody reads while the test waits fills up and stalls
    # the build (a run prints well over a pipe's 64 KiB).
    with (home / "cli.log").open("ab") as log:
        return subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
        )


def _log_tail(home: Path) -> str:
    return (home / "cli.log").read_text(encoding="utf-8", errors="replace")[-3000:]


def _visible(p: Path) -> bool:
    return not any(part.startswith(".") for part in p.parts)


def assert_nothing_partial(out: Path) -> dict[str, int]:
    """Every file under a final name is whole; returns what was found, by kind."""
    seen = {"shards": 0, "json": 0, "parquet": 0, "images": 0}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out)
        if not p.is_file() or not _visible(rel):
            continue
        if p.suffix == ".hdf5":
            with h5py.File(p, "r") as f:
                data = f["data"]
                demos = [data[k] for k in data]
                assert data.attrs["total"] == sum(int(d.attrs["num_samples"]) for d in demos), rel
                for d in demos:
                    av = d["obs/agentview_rgb"]
                    assert av.shape[0] == d.attrs["num_samples"]
                    av[av.shape[0] - 1]  # the last chunk is there and inflates
            seen["shards"] += 1
        elif p.suffix == ".json":
            json.loads(p.read_text(encoding="utf-8"))
            seen["json"] += 1
        elif p.suffix == ".parquet":
            pq.read_table(p)
            seen["parquet"] += 1
        elif "images" in rel.parts:
            assert hashlib.sha256(p.read_bytes()).hexdigest() == p.stem, rel
            seen["images"] += 1
    return seen


def _arrays(path: Path) -> dict[str, object]:
    found: dict[str, object] = {}

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            found[name] = obj[()]
        found[f"{name}@attrs"] = dict(obj.attrs)  # type: ignore[attr-defined]

    with h5py.File(path, "r") as f:
        f.visititems(visit)
        found["@attrs"] = dict(f["data"].attrs)
    return found


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


_ABSENT = object()


def differences(a: object, b: object, at: str = "") -> list[str]:
    """Where two JSON values differ, as `path: mine != reference` lines (a whole-file diff of
    dataset_info.json is cut short by pytest before the field that matters)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(a.keys() | b.keys(), key=str)
        return [d for k in keys for d in differences(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{at}[{i}]")]
    if a is _ABSENT or b is _ABSENT:
        return [f"{at}: only in {'the reference' if a is _ABSENT else 'mine'}"]
    return [] if a == b else [f"{at}: {a!r} != {b!r}"]


def byte_differences(mine: list[Path], theirs: list[Path]) -> list[str]:
    """For pairs of files whose bytes differ: where they first differ and in how many runs, with
    the 48 bytes before (HDF5 structures start with a 4-byte signature such as GCOL, TREE or
    HEAP, which names the part of the file that was not reproducible)."""
    found = []
    for a, b in zip(mine, theirs, strict=True):
        x = np.fromfile(a, dtype=np.uint8)
        y = np.fromfile(b, dtype=np.uint8)
        n = min(len(x), len(y))
        differ = np.concatenate([x[:n] != y[:n], np.ones(abs(len(x) - len(y)), bool)])
        if not differ.any():
            continue
        at = int(np.argmax(differ))
        runs = int(np.count_nonzero(differ[1:] & ~differ[:-1])) + int(differ[0])
        found.append(
            f"{a.name}: {len(x)} vs {len(y)} B, first difference at {at} ({runs} runs); "
            f"before it {x[max(0, at - 48) : at].tobytes()!r}; "
            f"mine {x[at : at + 16].tobytes()!r}, reference {y[at : at + 16].tobytes()!r}"
        )
    return found


def test_sigkill_at_random_moments_then_rerun_gives_the_same_dataset(tmp_path, mirror_frames):
    mirror = tmp_path / "mirror"
    write_mirror(mirror, steps=60, width=1280, height=1080, episode_len=6, jobs=2, frames=mirror_frames)

    ref = tmp_path / "ref"
    start = time.monotonic()
    proc = _cli(ref, mirror, tmp_path / "home-ref")
    assert proc.wait(timeout=600) == 0, _log_tail(tmp_path / "home-ref")
    full = time.monotonic() - start
    ref_shards = sorted((ref / DIRECTORY).glob("*.hdf5"))
    assert len(ref_shards) >= 5  # several shard boundaries for a kill to land between

    out = tmp_path / "out"
    home = tmp_path / "home"
    rng = random.Random(20261129)
    moments = sorted(rng.uniform(0.5, full) for _ in range(KILLS))
    found = []
    for at in moments:
        proc = _cli(out, mirror, home)
        try:
            proc.wait(timeout=at)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        found.append(assert_nothing_partial(out))
    # And once exactly mid-shard: a unit's piece is being written after another one finished.
    # The reuse records go first: with them, a rerun after a finished build links its units back
    # (unit_reuse) instead of writing pieces to kill.
    shutil.rmtree(out / "_work" / DIRECTORY / "unit_index", ignore_errors=True)
    proc = _cli(out, mirror, home)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        pieces = list((out / "_work" / DIRECTORY / "units").glob("*/piece_*.hdf5"))
        done = {p.parent for p in pieces if (p.parent / "unit.json").exists()}
        writing = [p for p in pieces if p.parent not in done]
        # a piece is being written (its unit has not reported) after an earlier piece finished
        finished = [
            p
            for p in pieces
            if p.parent in done or p.with_name(f"piece_{int(p.stem[6:]) + 1:04d}.hdf5").exists()
        ]
        if writing and finished:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    assert proc.wait() == -signal.SIGKILL, "the build ended before a second shard was being written"
    found.append(assert_nothing_partial(out))
    print(f"killed at {[round(m, 1) for m in moments]} s of a {full:.1f} s build and mid-shard; left {found}")
    assert any(f["shards"] for f in found[:-1]) or any(f["images"] for f in found)  # kills landed mid-build

    proc = _cli(out, mirror, home)
    assert proc.wait(timeout=600) == 0, _log_tail(home)
    assert_nothing_partial(out)
    shards = sorted((out / DIRECTORY).glob("*.hdf5"))
    assert [p.name for p in shards] == [p.name for p in ref_shards]
    for mine, theirs in zip(shards, ref_shards, strict=True):
        a, b = _arrays(mine), _arrays(theirs)
        assert a.keys() == b.keys(), mine.name
        bad = [k for k in a if not _same(a[k], b[k])]
        assert not bad, (mine.name, bad[:5])
    info = json.loads((out / DIRECTORY / "dataset_info.json").read_text())
    want = json.loads((ref / DIRECTORY / "dataset_info.json").read_text())
    assert info == want, (differences(info, want), byte_differences(shards, ref_shards))
    leftovers = [
        str(p.relative_to(out)) for p in out.rglob(".*") if ".tmp-" in p.name or ".staging" in p.name
    ]
    leftovers += [str(p.relative_to(out)) for p in out.rglob("*.tmp-*") if p.is_dir()]
    assert not leftovers, leftovers  # the rerun swept what the kills left (temp files, staging)
