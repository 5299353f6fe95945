"""Shard units and publishing: final names appear only at publish, stale shards are pruned, a
failed or killed build leaves the previous shards as they were."""

from __future__ import annotations

import json
import os

import pytest

from gui_assets.core.atomic import sha256_file
from gui_assets.core.config import BuildConfig
from gui_assets.core.layout import OutLayout
from gui_assets.pipeline import sharding
from gui_assets.pipeline.chain import RawSettings, assign_splits, build_episodes, fetch_raw
from gui_assets.pipeline.shard_records import PublishError, ShardManifest, UnitResult
from gui_assets.pipeline.split import read_splits
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB

DIR = "mind2web_train"


@pytest.fixture
def prepared(tmp_path, demo_mirror) -> OutLayout:
    """The demo's Mind2Web train partition up to its split table."""
    layout = OutLayout(tmp_path)
    fetch_raw(MIND2WEB, "train", layout, RawSettings(mode="mirror", mirror=demo_mirror))
    build_episodes(MIND2WEB, "train", layout, BuildConfig())
    assign_splits(MIND2WEB, "train", layout)
    return layout


def plan(layout: OutLayout, cap: int = 500_000_000) -> sharding.ShardPlan:
    config = BuildConfig(shard_cap_bytes=cap)
    sharding.prepare(layout, DIR)
    return sharding.plan_shards(layout, DIR, config, read_splits(layout, DIR))


def build(layout: OutLayout, cap: int = 500_000_000) -> ShardManifest:
    for unit in plan(layout, cap).units:
        sharding.write_unit(
            layout, DIR, "mind2web", BuildConfig(shard_cap_bytes=cap), unit.name, platform="browser"
        )
    return sharding.publish_shards(layout, DIR)


def shards_of(layout: OutLayout) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in layout.directory(DIR).glob("*.hdf5")}


def test_nothing_appears_under_a_final_name_before_publish(prepared):
    for unit in plan(prepared).units:
        sharding.write_unit(prepared, DIR, "mind2web", BuildConfig(), unit.name, platform="browser")
    assert shards_of(prepared) == {}  # the pieces are in the unit folders under _work
    manifest = sharding.publish_shards(prepared, DIR)
    assert sorted(shards_of(prepared)) == [e.file for e in manifest.shards]
    assert ShardManifest.read(prepared, DIR) == manifest  # one serialisation, read back equal


def test_a_failed_rebuild_leaves_the_previous_shards_and_a_shorter_one_prunes_extras(prepared):
    build(prepared, cap=1_000_000)
    before = shards_of(prepared)
    assert len(before) >= 2
    units = plan(prepared).units  # a rebuild at the default cap: one unit
    assert len(units) == 1
    with pytest.raises(PublishError, match="has not been written"):
        sharding.publish_shards(prepared, DIR)  # the unit never ran: nothing is touched
    assert shards_of(prepared) == before
    manifest = build(prepared)
    assert sorted(shards_of(prepared)) == ["mind2web_train_0000.hdf5"] == [e.file for e in manifest.shards]


def test_leftovers_of_a_killed_build_are_swept(prepared):
    out = prepared.directory(DIR)
    (out / ".staging-999").mkdir(parents=True)
    (out / ".staging-999" / f"{DIR}_0000.hdf5").write_bytes(b"half")
    (out / f".{DIR}_0000.hdf5.tmp-999").write_bytes(b"half")
    sharding.prepare(prepared, DIR)
    assert list(out.iterdir()) == []


def test_the_eye_in_hand_counts_are_kept_once_in_the_statistics(prepared):
    manifest = build(prepared)
    stats = manifest.stats
    assert stats.pointer_steps > 0
    assert stats.to_dict()["target_inside_eye_in_hand"] == {
        "numerator": stats.target_inside_eye,
        "denominator": stats.pointer_steps,
    }
    assert stats.target_inside_eye_in_hand_rate == round(stats.target_inside_eye / stats.pointer_steps, 6)


def write_units(layout: OutLayout, cap: int, hash_pieces: bool = False) -> list[UnitResult]:
    config = BuildConfig(shard_cap_bytes=cap)
    return [
        sharding.write_unit(
            layout, DIR, "mind2web", config, u.name, hash_pieces=hash_pieces, platform="browser"
        )
        for u in plan(layout, cap).units
    ]


def recorded(layout: OutLayout) -> dict[str, list[str | None]]:
    units = sorted((layout.work(DIR) / sharding.UNITS_DIR).glob(f"*/{sharding.UNIT_FILE}"))
    return {u.parent.name: [p["sha256"] for p in json.loads(u.read_text())["pieces"]] for u in units}


def test_publish_hashes_the_pieces_and_the_hashes_are_the_files(prepared):
    results = write_units(prepared, 1_000_000)
    assert all(p.sha256 is None for r in results for p in r.pieces)  # units leave hashing to publish
    manifest = sharding.publish_shards(prepared, DIR)
    assert len(manifest.all_shards) >= 2
    for entry in manifest.all_shards:
        assert entry.sha256 == sha256_file(prepared.directory(DIR) / entry.file)


