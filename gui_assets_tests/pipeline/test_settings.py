"""Each setting is declared once: BuildConfig's fields (the byte-changing knobs), PUBLISH_KNOBS,
the environment variables of gui_assets.pipeline.settings, and each source's options on its spec."""

from __future__ import annotations

import dataclasses
from dataclasses import fields

import pytest

from gui_assets.core.config import BuildConfig
from gui_assets.pipeline import settings
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.pango import adapter as pango
from gui_assets.sources.pango.source import SPEC as PANGO
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.spec import OptionError, SourceOption, SourceSpec, resolve_options

# The variables' names are a contract (spec/pipeline.md and the deployment files use them).
VARIABLE_NAMES = {
    "GUI_ASSETS_OUT",
    "GUI_ASSETS_MIRROR",
    "GUI_ASSETS_SOURCE",
    "HF_TOKEN",
    "HF_ENDPOINT",
    "GUI_ASSETS_ALERT_WEBHOOK",
    "GUI_ASSETS_HUB_REPO",
    "GUI_ASSETS_EXECUTOR",
    "GUI_ASSETS_CELERY_BROKER",
    "GUI_ASSETS_CELERY_BACKEND",
    "GUI_ASSETS_WRITE_THREADS",
    "GUI_ASSETS_LEROBOT",
}


def test_the_variables_keep_their_names_and_each_is_declared_once():
    names = [v.name for v in settings.VARIABLES]
    assert set(names) == VARIABLE_NAMES and len(names) == len(set(names))
    assert all(v.meaning and v.default for v in settings.VARIABLES)
    assert [v.name for v in settings.VARIABLES if v.secret] == ["HF_TOKEN"]


def test_a_variable_is_read_when_asked_and_empty_is_unset(monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_HUB_REPO", "")
    assert settings.HUB_REPO.read() is None
    monkeypatch.setenv("GUI_ASSETS_HUB_REPO", "me/data")
    assert settings.HUB_REPO.read() == "me/data"


def test_every_byte_changing_knob_comes_from_a_build_config_field_with_its_default():
    knobs = {k.field: k for k in settings.config_knobs()}
    assert set(knobs) == {f.name for f in fields(BuildConfig)} - {"source_options", "source"}
    default = BuildConfig()
    for name, knob in knobs.items():
        assert knob.meaning and knob.recorded
        if knob.default is not None:  # None: unset (agentview_hw)
            assert knob.to_config(knob.default) == getattr(default, name), name
    cap = next(k for k in settings.config_knobs() if k.field == "shard_cap_bytes")
    assert (cap.name, cap.default, cap.to_config(200)) == ("shard_cap_mb", 500, 200_000_000)


def test_build_config_records_each_source_s_options_once_resolved():
    config = BuildConfig(libdeflate_level=1, source_options={"pango": {"hover": True}, "mind2web": {}})
    resolved = PANGO.resolve_config(config)
    assert resolved.options == {"hover": True} and PANGO.resolve_config(resolved) == resolved
    recorded = resolved.to_dict()
    assert recorded["source_options"] == {"pango": {"hover": True}} and recorded["libdeflate_level"] == 1
    assert "source" not in recorded and "pango_hover" not in recorded
    assert MIND2WEB.resolve_config(BuildConfig()).options == {
        "viewport_width": 1280,
        "viewport_height": 1080,
        "scroll_step_fraction": 0.75,
        "scroll_bottom_margin": 0.10,
    }
    with pytest.raises(LookupError, match="resolve_config"):
        _ = BuildConfig().options


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"hovr": True}, "pango has no option hovr (its options: hover)"),
        ({"hover": "yes"}, "pango option hover must be a bool, not 'yes'"),
        ({"hover": 1}, "pango option hover must be a bool, not 1"),
    ],
)
def test_a_bad_option_is_refused_naming_the_source_and_the_option(given, message):
    with pytest.raises(OptionError) as e:
        PANGO.resolve_options(given)
    assert str(e.value) == message


def test_an_option_rule_may_depend_on_another_option():
    ok = MIND2WEB.resolve_options({"scroll_step_fraction": 0.5, "scroll_bottom_margin": 0.4})
    assert ok["scroll_bottom_margin"] == 0.4
    with pytest.raises(OptionError, match="mind2web option scroll_bottom_margin must be in"):
        MIND2WEB.resolve_options({"scroll_step_fraction": 0.9, "scroll_bottom_margin": 0.2})
    assert MIND2WEB.resolve_options({"viewport_width": 1440})["viewport_width"] == 1440
    with pytest.raises(OptionError, match="viewport_height must be a positive number of pixels, not 0"):
        MIND2WEB.resolve_options({"viewport_height": 0})
    assert resolve_options("s", [SourceOption("f", float, 0.5, "m")], {"f": 1}) == {"f": 1.0}


