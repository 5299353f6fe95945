"""The preview's pictures and sample: drawn once by the shard writer, chosen by a per-step rank,
and the same bytes whichever way they came."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest

from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.core.shard_reader import inflate, read_chunk, text
from gui_assets.pipeline import preview_frames
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.pipeline.preview_frames import PictureCache, frames_dir, lowest_ranked, step_rank
from gui_assets.pipeline.sharding import read_plan
from gui_assets.publish import preview
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.pango.source import SPEC as PANGO

BUILT = ((MIND2WEB, "train"), (AGENTNET, "ubuntu"), (PANGO, "sample"))


@pytest.fixture(scope="module")
def built(demo_mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("preview_built")
    for spec, key in BUILT:
        build_directory(spec, key, root, RawSettings(mode="mirror", mirror=demo_mirror))
    return root


@pytest.fixture
def out(built: Path, tmp_path: Path) -> Path:
    """A copy of the build each test may change."""
    shutil.copytree(built, tmp_path / "out")
    return tmp_path / "out"


def _rows(path: str | Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_the_shard_writer_draws_the_planned_candidates_and_the_preview_decodes_nothing(out, monkeypatch):
    layout = OutLayout(out)
    for spec, key in BUILT:
        directory = spec.directory(key)
        plan = read_plan(layout, directory)
        info = DatasetInfo.read(layout.dataset_info(directory))
        assert sum(len(ts) for ts in plan.preview_steps.values()) == min(info.stats["steps"], 665)
        cached = set()
        for entry in info.shards + info.val_shards:
            table = pq.read_table(PictureCache(frames_dir(layout.work(directory))).path(entry.sha256))
            with h5py.File(out / directory / entry.file) as f:
                for demo, t in zip(*table.select(["demo", "step"]).to_pydict().values(), strict=True):
                    cached.add((text(f["data"][demo].attrs["episode_id"]), t))
        assert cached == {(e, t) for e, ts in plan.preview_steps.items() for t in ts}

    def no_decoding(*args, **kwargs):
        raise AssertionError("the preview inflated a frame the writer had already drawn")

    monkeypatch.setattr(preview, "inflate", no_decoding)
    r = preview.write_preview(out)
    assert r["pictures"] == {"cached": r["rows"], "drawn": 0} and r["rows"] > 0


def test_pictures_from_the_cache_and_from_the_stored_frames_are_the_same_bytes(out):
    first = preview.write_preview(out)
    cached_bytes = Path(first["path"]).read_bytes()
    for folder in (out / "_work").glob(f"*/{preview_frames.FRAMES_DIR}"):
        shutil.rmtree(folder)
    again = preview.write_preview(out)
    assert again["pictures"] == {"cached": 0, "drawn": first["rows"]}
    assert Path(again["path"]).read_bytes() == cached_bytes  # a full recomputation, byte for byte
    third = preview.write_preview(out)  # what was drawn was kept
    assert third["pictures"]["drawn"] == 0 and Path(third["path"]).read_bytes() == cached_bytes

    # and the picture is the stored frame's: decode one row and compare with the shard's pixels
    row = _rows(first["path"])[0]
    info = DatasetInfo.read(OutLayout(out).dataset_info(row["directory"]))
    for entry in info.shards + info.val_shards:
        with h5py.File(out / row["directory"] / entry.file) as f:
            for demo in f["data"].values():
                if text(demo.attrs["episode_id"]) == row["episode_id"]:
                    av = demo["obs/agentview_rgb"]
                    frame = inflate(read_chunk(av, row["step"]), av.shape[1:])
                    assert row["frame"]["bytes"] == preview_frames.frame_jpeg(frame)


def test_a_directory_rebuilt_changes_only_its_own_rows(out, demo_mirror):
    before = _rows(preview.write_preview(out)["path"])
    shutil.rmtree(out / "_work" / "agentnet_ubuntu" / preview_frames.FRAMES_DIR)
    build_directory(AGENTNET, "ubuntu", out, RawSettings(mode="mirror", mirror=demo_mirror))  # unchanged data
    r = preview.write_preview(out)
    # The unchanged units were linked back, so their pictures are drawn from the shards, and
    # only that directory's: every other directory's come from the cache.
    own = sum(row["directory"] == "agentnet_ubuntu" for row in before)
    assert r["pictures"] == {"cached": len(before) - own, "drawn": own} and own > 0
    assert _rows(r["path"]) == before


def test_the_sample_is_the_lowest_ranks_whoever_else_is_built(out, demo_mirror, tmp_path_factory):
    alone = tmp_path_factory.mktemp("alone")
    build_directory(PANGO, "sample", alone, RawSettings(mode="mirror", mirror=demo_mirror))
    count = 12  # small enough that every directory shows only some of its steps
    together = [
        r for r in _rows(preview.write_preview(out, count=count)["path"]) if r["directory"] == "pango_sample"
    ]
    by_itself = _rows(preview.write_preview(alone, count=count)["path"])
    quota = len(together)
    assert 0 < quota < len(by_itself) <= count
    ranks = sorted(
        (step_rank(0, "pango_sample", r["episode_id"], r["step"]), r["episode_id"], r["step"])
        for r in by_itself
    )
    lowest = {(e, t) for _, e, t in ranks[:quota]}
    assert {(r["episode_id"], r["step"]) for r in together} == lowest  # a prefix of the same ranking
    assert lowest_ranked(0, "d", [("a", 3), ("b", 2)], 2) == lowest_ranked(0, "d", [("b", 2), ("a", 3)], 2)


def test_another_seed_draws_from_the_stored_frames_and_keeps_what_it_drew(out):
    default = _rows(preview.write_preview(out, count=10)["path"])
    r = preview.write_preview(out, count=10, seed=7)
    other = _rows(r["path"])
    assert [(x["episode_id"], x["step"]) for x in other] != [(x["episode_id"], x["step"]) for x in default]
    assert r["rows"] == len(other) and r["pictures"]["cached"] + r["pictures"]["drawn"] == r["rows"]
    assert preview.write_preview(out, count=10, seed=7)["pictures"]["drawn"] == 0


def test_a_damaged_cache_file_is_redrawn_not_trusted(out):
    good = Path(preview.write_preview(out)["path"]).read_bytes()
    for f in (out / "_work").glob(f"*/{preview_frames.FRAMES_DIR}/*.parquet"):
        f.write_bytes(b"not parquet")
    for f in (out / "_work").glob(f"*/{preview_frames.FRAMES_DIR}/ranks.json"):
        f.write_text(json.dumps({"key": "wrong"}))
    r = preview.write_preview(out)
    assert r["pictures"]["cached"] == 0 and Path(r["path"]).read_bytes() == good


def test_frame_jpeg_is_640_wide_and_deterministic():
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, size=(1080, 1280, 3), dtype=np.uint8)
    a, b = preview_frames.frame_jpeg(frame), preview_frames.frame_jpeg(frame.copy())
    from io import BytesIO

    from PIL import Image

    assert a == b and Image.open(BytesIO(a)).size == (640, 540)
    small = frame[:300, :640]
    assert Image.open(BytesIO(preview_frames.frame_jpeg(small))).size == (640, 300)