def test_a_publish_killed_after_moving_a_piece_is_verified_by_the_rerun(prepared, monkeypatch):
    write_units(prepared, 1_000_000)
    moved = []

    def killed_after_the_first_move(src: os.PathLike, dst: os.PathLike) -> None:
        if str(dst).endswith(".hdf5"):  # the pieces' moves; unit.json's own atomic write goes on
            if moved:
                raise KeyboardInterrupt  # stands in for the SIGKILL: nothing after it runs
            moved.append(dst)
        os.rename(src, dst)

    monkeypatch.setattr(sharding.os, "replace", killed_after_the_first_move)
    with pytest.raises(KeyboardInterrupt):
        sharding.publish_shards(prepared, DIR)
    monkeypatch.undo()
    shas = [sha for unit in recorded(prepared).values() for sha in unit]
    assert len(shas) >= 2 and all(shas)  # every hash was recorded before the first move
    manifest = sharding.publish_shards(prepared, DIR)  # the moved piece is checked against its hash
    for entry in manifest.all_shards:
        assert entry.sha256 == sha256_file(prepared.directory(DIR) / entry.file)


def test_a_moved_piece_that_changed_or_was_never_hashed_is_refused(prepared, monkeypatch):
    results = write_units(prepared, 1_000_000)
    first = results[0]
    piece = sharding.unit_dir(prepared, DIR, first.unit) / first.pieces[0].file
    out = prepared.directory(DIR)
    out.mkdir(parents=True, exist_ok=True)
    os.rename(piece, out / f"{DIR}_0000.hdf5")  # moved before any hash was recorded
    with pytest.raises(PublishError, match="missing and was never hashed"):
        sharding.publish_shards(prepared, DIR)

    write_units(prepared, 1_000_000)

    def killed_before_moving(src: os.PathLike, dst: os.PathLike) -> None:
        if str(dst).endswith(".hdf5"):
            raise KeyboardInterrupt
        os.rename(src, dst)

    monkeypatch.setattr(sharding.os, "replace", killed_before_moving)
    with pytest.raises(KeyboardInterrupt):
        sharding.publish_shards(prepared, DIR)  # hashes recorded, nothing moved
    monkeypatch.undo()
    os.rename(piece, out / f"{DIR}_0000.hdf5")
    with open(out / f"{DIR}_0000.hdf5", "r+b") as f:  # and changed after its hash was recorded
        f.seek(-1, os.SEEK_END)
        f.write(b"\x00" if f.read(1) != b"\x00" else b"\x01")
    with pytest.raises(PublishError, match=r"_0000\.hdf5 is not what it was; rerun the shards step"):
        sharding.publish_shards(prepared, DIR)


def test_units_apart_hash_their_own_pieces_and_publish_does_not_hash_them_again(prepared, monkeypatch):
    results = write_units(prepared, 1_000_000, hash_pieces=True)
    folders = {r.unit: sharding.unit_dir(prepared, DIR, r.unit) for r in results}
    for r in results:
        for piece in r.pieces:
            assert piece.sha256 == sha256_file(folders[r.unit] / piece.file)
    assert recorded(prepared) == {r.unit: [p.sha256 for p in r.pieces] for r in results}
    hashed = []
    real = sharding.sha256_files
    monkeypatch.setattr(sharding, "sha256_files", lambda paths: hashed.extend(paths) or real(paths))
    manifest = sharding.publish_shards(prepared, DIR)
    assert hashed == []  # every piece came hashed
    assert [e.sha256 for e in manifest.all_shards] == [p.sha256 for r in results for p in r.pieces]


def _stream(files: list[tuple[str, list[int]]]) -> list[tuple[str, int, str]]:
    return [(f"{name}#{i}", n, name) for name, lengths in files for i, n in enumerate(lengths)]


def test_units_end_at_a_file_boundary_once_half_full_and_big_files_have_their_own():
    stream = _stream([("a", [30, 30]), ("b", [20, 20]), ("c", [10]), ("big", [40, 40, 40]), ("d", [10])])
    units = sharding.pack_units(stream, budget=100)
    assert [(eps, n) for eps, n in units] == [
        (["a#0", "a#1"], 60),  # half full at the end of a: ends there
        (["b#0", "b#1", "c#0"], 50),  # under half at the end of b: c joins; big starts a unit
        (["big#0", "big#1"], 80),  # the budget ends it inside its file
        (["big#2"], 40),  # and the file's end ends it
        (["d#0"], 10),
    ]


def test_a_stream_grown_by_files_at_its_end_keeps_its_earlier_units():
    """Prefix stability, on random streams: every unit of the shorter stream's plan is in the
    longer one's, but for a last unit under half full, which the appended episodes may join."""
    import random

    rng = random.Random(7)
    for _ in range(300):
        files = [
            (f"f{i}", [rng.randint(1, 40) for _ in range(rng.randint(1, 6))])
            for i in range(rng.randint(1, 8))
        ]
        budget = rng.randint(20, 120)
        more = [
            (f"g{i}", [rng.randint(1, 40) for _ in range(rng.randint(1, 6))])
            for i in range(rng.randint(1, 4))
        ]
        own = {name for name, lengths in files + more if 2 * sum(lengths) >= budget}
        before = sharding.pack_units(_stream(files), budget)
        after = sharding.pack_units(_stream(files + more), budget)
        assert all(n <= budget or len(eps) == 1 for eps, n in after)
        closed = 2 * before[-1][1] >= budget or files[-1][0] in own or more[0][0] in own
        kept = before if closed else before[:-1]
        assert after[: len(kept)] == kept
        if len(kept) == len(before):  # the appended episodes are in new units only
            assert {e for eps, _ in after[len(kept) :] for e in eps} == {e for e, _, _ in _stream(more)}
