"""Each card promise fails on a purpose-built bad shard and passes on good data.

Bad shards are copies of a good demo build with one defect written into them with h5py.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

from gui_assets.checks import charts, integrity, invariants
from gui_assets.core import shard_reader
from gui_assets.core.cursor import eye_rect, eye_window
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import ActionType
from gui_assets.core.layout import OutLayout
from gui_assets.pipeline.chain import read_split_rows

DIR = "mind2web_train"


@pytest.fixture
def build(demo_build, tmp_path: Path) -> Path:
    """A private, writable copy of the demo build."""
    out, _ = demo_build
    shutil.copytree(out, tmp_path / "out")
    return tmp_path / "out"


def shards(out: Path, directory: str = DIR) -> list[Path]:
    return shard_reader.shard_files(out / directory, directory)


def leakage(out: Path) -> invariants.Verdict:
    layout = OutLayout(out)
    return invariants.alignment_leakage(shards(out), layout.episodes(DIR), ImageStore(layout.image_store))


@contextlib.contextmanager
def writable_demos(out: Path) -> Iterator[list[h5py.Group]]:
    """The demos of the first shard, open for writing until the block ends."""
    with h5py.File(shards(out)[0], "r+") as f:
        yield [f["data"][name] for name in sorted(f["data"], key=lambda k: int(k[5:]))]


# --- good data -----------------------------------------------------------------------------


def test_every_check_passes_on_the_demo(demo_build):
    out, _ = demo_build
    layout = OutLayout(out)
    for key in ("train", "test_task", "test_website", "test_domain"):
        d = f"mind2web_{key}"
        s = shards(out, d)
        verdicts = {
            "alignment_leakage": invariants.alignment_leakage(
                s, layout.episodes(d), ImageStore(layout.image_store)
            ),
            "causal_cursor": invariants.causal_cursor(s),
            "action_mask": invariants.action_mask(s),
            "scroll_histogram": invariants.scroll_histogram(s, source_scrolls=True),
            "shard_integrity": integrity.shard_integrity(out / d),
        }
        for name, v in verdicts.items():
            assert v.passed, (key, name, v.summary, v.examples)
    v = leakage(out)
    assert v.figures["frames_checked"] > 0 and v.figures["frame_mismatches"] == 0
    assert 0.05 <= v.figures["target_inside_eye_in_hand_rate"] <= 0.35


# --- alignment leakage ---------------------------------------------------------------------


def test_a_crop_centred_on_the_target_is_a_leak(build):
    with writable_demos(build) as demos:
        for demo in demos:
            prm, nhw = demo["action_params"][:], demo["native_hw"][:]
            rect = demo["eye_rect"][:]
            av = demo["obs/agentview_rgb"]
            for t in range(len(prm)):
                h, w = int(nhw[t, 0]), int(nhw[t, 1])
                x0, y0 = eye_window((float(prm[t, 0]), float(prm[t, 1])), w, h)  # the answer, not the cursor
                rect[t] = eye_rect(x0, y0, w, h)
                demo["obs/eye_in_hand_rgb"][t] = av[t, y0 : y0 + 128, x0 : x0 + 128]
            demo["eye_rect"][...] = rect
    v = leakage(build)
    assert not v.passed and v.severity == "ERROR"
    assert v.figures["target_inside_eye_in_hand_rate"] == 1.0
    assert v.figures["numerator"] == v.figures["denominator"] == 14
    assert "leak" in v.summary and "1.000" in v.summary


def test_a_frame_action_pairing_shifted_by_one_step_fails(build):
    with writable_demos(build) as demos:
        demo = next(d for d in demos if d["action_type"].shape[0] >= 4)
        av = demo["obs/agentview_rgb"]
        frames = av[:]
        av[:-1] = frames[1:]  # o_t replaced by the screen after a_t
    v = leakage(build)
    assert not v.passed and v.severity == "ERROR"
    assert v.figures["frame_mismatches"] >= 1
    assert any("not the pre-action observation" in e for e in v.examples)


def test_a_leak_rate_outside_the_healthy_band_warns_over_enough_steps(tmp_path):
    """25 pointer steps, 10 with the target inside the crop: 0.4 is no leak but worth a look."""
    path = tmp_path / "d_0000.hdf5"
    T = 26
    with h5py.File(path, "w") as f:
        d = f.create_group("data/demo_0")
        d["action_type"] = np.full(T, int(ActionType.CLICK))
        prm = np.zeros((T, 4), np.float32)
        prm[:, 0] = np.where(np.arange(T) % 5 < 2, 0.5, 0.9)
        prm[:, 1] = 0.5
        d["action_params"] = prm
        d["action_mask"] = np.tile(np.array([1, 1, 0, 0], np.float32), (T, 1))
        d["eye_rect"] = np.tile(np.array([0.45, 0.45, 0.55, 0.55], np.float32), (T, 1))
    v = invariants.alignment_leakage([path])
    assert not v.passed and v.severity == "WARN", v.summary
    assert v.figures["denominator"] == T and 0.35 < v.figures["target_inside_eye_in_hand_rate"] < 0.9


def test_consecutive_actions_on_one_element_are_a_leak_even_in_short_episodes(tmp_path):
    """Five clicks on one button: the spec rate is 0.8 (step 0 looks from the screen centre),
    but every step whose cursor a previous action placed shows the target: an ERROR."""
    path = tmp_path / "d_0000.hdf5"
    with h5py.File(path, "w") as f:
        for i in range(3):
            d = f.create_group(f"data/demo_{i}")
            d["action_type"] = np.full(5, int(ActionType.CLICK))
            d["action_params"] = np.tile(np.array([0.2, 0.3, 0, 0], np.float32), (5, 1))
            d["action_mask"] = np.tile(np.array([1, 1, 0, 0], np.float32), (5, 1))
            rect = np.tile(np.array([0.15, 0.24, 0.25, 0.36], np.float32), (5, 1))
            rect[0] = [0.45, 0.44, 0.55, 0.56]  # step 0: the screen centre
            d["eye_rect"] = rect
    v = invariants.alignment_leakage([path])
    assert not v.passed and v.severity == "ERROR"
    assert v.figures["target_inside_eye_in_hand_rate"] == pytest.approx(0.8)
    assert v.figures["demonstrated_cursor_rate"] == 1.0


# --- causal cursor -------------------------------------------------------------------------


def test_an_eye_rect_following_the_current_action_breaks_the_causal_cursor(build):
    with writable_demos(build) as demos:
        demo = next(iter(demos))
        rect = demo["eye_rect"][:]
        rect[1:] = rect[:-1].copy()  # window one step late: shifted against the actions
        rect[0] = [0.0, 0.0, 128 / 1280, 128 / 1080]
        demo["eye_rect"][...] = rect
    v = invariants.causal_cursor(shards(build))
    assert not v.passed and v.figures["by_rule"]["demo.eye_rect.centre"] >= 2
    assert v.examples[0].startswith("mind2web_train_0000.hdf5 demo_0 step 0")


def test_eye_pixels_from_elsewhere_break_the_causal_cursor(build):
    with writable_demos(build) as demos:
        demo = next(iter(demos))
        demo["obs/eye_in_hand_rgb"][0] = 255 - demo["obs/eye_in_hand_rgb"][0]
    v = invariants.causal_cursor(shards(build))
    assert not v.passed
    assert v.figures["by_rule"] == {"demo.eye_in_hand.pixels": 1}


# --- action mask ---------------------------------------------------------------------------


def test_an_invented_coordinate_in_a_masked_slot_fails(build):
    with writable_demos(build) as demos:
        demo = next(iter(demos))
        types = demo["action_type"][:]
        t = int(np.flatnonzero(types == ActionType.CLICK)[0])
        prm = demo["action_params"][:]
        prm[t, 2:] = [0.3, 0.4]  # a CLICK never constrains x2, y2
        demo["action_params"][...] = prm
    v = invariants.action_mask(shards(build))
    assert not v.passed and v.severity == "ERROR"
    assert "demo.action_mask.masked_zero" in v.figures["by_rule"]


def test_a_mask_outside_the_table_and_an_out_of_frame_coordinate_fail(build):
    with writable_demos(build) as demos:
        demo = next(iter(demos))
        mask, prm = demo["action_mask"][:], demo["action_params"][:]
        mask[0] = [1, 0, 1, 0]
        prm[1, 0] = 1.5
        demo["action_mask"][...] = mask
        demo["action_params"][...] = prm
    v = invariants.action_mask(shards(build))
    assert not v.passed and {"demo.action_mask.table", "demo.action_params.range"} <= set(
        v.figures["by_rule"]
    )
    assert any("mask [1.0, 0.0, 1.0, 0.0]" in e for e in v.examples), v.examples


def test_the_action_mask_check_and_the_validator_find_the_same_rules_broken(build):
    """One judge: the check runs the validator's action rules, so on a damaged shard both name
    the same rules, the same number of times."""
    from gui_assets.validate.demos import ACTION_RULES
    from gui_assets.validate.directory import check_directory
    from gui_assets.validate.shards import Sampling

    with writable_demos(build) as demos:
        demo = next(iter(demos))
        mask, prm = demo["action_mask"][:], demo["action_params"][:]
        mask[0] = [1, 0, 1, 0]
        prm[1, 2:] = [0.3, 0.4]
        demo["action_mask"][...] = mask
        demo["action_params"][...] = prm
    check = invariants.action_mask(shards(build)).figures["by_rule"]
    validator = check_directory(build / DIR, Sampling()).counts
    assert check and check == {r: n for r, n in validator.items() if r in ACTION_RULES}


# --- scroll histogram ----------------------------------------------------------------------


def test_a_scroll_desc_naming_the_gesture_instead_of_the_view_warns(build):
    with writable_demos(build) as demos:
        demo = next(d for d in demos if (d["action_type"][:] == ActionType.SCROLL).any())
        t = int(np.flatnonzero(demo["action_type"][:] == ActionType.SCROLL)[0])
        demo["action_desc"][t] = "scroll(up)"  # the content moved up; the view moved down
    v = invariants.scroll_histogram(shards(build), source_scrolls=True)
    assert not v.passed and v.severity == "WARN"
    assert v.figures["by_rule"] == {"demo.scroll.desc": 1}
    assert "moves the view down, action_desc 'scroll(up)' says up" in v.examples[0]
    assert sum(v.figures["histogram"]["down"].values()) == v.figures["scroll_steps"]


def test_a_scrolling_source_without_scroll_steps_warns_and_the_histogram_renders(build):
    with writable_demos(build) as demos:
        for demo in demos:
            types = demo["action_type"][:]
            types[types == ActionType.SCROLL] = int(ActionType.PRESS_KEY)
            demo["action_type"][...] = types
    v = invariants.scroll_histogram(shards(build), source_scrolls=True)
    assert not v.passed and v.severity == "WARN" and v.figures["scroll_steps"] == 0
    assert invariants.scroll_histogram(shards(build), source_scrolls=False).passed
    assert "| down | 0 | 0 | 0 | 0 | 0 |" in charts.histogram_table({})


# --- split disjointness --------------------------------------------------------------------


def test_one_episode_in_two_splits_fails(demo_build):
    out, _ = demo_build
    train = invariants.SplitTable("train", read_split_rows(OutLayout(out), "mind2web_train"))
    test = invariants.SplitTable("test_task", read_split_rows(OutLayout(out), "mind2web_test_task"))
    assert invariants.split_disjointness(train, [test]).passed
    leaked = invariants.SplitTable("test_task", [*test.rows, train.rows[0]])
    v = invariants.split_disjointness(train, [leaked])
    assert not v.passed and v.figures["overlapping_episodes"] == 1
    assert v.examples == [f"{train.rows[0]['episode_id']}: episode content also in test_task"]


def test_a_group_in_main_and_val_and_a_bad_holdout_fraction_fail():
    rows = [
        {
            "episode_id": f"e{i}",
            "part": "val" if i < 2 else "main",
            "content_hash": f"h{i}",
            "group": "task-1" if i in (0, 5) else f"task-{i + 10}",
        }
        for i in range(300)
    ]
    v = invariants.split_disjointness(invariants.SplitTable("ubuntu", rows), [], val_fraction=(0.015, 0.025))
    assert not v.passed and v.examples == ["ubuntu group task-1: group id in main and val"]
    rows[5]["group"] = "task-99"
    v = invariants.split_disjointness(invariants.SplitTable("ubuntu", rows), [], val_fraction=(0.015, 0.025))
    assert not v.passed and "holdout fraction 0.0067" in v.summary
    small = invariants.SplitTable("ubuntu", rows[:50])  # too few episodes to judge a 2% share
    assert invariants.split_disjointness(small, [], val_fraction=(0.015, 0.025)).passed


# --- shard integrity -----------------------------------------------------------------------


def test_counts_that_differ_from_dataset_info_fail(build):
    info = build / DIR / "dataset_info.json"
    d = json.loads(info.read_text())
    d["shards"][0]["steps"] += 1
    d["stats"]["steps"] += 1
    info.write_text(json.dumps(d))
    v = integrity.shard_integrity(build / DIR)
    assert not v.passed and v.figures["problems"] == 2


def test_a_shard_h5py_cannot_open_and_a_gap_in_numbering_fail(build):
    (build / DIR / "mind2web_train_0000.hdf5").write_bytes(b"not hdf5")
    shutil.copy(
        build / "mind2web_test_task" / "mind2web_test_task_0000.hdf5",
        build / DIR / "mind2web_train_0002.hdf5",
    )
    v = integrity.shard_integrity(build / DIR)
    text = " ".join(v.examples)
    assert not v.passed and ": shard.open: h5py cannot open it" in text and ": files.contiguous: " in text


def test_one_changed_byte_in_a_shard_fails_by_its_sha256(build):
    """Counts, sizes and h5py all still agree; only the hash of every byte can tell."""
    (victim,) = shards(build)
    assert integrity.shard_integrity(build / DIR).passed
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a frame chunk, past every header h5py reads
    victim.write_bytes(bytes(data))
    v = integrity.shard_integrity(build / DIR)
    assert not v.passed and v.figures["problems"] == 1
    assert "info.shards.sha256" in v.examples[0] and victim.name in v.examples[0]


def test_the_integrity_check_and_the_validator_find_the_same_file_rules_broken(build):
    info = build / DIR / "dataset_info.json"
    d = json.loads(info.read_text())
    d["shards"][0]["bytes"] += 1
    d["stats"]["episodes_out"] += 1
    info.write_text(json.dumps(d))
    from gui_assets.validate.directory import check_directory
    from gui_assets.validate.shards import Sampling

    check = integrity.shard_integrity(build / DIR).figures["by_rule"]
    validator = check_directory(build / DIR, Sampling()).counts
    assert check == {"info.shards.bytes": 1, "info.stats.counts": 1}
    assert {r: validator[r] for r in check} == check


def test_a_shard_over_the_cap_by_more_than_its_last_episode_fails(build):
    info = build / DIR / "dataset_info.json"
    d = json.loads(info.read_text())
    d["build"]["config"]["shard_cap_bytes"] = 1000  # the one shard is megabytes: far more than its last demo
    info.write_text(json.dumps(d))
    v = integrity.shard_integrity(build / DIR)
    assert not v.passed and "over the cap 1000" in v.examples[0]


def test_every_check_passes_on_every_demo_partition_of_every_source(every_demo):
    from gui_assets.sources.registry import SOURCES

    layout = OutLayout(every_demo)
    for spec in SOURCES:
        for key in spec.partition_keys:
            d = spec.directory(key)
            s = shards(every_demo, d)
            others = [
                invariants.SplitTable(k, read_split_rows(layout, spec.directory(k)))
                for k in spec.partition_keys
                if k != key and layout.splits(spec.directory(k)).is_file()
            ]
            verdicts = {
                "alignment_leakage": invariants.alignment_leakage(
                    s, layout.episodes(d), ImageStore(layout.image_store)
                ),
                "causal_cursor": invariants.causal_cursor(s),
                "action_mask": invariants.action_mask(s),
                "scroll_histogram": invariants.scroll_histogram(s, spec.scrolls),
                "split_disjointness": invariants.split_disjointness(
                    invariants.SplitTable(key, read_split_rows(layout, d)),
                    others,
                    spec.split_rule.val_fraction,
                ),
                "shard_integrity": integrity.shard_integrity(every_demo / d),
            }
            for name, v in verdicts.items():
                assert v.passed, (d, name, v.summary, v.examples)


# --- cost: pixels of a fixed sample, geometry of every step ---------------------------------


def _copies(out: Path, n: int) -> list[Path]:
    """The demo partition's shards n times over (as other shard files): a partition n times larger."""
    paths = []
    for i in range(n):
        for p in shards(out):
            copy = out / "big" / f"{i:03d}_{p.name}"
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(p, copy)
            paths.append(copy)
    return paths


