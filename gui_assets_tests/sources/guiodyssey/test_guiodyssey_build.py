"""guiodyssey end to end: hub mode through the local hub server, and the README's CLI command
from the demo mirror with every check passing and the validator finding nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.guiodyssey import demo
from gui_assets.sources.guiodyssey.source import SPEC as GUIODYSSEY
from gui_assets_tests.conftest import clean_env, cli_materialize, run_adapter
from gui_assets_tests.hub_server import LocalHub


def test_hub_mode_builds_the_same_partition_as_the_mirror(tmp_path):
    root = tmp_path / "hub"
    demo.write_mirror(root)
    _, mirrored = run_adapter(GUIODYSSEY, root, "train", tmp_path / "mirror")
    with LocalHub(root) as hub:
        settings = RawSettings(mode="hub", mirror=Path(), endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
        info = build_directory(GUIODYSSEY, "train", tmp_path / "out", settings)
        fetched = {
            r.path.split("/resolve/", 1)[1].split("/", 1)[1]
            for r in hub.state.requests
            if "/resolve/" in r.path
        }
    assert info.build["upstream"]["revision"] == hub.state.commit and info.build["upstream"]["mode"] == "hub"
    assert info.stats["episodes_out"] == 2 and info.stats["drops"] == dict(mirrored.drops)
    assert {"zips/screenshots_01", "zips/screenshots_02", "splits/random_split.json"} <= fetched
    assert f"annotations/{next(iter(demo.EPISODES))}.json" in fetched
    assert info.build["config"]["source_options"] == {"guiodyssey": {"split_file": "random_split"}}


@pytest.mark.slow
def test_the_cli_command_builds_train_with_every_check_passing(tmp_path, demo_mirror):
    """`dagster asset materialize -m gui_assets --select 'guiodyssey*' --partition train`."""
    r = cli_materialize("train", tmp_path, clean_env(GUI_ASSETS_MIRROR=str(demo_mirror)), source="guiodyssey")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RUN_SUCCESS" in r.stderr + r.stdout
    assert "ASSET_CHECK_EVALUATION" in r.stderr and "did not pass" not in r.stderr
    d = tmp_path / "build" / "guiodyssey_train"
    info = json.loads((d / "dataset_info.json").read_text())
    # One shard per frame size: the two phones differ.
    assert sorted(p.name for p in d.iterdir()) == [
        "dataset_info.json",
        "guiodyssey_train_0000.hdf5",
        "guiodyssey_train_0001.hdf5",
    ]
    assert info["stats"]["episodes_out"] == 2 and info["split"] == "train"
    assert info["stats"]["drops"] == {"missing_screenshot": 1, "unknown_action_verb": 1}
    assert info["build"]["config"]["source_options"] == {"guiodyssey": {"split_file": "random_split"}}
    with h5py.File(d / "guiodyssey_train_0000.hdf5", "r") as f:
        assert {f["data"][n].attrs["platform"] for n in f["data"]} == {"mobile"}
    v = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(tmp_path / "build")], capture_output=True, text=True
    )
    assert v.returncode == 0, v.stdout + v.stderr
