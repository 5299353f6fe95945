"""Each build of a partition reports what changed since the previous one; demo data says it is
demo data and never reaches a dataset repo."""

from __future__ import annotations

import dagster as dg
import pytest

from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.pipeline.changes import read_change
from gui_assets.publish import hub
from gui_assets.publish.card import card_text
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets_tests.conftest import m2w_row, page_bytes, source_definitions
from gui_assets_tests.hub_server import LocalHub


def test_a_rebuild_reports_episodes_added_removed_changed_steps_and_drops(write_m2w, tmp_path):
    shot = page_bytes()
    rows = [
        m2w_row("a", "0", screenshot=shot),
        m2w_row("b", "0", screenshot=shot),
        m2w_row("c", "0", screenshot=shot),
    ]
    out = tmp_path / "out"
    build_directory(MIND2WEB, "train", out, RawSettings("mirror", write_m2w([rows])))
    first = read_change(OutLayout(out), "mind2web_train")
    assert first["first_build"] and first["episodes"] == 3

    rows = [
        m2w_row("a", "0", screenshot=shot),  # unchanged
        m2w_row("b", "0", screenshot=shot, task="another instruction"),  # changed content
        m2w_row("d", "0", screenshot=shot),  # new; c is gone
        m2w_row("d", "1", screenshot=b""),  # a dropped row
    ]
    info = build_directory(MIND2WEB, "train", out, RawSettings("mirror", write_m2w([rows])))
    change = read_change(OutLayout(out), "mind2web_train")
    assert change["episodes_added"] == ["mind2web/d"]
    assert change["episodes_removed"] == ["mind2web/c"]
    assert change["episodes_changed"] == ["mind2web/b"]
    assert (change["steps_before"], change["steps"], change["steps_change"]) == (3, 3, 0)
    assert change["drops_change"] == {"missing_screenshot": 1}
    assert change["revision"] == info.build["upstream"]["revision"]


def test_a_demo_build_says_so_and_no_upload_to_a_hub_repo_takes_it(tmp_path, demo_mirror):
    out = tmp_path / "out"
    demo = build_directory(MIND2WEB, "test_task", out, RawSettings("mirror", demo_mirror))
    assert demo.demo and demo.build["demo_mirror"] is True
    assert "Demo data, not a dataset" in card_text([demo], "o/d")
    with LocalHub(tmp_path / "hub-root") as server:
        target = hub.HfHubTarget("someone/dataset", token=None, endpoint=server.endpoint)
        with pytest.raises(hub.UploadError, match=r"generated demo mirror.*Set GUI_ASSETS_MIRROR"):
            hub.refuse_demo([demo], target)
        assert server.state.requests == []  # nothing was sent, not even a question


@pytest.mark.slow
def test_the_upload_asset_refuses_a_demo_build_for_a_hub_repo_and_sends_nothing(tmp_path, demo_mirror):
    from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource

    with LocalHub(tmp_path / "hub-root") as server:
        resources = {
            "paths": GuiAssetsPaths(out=str(tmp_path / "out")),  # no mirror set: the generated demo
            "hub": HubResource(repo_id="someone/dataset", endpoint=server.endpoint),
            "build": BuildSettings(),
            "alerts": AlertsResource(),
        }
        with dg.instance_for_test() as instance:
            result = dg.materialize(
                source_definitions("mind2web"),
                partition_key="test_website",
                resources=resources,
                instance=instance,
                raise_on_error=False,
            )
        assert not result.success
        failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        assert [e.step_key for e in failures] == ["mind2web_upload"]
        assert "generated demo mirror" in str(failures[0].event_specific_data.error.message)
        assert server.state.requests == []


def test_an_upload_never_mixes_demo_and_real_directories(tmp_path, demo_mirror, write_m2w):
    real = build_directory(
        MIND2WEB, "train", tmp_path / "real", RawSettings("mirror", write_m2w([[m2w_row()]]))
    )
    demo = build_directory(MIND2WEB, "test_task", tmp_path / "demo", RawSettings("mirror", demo_mirror))
    assert not real.demo and demo.demo
    target = hub.LocalHubTarget(tmp_path / "local-hub")
    hub.refuse_demo([demo], target)  # a demo into an empty local folder is fine
    (target.root / real.directory).mkdir(parents=True)
    real.write(target.root / real.directory / "dataset_info.json")
    with pytest.raises(hub.UploadError, match="demo and real directories would mix"):
        hub.refuse_demo([demo], target)
    with pytest.raises(hub.UploadError, match="would mix"):
        hub.refuse_demo([real, demo], hub.LocalHubTarget(tmp_path / "empty"))
    assert DatasetInfo.read(target.root / real.directory / "dataset_info.json").demo is False
