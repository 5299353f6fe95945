"""The whole chain of a partition on the demo mirror, without Dagster."""

from __future__ import annotations

import glob
import hashlib
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest

from gui_assets.core.layout import DatasetInfo
from gui_assets.pipeline.chain import EmptyPartitionError, RawSettings, build_directory
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import REPO, m2w_row


def test_the_validator_finds_nothing(demo_build):
    """`python -m gui_assets.validate` over the whole demo build: every rule holds."""
    out, _ = demo_build
    r = subprocess.run(
        [sys.executable, "-m", "gui_assets.validate", str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for key in MIND2WEB.partition_keys:
        assert f"mind2web_{key} (directory, {out / f'mind2web_{key}'}): 1 shard," in r.stdout
    assert r.stdout.splitlines()[-1].endswith("0 findings; every rule holds")


def test_dataset_info_matches_the_shards_and_upstream(demo_build, demo_mirror):
    out, infos = demo_build
    for key, info in infos.items():
        d = out / f"mind2web_{key}"
        on_disk = DatasetInfo.read(d / "dataset_info.json")
        assert on_disk.to_dict() == info.to_dict()
        assert (info.directory, info.source, info.split) == (f"mind2web_{key}", "mind2web", key)
        for s in info.shards:
            p = d / s.file
            assert s.bytes == p.stat().st_size and s.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
            with h5py.File(p) as f:
                assert (f["data"].attrs["num_demos"], f["data"].attrs["total"]) == (s.demos, s.steps)
        assert info.stats["steps"] == sum(s.steps for s in info.shards)
        assert info.stats["episodes_out"] == sum(s.demos for s in info.shards)
        up = info.build["upstream"]
        assert up["repo_id"] == REPO and up["files"]
        for f in up["files"]:
            raw = demo_mirror / REPO / f["path"]
            assert (
                f["sha256"] == hashlib.sha256(raw.read_bytes()).hexdigest()
                and f["size"] == raw.stat().st_size
            )
        assert info.build["config"]["shard_cap_bytes"] == 500_000_000
        assert info.build["split_rule"]["name"] == "shipped"


def test_demo_train_exercises_every_edge_case(demo_build):
    _, infos = demo_build
    s = infos["train"].stats
    assert set(s["drops"]) == {
        "missing_screenshot",
        "undecodable_image",
        "malformed_step",
        "unknown_action_verb",
        "duplicate_step",
        "empty_episode",
    }
    assert set(s["ungrounded_by_reason"]) == {
        "hidden_element",
        "no_candidate",
        "malformed_bbox",
        "outside_viewport_x",
    }
    assert s["ungrounded_steps"] == 4
    assert {"CLICK", "TYPE", "SELECT", "HOVER", "SCROLL", "PRESS_ENTER"} <= set(s["action_type_counts"])
    assert sum(s["scroll_histogram"]["down"].values()) == s["action_type_counts"]["SCROLL"]
    assert 0 < s["target_inside_eye_in_hand_rate"] < 0.9


def test_every_grounded_point_lands_on_a_drawn_widget(demo_build):
    """The demo pages draw each target as a widget: the pixel under a click is not page background."""
    out, _ = demo_build
    checked = 0
    for p in glob.glob(str(out / "mind2web_*" / "*.hdf5")):
        with h5py.File(p) as f:
            for name in f["data"]:
                d = f["data"][name]
                av, prm, mask, types = (
                    d["obs/agentview_rgb"],
                    d["action_params"][:],
                    d["action_mask"][:],
                    d["action_type"][:],
                )
                for t in range(len(types)):
                    if mask[t, 0] and types[t] != 4:  # grounded, not a SCROLL
                        h, w = av.shape[1:3]
                        x, y = int(prm[t, 0] * (w - 1)), int(prm[t, 1] * (h - 1))
                        patch = av[t, max(0, y - 3) : y + 4, max(0, x - 3) : x + 4].reshape(-1, 3).astype(int)
                        # widgets are blue buttons or white boxes with a grey border; the page
                        # background is (250, 250, 252): a click on it would be a missed target
                        assert (np.abs(patch - [250, 250, 252]).sum(axis=1) > 6).any(), (p, name, t)
                        checked += 1
    assert checked >= 20


def test_rebuilding_gives_the_same_bytes(demo_build, demo_mirror, tmp_path):
    out, infos = demo_build
    again = build_directory(MIND2WEB, "test_task", tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
    assert [s.sha256 for s in again.shards] == [s.sha256 for s in infos["test_task"].shards]
    a = (out / "mind2web_test_task" / "dataset_info.json").read_bytes()
    b = (tmp_path / "mind2web_test_task" / "dataset_info.json").read_bytes()
    assert a == b


def test_seed_card_loading_section(demo_build):
    """Read a shard exactly as the dataset card's Loading section does, with plain h5py."""
    out, _ = demo_build
    p = out / "mind2web_train" / "mind2web_train_0000.hdf5"
    with h5py.File(p, "r") as f:
        demo = f["data"]["demo_0"]
        assert isinstance(demo.attrs["language_instruction"], str) and demo.attrs["language_instruction"]
        obs = demo["obs"]["agentview_rgb"][:]
        eye = demo["obs"]["eye_in_hand_rgb"][:]
        atype = demo["action_type"][:]
        prm = demo["action_params"][:]
        mask = demo["action_mask"][:]
        descs = demo["action_desc"][:5]
        T = len(atype)
        assert obs.shape[0] == T and obs.dtype == np.uint8 and obs.shape[3] == 3
        assert eye.shape == (T, 128, 128, 3)
        assert atype.dtype == np.int64 and prm.dtype == np.float32 and mask.dtype == np.float32
        assert all(isinstance(d, bytes) and d for d in descs)
        pred = np.zeros_like(prm)
        loss_xy = (((pred - prm) ** 2) * mask).sum() / np.maximum(mask.sum(), 1)
        assert np.isfinite(loss_xy)
        names = json.loads(f["data"].attrs["gui_action_types"])
        assert names[atype[0]] in names
    # robomimic's loader: demos sorted by int(name[5:]), num_samples required, 2-D actions
    shards = sorted(glob.glob(str(out / "mind2web_train" / "*.hdf5")))
    for shard in shards:
        with h5py.File(shard, "r", swmr=True, libver="latest") as f:
            demos = sorted(f["data"], key=lambda k: int(k[5:]))
            for name in demos:
                assert f["data"][name].attrs["num_samples"] == f["data"][name]["actions"].shape[0]
                assert f["data"][name]["actions"].ndim == 2


def test_nothing_surviving_the_adapter_fails_the_partition_with_counts(write_m2w, tmp_path):
    mirror = write_m2w([[m2w_row(screenshot=b""), m2w_row(index="1", screenshot=b"")]])
    with pytest.raises(EmptyPartitionError, match=r"mind2web_train: no episode.*missing_screenshot"):
        build_directory(MIND2WEB, "train", tmp_path / "out", RawSettings(mode="mirror", mirror=mirror))
    assert not (tmp_path / "out" / "mind2web_train").exists()
