"""The validator on a mobile directory: portrait frames and a rotation, direction-only scrolls,
keys, typing with no point, and test sub-splits, built by the pipeline from a toy phone source
declared in code; it passes whole, and each mobile rule, broken once on a copy, is named."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import pytest

from gui_assets_tests.mobile_toy import build_mobile, expected_subsplits
from gui_assets_tests.validate.test_validate import broken_rules, run_json

DIRECTORY = "toymobile_test"


@pytest.fixture(scope="module")
def mobile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_mobile(tmp_path_factory.mktemp("mobile")) / DIRECTORY


def info_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "dataset_info.json").read_text(encoding="utf-8"))


def test_a_mobile_directory_passes_and_records_its_subsplits_and_platform(mobile_dir):
    status, report = run_json(str(mobile_dir))
    assert status == 0, [f for t in report["targets"] for f in t["findings"]]
    info = info_of(mobile_dir)
    assert (
        info["subsplits"]
        == expected_subsplits()
        == {
            "IDD": {"episodes": 2, "steps": 14},
            "app_unseen": {"episodes": 1, "steps": 8},
        }
    )
    assert info["build"]["source"]["platform"] == "mobile"
    assert info["build"]["source"]["scroll_gestures"] is False
    # Three direction-only SCROLLs and two pointless TYPE / key steps: none of them ungrounded.
    assert info["stats"]["action_type_counts"]["SCROLL"] == 3 and info["stats"]["ungrounded_steps"] == 0
    assert info["stats"]["scroll_histogram"] == {}
    with h5py.File(mobile_dir / f"{DIRECTORY}_0000.hdf5") as f:
        demos = [f["data"][d] for d in sorted(f["data"])]
        assert {d.attrs["platform"] for d in demos} == {"mobile"}
        hws = {tuple(hw) for d in demos for hw in d["native_hw"][:]}
        assert hws == {(1200, 540), (540, 1200)}  # the rotated steps keep their own native size


def edit_demo(fn: Callable[[h5py.Group], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        with h5py.File(folder / f"{DIRECTORY}_0000.hdf5", "r+") as f:
            fn(next(d for d in f["data"].values() if b"scroll" in b"".join(d["action_desc"][:])))

    return mutate


def edit_info(fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        info = info_of(folder)
        fn(info)
        (folder / "dataset_info.json").write_text(json.dumps(info), encoding="utf-8")

    return mutate


def scroll_gets_a_gesture(demo: h5py.Group) -> None:
    """A direction-only source's SCROLL given a span mask and a gesture (consistently)."""
    t = next(i for i, d in enumerate(demo["action_desc"].asstr()[:]) if d.startswith("scroll("))
    demo["action_mask"][t] = [1, 1, 1, 1]
    demo["action_params"][t] = [0.5, 0.2, 0.5, 0.8]
    demo["actions"][t, 0:4] = [0.5, 0.2, 0.5, 0.8]
    demo["actions"][t, 6] = 0


def _platform(demo: h5py.Group) -> None:
    demo.attrs["platform"] = "desktop"


def _subsplits_attr(demo: h5py.Group) -> None:
    demo.attrs["test_subsplits"] = json.dumps(["IDD", "task_unseen"])


SHARD_EDIT = {"info.shards.sha256", "info.shards.bytes"}
CASES = [
    ("demo.platform", edit_demo(_platform), SHARD_EDIT),
    # The invented gesture also moves the causal cursor and enters the histogram.
    (
        "demo.action_mask.table",
        edit_demo(scroll_gets_a_gesture),
        SHARD_EDIT
        | {"demo.cursor.causal", "demo.eye_rect.centre", "demo.scroll.desc", "info.stats.scroll_histogram"},
    ),
    ("info.subsplits", edit_demo(_subsplits_attr), SHARD_EDIT),
    ("info.subsplits", edit_info(lambda i: i["subsplits"]["IDD"].update(steps=1)), set()),
    ("info.subsplits", edit_info(lambda i: i.pop("subsplits")), set()),
    ("info.subsplits", edit_info(lambda i: i.update(subsplits=["IDD"])), set()),
    ("info.stats.ungrounded_steps", edit_info(lambda i: i["stats"].update(ungrounded_steps=3)), set()),
]


@pytest.mark.parametrize(
    ("rule", "mutate", "also"),
    CASES,
    ids=["platform", "scroll gesture", "demo subsplit", "count", "missing", "not an object", "ungrounded"],
)
def test_a_broken_mobile_rule_is_named(mobile_dir, tmp_path, rule, mutate, also):
    folder = tmp_path / DIRECTORY
    shutil.copytree(mobile_dir, folder)
    mutate(folder)
    status, report = run_json(str(folder))
    broken = broken_rules(report)
    assert status == 1 and rule in broken and broken <= {rule} | also, broken
