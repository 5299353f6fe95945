"""SourceSpec's mobile declarations: direction-only scrolls and a subsplit attr, recorded in
dataset_info.json's build.source block and refused where malformed."""

from __future__ import annotations

import dataclasses

import pytest

from gui_assets.sources.agentnet.source import SPEC as AGENTNET


def test_the_defaults_keep_every_existing_source_as_it_was():
    record = AGENTNET.record("ubuntu")
    assert AGENTNET.scroll_gestures is True and AGENTNET.subsplit_attr == ""
    assert (record["scroll_gestures"], record["subsplit_attr"]) == (True, "")


def test_a_mobile_declaration_is_recorded_for_every_partition():
    mobile = dataclasses.replace(
        AGENTNET, platform="mobile", scroll_gestures=False, subsplit_attr="test_subsplits"
    )
    for key in mobile.partition_keys:
        record = mobile.record(key)
        assert (record["platform"], record["scroll_gestures"], record["subsplit_attr"]) == (
            "mobile",
            False,
            "test_subsplits",
        )


@pytest.mark.parametrize("attr", ["test subsplits", "1st", "a-b"])
def test_a_subsplit_attr_that_is_no_attr_name_is_refused(attr):
    with pytest.raises(ValueError, match="subsplit_attr must be an attr name"):
        dataclasses.replace(AGENTNET, subsplit_attr=attr)
