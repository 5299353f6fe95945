"""The dataset card of a build with a mobile directory: what device actions become in the action
space, which directories record scrolls as a direction only, and the test sub-splits table; a
build without one shows neither."""

from __future__ import annotations

import dataclasses

import pytest

from gui_assets.core.layout import built_directories
from gui_assets.publish import card
from gui_assets_tests.mobile_toy import build_mobile

DIRECTORY = "toymobile_test"


@pytest.fixture(scope="module")
def infos(tmp_path_factory: pytest.TempPathFactory):
    return built_directories(build_mobile(tmp_path_factory.mktemp("mobile_card")))


def test_the_card_of_a_mobile_build_says_what_device_actions_become(infos):
    text = card.card_text(infos, "org/gui-agent")
    assert "## Mobile demonstrations" in text
    assert f"The directory `{DIRECTORY}/` holds phone and tablet demonstrations" in text
    for row in (
        "| long press | CLICK, with `long_press(x, y)` as its action_desc | the point, mask 1, 1, 0, 0 | |",
        "| scroll recorded as a direction only | SCROLL | none: mask and params all zero | |",
        "| back key | PRESS_BACK | none | |",
        "| app-switch key | PRESS_KEY | none | the key's name |",
        "| open an app | GOTO | none | the app's name |",
        "| type text | TYPE | none: no point was recorded, mask all zero | the text |",
        "| task infeasible or abandoned | FAIL, the last step, reward 0 | none | |",
    ):
        assert row in text, row
    assert f"`{DIRECTORY}/` records a scroll's direction only" in text
    assert "$" not in text.split("## Mobile demonstrations")[1].split("## Check a download")[0]


def test_the_card_lists_the_test_subsplits_with_their_counts(infos):
    text = card.card_text(infos, "org/gui-agent")
    assert "its `test_subsplits` attribute (a JSON list)" in text
    assert "| directory | subset | episodes | steps |" in text
    assert f"| {DIRECTORY}/ | IDD | 2 | 14 |" in text and f"| {DIRECTORY}/ | app_unseen | 1 | 8 |" in text


def test_a_build_without_mobile_or_subsplits_shows_neither(infos):
    (info,) = infos
    desktop = dataclasses.replace(
        info,
        build={**info.build, "source": {**info.source_record, "platform": "desktop"}},
        extra={k: v for k, v in info.extra.items() if k != "subsplits"},
    )
    text = card.card_text([desktop], "org/gui-agent")
    assert "## Mobile demonstrations" not in text and "| subset |" not in text
    assert "Test sub-splits" not in text
