"""The IR on disk: Parquet tables polars can scan, original bytes by hash, atomic publish."""

from __future__ import annotations

import polars as pl

from gui_assets.core.episode_store import (
    EpisodeWriter,
    ImageStore,
    episode_content_hash,
    iter_episodes,
    read_stats,
)
from gui_assets.core.ir import (
    POINT_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    direction_scroll,
    step_builder,
)
from gui_assets.core.stats import BuildStats
from gui_assets_tests.conftest import page_bytes


def make_episode(store: ImageStore, eid: str, n: int) -> GuiEpisode:
    shot = page_bytes(320, 240, seed=n)
    sha = store.put(shot, "png")
    steps = [
        GuiStep(
            ActionType.CLICK,
            (0.1 * (i + 1), 0.5, 0.0, 0.0),
            POINT_MASK,
            f"t{i}",
            "click",
            Observation(sha, "png", 0, 0, 320, 240),
            (0.0, 0.0),
            SourceRef("r", "f.parquet", row=i),
        )
        for i in range(n)
    ]
    return GuiEpisode(eid, "test", f"do {eid}", steps, attrs={"k": eid})


def test_round_trip_and_polars_scan(tmp_path):
    store = ImageStore(tmp_path / "img")
    eps = [make_episode(store, f"e{i}", i + 1) for i in range(3)]
    w = EpisodeWriter(tmp_path / "ir")
    for e in eps:
        w.add(e)
    stats = BuildStats(episodes_in=3)
    w.close(stats)
    back = list(iter_episodes(tmp_path / "ir"))
    assert [(e.episode_id, len(e.steps), e.instruction, e.attrs) for e in back] == [
        (e.episode_id, len(e.steps), e.instruction, e.attrs) for e in eps
    ]
    assert back[2].steps[1] == eps[2].steps[1]
    steps = pl.scan_parquet(tmp_path / "ir" / "steps.parquet").group_by("episode_id").len().collect()
    assert sorted(steps.rows()) == [("e0", 1), ("e1", 2), ("e2", 3)]
    assert read_stats(tmp_path / "ir").episodes_in == 3


def test_images_are_stored_once_by_content(tmp_path):
    store = ImageStore(tmp_path / "img")
    shot = page_bytes(100, 100)
    a, b = store.put(shot, "png"), store.put(shot, "png")
    assert a == b and store.get(a, "png") == shot
    assert len(list((tmp_path / "img").rglob("*.png"))) == 1


def test_an_aborted_write_leaves_the_previous_ir(tmp_path):
    store = ImageStore(tmp_path / "img")
    w = EpisodeWriter(tmp_path / "ir")
    w.add(make_episode(store, "old", 1))
    w.close(BuildStats())
    w2 = EpisodeWriter(tmp_path / "ir")
    w2.add(make_episode(store, "new", 2))
    w2.abort()
    assert [e.episode_id for e in iter_episodes(tmp_path / "ir")] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img", "ir"]


def test_a_selection_of_episodes_reads_only_the_row_groups_holding_them(tmp_path, monkeypatch):
    """A shard unit asks for its own episodes: it gets exactly what a whole read would give for
    them, in stored order, and row groups holding none of them are never decoded."""
    import pyarrow.parquet as pq

    from gui_assets.core import episode_store

    monkeypatch.setattr(episode_store, "_ROW_GROUP_STEPS", 8)  # several row groups from a few episodes
    store = ImageStore(tmp_path / "img")
    w = EpisodeWriter(tmp_path / "ir")
    for i in range(12):
        w.add(make_episode(store, f"e{i:02d}", 3 + i % 4))
    w.close(BuildStats(episodes_in=12))
    groups = pq.ParquetFile(tmp_path / "ir" / "steps.parquet").num_row_groups
    assert groups >= 6
    whole = list(iter_episodes(tmp_path / "ir"))

    steps_read: list[list[int]] = []  # the row groups each read of the step table decodes
    real = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        if "step_index" in self.schema_arrow.names:
            steps_read.append(list(kwargs.get("row_groups") or range(self.num_row_groups)))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    for wanted in ({"e03"}, {"e01", "e07", "e11"}, {"e05", "e06"}, set(), {"nope"}):
        steps_read.clear()
        got = list(iter_episodes(tmp_path / "ir", only=wanted))
        assert got == [e for e in whole if e.episode_id in wanted], wanted
        decoded = [g for call in steps_read for g in call]
        # an episode of 3-6 steps lies in one or two groups of 8 rows; none of the others is read
        assert len(decoded) <= 2 * len(wanted), (wanted, decoded)
    assert list(iter_episodes(tmp_path / "ir", only={e.episode_id for e in whole})) == whole


def _one_step_hash(make_step) -> str:
    obs = Observation("0" * 64, "png", 0, 0, 540, 1200)
    step = make_step(step_builder(obs, SourceRef("r", "f.parquet", row=0)))
    return episode_content_hash(GuiEpisode("e", "test", "open the menu", [step]))


def test_the_content_hash_tells_apart_what_only_the_desc_says():
    """A tap and a long press on one point, and direction-only scrolls of two directions, are
    different examples; a grounded step's desc only restates its params and stays out."""
    tap = _one_step_hash(lambda make: make(ActionType.CLICK, (0.5, 0.5), POINT_MASK))
    long_press = _one_step_hash(
        lambda make: make(ActionType.CLICK, (0.5, 0.5), POINT_MASK, name="long_press")
    )
    down = _one_step_hash(lambda make: direction_scroll(make, "down"))
    up = _one_step_hash(lambda make: direction_scroll(make, "up"))
    assert len({tap, long_press, down, up}) == 4
    reworded = _one_step_hash(
        lambda make: make(ActionType.CLICK, (0.5, 0.5), POINT_MASK, desc="click(0.5, 0.5)")
    )
    assert reworded == tap
