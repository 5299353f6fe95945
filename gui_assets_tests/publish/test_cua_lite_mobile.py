"""The cua-lite export of a mobile directory: rows under `mobile/use/<split>/`, the `mobile` batch
tool (tap, long_press, swipe, type, system_button, wait) and the declared `open_app` and
`scroll_view` tools, each row passing the contract rules of test_cua_lite_contract.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gui_assets.core.ir import (
    NO_MASK,
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    Observation,
    SourceRef,
    step_builder,
)
from gui_assets.publish import cua_lite
from gui_assets.publish.cua_lite_actions import plan_episode
from gui_assets_tests.mobile_toy import build_mobile
from gui_assets_tests.publish.test_cua_lite_contract import NAME, export_rows, path_parts, row_problems

REL = f"{NAME}/mobile/use/validation/toymobile_test.parquet"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The toy phone directory and its export."""
    out = build_mobile(tmp_path_factory.mktemp("mobile_cua_lite"))
    return out, cua_lite.write_export(out)


def calls(row: dict[str, Any]) -> list[tuple[str, Any]]:
    """(tool, arguments) of every call of a row, in order, and a final content-only turn's text."""
    found: list[tuple[str, Any]] = []
    for m in json.loads(row["messages"]):
        for call in m.get("tool_calls") or []:
            found.append((call["function"]["name"], call["function"]["arguments"]))
        if m["role"] == "assistant" and not m.get("tool_calls"):
            found.append(("text", m["content"][0]["text"]))
    return found


def test_a_mobile_directory_exports_under_mobile_and_passes_the_contract(exported):
    _, result = exported
    root = Path(result["root"])
    files = export_rows(root)
    assert list(files) == [REL] and result["files"] == {REL: 3}
    assert path_parts(REL)[:3] == ("mobile", "use", "validation")
    for i, row in enumerate(files[REL]):
        assert row_problems(row, root, REL) == [], i
    assert result["directories"]["toymobile_test"]["platform"] == "mobile"
    assert result["left_out"]["episodes"] == {} and result["truncated"] == {}


def test_device_actions_become_the_mobile_batch_and_the_declared_tools(exported):
    import jsonschema  # a dev dependency: the declared tools' calls validate against their schemas

    rows = export_rows(Path(exported[1]["root"]))[REL]
    by_goal = {json.loads(r["messages"])[0]["content"][1]["text"]: r for r in rows}

    def batch(*actions: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("mobile", {"actions": list(actions)})

    assert calls(by_goal["Set an alarm for 7 am"]) == [
        ("open_app", {"app_name": "Clock"}),
        batch({"action": "tap", "coordinate": [250, 250]}),
        ("scroll_view", {"direction": "down"}),
        batch({"action": "long_press", "coordinate": [500, 750]}),
        batch({"action": "type", "text": "7:00"}),
        batch({"action": "system_button", "button": "Back"}),
        batch({"action": "wait", "duration": 1}),
        ("text", "Done."),
    ]
    failed = by_goal["Watch a video in full screen"]
    assert calls(failed)[1:] == [
        ("scroll_view", {"direction": "right"}),
        batch({"action": "tap", "coordinate": [917, 111]}),  # on the rotated frame's own size
        batch({"action": "system_button", "button": "Recent"}),
        batch({"action": "system_button", "button": "Home"}),
    ]
    others = json.loads(failed["metadata"])["others"]
    assert others["terminate_status"] == "failure" and others["episode_return"] == 0.0
    for row in rows:
        meta = json.loads(row["metadata"])
        schemas = {s["function"]["name"]: s["function"]["parameters"] for s in meta["extra_tool_schemas"]}
        assert set(schemas) == {"response", "terminate", "open_app", "scroll_view"}
        for tool, args in calls(row):
            if tool in ("open_app", "scroll_view"):
                jsonschema.Draft202012Validator(schemas[tool]).validate(args)


OBS = Observation("0" * 64, "png", 0, 0, 1080, 2400)


def planned(*specs: tuple[Any, ...]) -> tuple[list[tuple[str, Any]], Counter[str], dict[str, Any]]:
    make = step_builder(OBS, SourceRef("r", "f"))
    steps = [make(*spec[:3], **(spec[3] if len(spec) > 3 else {})) for spec in specs]
    plan = plan_episode(steps, "mobile")
    return [(c.tool, c.arguments) for c in plan.calls], plan.steps_left_out, plan.others


def test_a_swipe_replays_the_recorded_gesture_and_a_double_tap_counts_two():
    got, _, _ = planned(
        (ActionType.SCROLL, (0.5, 0.8, 0.5, 0.2), SPAN_MASK),
        (ActionType.CLICK, (0.1, 0.2), POINT_MASK, {"name": "double_click"}),
        (ActionType.TYPE, (0.3, 0.4), POINT_MASK, {"text": "hi"}),
    )
    assert got == [
        (
            "mobile",
            {"actions": [{"action": "swipe", "start_coordinate": [500, 800], "coordinate": [500, 200]}]},
        ),
        ("mobile", {"actions": [{"action": "tap", "coordinate": [100, 200], "clicks": 2}]}),
        (
            "mobile",
            {"actions": [{"action": "tap", "coordinate": [300, 400]}, {"action": "type", "text": "hi"}]},
        ),
    ]


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        ((ActionType.CLICK, (), NO_MASK, {"ungrounded": "no_candidate"}), "ungrounded_click"),
        ((ActionType.HOVER, (0.5, 0.5), POINT_MASK), "no_equivalent"),
        ((ActionType.PRESS_KEY, (), NO_MASK, {"text": "ctrl+c"}), "unmapped_keys"),
    ],
    ids=["click without point", "hover", "keyboard chord"],
)
def test_what_a_phone_cannot_do_ends_the_row_there(step, reason):
    got, left_out, others = planned((ActionType.CLICK, (0.2, 0.2), POINT_MASK), step, (ActionType.WAIT,))
    assert len(got) == 1 and others["truncated_reason"] == reason
    assert left_out == {reason: 1, "after_row_end": 1}
