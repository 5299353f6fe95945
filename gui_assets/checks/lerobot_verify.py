"""What the LeRobot export promises, checked against the shards it was made from.

- counts: per built directory, the episodes and frames of its datasets equal the shards' as
  dataset_info.json records them, and each dataset's info.json agrees with its own files;
- frames: a seeded sample of steps per dataset decodes to exactly the shard's pixels (agentview
  and eye-in-hand), and the step's action type and parameters are the shard's;
- tasks: every episode's task is its demo's language instruction.

Each returns a verdict.Verdict. Episodes are matched to demos by position: the export writes
a dataset's episodes in its shards' order, demos by number.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from gui_assets.checks.verdict import ERROR, Offenders, Verdict
from gui_assets.core import shard_reader
from gui_assets.core.layout import DatasetInfo, OutLayout, built_directories
from gui_assets.publish import lerobot
from gui_assets.publish import lerobot_meta as meta

FRAME_SAMPLES = 8  # steps per dataset whose pixels are compared
STEPS_PER_EPISODE = 4


def _datasets(out: Path) -> Iterator[tuple[DatasetInfo, lerobot.Part, Path]]:
    layout = OutLayout(out)
    for info in built_directories(out):
        for part in lerobot.parts_of(info, layout.directory(info.directory)):
            yield info, part, out / lerobot.EXPORT_DIR / part.name


def _info(root: Path) -> dict[str, Any]:
    return json.loads((root / "meta" / "info.json").read_text(encoding="utf-8"))


def _episode_rows(root: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((root / "meta" / "episodes").glob("*/*.parquet")):
        cols = ["episode_index", "tasks", "length", "dataset_from_index", "dataset_to_index"]
        rows += pq.read_table(path, columns=[*cols, "data/chunk_index", "data/file_index"]).to_pylist()
    return rows


def _demo_refs(part: lerobot.Part) -> list[tuple[Path, str, int, str]]:
    """(shard, demo name, steps, instruction) in export order."""
    refs = []
    for shard in part.shards:
        with h5py.File(shard, "r") as f:
            for name in sorted(f["data"], key=lambda k: int(k[5:])):
                d = f["data"][name]
                refs.append(
                    (
                        shard,
                        name,
                        int(d.attrs["num_samples"]),
                        shard_reader.text(d.attrs["language_instruction"]),
                    )
                )
    return refs


def counts(out: Path) -> Verdict:
    bad = Offenders()
    figures = {"datasets": 0, "episodes": 0, "frames": 0}
    expected: dict[str, tuple[int, int]] = {}
    found: dict[str, list[int]] = {}
    for info, part, root in _datasets(out):
        figures["datasets"] += 1
        entries = [*info.shards, *info.val_shards]
        expected[info.directory] = (sum(e.demos for e in entries), sum(e.steps for e in entries))
        tally = found.setdefault(info.directory, [0, 0])
        if not (root / "meta" / "info.json").is_file():
            bad.add("dataset missing", part.name)
            continue
        meta_info, rows = _info(root), _episode_rows(root)
        n_frames = sum(pq.read_metadata(p).num_rows for p in sorted((root / "data").glob("*/*.parquet")))
        if meta_info["total_episodes"] != len(rows) or meta_info["total_frames"] != n_frames:
            bad.add("info.json totals differ from the files", part.name)
        if sum(r["length"] for r in rows) != n_frames:
            bad.add("episode lengths differ from the data files", part.name)
        tally[0] += len(rows)
        tally[1] += n_frames
    for directory, (episodes, steps) in expected.items():
        got = found.get(directory, [0, 0])
        figures["episodes"] += got[0]
        figures["frames"] += got[1]
        if tuple(got) != (episodes, steps):
            bad.add(f"{got[0]} episodes / {got[1]} frames, dataset_info says {episodes} / {steps}", directory)
    return _verdict(bad, figures, "episode and frame counts equal dataset_info.json's")


def tasks(out: Path) -> Verdict:
    bad = Offenders()
    figures = {"episodes": 0, "tasks": 0}
    for _, part, root in _datasets(out):
        if not (root / "meta" / "info.json").is_file():
            continue
        names = pq.read_table(root / "meta" / "tasks.parquet").column("task").to_pylist()
        figures["tasks"] += len(names)
        rows = _episode_rows(root)
        refs = _demo_refs(part)
        if len(rows) != len(refs):
            bad.add(f"{len(rows)} episodes for {len(refs)} demos", part.name)
            continue
        for row, (shard, demo, _, instruction) in zip(rows, refs, strict=True):
            figures["episodes"] += 1
            if row["tasks"] != [instruction] or instruction not in names:
                bad.add(
                    "task is not the demo's instruction",
                    f"{part.name} episode {row['episode_index']} ({shard.name}/{demo})",
                )
    return _verdict(bad, figures, "every episode's task is its demo's instruction")


def _read_steps(
    root: Path, rows: list[dict[str, Any]], picks: dict[int, list[int]]
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(episode, step, row) of the picked steps, reading only the row groups that hold them
    (found by the `index` column's statistics)."""
    by_file: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for ep, steps in picks.items():
        r = rows[ep]
        for t in steps:
            key = (r["data/chunk_index"], r["data/file_index"])
            by_file.setdefault(key, []).append((ep, r["dataset_from_index"] + t))
    columns = [meta.AGENTVIEW, meta.EYE_IN_HAND, "index", "action_type", "action_params"]
    for (chunk, file), wanted in sorted(by_file.items()):
        pf = pq.ParquetFile(root / meta.DATA_PATH.format(chunk_index=chunk, file_index=file))
        leaves = pf.metadata.row_group(0).num_columns if pf.metadata.num_row_groups else 0
        at = next(j for j in range(leaves) if pf.metadata.row_group(0).column(j).path_in_schema == "index")
        for g in range(pf.metadata.num_row_groups):
            st = pf.metadata.row_group(g).column(at).statistics
            inside = [
                (ep, i) for ep, i in wanted if st is None or not st.has_min_max or st.min <= i <= st.max
            ]
            if not inside:
                continue
            table = pf.read_row_group(g, columns=columns)
            where = {v: n for n, v in enumerate(table.column("index").to_pylist())}
            for ep, i in inside:
                if i in where:
                    yield ep, i - rows[ep]["dataset_from_index"], table.slice(where[i], 1).to_pylist()[0]


