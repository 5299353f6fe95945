"""androidcontrol built end to end: the CLI command a user types, every asset check passing and the
validator finding nothing; the rotated and the tablet demos through the writer; a broken shard
failing the run naming the file."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.androidcontrol import adapter, demo
from gui_assets.sources.androidcontrol.source import SPEC as ANDROIDCONTROL
from gui_assets_tests.conftest import clean_env, cli_materialize

CHECKS = (
    "split_disjointness",
    "action_mask",
    "alignment_leakage",
    "causal_cursor",
    "scroll_histogram",
    "shard_integrity",
)


@pytest.mark.slow
def test_the_cli_builds_train_with_every_check_passing_and_a_clean_validation(tmp_path: Path):
    """`dagster asset materialize -m gui_assets --select 'androidcontrol*' --partition train`."""
    mirror = tmp_path / "mirror"
    demo.write_mirror(mirror)
    out = tmp_path / "build"
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(out))
    r = cli_materialize("train", tmp_path, env, source="androidcontrol")
    assert r.returncode == 0, r.stderr[-3000:]
    passed = [c for c in CHECKS if f"Asset check '{c}' on 'androidcontrol_" in r.stderr]
    assert passed == list(CHECKS) and "did not pass" not in r.stderr
    assert not (out / "alerts.jsonl").exists()  # a failed check of any severity would be there
    d = out / "androidcontrol_train"
    info = json.loads((d / "dataset_info.json").read_text())
    assert [s["file"] for s in info["shards"]] == ["androidcontrol_train_0000.hdf5"]
    assert info["stats"]["episodes_out"] == 3 and info["stats"]["steps"] == 13
    assert info["stats"]["drops"] == {"empty_episode": 1, "unknown_action_verb": 1}
    assert info["build"]["source"]["platform"] == "mobile"
    v = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(out)], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr
    assert "0 findings; every rule holds" in v.stdout


def test_rotated_and_tablet_demos_keep_one_frame_size_and_each_step_s_native_size(tmp_path: Path):
    mirror = tmp_path / "mirror"
    demo.write_mirror(mirror)
    settings = RawSettings(mode="mirror", mirror=mirror)
    sizes = {}
    for key in ("validation", "test"):
        build_directory(ANDROIDCONTROL, key, tmp_path / "out", settings)
        with h5py.File(tmp_path / "out" / f"androidcontrol_{key}" / f"androidcontrol_{key}_0000.hdf5") as f:
            for name, demo_group in f["data"].items():
                episode = demo_group.attrs["episode_id"]
                frames = demo_group["obs/agentview_rgb"].shape
                sizes[episode] = (frames[1:3], demo_group["native_hw"][:].tolist())
                assert demo_group.attrs["upstream_episode_id"] == episode.split("/")[1], name
                assert demo_group.attrs["platform"] == "mobile"
    tablet, rotated = sizes["androidcontrol/3"], sizes["androidcontrol/4"]
    assert tablet == ((500, 800), [[500, 800]] * 4)
    assert rotated[1] == [[800, 360], [360, 800], [360, 800], [360, 800]]  # (height, width) per step
    assert rotated[0] == (360, 800)  # one frame size per demo: the one most of its screens have
    info = json.loads((tmp_path / "out" / "androidcontrol_test" / "dataset_info.json").read_text())
    assert {name: n["episodes"] for name, n in info["subsplits"].items()} == {
        "IDD": 2,
        "app_unseen": 1,
        "category_unseen": 1,
        "task_unseen": 1,
    }
    v = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(tmp_path / "out")], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.slow
def test_a_broken_shard_fails_the_cli_run_naming_the_file(tmp_path: Path):
    mirror = tmp_path / "mirror"
    shard = demo.write_mirror(mirror) / demo.shard_name(19)
    stream = gzip.decompress(shard.read_bytes())
    shard.write_bytes(gzip.compress(stream[:40] + bytes([stream[40] ^ 0x20]) + stream[41:], mtime=0))
    env = clean_env(GUI_ASSETS_MIRROR=str(mirror), GUI_ASSETS_OUT=str(tmp_path / "build"))
    r = cli_materialize("validation", tmp_path, env, source="androidcontrol")
    assert r.returncode != 0
    assert f"{adapter.REPO_ID}/android_control-00019-of-00020" in r.stderr
    assert "bad data CRC in record #0" in r.stderr
    assert not (tmp_path / "build" / "androidcontrol_validation").exists()