def test_the_pixel_checks_read_a_fixed_sample_at_any_size(build, monkeypatch):
    layout = OutLayout(build)
    reads: list[int] = []
    real = invariants.read_chunk
    monkeypatch.setattr(invariants, "read_chunk", lambda d, t: reads.append(t) or real(d, t))
    ir, images = layout.episodes(DIR), ImageStore(layout.image_store)
    figures = {}
    for n in (4, 16):
        big = _copies(build, n)
        assert shard_reader.count_steps(big) > shard_reader.PIXEL_SAMPLES
        reads.clear()
        leak = invariants.alignment_leakage(big, ir, images)
        cursor = invariants.causal_cursor(big)
        assert leak.passed and cursor.passed, (leak.summary, cursor.summary)
        figures[n] = (leak.figures["frames_checked"], cursor.figures["pixel_samples"], len(reads))
        assert cursor.figures["steps"] == shard_reader.count_steps(big)  # geometry: every step
    # the same pixel work at 4x and 16x: 64 frames (one chunk each) for the leak check, 64 cursor steps
    assert figures[4] == figures[16] == (64, 64, 64)


def test_a_sample_is_spread_and_repeatable():
    a = shard_reader.StepSample(10_000)
    taken = [a.take(20) for _ in range(500)]
    assert sum(map(len, taken)) == 64 and len({t for ts in taken for t in ts}) > 10  # not one position
    b = shard_reader.StepSample(10_000)
    assert [b.take(20) for _ in range(500)] == taken
    small = shard_reader.StepSample(30)
    assert small.take(30) == list(range(30))


