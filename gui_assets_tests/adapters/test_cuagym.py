"""Lite.CUAGym: every computer action name, batches and stale frames, finish and shell tools."""

from __future__ import annotations

import json

import h5py
import pytest

from gui_assets import invariants, shard_reader
from gui_assets.adapters import cuagym
from gui_assets.demo import cuagym_mirror
from gui_assets.drops import Drop
from gui_assets.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType
from gui_assets.layout import OutLayout
from gui_assets.pipeline import RawSettings, build_directory, read_split_rows
from gui_assets.sources import CUAGYM
from gui_assets_tests.conftest import run_adapter


def run(mirror, tmp, partition="desktop_use"):
    return run_adapter(CUAGYM, mirror, partition, tmp)


def test_every_action_name_maps_and_batched_actions_are_stale(demo_mirror, tmp_path):
    eps, stats = run(demo_mirror, tmp_path)
    ep = eps[0]
    assert ep.instruction == "Rename the file to notes.txt" and ep.success
    got = [(s.action_type.name, tuple(round(p, 3) for p in s.params), s.text, s.obs_stale) for s in ep.steps]
    assert got == [
        ("CLICK", (0.32, 0.225, 0, 0), "", False),
        ("CLICK", (0.32, 0.225, 0, 0), "", False),
        ("TYPE", (0, 0, 0, 0), "notes.txt\n", True),  # second action of one call: its own screen unseen
        ("PRESS_KEY", (0, 0, 0, 0), "ctrl+s", False),
        ("SCROLL", (0.5, 0.6, 0.5, 0.35), "", False),  # view down 5 units: the content travels up 0.25
        ("DRAG", (0.1, 0.1, 0.4, 0.3), "", False),
        ("HOVER", (0.67, 0.52, 0, 0), "", False),
        ("CLICK", (0.67, 0.52, 0, 0), "", False),
        ("WAIT", (0, 0, 0, 0), "", False),  # the screenshot before it in the batch observes, it does not act
        ("PRESS_KEY", (0, 0, 0, 0), "shift", False),
        ("PRESS_ENTER", (0, 0, 0, 0), "enter", False),
        ("STOP", (0, 0, 0, 0), "", False),
    ]
    assert [s.desc for s in ep.steps][1:3] == ["double_click(0.32, 0.23)", 'type("notes.txt\\n")']
    assert ep.steps[7].desc.startswith("right_click(") and ep.steps[9].desc == 'hold_key("shift")'
    assert ep.steps[1].thought == ep.steps[2].thought == "Step 1: I will computer next."
    assert json.loads(ep.steps[0].annotations) == {"action_description": "do 0"}
    assert ep.attrs["stale_steps"] == "1"
    assert stats.drops["no_action_equivalent"] == 1 and stats.drops["non_gui_tool"] == 1


def test_finish_tools_inline_reasoning_and_scroll_at_the_pointer(demo_mirror, tmp_path):
    eps, _ = run(demo_mirror, tmp_path)
    t2 = eps[1]
    assert t2.steps[1].action_type == ActionType.SCROLL and t2.steps[1].params[:2] == pytest.approx(
        (0.12, 0.08)
    )
    assert t2.steps[1].desc == "scroll(up)" and t2.steps[0].thought == "Step 0: I will computer next."
    assert (t2.steps[2].action_type, t2.steps[2].text) == (ActionType.STOP, "The settings are open.")
    v1 = eps[2]  # validation, images given as paths relative to the mirror root
    assert v1.attrs["upstream_split"] == "validation" and v1.steps[-1].action_type == ActionType.FAIL
    assert not v1.success


def test_drops_by_reason(demo_mirror, tmp_path):
    _, stats = run(demo_mirror, tmp_path)
    assert stats.drops == {
        "duplicate_across_splits": 1,
        "incomplete": 1,
        "missing_screenshot": 2,
        "empty_episode": 1,
        "no_action_equivalent": 1,
        "non_gui_tool": 1,
    }


@pytest.mark.parametrize(
    ("action", "outcome"),
    [
        ({"action": "click", "coordinate": [1001, 5]}, "coordinate_out_of_range"),
        ({"action": "click", "coordinate": [5]}, "malformed_step"),
        ({"action": "scroll", "direction": "sideways", "amount": 3}, "malformed_step"),
        ({"action": "teleport"}, "unknown_action_verb"),
        ({"action": "key_up", "keys": ["a"]}, "no_action_equivalent"),
    ],
)
def test_bad_actions_are_dropped_by_reason(action, outcome):
    with pytest.raises(Drop) as e:
        cuagym._step(action, None, (0.5, 0.5), None, "", "", False)  # type: ignore[arg-type]
    assert e.value.reason == outcome


def test_grounded_steps_and_the_shipped_split(demo_mirror, tmp_path):
    info = build_directory(CUAGYM, "desktop_use", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    assert [s.file for s in info.val_shards] == ["cuagym_desktop_use_val_0000.hdf5"]
    rows = read_split_rows(OutLayout(tmp_path), "cuagym_desktop_use")
    assert invariants.split_disjointness(invariants.SplitTable("desktop_use", rows), []).passed
    shards = shard_reader.shard_files(tmp_path / "cuagym_desktop_use", "cuagym_desktop_use")
    for check in (invariants.action_mask, invariants.causal_cursor):
        assert check(shards).passed
    with h5py.File(shards[0]) as f:
        stale = f["data/demo_0/obs_stale"][:]
        assert stale.tolist().count(1) == 1
        masks = {tuple(m) for m in f["data/demo_0/action_mask"][:]}
    assert masks == {POINT_MASK, SPAN_MASK, NO_MASK}


def test_the_demo_rows_use_the_hub_layout(tmp_path):
    cuagym_mirror.write_mirror(tmp_path)
    got = sorted(p.relative_to(tmp_path / cuagym.REPO_ID).as_posix() for p in tmp_path.rglob("*.parquet"))
    assert got[0] == "browser/use/train/browser.use.demo/shard-00000-of-00001.parquet" and len(got) == 4
