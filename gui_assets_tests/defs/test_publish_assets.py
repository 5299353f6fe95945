"""The publishing assets end to end: the whole demo through Dagster lands in `<out>/hub/`."""

from __future__ import annotations

import dagster as dg
import pyarrow.parquet as pq
import pytest
import yaml

from gui_assets.core.layout import DatasetInfo
from gui_assets.defs.export_checks import build_export_checks
from gui_assets.defs.repo_assets import build_repo_assets
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import source_definitions


@pytest.mark.slow
def test_the_demo_publishes_everything_to_the_local_hub_folder(tmp_path, demo_mirror):
    resources = {
        "paths": GuiAssetsPaths(out=str(tmp_path), mirror=str(demo_mirror)),
        "hub": HubResource(),
        "build": BuildSettings(preview_count=60),
        "alerts": AlertsResource(),
    }
    with dg.instance_for_test() as instance:
        for spec in SOURCES:
            for key in spec.partition_keys:
                r = dg.materialize(
                    source_definitions(spec.name),
                    partition_key=key,
                    resources=resources,
                    instance=instance,
                    raise_on_error=False,
                )
                assert r.success, (spec.name, key)
        r = dg.materialize(
            build_repo_assets(SOURCES), resources=resources, instance=instance, raise_on_error=False
        )
        assert r.success
        # The LeRobot export is off by default: not materialized, its upload skipped, nothing written.
        done = {e.asset_key.to_user_string() for e in r.get_asset_materialization_events() if e.asset_key}
        assert "lerobot_export" not in done and "hub_lerobot" not in done and "preview" in done
        assert not (tmp_path / "lerobot").exists()
        on = {**resources, "build": BuildSettings(preview_count=60, lerobot_export=True)}
        lerobot_assets = [a for a in build_repo_assets(SOURCES) if "lerobot" in a.key.to_user_string()]
        r = dg.materialize([*lerobot_assets, *build_export_checks()], resources=on, instance=instance)
        checks = {e.check_name: e.passed for e in r.get_asset_check_evaluations()}
        assert checks == {"lerobot_counts": True, "lerobot_frames": True, "lerobot_tasks": True}
    hub = tmp_path / "hub"
    for info in (DatasetInfo.read(p) for p in sorted(tmp_path.glob("*/dataset_info.json"))):
        assert (hub / "lerobot" / info.directory / "meta" / "info.json").is_file()
    card = (hub / "README.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["configs"][0]["config_name"] == "preview"
    assert list(hub.glob("preview/*.parquet"))
    infos = [DatasetInfo.read(p) for p in sorted(tmp_path.glob("*/dataset_info.json"))]
    assert len(infos) == sum(len(s.partition_keys) for s in SOURCES)
    for info in infos:
        for f in (tmp_path / info.directory).iterdir():
            assert (hub / info.directory / f.name).read_bytes() == f.read_bytes()
        row = next(line for line in card.splitlines() if line.startswith(f"| {info.directory}/ |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3:6] == [
            f"{sum(s.demos for s in info.shards):,}",
            f"{sum(s.steps for s in info.shards):,}",
            str(len(info.shards)),
        ]
    assert (tmp_path / "cua_lite" / "cua-lite" / "GuiAgent").is_dir()
    # The screen-overlap audit: the demo's test_task opens on a training page, so the parquet
    # lists it, the picture shows it, and the card's table has its row.
    rows = pq.read_table(hub / "screen_overlap.parquet").to_pylist()
    assert ("mind2web_test_task", "mind2web_train") in {
        (r["eval_directory"], r["train_directory"]) for r in rows
    }
    assert (hub / "screen_overlap.png").read_bytes().startswith(b"\x89PNG")
    assert "| `mind2web_test_task/` | 7 | 1 (14.3%) | 14.3% |" in card
