"""A mobile source declared in code, for the tests of what every mobile source shares: portrait
phone frames, a rotation inside an episode, taps, long presses, direction-only scrolls, the back /
home / app-switch keys, open_app, typing with no point, WAIT, and episodes ending in STOP
(COMPLETE) or FAIL (INCOMPLETE), with test sub-splits recorded on the demos.

`toy-mobile/phone`: `episodes/<key>.jsonl`, one episode a line, {id, goal, subsplits, steps:
[{image, action}]}; screenshots under `images/`, points in pixels of the step's own screenshot.
It stands in for the real mobile sources (their folders are added on their own branches).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gui_assets.core.ir import (
    POINT_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    SourceRef,
    direction_scroll,
    step_builder,
)
from gui_assets.core.splits import shipped_split
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.spec import SourceSpec
from gui_assets_tests.conftest import page_bytes

REPO = "toy-mobile/phone"
PORTRAIT = (540, 1200)  # (width, height): a phone's 9:20 screen, halved to keep the tests quick
LANDSCAPE = (1200, 540)  # the same phone rotated
SUBSPLIT_ATTR = "test_subsplits"

# (id, goal, subsplits, [(image, action)]); image names a size: p* portrait, l* landscape.
EPISODES: list[tuple[str, str, list[str], list[tuple[str, dict[str, Any]]]]] = [
    (
        "e1",
        "Set an alarm for 7 am",
        ["IDD", "app_unseen"],
        [
            ("p0", {"type": "open_app", "app_name": "Clock"}),
            ("p1", {"type": "click", "x": 135, "y": 300}),
            ("p2", {"type": "scroll", "direction": "down"}),
            ("p3", {"type": "long_press", "x": 270, "y": 900}),
            ("p4", {"type": "input_text", "text": "7:00"}),
            ("p5", {"type": "navigate_back"}),
            ("p6", {"type": "wait"}),
            ("p7", {"type": "complete"}),
        ],
    ),
    (
        "e2",
        "Watch a video in full screen",
        ["IDD"],
        [
            ("p0", {"type": "click", "x": 400, "y": 1000}),
            ("l0", {"type": "scroll", "direction": "right"}),
            ("l1", {"type": "click", "x": 1100, "y": 60}),
            ("p1", {"type": "app_switch"}),
            ("p2", {"type": "navigate_home"}),
            ("p3", {"type": "incomplete"}),
        ],
    ),
    (
        "e3",
        "Turn on the flashlight",
        [],
        [
            ("p4", {"type": "scroll", "direction": "up"}),
            ("p5", {"type": "click", "x": 100, "y": 150}),
            ("p6", {"type": "complete"}),
        ],
    ),
]


def mobile_step(make: Any, action: dict[str, Any], size: tuple[int, int]) -> GuiStep:
    """One recorded action in the action space, as spec/sources.md maps mobile steps."""
    kind = action["type"]
    point = (action.get("x", 0) / size[0], action.get("y", 0) / size[1])
    simple = {
        "navigate_back": ActionType.PRESS_BACK,
        "navigate_home": ActionType.PRESS_HOME,
        "wait": ActionType.WAIT,
        "complete": ActionType.STOP,
        "incomplete": ActionType.FAIL,
    }
    if kind == "click":
        return make(ActionType.CLICK, point, POINT_MASK)
    if kind == "long_press":
        return make(ActionType.CLICK, point, POINT_MASK, name="long_press")
    if kind == "scroll":
        return direction_scroll(make, action["direction"])
    if kind == "input_text":
        return make(ActionType.TYPE, text=action["text"])
    if kind == "open_app":
        return make(ActionType.GOTO, text=action["app_name"], name="open_app")
    if kind == "app_switch":
        return make(ActionType.PRESS_KEY, text="KEY_APPSELECT")
    return make(simple[kind])


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    (lines,) = run.raw.find("episodes/*.jsonl")
    for row_no, line in run.candidates(enumerate(Path(lines.local).read_text().splitlines())):
        rec = json.loads(line)
        steps = Steps()
        for i, (image, action) in enumerate(rec["steps"]):
            obs = run.observe((run.raw.root / "images" / f"{image}.png").read_bytes())
            ref = SourceRef(run.raw.repo_id, lines.path, row=row_no, member=f"steps[{i}]")
            steps.add(mobile_step(step_builder(obs, ref), action, (obs.width, obs.height)))
        success = rec["steps"][-1][1]["type"] == "complete"
        attrs = {"goal_id": rec["id"], SUBSPLIT_ATTR: json.dumps(rec["subsplits"])}
        episode = run.episode(rec["id"], rec["goal"], steps, success, attrs)
        if episode is not None:
            yield episode


def write_mirror(root: Path) -> Path:
    repo = root / REPO
    (repo / "images").mkdir(parents=True, exist_ok=True)
    (repo / "episodes").mkdir(exist_ok=True)
    for i in range(8):
        (repo / "images" / f"p{i}.png").write_bytes(page_bytes(*PORTRAIT, seed=i))
    for i in range(2):
        (repo / "images" / f"l{i}.png").write_bytes(page_bytes(*LANDSCAPE, seed=20 + i))
    lines = [json.dumps({"id": e, "goal": g, "subsplits": sub, "steps": s}) for e, g, sub, s in EPISODES]
    (repo / "episodes" / "test.jsonl").write_text("\n".join(lines) + "\n")
    return repo


MOBILE = SourceSpec(
    name="toymobile",
    repo_id=REPO,
    partition_keys=("test",),
    file_patterns=lambda key: [f"episodes/{key}.jsonl", "images/"],
    adapter=episodes,
    split_rule=shipped_split,
    description="A toy phone source declared in a test.",
    license="mit",
    platform="mobile",
    scrolls=True,
    scroll_gestures=False,
    subsplit_attr=SUBSPLIT_ATTR,
    split_role="validation",  # a benchmark's test split: kept apart from training
    notes="Toy phone demonstrations.",
    demo=write_mirror,
)


def expected_subsplits() -> dict[str, dict[str, int]]:
    """dataset_info.json `subsplits` of the toy's one partition, counted from EPISODES."""
    counts: dict[str, dict[str, int]] = {}
    for _, _, subsplits, steps in EPISODES:
        for name in subsplits:
            entry = counts.setdefault(name, {"episodes": 0, "steps": 0})
            entry["episodes"] += 1
            entry["steps"] += len(steps)
    return dict(sorted(counts.items()))


def build_mobile(root: Path) -> Path:
    """The toy's mirror under `root` and its one directory built by the pipeline into
    `root/out`; returns the output folder."""
    write_mirror(root / "mirror")
    build_directory(MOBILE, "test", root / "out", RawSettings(mode="mirror", mirror=root / "mirror"))
    return root / "out"
