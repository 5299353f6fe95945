"""Rebuilds cost what changed: a unit whose exact key (gui_assets.pipeline.unit_reuse) is filed is linked
back, every other unit is written, and the result is byte for byte what a build from scratch
writes, for a one-row edit (only the unit holding the edited episode is written: no demo names
its file's revision), an appended file (new units only) and a codec change (nothing linked)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import h5py
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.frames import write_mirror
from gui_assets.core.config import BuildConfig
from gui_assets.pipeline import unit_reuse
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.publish.preview import write_preview
from gui_assets.sources.mind2web.adapter import REPO_ID
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB

# About 20 steps a unit (these frames deflate to about 326 KB a step): three 6-step episodes,
# so a greedy plan would put the 4th episode of each 4-episode file with the next file's.
CONFIG = BuildConfig(shard_cap_bytes=7_500_000)


def _write_rows(path: Path, rows: list[dict], like: Path) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(like)), path)


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory) -> dict[str, Path]:
    """A 48-step partition in two upstream files; the same with one row of the first file edited;
    and the same with a third file of 12 more steps appended."""
    root = tmp_path_factory.mktemp("mirrors")
    generated = root / "generated"
    write_mirror(generated, steps=60, width=1280, height=1080, episode_len=6, jobs=2, cheap=True)
    (source,) = (generated / REPO_ID / "data").glob("*.parquet")
    rows = pq.read_table(source).to_pylist()
    base = root / "base"
    data = base / REPO_ID / "data"
    data.mkdir(parents=True)
    _write_rows(data / "train-00000-of-00002.parquet", rows[:24], source)
    _write_rows(data / "train-00001-of-00002.parquet", rows[24:48], source)
    edited = root / "edited"
    shutil.copytree(base, edited)
    first = edited / REPO_ID / "data" / "train-00000-of-00002.parquet"
    table = pq.read_table(first).to_pylist()
    op = json.loads(table[2]["operation"])
    assert op["op"] == "TYPE"
    table[2]["operation"] = json.dumps({**op, "value": "an edited query"})  # one row's typed text
    _write_rows(first, table, source)
    grown = root / "grown"
    shutil.copytree(base, grown)
    _write_rows(grown / REPO_ID / "data" / "train-00002-of-00003.parquet", rows[48:], source)
    return {"base": base, "edited": edited, "grown": grown}


def _shards(out: Path) -> dict[str, str]:
    folder = out / "mind2web_train"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.hdf5"))}


def _typed(shard: Path) -> set[str]:
    """Every action_text in the shard."""
    with h5py.File(shard, "r") as f:
        return {t.decode() for d in f["data"].values() for t in d["action_text"][()]}


def _preview(out: Path) -> bytes:
    """The published preview: its pictures come from the picture cache (taken back, drawn by
    the shard writer, or drawn from the shards for picks the cache lacks)."""
    write_preview(out)
    path = out / "preview/sample-00000-of-00001.parquet"
    assert pq.read_metadata(path).num_rows > 0
    return path.read_bytes()


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """Units linked back, counted where they happen (not from the log, whose handlers other
    tests' Dagster runs reconfigure)."""
    counts = {"units": 0}
    link_back = unit_reuse.link_back

    def counting_link_back(*args, **kwargs):
        got = link_back(*args, **kwargs)
        counts["units"] += got is not None
        return got

    monkeypatch.setattr(unit_reuse, "link_back", counting_link_back)
    return counts


@pytest.mark.parametrize("change", ["edited", "grown"])
def test_a_rebuild_writes_only_changed_units_and_what_a_fresh_build_writes(
    tmp_path, mirrors, change, counted
):
    out = tmp_path / "incremental"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    before = _shards(out)
    info = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors[change]), CONFIG)
    fresh = tmp_path / "fresh"
    build_directory(MIND2WEB, "train", fresh, RawSettings("mirror", mirrors[change]), CONFIG)
    assert _shards(out) == _shards(fresh)
    assert _preview(out) == _preview(fresh)
    manifest = json.loads((out / "_work/mind2web_train/shards.json").read_text())
    reuse, shards = manifest["reuse"], manifest["shards"]
    assert info.stats["steps"] == (48 if change == "edited" else 60)
    # Each file has units of its own (gui_assets.pipeline.sharding.pack_units): 3 + 1 episodes a file.
    plan = json.loads((out / "_work/mind2web_train/shard_plan.json").read_text())
    units = [len(u["episodes"]) for u in plan["units"]]
    assert units == ([3, 1, 3, 1] if change == "edited" else [3, 1, 3, 1, 2]) and len(shards) == len(units)
    # edited: only the unit holding the edited episode is written, the rest of its file and the
    # other file linked back; grown: the appended file lands in a new unit, the rest linked back
    assert reuse == {
        "units_written": 1,
        "units_linked": len(units) - 1,
        "bytes_written": reuse["bytes_written"],
    }
    assert counted["units"] == len(units) - 1
    written = [s for s in shards if s["sha256"] not in before.values()]
    assert len(written) == 1 and reuse["bytes_written"] == written[0]["bytes"]
    if change == "edited":  # the written unit is the one holding the edited episode
        assert "an edited query" in _typed(out / "mind2web_train" / written[0]["file"])
    else:
        assert shards.index(written[0]) == len(shards) - 1
    filed = {p.stem for p in (out / "_work/mind2web_train/unit_index").glob("*.json")}
    assert len(filed) == len(units)  # every published unit, none of the last build's replaced ones


def test_a_level_change_reuses_nothing_and_matches_a_fresh_build(tmp_path, mirrors, counted):
    out = tmp_path / "incremental"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    other = BuildConfig(shard_cap_bytes=7_500_000, libdeflate_level=1)
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), other)
    assert counted == {"units": 0}
    fresh = tmp_path / "fresh"
    build_directory(MIND2WEB, "train", fresh, RawSettings("mirror", mirrors["base"]), other)
    assert _shards(out) == _shards(fresh)


def test_an_unchanged_rebuild_links_every_unit_back_and_counts_the_same(tmp_path, mirrors, counted):
    out = tmp_path / "incremental"
    first = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    before = _shards(out)
    again = build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    assert counted == {"units": len(before)}  # every unit linked back, no frame read
    assert _shards(out) == before and again.stats == first.stats and again.shards == first.shards
    reuse = json.loads((out / "_work/mind2web_train/shards.json").read_text())["reuse"]
    assert reuse == {"units_written": 0, "units_linked": len(before), "bytes_written": 0}


def test_linked_units_keep_their_fingerprints_and_a_unit_without_them_is_written(tmp_path, mirrors, counted):
    """Every published step has its frame's fingerprint (pipeline.fingerprints): a unit linked
    back keeps its shards', and a unit whose fingerprints are gone is written again, not
    published without them."""
    out = tmp_path / "incremental"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    table = out / "_work/mind2web_train/fingerprints.parquet"
    first = pq.read_table(table)
    assert first.num_rows == 48 and first.column("fingerprint").null_count == 0
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    assert counted["units"] == len(_shards(out)) and pq.read_table(table).equals(first)
    counted["units"] = 0
    lost = sorted((out / "_work/mind2web_train/fingerprints").glob("*.parquet"))[0]
    lost.unlink()
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", mirrors["base"]), CONFIG)
    assert counted["units"] == len(_shards(out)) - 1  # the unit of the lost file was written
    assert lost.is_file() and pq.read_table(table).equals(first)