def test_a_shift_in_every_demo_of_a_large_partition_is_caught_by_the_sample(build):
    big = _copies(build, 8)
    for path in big:
        with h5py.File(path, "r+") as f:
            for demo in f["data"].values():
                av = demo["obs/agentview_rgb"]
                if av.shape[0] > 1:
                    av[:-1] = av[1:]  # the pairing bug a converter makes: frames one step late
    layout = OutLayout(build)
    v = invariants.alignment_leakage(big, layout.episodes(DIR), ImageStore(layout.image_store))
    assert not v.passed and v.severity == "ERROR" and v.figures["frame_mismatches"] >= 10


def test_one_bad_eye_rect_anywhere_in_a_large_partition_is_found(build):
    big = _copies(build, 8)
    with h5py.File(big[-1], "r+") as f:
        name = sorted(f["data"], key=lambda k: int(k[5:]))[-1]
        rect = f["data"][name]["eye_rect"][:]
        rect[-1] = [0.0, 0.0, 0.1, 0.1]
        f["data"][name]["eye_rect"][...] = rect
    v = invariants.causal_cursor(big)
    assert not v.passed  # every finding is at the one step broken
    assert {e.split(": ")[0] for e in v.examples} == {f"{big[-1].name} {name} step {len(rect) - 1}"}
