"""Memory of the chain's stages is bounded by a window, never by the partition.

Each stage runs in this process over generated Multimodal-Mind2Web partitions of N and 4N
steps; tracemalloc's peak (every Python allocation: rows, dicts, lists, buffers made into bytes)
must not grow with N beyond a small allowance. The adapter used to hold every reduced row of
the partition until its last file was read, the IR writer every episode's row, the split stage
and the IR reader the whole episode table.

Reading one upstream file is checked on Arrow's own pool: its peak must follow the row group,
not the file (pyarrow's pre-buffering read every row group of a file at once).
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import iter_episodes
from gui_assets.core.ir import Observation
from gui_assets.core.layout import OutLayout
from gui_assets.pipeline.chain import RawSettings, fetch_raw
from gui_assets.pipeline.episodes import build_episodes
from gui_assets.pipeline.split import assign_splits
from gui_assets.sources.assembly import AdapterRun
from gui_assets.sources.mind2web.demo import SCHEMA
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import REPO, built_once, candidate

EPISODE_LEN = 20
ROWS_PER_FILE = 400
SMALL = 2400  # above the IR writer's 2048-step row group, so both sizes fill every window
# What a stage may add from N to 4N steps: far below the ~1 KB a step cost when rows were held
# (a 7200-step difference), above what allocator and interning noise make.
ALLOWANCE = 512 * 1024


def _png(seed: int, size: int = 24) -> bytes:
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (size, size), bytes(rng.randrange(256) for _ in range(size * size * 3)))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _row(i: int, shot: bytes) -> dict[str, Any]:
    episode, step = divmod(i, EPISODE_LEN)
    task = f"task-{episode:06d}"
    verb = ("CLICK", "TYPE", "SELECT")[i % 3]
    return {
        "action_uid": f"{task}-{step}",
        "raw_html": "",
        "cleaned_html": "",
        "operation": json.dumps({"original_op": verb, "value": f"value {i}", "op": verb}),
        "pos_candidates": [candidate(f"{i % 17},{i % 11},8,6")],
        "neg_candidates": [],
        "website": f"site-{episode % 7}",
        "domain": "Travel",
        "subdomain": "Airlines",
        "annotation_id": task,
        "confirmed_task": f"do task {episode} of the benchmark",
        "screenshot": {"bytes": shot, "path": None},
        "action_reprs": [],
        "target_action_index": str(step),
        "target_action_reprs": "",
    }


def _mirror(root: Path, steps: int, shots: list[bytes]) -> Path:
    data = root / REPO / "data"
    data.mkdir(parents=True)
    files = -(-steps // ROWS_PER_FILE)
    for f in range(files):
        rows = [
            _row(i, shots[i % len(shots)])
            for i in range(f * ROWS_PER_FILE, min(steps, (f + 1) * ROWS_PER_FILE))
        ]
        pq.write_table(
            pa.Table.from_pylist(rows, schema=SCHEMA), data / f"train-{f:05d}-of-{files:05d}.parquet"
        )
    return root


def _traced_peak(fn: Callable[[], object]) -> int:
    """tracemalloc's peak over fn(), above what was allocated when it began."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _prepare(tmp: Path, steps: int, shots: list[bytes]) -> OutLayout:
    """A partition of `steps` steps, fetched and built once (imports, caches, the image store)."""
    layout = OutLayout(tmp / "out")
    fetch_raw(MIND2WEB, "train", layout, RawSettings(mode="mirror", mirror=_mirror(tmp / "m", steps, shots)))
    assert build_episodes(MIND2WEB, "train", layout, BuildConfig()).steps == steps
    return layout


