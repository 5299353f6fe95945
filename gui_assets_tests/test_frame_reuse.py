"""Rebuilds cost what changed: a unit whose episodes changed only in the upstream revision is
copied from the last published shards with the new one (gui_assets.revision_patch), a step whose
frame bytes would come out the same is copied from them (gui_assets.frame_reuse), and the result
is byte for byte what a build from scratch writes, for a one-row edit, appended episodes and a
codec change (which reuses nothing)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchmarks.frames import write_mirror
from gui_assets import unit_reuse
from gui_assets.adapters.mind2web import REPO_ID
from gui_assets.config import BuildConfig
from gui_assets.frame_reuse import FrameReuse
from gui_assets.pipeline import RawSettings, build_directory
from gui_assets.sources import MIND2WEB
from gui_assets.writers.preview import write_preview

CONFIG = BuildConfig(shard_cap_bytes=3_000_000)


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mirrors")
    base = root / "base"
    write_mirror(base, steps=48, width=1280, height=1080, episode_len=6, jobs=2, cheap=True)
    edited = root / "edited"
    shutil.copytree(base, edited)
    first = sorted((edited / REPO_ID / "data").glob("*.parquet"))[0]
    table = pq.read_table(first).to_pylist()
    op = json.loads(table[2]["operation"])
    assert op["op"] == "TYPE"
    table[2]["operation"] = json.dumps({**op, "value": "an edited query"})  # one row's typed text
    pq.write_table(pq.read_table(first).from_pylist(table, schema=pq.read_schema(first)), first)
    grown = root / "grown"
    write_mirror(grown, steps=60, width=1280, height=1080, episode_len=6, jobs=2, cheap=True)
    return {"base": base, "edited": edited, "grown": grown}


def _shards(out: Path) -> dict[str, str]:
    folder = out / "mind2web_train"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.hdf5"))}


def _preview(out: Path) -> bytes:
    """The published preview: its pictures come from the picture cache (taken back, drawn by
    the shard writer, or drawn from the shards for picks the cache lacks)."""
    write_preview(out)
    path = out / "preview/sample-00000-of-00001.parquet"
    assert pq.read_metadata(path).num_rows > 0
    return path.read_bytes()


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """Steps whose chunks were taken back, and units linked back, counted where they happen
    (not from the log, whose handlers other tests' Dagster runs reconfigure)."""
    counts = {"steps": 0, "units": 0}
    chunks, link_back = FrameReuse.chunks, unit_reuse.link_back

    def counting_chunks(self, keys):
        got = chunks(self, keys)
        counts["steps"] += len(got) if got is not None else 0
        return got

    def counting_link_back(*args, **kwargs):
        got = link_back(*args, **kwargs)
        counts["units"] += got is not None
        return got

    monkeypatch.setattr(FrameReuse, "chunks", counting_chunks)
    monkeypatch.setattr(unit_reuse, "link_back", counting_link_back)
    return counts


@pytest.mark.parametrize("change", ["edited", "grown"])
def test_a_rebuild_reuses_unchanged_frames_and_writes_what_a_fresh_build_writes(
    tmp_path, mirrors, change, counted
):
    out = tmp_path / "incremental"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    info = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors[change]), CONFIG)
    fresh = tmp_path / "fresh"
    build_directory(MIND2WEB, "train", fresh, RawSettings("mirror", mirrors[change]), CONFIG)
    assert _shards(out) == _shards(fresh)
    assert _preview(out) == _preview(fresh)
    manifest = json.loads((out / "_work/mind2web_train/shards.json").read_text())
    reuse, shards = manifest["reuse"], manifest["shards"]
    assert (
        info.stats["steps"] == (48 if change == "edited" else 60) and len(shards) == info.stats["steps"] // 6
    )
    if change == "edited":  # the unit holding the edited row is written, taking its frames back
        assert reuse["units_written"] == 1 and reuse["units_revised"] == len(shards) - 1
        assert reuse["steps_with_frames_reused"] == counted["steps"] > 0
    else:  # the 8 units of the base build are revised; the appended episodes land in new units
        assert reuse["units_written"] == 2 and reuse["units_revised"] == 8
        assert reuse["steps_with_frames_reused"] == counted["steps"] == 0
    assert reuse["units_linked"] == 0 and reuse["bytes_written"] == sum(s["bytes"] for s in shards)
    leftover = {p.stem for p in (out / "_work/mind2web_train/frame_index").glob("*.parquet")}
    assert leftover == {e["sha256"] for e in shards}


def test_a_codec_change_reuses_nothing_and_matches_a_fresh_build(tmp_path, mirrors, counted):
    out = tmp_path / "incremental"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    other = BuildConfig(shard_cap_bytes=3_000_000, frame_codec="libdeflate", libdeflate_level=1)
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), other)
    assert counted == {"steps": 0, "units": 0}
    fresh = tmp_path / "fresh"
    build_directory(MIND2WEB, "train", fresh, RawSettings("mirror", mirrors["base"]), other)
    assert _shards(out) == _shards(fresh)


def test_an_unchanged_rebuild_links_every_unit_back_and_counts_the_same(tmp_path, mirrors, counted):
    out = tmp_path / "incremental"
    first = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    before = _shards(out)
    again = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    assert counted == {"steps": 0, "units": len(before)}  # every unit linked back, no frame read
    assert _shards(out) == before and again.stats == first.stats and again.shards == first.shards
    reuse = json.loads((out / "_work/mind2web_train/shards.json").read_text())["reuse"]
    assert reuse == {
        "units_written": 0,
        "units_linked": len(before),
        "units_revised": 0,
        "steps_with_frames_reused": 0,
        "bytes_written": 0,
    }