def test_a_declaration_whose_defaults_break_its_rules_is_refused():
    bad = SourceOption("width", int, 0, "a width", "positive", lambda v, _: v > 0)
    with pytest.raises(OptionError, match="toy option width must be positive, not 0"):
        dataclasses.replace(PANGO, name="toy", options=(bad,))
    with pytest.raises(ValueError, match="its rule in words"):
        SourceOption("width", int, 1, "a width", check=lambda v, _: v > 0)
    with pytest.raises(ValueError, match="type must be one of"):
        SourceOption("hw", list, [], "a list")


def test_the_adapter_reads_its_options_whoever_built_the_config():
    """The spec binds its adapter to its options: a copy of a spec rebinds the declared one."""
    assert PANGO.declared_adapter is pango.episodes and PANGO.adapter.__module__ == pango.__name__
    copy = dataclasses.replace(PANGO, remote_hosts=("bucket.example",))
    assert copy.declared_adapter is pango.episodes


def test_every_registered_option_is_typed_documented_and_valid_by_default():
    for spec in SOURCES:
        for option in spec.options:
            assert option.meaning and isinstance(option.default, option.type), (spec.name, option.name)
        assert spec.resolve_options({}) == {o.name: o.default for o in spec.options}
    assert [o.name for o in PANGO.options] == ["hover"]


def test_publish_knobs_are_not_recorded_in_build_config():
    assert {k.name for k in settings.PUBLISH_KNOBS} == {
        "cua_lite_evaluation_as_validation",
        "lerobot_export",
        "lerobot_video",
        "preview_count",
        "preview_seed",
        "write_threads",
    }
    assert not any(k.recorded for k in settings.PUBLISH_KNOBS)
    names = [k.name for k in settings.build_knobs()]
    assert len(names) == len(set(names)) and "source_options" not in names


def test_a_spec_without_options_resolves_to_none():
    spec: SourceSpec = next(s for s in SOURCES if not s.options)
    assert spec.resolve_config(BuildConfig()).options == {}


def test_the_lerobot_export_is_off_unless_the_knob_or_the_variable_asks(monkeypatch):
    import dagster as dg

    from gui_assets.defs.resources import BuildSettings

    monkeypatch.delenv("GUI_ASSETS_LEROBOT", raising=False)
    assert not BuildSettings().lerobot()
    monkeypatch.setenv("GUI_ASSETS_LEROBOT", "1")
    assert BuildSettings().lerobot() and not BuildSettings(lerobot_export=False).lerobot()
    monkeypatch.setenv("GUI_ASSETS_LEROBOT", "0")
    assert not BuildSettings().lerobot() and BuildSettings(lerobot_export=True).lerobot()
    monkeypatch.setenv("GUI_ASSETS_LEROBOT", "maybe")
    with pytest.raises(dg.Failure, match="GUI_ASSETS_LEROBOT"):
        BuildSettings().lerobot()


def test_every_bad_variable_is_refused_with_what_it_may_be(monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_SOURCE", "bogus")
    monkeypatch.setenv("GUI_ASSETS_WRITE_THREADS", "many")
    monkeypatch.setenv("GUI_ASSETS_EXECUTOR", "in_process")
    with pytest.raises(settings.SettingError) as e:
        settings.refuse_bad_environment()
    assert "GUI_ASSETS_SOURCE must be one of mirror, hub, not 'bogus'" in str(e.value)
    assert "GUI_ASSETS_WRITE_THREADS must be a whole number, not 'many'" in str(e.value)
    assert "GUI_ASSETS_EXECUTOR" not in str(e.value)


def test_a_choice_is_read_whatever_its_case_and_spaces(monkeypatch):
    monkeypatch.setenv("GUI_ASSETS_SOURCE", " Hub ")
    monkeypatch.setenv("GUI_ASSETS_WRITE_THREADS", " 4 ")
    settings.refuse_bad_environment()
    assert settings.SOURCE.value() == "hub" and settings.WRITE_THREADS.value() == "4"
    monkeypatch.delenv("GUI_ASSETS_SOURCE")
    assert settings.SOURCE.value() is None