def _stage_peaks(layout: OutLayout, steps: int) -> dict[str, int]:
    """Each stage's traced peak over a prepared partition."""
    ir = layout.episodes(MIND2WEB.directory("train"))
    read: list[int] = []
    peaks = {
        "episodes": _traced_peak(lambda: build_episodes(MIND2WEB, "train", layout, BuildConfig())),
        "splits": _traced_peak(lambda: assign_splits(MIND2WEB, "train", layout)),
        "read_back": _traced_peak(lambda: read.append(sum(len(ep.steps) for ep in iter_episodes(ir)))),
    }
    assert read == [steps]
    return peaks


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[int, dict[str, int]]:
    """Per partition size: each stage's traced peak (episodes, splits, reading the IR back),
    measured once per session by whichever worker gets here first (the figures are shared).

    Both partitions are built once before either is measured: process-wide tables that only
    ever grow (the interned strings' dict, say) reach their size then, not inside a measurement.
    """

    def measure(folder: Path, _: str) -> None:
        shots = [_png(s) for s in range(16)]
        sizes = (SMALL, 4 * SMALL)
        for n in sizes:
            (folder / f"steps{n}").mkdir()
        layouts = {n: _prepare(folder / f"steps{n}", n, shots) for n in sizes}
        peaks = {n: _stage_peaks(layouts[n], n) for n in sizes}
        (folder / "peaks.json").write_text(json.dumps(peaks), encoding="utf-8")

    folder = built_once(tmp_path_factory, worker_id, "episode-memory-peaks", measure)
    peaks = json.loads((folder / "peaks.json").read_text(encoding="utf-8"))
    return {int(n): stages for n, stages in peaks.items()}


# One test for the three stages, not one each: the three would start together on both workers,
# and one would wait out the other's measurement of all three.
def test_no_stage_peak_grows_with_the_partition(built: dict[int, dict[str, int]]) -> None:
    grown = [
        f"{stage}: peak {built[SMALL][stage]} B at {SMALL} steps, {built[4 * SMALL][stage]} B at {4 * SMALL}"
        for stage in ("episodes", "splits", "read_back")
        if built[4 * SMALL][stage] - built[SMALL][stage] >= ALLOWANCE
    ]
    assert not grown, grown


def _random_png(seed: int, size: int = 160) -> bytes:
    """An incompressible screenshot (about 77 KB), distinct per seed."""
    img = Image.frombytes("RGB", (size, size), random.Random(seed).randbytes(size * size * 3))
    buf = io.BytesIO()
    img.save(buf, "PNG", compress_level=0)
    return buf.getvalue()


def _arrow_peak_reading(tmp: Path, row_groups: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Arrow's allocated bytes at their largest while the adapter reads one file of
    `row_groups` row groups of 10 screenshots each."""
    rows = [_row(i, _random_png(i)) for i in range(10 * row_groups)]
    data = tmp / "m" / REPO / "data"
    data.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=SCHEMA), data / "train-00000-of-00001.parquet", row_group_size=10
    )
    layout = OutLayout(tmp / "out")
    fetch_raw(MIND2WEB, "train", layout, RawSettings(mode="mirror", mirror=tmp / "m"))
    peak = 0
    observe = AdapterRun.observe

    def observing(run: AdapterRun, data: bytes) -> Observation:
        nonlocal peak
        peak = max(peak, pa.total_allocated_bytes())  # called with the batch's arrays alive
        return observe(run, data)

    monkeypatch.setattr(AdapterRun, "observe", observing)
    build_episodes(MIND2WEB, "train", layout, BuildConfig())
    return peak


def test_reading_an_upstream_file_holds_a_row_group_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group_bytes = 10 * len(_random_png(0))
    small = _arrow_peak_reading(tmp_path / "small", 4, monkeypatch)
    large = _arrow_peak_reading(tmp_path / "large", 32, monkeypatch)
    # A row group's chunk is read, decompressed and decoded: a few row groups' worth at most.
    assert large < 4 * group_bytes, f"{large} B of Arrow memory for row groups of {group_bytes} B"
    assert large - small < group_bytes, f"{small} B for 4 row groups, {large} B for 32"
