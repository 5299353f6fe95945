"""A small AndroidControl mirror in the release's layout: `google-research/android_control/` with
three of the twenty GZIP TFRecord shards (00000, 00007, 00019: any subset may be present),
`splits.json` and `test_subsplits.json`.

Screens are rendered UI pages at a third of the real sizes, so the files stay small but keep
their shape: portrait phones (1080x2400 -> 360x800), a landscape tablet (2400x1500 -> 800x500)
and a phone rotated mid-episode. Every action type of the release appears; a record without
actions (empty_episode), one with an action type the release does not have
(unknown_action_verb), a record splits.json does not list, and split ids whose episodes are in
no shard present exercise the adapter's rules. Same code, same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_assets.sources.androidcontrol.adapter import REPO_ID, SPLITS_FILE, SUBSPLITS_FILE
from gui_assets.sources.androidcontrol.tfrecord import TFRecordWriter, serialize_example
from gui_assets.sources.demo_render import Widget, encode, render_page

PHONE = (360, 800)
PHONE_TURNED = (800, 360)
TABLET = (800, 500)
SHARDS = (0, 7, 19)  # the shard numbers present
SPLITS = {"train": [0, 1, 2, 5, 9, 11], "validation": [3, 7], "test": [4, 6, 21]}
SUBSPLITS = {"IDD": [4, 6, 21], "app_unseen": [6], "task_unseen": [4], "category_unseen": [6, 21]}


@dataclass(frozen=True, slots=True)
class DemoEpisode:
    episode_id: int
    shard: int  # the number of the shard it sits in (one of SHARDS)
    goal: str
    frames: list[tuple[int, int]]  # (width, height) of each screenshot, the terminal one last
    actions: list[dict[str, Any]]
    step_instructions: list[str]


def _train() -> list[DemoEpisode]:
    return [
        DemoEpisode(
            0,
            0,
            "Open the Zoho Meet app , view the scheduled meetings .",  # the release's episode 0 goal
            [PHONE] * 5,
            [
                {"action_type": "open_app", "app_name": "Zoho Meeting"},
                {"action_type": "click", "x": 300, "y": 140},
                {"action_type": "scroll", "direction": "down"},
                {"action_type": "click", "x": 60, "y": 700},
            ],
            ["Open the Zoho Meet app", "Tap on the meetings tab", "Scroll down", "Open the first meeting"],
        ),
        DemoEpisode(
            1,
            0,
            "Search for paramedic news , then go back home .",
            [PHONE] * 7,
            [
                {"action_type": "click", "x": 180, "y": 90},
                {"action_type": "input_text", "text": "Paramedic news"},
                {"action_type": "long_press", "x": 200, "y": 120},
                {"action_type": "navigate_back"},
                {"action_type": "wait"},
                {"action_type": "navigate_home"},
            ],
            [
                "Tap on the search bar",
                "Type Paramedic news",
                "Long press the first headline",
                "Go back to the home screen",  # one instruction spanning three actions
                "Go back to the home screen",
                "Go back to the home screen",
            ],
        ),
        DemoEpisode(2, 0, "Open the clock app .", [PHONE], [], []),  # no actions: empty_episode
        DemoEpisode(
            5,
            7,
            "Like the first photo .",
            [PHONE] * 2,
            [{"action_type": "double_tap", "x": 100, "y": 200}],  # not a release action type
            ["Double tap the first photo"],
        ),
        DemoEpisode(
            9,
            19,
            "Add milk to the shopping list .",
            [PHONE] * 4,
            [
                {"action_type": "click", "x": 90, "y": 500},
                {"action_type": "scroll", "direction": "up"},
                {"action_type": "click", "x": 270, "y": 650},
            ],
            ["Tap on the list", "Scroll up", "Tap on add item"],
        ),
    ]


def _validation_and_test() -> list[DemoEpisode]:
    return [
        DemoEpisode(
            3,
            7,
            "Search the recipe app for weekly groceries on the tablet .",
            [TABLET] * 5,
            [
                {"action_type": "click", "x": 620, "y": 80},
                {"action_type": "input_text", "text": "weekly groceries"},
                {"action_type": "click", "x": 660, "y": 120},
                {"action_type": "scroll", "direction": "right"},
            ],
            ["Tap on the search field", "Type weekly groceries", "Tap on search", "Scroll right"],
        ),
        DemoEpisode(
            7,
            19,
            "Check the weather for tomorrow .",
            [PHONE] * 5,
            [
                {"action_type": "scroll", "direction": "up"},
                {"action_type": "click", "x": 300, "y": 650},
                {"action_type": "wait"},
                {"action_type": "click", "x": 60, "y": 200},
            ],
            ["Scroll up", "Tap on tomorrow", "Wait for the forecast", "Tap on details"],
        ),
        DemoEpisode(
            4,
            7,
            "Watch the first trending video in full screen .",
            [PHONE, PHONE_TURNED, PHONE_TURNED, PHONE_TURNED, PHONE_TURNED],  # turns after step 0
            [
                {"action_type": "click", "x": 100, "y": 150},
                {"action_type": "click", "x": 700, "y": 300},
                {"action_type": "scroll", "direction": "left"},
                {"action_type": "click", "x": 690, "y": 280},
            ],
            ["Tap on the first video", "Tap on full screen", "Scroll left", "Tap on play"],
        ),
        DemoEpisode(
            6,
            19,
            "Open Google Play Books and go back .",
            [PHONE] * 4,
            [
                {"action_type": "open_app", "app_name": "Google Play Books"},
                {"action_type": "click", "x": 180, "y": 300},
                {"action_type": "navigate_back"},
            ],
            ["Open Google Play Books", "Tap on library", "Go back"],
        ),
        DemoEpisode(8, 0, "Open settings .", [PHONE] * 2, [{"action_type": "navigate_home"}], ["Go home"]),
    ]


def _screens(episode: DemoEpisode) -> list[bytes]:
    """One PNG per observation, a button drawn where the next action taps."""
    screens = []
    for t, (width, height) in enumerate(episode.frames):
        action = episode.actions[t] if t < len(episode.actions) else {}
        widgets = []
        if "x" in action:
            x, y = action["x"], action["y"]
            widgets.append(Widget("button", episode.step_instructions[t][:14], x - 50, y - 18, 100, 36))
        seed = episode.episode_id * 100 + t
        screens.append(encode(render_page(seed, width, height, widgets, f"app {episode.episode_id}"), "png"))
    return screens


def _record(episode: DemoEpisode) -> bytes:
    return serialize_example(
        {
            "episode_id": [episode.episode_id],
            "goal": [episode.goal],
            "screenshots": _screens(episode),
            # An empty AndroidAccessibilityForest per screen: the adapter never decodes them.
            "accessibility_trees": [b""] * len(episode.frames),
            "screenshot_widths": [w for w, _ in episode.frames],
            "screenshot_heights": [h for _, h in episode.frames],
            "actions": [json.dumps(a, separators=(",", ":")) for a in episode.actions],
            "step_instructions": episode.step_instructions,
        }
    )


def shard_name(number: int) -> str:
    return f"android_control-{number:05d}-of-00020"


def demo_episodes() -> list[DemoEpisode]:
    return [*_train(), *_validation_and_test()]


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    repo.mkdir(parents=True, exist_ok=True)
    episodes = demo_episodes()
    for n in SHARDS:
        with TFRecordWriter(repo / shard_name(n)) as writer:
            for episode in sorted((e for e in episodes if e.shard == n), key=lambda e: e.episode_id):
                writer.write(_record(episode))
    (repo / SPLITS_FILE).write_text(json.dumps(SPLITS), encoding="utf-8")
    (repo / SUBSPLITS_FILE).write_text(json.dumps(SUBSPLITS), encoding="utf-8")
    return repo
