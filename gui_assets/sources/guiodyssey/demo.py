"""A small GUI-Odyssey mirror in the upstream layout, generated deterministically.

    OpenGVLab/GUI-Odyssey/annotations/<episode_id>.json      one episode each
    OpenGVLab/GUI-Odyssey/zips/annotations.zip               the same files, packed
    OpenGVLab/GUI-Odyssey/zips/screenshots_01, _02           one stored zip of every screenshot
                                                             cut in two byte ranges, the cut
                                                             inside a member
    OpenGVLab/GUI-Odyssey/splits/{random,app,device,task}_split.json

Episodes: two portrait phones and a landscape tablet using every action of the table (a tap
recorded as two identical points, a long press, the three system keys, typing spelled TEXT and
TYPE, swipes along both axes, COMPLETE and INCOMPLETE), one with an action outside the table
(DRAG: dropped, counted), one whose last screenshot is missing (dropped, counted), and a split
entry no annotation answers. Screens are small stand-ins for the real 1080x2400 and 2560x1600.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from gui_assets.sources.demo_render import Widget, encode, render_page
from gui_assets.sources.guiodyssey.adapter import REPO_ID

PHONE = {"product": "sdk_gphone64_x86_64", "release_version": "14", "sdk_version": "34", "w": 270, "h": 600}
TALL_PHONE = {**PHONE, "w": 360, "h": 780}
TABLET = {"product": "sdk_gtablet_x86_64", "release_version": "14", "sdk_version": "34", "w": 640, "h": 400}
TAP, LONG, SCROLL, TEXT, DONE, GAVE_UP = "CLICK", "LONG_PRESS", "SCROLL", "TEXT", "COMPLETE", "INCOMPLETE"

# episode id -> (device, device_name, task_info, [(action, info, ps)]); the last step's screen too.
EPISODES: dict[str, tuple[dict[str, Any], str, dict[str, Any], list[tuple[str, Any, str]]]] = {
    "0000000000000101": (
        PHONE,
        "Demo Phone",
        {
            "category": "Information_Management",
            "app": ["Chrome", "Keep"],
            "meta_task": "Search {item} and note it in Keep",
            "task": "Search the weather and note it",
            "instruction": "Using Chrome, search the weather in Zürich and write it down in Google Keep.",
        },
        [
            (TAP, [[500, 140], [500, 140]], "[(500, 140)]"),
            (TEXT, "weather Zürich", ""),
            (SCROLL, [[500, 800], [510, 300]], "[(500, 800), (505, 550), (510, 300)]"),
            (LONG, [[320, 455], [320, 455]], "[(320, 455)]"),
            (DONE, "", ""),
        ],
    ),
    "0000000000000102": (
        TALL_PHONE,
        "Demo Tall Phone",
        {
            "category": "Shopping",
            "app": ["Amazon"],
            "meta_task": "Buy {item}",
            "task": "Buy a kettle",
            "instruction": "Open Amazon and add an electric kettle to the cart.",
        },
        [
            ("CLICK", "KEY_HOME", ""),
            ("CLICK", "KEY_APPSELECT", ""),
            ("LONG_PRESS", "KEY_BACK", ""),
            (SCROLL, [[850, 500], [150, 520]], "[(850, 500), (150, 520)]"),
            ("TYPE", "electric kettle", ""),
            (GAVE_UP, "", "Item not found"),
        ],
    ),
    "0000000000000203": (
        TABLET,
        "Demo Tablet",
        {
            "category": "Media_Entertainment",
            "app": ["YouTube"],
            "meta_task": "Watch {video}",
            "task": "Watch a cooking video",
            "instruction": "Find a pasta recipe video on YouTube and play it.",
        },
        [
            (TAP, [[120, 80], [120, 80]], "[(120, 80)]"),
            (SCROLL, [[400, 200], [420, 900]], "[(400, 200), (420, 900)]"),
            (DONE, "", ""),
        ],
    ),
    "0000000000000304": (
        PHONE,
        "Demo Phone",
        {
            "category": "Tools",
            "app": ["Files"],
            "meta_task": "Move {file}",
            "task": "Move a photo",
            "instruction": "Drag the newest photo into the Backup folder.",
        },
        [
            (TAP, [[200, 300], [200, 300]], "[(200, 300)]"),
            ("DRAG", [[200, 300], [700, 900]], ""),
            (DONE, "", ""),
        ],
    ),
    "0000000000000405": (
        PHONE,
        "Demo Phone",
        {
            "category": "Tools",
            "app": ["Clock"],
            "meta_task": "Set {alarm}",
            "task": "Set an alarm",
            "instruction": "Set an alarm for 7 am in Clock.",
        },
        [(TAP, [[600, 700], [600, 700]], "[(600, 700)]"), (DONE, "", "")],
    ),
}
MISSING_SCREENSHOTS = {"0000000000000405_1.png"}
NO_ANNOTATION = "0000000000000999.json"  # listed by the split, answered by no layout
SPLITS = {
    "random_split": {
        "train": [
            "0000000000000101.json",
            "0000000000000102.json",
            "0000000000000304.json",
            "0000000000000405.json",
        ],
        "test": ["0000000000000203.json", NO_ANNOTATION],
    },
    "app_split": {
        "train": ["0000000000000101.json", "0000000000000203.json"],
        "test": ["0000000000000102.json"],
    },
    "device_split": {
        "train": ["0000000000000101.json", "0000000000000102.json"],
        "test": ["0000000000000203.json"],
    },
    "task_split": {
        "train": ["0000000000000102.json", "0000000000000203.json"],
        "test": ["0000000000000101.json"],
    },
}
_DATE = (2024, 6, 1, 0, 0, 0)


def annotation(episode_id: str) -> dict[str, Any]:
    """The episode's annotation in the release's shape."""
    device, device_name, task, actions = EPISODES[episode_id]
    steps = [
        {
            "step": i,
            "screenshot": f"{episode_id}_{i}.png",
            "action": action,
            "info": info,
            "ps": ps,
            "low_level_instruction": f"Step {i} of: {task['task']}.",
        }
        for i, (action, info, ps) in enumerate(actions)
    ]
    return {
        "episode_id": episode_id,
        "device_info": {**device, "device_name": device_name},
        "task_info": task,
        "step_length": len(steps),
        "steps": steps,
    }


def _screen(seed: int, device: dict[str, Any], label: str) -> bytes:
    w, h = device["w"], device["h"]
    widgets = [
        Widget("input", "Search", w * 0.5, h * 0.14, w * 0.8, h * 0.06),
        Widget("button", label, w * 0.32, h * 0.45, w * 0.4, h * 0.07),
    ]
    return encode(render_page(seed, w, h, widgets, "GUI-Odyssey"), "png")


def screenshots() -> dict[str, bytes]:
    """Every screenshot the annotations name, but the missing ones, by file name."""
    images: dict[str, bytes] = {}
    for n, (episode_id, (device, _, _, actions)) in enumerate(EPISODES.items()):
        for i, (action, _, _) in enumerate(actions):
            name = f"{episode_id}_{i}.png"
            if name not in MISSING_SCREENSHOTS:
                images[name] = _screen(n * 100 + i, device, action)
    return images


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in sorted(members.items()):
            z.writestr(zipfile.ZipInfo(name, date_time=_DATE), data)
    return buffer.getvalue()


def screenshot_zip() -> tuple[bytes, int]:
    """The screenshots as one stored zip, and a cut inside its middle member's data."""
    images = screenshots()
    data = _zip({f"screenshots/{name}": b for name, b in images.items()})
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = sorted(z.infolist(), key=lambda i: i.header_offset)
    middle = infos[len(infos) // 2]
    return data, middle.header_offset + 30 + len(middle.filename) + middle.compress_size // 2


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    for folder in ("annotations", "zips", "splits"):
        (repo / folder).mkdir(parents=True, exist_ok=True)
    texts = {f"{i}.json": json.dumps(annotation(i), ensure_ascii=False, indent=1) for i in EPISODES}
    for name, text in texts.items():
        (repo / "annotations" / name).write_text(text, encoding="utf-8")
    (repo / "zips" / "annotations.zip").write_bytes(
        _zip({f"annotations/{n}": t.encode() for n, t in texts.items()})
    )
    data, cut = screenshot_zip()
    (repo / "zips" / "screenshots_01").write_bytes(data[:cut])
    (repo / "zips" / "screenshots_02").write_bytes(data[cut:])
    for name, split in SPLITS.items():
        (repo / "splits" / f"{name}.json").write_text(json.dumps(split), encoding="utf-8")
    return repo
