"""The asset checks on a mobile directory (the toy phone source of gui_assets_tests.mobile_toy):
direction-only scrolls have no gesture histogram, and the check says so rather than passing on
nothing; a made-up gesture is found; the cursor, mask, leakage and split checks hold on portrait
frames and a rotation."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import pytest

from gui_assets.checks import invariants
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.layout import OutLayout
from gui_assets.core.shard_reader import shard_files
from gui_assets.pipeline.split import read_split_rows
from gui_assets_tests.mobile_toy import MOBILE, build_mobile

DIRECTORY = "toymobile_test"


@pytest.fixture(scope="module")
def mobile_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_mobile(tmp_path_factory.mktemp("mobile_checks"))


def shards(out: Path) -> list[Path]:
    return shard_files(out / DIRECTORY, DIRECTORY)


def test_direction_only_scrolls_report_their_directions_and_no_histogram(mobile_out):
    v = invariants.scroll_histogram(shards(mobile_out), MOBILE.scrolls, MOBILE.scroll_gestures)
    assert v.passed, v.examples
    assert v.figures["gestures"] == "none recorded: direction only"
    assert v.figures["directions"] == {"down": 1, "right": 1, "up": 1} and v.figures["scroll_steps"] == 3
    assert v.figures["histogram"] == {} and "3 direction-only SCROLL steps" in v.summary


def test_the_gesture_check_would_have_judged_nothing_on_them(mobile_out):
    """What the direction-only branch replaces: the gesture check finds no grounded SCROLL."""
    v = invariants.scroll_histogram(shards(mobile_out), MOBILE.scrolls)
    assert v.figures["histogram"] == {} and "gestures" not in v.figures


def _first_scroll(demo: h5py.Group) -> int | None:
    descs = demo["action_desc"].asstr()[:]
    return next((t for t, d in enumerate(descs) if d.startswith("scroll(")), None)


@pytest.mark.parametrize("damage", ["gesture", "no direction"])
def test_a_made_up_gesture_or_a_desc_without_direction_warns(mobile_out, tmp_path, damage):
    folder = tmp_path / DIRECTORY
    shutil.copytree(mobile_out / DIRECTORY, folder)
    with h5py.File(folder / f"{DIRECTORY}_0000.hdf5", "r+") as f:
        demo = next(d for d in f["data"].values() if _first_scroll(d) is not None)
        t = _first_scroll(demo)
        if damage == "gesture":
            demo["action_mask"][t] = [1, 1, 1, 1]
            demo["action_params"][t] = [0.5, 0.8, 0.5, 0.2]
        else:
            demo["action_desc"][t] = "scroll()"
    v = invariants.scroll_histogram(shard_files(folder, DIRECTORY), True, scroll_gestures=False)
    assert not v.passed and v.severity == invariants.WARN
    rule = "demo.action_mask.table" if damage == "gesture" else "demo.scroll.desc"
    assert v.figures["by_rule"] == {rule: 1}, v.examples


def test_a_direction_only_source_without_any_scroll_warns(mobile_out, tmp_path):
    folder = tmp_path / DIRECTORY
    shutil.copytree(mobile_out / DIRECTORY, folder)
    with h5py.File(folder / f"{DIRECTORY}_0000.hdf5", "r+") as f:
        for demo in f["data"].values():
            types = demo["action_type"][:]
            types[types == 4] = 11  # every SCROLL made a WAIT
            demo["action_type"][:] = types
    v = invariants.scroll_histogram(shard_files(folder, DIRECTORY), True, scroll_gestures=False)
    assert not v.passed and v.summary == "a source with scrolling produced no SCROLL step"


def test_the_mask_check_accepts_direction_only_scrolls_and_does_not_call_them_ungrounded(mobile_out):
    v = invariants.action_mask(shards(mobile_out), scroll_gestures=False)
    assert v.passed, v.examples
    # The one TYPE without a point is counted as the format counts it; no SCROLL is.
    assert v.figures["direction_only_scrolls"] == 3 and v.figures["ungrounded_steps"] == 1


def test_cursor_and_leakage_hold_on_portrait_frames_and_a_rotation(mobile_out):
    out = OutLayout(mobile_out)
    assert invariants.causal_cursor(shards(mobile_out), pixel_samples=1000).passed
    v = invariants.alignment_leakage(
        shards(mobile_out), out.episodes(DIRECTORY), ImageStore(out.image_store), frame_samples=1000
    )
    # Every frame compared with its IR observation, the rotated ones resized to the demo's size.
    assert v.passed and v.figures["frames_checked"] == 17, v.summary


def test_the_split_check_holds_for_a_split_listed_by_episode_ids(mobile_out):
    rows = read_split_rows(OutLayout(mobile_out), DIRECTORY)
    this = invariants.SplitTable("test", rows)
    assert invariants.split_disjointness(this, [invariants.SplitTable("train", [])]).passed
    again = invariants.split_disjointness(this, [invariants.SplitTable("train", rows[:1])])
    assert not again.passed and again.figures["overlapping_episodes"] == 1
