"""platform="mobile" end to end through the Dagster code location: the toy phone source
(gui_assets_tests.mobile_toy: portrait frames, a rotation, direction-only scrolls, test
sub-splits) gets its chain and its six checks, all passing, with the scroll check saying that no
gesture was recorded; the publish group writes its card section, its preview rows and its
cua-lite rows under mobile/; the validator passes the whole output folder."""

from __future__ import annotations

import json

import dagster as dg

from gui_assets.defs.location import build_definitions
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.sources.demo_mirror import ensure_demo_mirror
from gui_assets.validate import main as validate
from gui_assets_tests.conftest import asset_keys
from gui_assets_tests.mobile_toy import MOBILE, expected_subsplits


def test_a_mobile_source_gets_its_chain_checks_and_publish_and_validates(tmp_path):
    mirror = ensure_demo_mirror(tmp_path / "mirror", [MOBILE])
    out = tmp_path / "out"
    defs = build_definitions([MOBILE])
    resources = {
        "paths": GuiAssetsPaths(out=str(out), mirror=str(mirror)),
        "hub": HubResource(),
        "build": BuildSettings(preview_count=10),
        "alerts": AlertsResource(),
    }
    chain = [a for a in defs.assets if all(k.path[0].startswith("toymobile") for k in asset_keys(a))]
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [*chain, *defs.asset_checks], partition_key="test", resources=resources, instance=instance
        )
        assert result.success
        checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
        assert len(checks) == 6
        assert all(c.passed for c in checks.values()), [
            (n, c.metadata.get("summary")) for n, c in checks.items() if not c.passed
        ]
        scroll = checks["scroll_histogram"].metadata
        assert scroll["gestures"].value == "none recorded: direction only"
        assert scroll["directions"].value == {"down": 1, "right": 1, "up": 1}
        assert checks["action_mask"].metadata["direction_only_scrolls"].value == 3
        publish = [a for a in defs.assets if a not in chain]
        assert dg.materialize(publish, resources=resources, instance=instance).success

    info = json.loads((out / "toymobile_test" / "dataset_info.json").read_text(encoding="utf-8"))
    assert info["subsplits"] == expected_subsplits()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| toymobile_test/ | toymobile | mobile | 3 | 17 | 1 |" in card
    assert "## Mobile demonstrations" in card and "| toymobile_test/ | IDD | 2 | 14 |" in card
    rows = list((out / "cua_lite").rglob("*.parquet"))
    assert [p.relative_to(out / "cua_lite").parts[2:5] for p in rows] == [("mobile", "use", "validation")]
    assert validate([str(out)]) == 0