def _png(cell: dict[str, Any] | None) -> np.ndarray | None:
    """The pixels lerobot reads (Pillow, three channels), or None for bytes it would not."""
    if not cell or not cell.get("bytes"):
        return None
    with Image.open(io.BytesIO(cell["bytes"])) as im:
        return np.asarray(im) if im.mode == "RGB" else None


def _picks(name: str, lengths: list[int], samples: int, seed: int) -> dict[int, list[int]]:
    """Seeded steps to compare, by episode: a few episodes, several steps of each, so a handful of
    row groups is read (an episode's frames are one row group, a large read each)."""
    rng = random.Random(f"{seed}:{name}")
    per = max(STEPS_PER_EPISODE, -(-samples // max(1, len(lengths))))
    episodes = rng.sample(range(len(lengths)), min(len(lengths), max(1, samples // per)))
    picks: dict[int, list[int]] = {}
    for e in episodes:
        picks[e] = sorted(rng.sample(range(lengths[e]), min(lengths[e], per)))
    return picks


def frames(out: Path, samples: int = FRAME_SAMPLES, seed: int = 0) -> Verdict:
    bad = Offenders()
    figures = {"frames_compared": 0, "datasets": 0}
    for _, part, root in _datasets(out):
        if not (root / "meta" / "info.json").is_file():
            continue
        figures["datasets"] += 1
        rows, refs = _episode_rows(root), _demo_refs(part)
        if len(rows) != len(refs):
            bad.add("episodes do not match the demos", part.name)
            continue
        picks = _picks(part.name, [ref[2] for ref in refs], samples, seed)
        with ExitStack() as stack:
            shards = {p: stack.enter_context(h5py.File(p, "r")) for p in part.shards}
            for ep, t, row in _read_steps(root, rows, picks):
                shard, demo, _, _ = refs[ep]
                figures["frames_compared"] += 1
                where = f"{part.name} episode {ep} step {t} ({shard.name}/{demo})"
                for problem in _step_problems(shards[shard]["data"][demo], t, row):
                    bad.add(problem, where)
    return _verdict(bad, figures, "sampled frames are pixel-equal to the shards")


def _step_problems(demo: h5py.Group, t: int, row: dict[str, Any]) -> Iterator[str]:
    for key, name in ((meta.AGENTVIEW, "agentview_rgb"), (meta.EYE_IN_HAND, "eye_in_hand_rgb")):
        dset = demo[f"obs/{name}"]
        want = shard_reader.inflate(shard_reader.read_chunk(dset, t), dset.shape[1:])
        got = _png(row[key])
        if got is None or not np.array_equal(got, want):
            yield f"{key} differs from the shard"
    params = np.asarray(row["action_params"], np.float32)
    if row["action_type"] != int(demo["action_type"][t]) or not np.array_equal(
        params, demo["action_params"][t]
    ):
        yield "action differs from the shard"


def _verdict(bad: Offenders, figures: dict[str, Any], promise: str) -> Verdict:
    figures = {**figures, "offenders": bad.total, "offenders_by_kind": dict(bad.counts)}
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} offender(s) against: {promise}", figures, bad.examples)
    return Verdict(True, ERROR, f"ok: {promise}", figures)
