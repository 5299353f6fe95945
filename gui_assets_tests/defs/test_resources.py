"""The resources read every setting from its one declaration: the build resource's fields are
made from gui_assets.pipeline.settings and the registered sources' options, typed in run config as a user
types them, and recorded in dataset_info.json build.config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from gui_assets.core.config import BuildConfig
from gui_assets.defs.resources import AlertsResource, BuildSettings, GuiAssetsPaths, HubResource
from gui_assets.pipeline import settings
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import clean_env, source_definitions


def test_the_build_resource_has_exactly_the_declared_knobs_with_their_defaults():
    declared = {k.name: k for k in settings.build_knobs()}
    model = BuildSettings.model_fields
    assert set(model) == set(declared) | {"source_options"}
    for name, knob in declared.items():
        assert model[name].default == knob.default and model[name].description == knob.meaning
    options = BuildSettings().source_options
    for spec in SOURCES:
        section = getattr(options, spec.name, None)
        assert (section is not None) == bool(spec.options), spec.name
        for option in spec.options:
            assert getattr(section, option.name) == option.default


def test_the_default_resource_gives_the_default_config():
    config = BuildSettings().config()
    assert {k: v for k, v in config.to_dict().items() if k != "source_options"} == {
        k: v for k, v in BuildConfig().to_dict().items() if k != "source_options"
    }
    assert config.source_options == {s.name: s.resolve_options({}) for s in SOURCES if s.options}


def test_typed_values_reach_the_config_in_its_own_units():
    config = BuildSettings(shard_cap_mb=2.5, agentview_hw=[64, 96], libdeflate_level=1).config()
    assert (config.shard_cap_bytes, config.agentview_hw, config.libdeflate_level) == (2_500_000, (64, 96), 1)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        ({"libdeflate_level": 13}, "resources.build.config: libdeflate_level must be 1..12"),
        (
            {"source_options": {"mind2web": {"scroll_step_fraction": 1.5}}},
            "resources.build.config: mind2web option scroll_step_fraction must be in (0, 1], not 1.5",
        ),
    ],
)
def test_a_bad_knob_fails_the_run_by_name(build, message):
    with pytest.raises(dg.Failure) as e:
        BuildSettings(**build).config()
    assert e.value.description == message


def test_write_threads_come_from_the_knob_then_the_variable(monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_WRITE_THREADS", "3")
    assert BuildSettings().threads() == 3 and BuildSettings(write_threads=5).threads() == 5
    monkeypatch.setenv("GUI_ASSETS_WRITE_THREADS", "many")
    with pytest.raises(dg.Failure, match="GUI_ASSETS_WRITE_THREADS must be a whole number"):
        BuildSettings().threads()


def test_a_source_option_typed_in_run_config_changes_the_build_and_is_recorded(tmp_path, demo_mirror):
    """`--config-json '{"resources": {"build": {"config": {"source_options": {"pango":
    {"hover": true}}}}}}'`, as the README says: HOVER steps appear, and the option is recorded."""
    resources = {
        "paths": GuiAssetsPaths(out=str(tmp_path), mirror=str(demo_mirror)),
        "hub": HubResource(),
        "build": BuildSettings(),
        "alerts": AlertsResource(),
    }
    typed = {"resources": {"build": {"config": {"source_options": {"pango": {"hover": True}}}}}}
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            source_definitions("pango"),
            partition_key="sample",
            resources=resources,
            run_config=typed,
            instance=instance,
            selection=dg.AssetSelection.assets("pango", "pango_episodes", "pango_splits", "pango_shards")
            | dg.AssetSelection.assets("pango_dataset_info"),
        )
        assert result.success
    info = json.loads(Path(tmp_path / "pango_sample" / "dataset_info.json").read_text())
    assert info["build"]["config"]["source_options"]["pango"] == {"hover": True}
    assert info["stats"]["action_type_counts"].get("HOVER", 0) >= 1
    assert "mouseover" not in info["stats"]["drops"]


@pytest.mark.parametrize(
    ("wrong", "name"), [({"pangoo": {"hover": True}}, "pangoo"), ({"pango": {"hovr": True}}, "hovr")]
)
def test_an_unknown_source_or_option_in_run_config_is_refused_before_the_run(wrong, name):
    @dg.asset
    def probe(build: BuildSettings) -> None:
        build.config()

    with pytest.raises(dg.DagsterInvalidConfigError, match=f'unexpected config entry "{name}"'):
        dg.materialize(
            [probe],
            resources={"build": BuildSettings()},
            run_config={"resources": {"build": {"config": {"source_options": wrong}}}},
        )


def test_the_code_location_refuses_a_bad_setting_when_it_loads():
    """Caught when the definitions load (the CLI, `dagster dev`, `dg`), not when a run starts."""
    r = subprocess.run(
        [sys.executable, "-c", "import gui_assets.definitions"],
        env=clean_env(GUI_ASSETS_SOURCE="bogus"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1
    assert (
        "SettingError: bad gui_assets settings in the environment: GUI_ASSETS_SOURCE must be one of "
        "mirror, hub, not 'bogus'" in r.stderr
    )
