"""A small AgentNet mirror in the upstream layout, generated deterministically.

    xlangai/AgentNet/agentnet_ubuntu_5k.jsonl, agentnet_win_mac_18k.jsonl, meta_data_merged.jsonl
    xlangai/AgentNet/ubuntu_images/images.zip     (a zip archive of <uuid>.png)
    xlangai/AgentNet/win_mac_images/<uuid>.png    (an extracted folder)

Rows use every call form of the code vocabulary (both spellings of tripleClick, keyword and
positional write/press/hotkey, presses=N, wait with and without seconds, terminate success /
failure / fail, moveTo+dragTo, moveTo+scroll with Windows and macOS amounts, hscroll), non-ASCII
keys and text, a repeated task_id, a task with no metadata row, and the bad records the adapter
counts: two actions in one step, unparseable code, a call that is not pyautogui, a coordinate in
pixels, a missing image, a malformed line and a row without a trajectory. In each partition one
task_id is chosen so that the 2% hash holdout puts it in val.
"""

from __future__ import annotations

import hashlib
import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

from gui_assets.core.splits import hash_fraction
from gui_assets.sources.agentnet.adapter import HOLDOUT_FRACTION, HOLDOUT_SALT, REPO_ID
from gui_assets.sources.demo_render import Widget, encode, render_page

# (code, thought) per step; each step gets its own screenshot unless it is listed as missing.
TASKS: dict[str, list[dict[str, Any]]] = {
    "ubuntu": [
        {
            "id": "demo-ubuntu-0001",
            "instruction": "Rename the report file to final.txt in the file manager",
            "os": "Ubuntu",
            "steps": [
                "pyautogui.click(x=0.2102, y=0.3411)",
                "pyautogui.doubleClick(x=0.4418, y=0.5120)",
                "pyautogui.write(message='final.txt')",
                "pyautogui.press('enter')",
                "computer.terminate(status='success')",
            ],
        },
        {
            "id": "demo-ubuntu-0002",
            "instruction": "Move the slider to 80% and scroll to the advanced settings",
            "os": "Ubuntu",
            "steps": [
                "pyautogui.moveTo(x=0.4546, y=0.2682)\npyautogui.dragTo(x=0.6107, y=0.2773, button='left')",
                "pyautogui.moveTo(x=0.396, y=0.7839)\npyautogui.scroll(-3)",
                "pyautogui.moveTo(x=0.5, y=0.6)\npyautogui.hscroll(4)",
                "pyautogui.rightClick(x=0.7342, y=0.2211)",
                "pyautogui.middleClick(x=0.3310, y=0.1502)",
                "computer.tripleClick(x=0.5120, y=0.4410)",
                "computer.terminate(status='failure')",
            ],
        },
        {
            "id": "demo-ubuntu-0003",
            "instruction": "Copy the selected cell and paste it three rows down",
            "os": "Ubuntu",
            "steps": [
                "pyautogui.hotkey(['ctrl', 'c'])",
                "pyautogui.press(keys=['down'], presses=3)",
                "pyautogui.hotkey(keys=['ctrl', 'v'])",
                "pyautogui.typewrite('abc')",
                "computer.wait()",
                "computer.wait(2)",
                "pyautogui.write(message='done')\npyautogui.press(keys=['enter'])",
                "pyautogui.tripleClick(x=0.25, y=0.75)",
                "computer.terminate(status='fail')",
            ],
        },
        {
            "id": "demo-ubuntu-0004",
            "instruction": "Open the settings menu",
            "os": "Ubuntu",
            "steps": [
                "pyautogui.click(x=0.1, y=0.1)\npyautogui.click(x=0.2, y=0.2)",  # two actions
                "pyautogui.moveTo(x=0.3, y=0.3)\n"
                "pyautogui.dragTo(x=0.4, y=0.4)\npyautogui.hotkey('ctrl', 's')",  # drag + hotkey
                "pyautogui.click(x=0.1, y=",  # unparseable
                "__import__('os').system('echo never run')",  # not a pyautogui call
                "pyautogui.click(x=512, y=300)",  # pixels, not normalized
                {"code": "pyautogui.click(x=0.9, y=0.05)", "missing": True},
                "pyautogui.click(x=0.8872, y=0.0512)",
                "computer.terminate(status='success')",
            ],
        },
        {
            "id": "VAL",
            "instruction": "Close the dialog and save",
            "os": "Ubuntu",
            "steps": [
                "pyautogui.click(x=0.6620, y=0.6120)",
                "pyautogui.hotkey('ctrl', 's')",
                "computer.terminate(status='success')",
            ],
        },
    ],
    "win_mac": [
        {
            "id": "20241105185631_6f1d1f3e-demo-0001",
            "instruction": "Search for Zürich weather in the browser",
            "os": "Windows",
            "steps": [
                "pyautogui.click(x=0.3395, y=0.0607)",
                "pyautogui.write(message='Zürich weather ✓')\npyautogui.press(keys=['enter'])",
                "pyautogui.moveTo(x=0.4496, y=0.7349)\npyautogui.scroll(-3)",
                "pyautogui.hotkey(['alt', 'å'])",
                "computer.terminate(status='success')",
            ],
        },
        {
            "id": "20241105185631_6f1d1f3e-demo-0001",
            "instruction": "Search for Zürich weather in the browser",
            "os": "Windows",
            "steps": [  # the same task_id recorded twice
                "pyautogui.click(x=0.3395, y=0.0607)",
                "pyautogui.write('Zurich weather')",
                "pyautogui.press('enter')",
                "computer.terminate(status='success')",
            ],
        },
        {
            "id": "s_7f27a11115e596eb-demo",
            "instruction": "Play a song by Vampire Weekend on Spotify",
            "os": "Darwin",
            "steps": [
                "pyautogui.click(x=0.3395, y=0.6307)",
                "pyautogui.write(message='VAMPIRE WEEKEND')\npyautogui.press(keys=['enter'])",
                "pyautogui.moveTo(x=0.4496, y=0.7349)\npyautogui.scroll(-54)",
                "pyautogui.hotkey(keys=['command', 'c'])",
                "pyautogui.click(x=0.4658, y=0.8013)",
                "computer.terminate(status='success')",
            ],
        },
        {
            "id": "no-meta-demo-0004",
            "instruction": "Open the start menu",
            "os": None,
            "steps": ["pyautogui.click(x=0.0100, y=0.9800)", "computer.terminate(status='success')"],
        },
        {
            "id": "VAL",
            "instruction": "Empty the recycle bin",
            "os": "Windows",
            "steps": [
                "pyautogui.rightClick(x=0.0420, y=0.0810)",
                "pyautogui.click(x=0.0910, y=0.2120)",
                "computer.terminate(status='success')",
            ],
        },
    ],
}
SIZES = {"Ubuntu": (1280, 720), "Windows": (1366, 768), "Darwin": (1024, 640), None: (1280, 720)}


def val_task_id(partition: str) -> str:
    """The first `demo-<partition>-val-NNNN` id the holdout puts in val."""
    i = 0
    while hash_fraction(HOLDOUT_SALT, f"demo-{partition}-val-{i:04d}") >= HOLDOUT_FRACTION:
        i += 1
    return f"demo-{partition}-val-{i:04d}"


def _image_name(*parts: str) -> str:
    return str(uuid.UUID(hashlib.md5("/".join(parts).encode()).hexdigest())) + ".png"


def _screenshot(seed: int, system: str | None, code: str) -> bytes:
    w, h = SIZES[system]
    widgets = [
        Widget("button", "OK", w * 0.6, h * 0.58, 120, 40),
        Widget("input", "Search", w * 0.3, h * 0.04, 360, 34),
    ]
    return encode(render_page(seed, w, h, widgets, "Desktop"), "png")


def _rows(partition: str) -> tuple[list[str], list[dict[str, Any]], dict[str, bytes]]:
    lines: list[str] = []
    meta: list[dict[str, Any]] = []
    images: dict[str, bytes] = {}
    for ti, task in enumerate(TASKS[partition]):
        task_id = val_task_id(partition) if task["id"] == "VAL" else task["id"]
        traj = []
        for si, step in enumerate(task["steps"]):
            code = step if isinstance(step, str) else step["code"]
            name = _image_name(partition, str(ti), str(si))
            if not (isinstance(step, dict) and step.get("missing")):
                images[name] = _screenshot(ti * 100 + si, task["os"], code)
            traj.append(
                {
                    "index": si,
                    "image": name,
                    "value": {
                        "observation": f"Step {si}: the window for '{task['instruction']}'.",
                        "thought": f"Step {si} of: {task['instruction']}.",
                        "action": f"Perform step {si}.",
                        "code": code,
                        "last_step_correct": True,
                        "last_step_redundant": False,
                        "reflection": "The previous action worked.",
                    },
                }
            )
        row = {
            "task_id": task_id,
            "instruction": task["instruction"],
            "task_completed": None if ti % 2 else True,
            "alignment_score": 8,
            "efficiency_score": 7,
            "task_difficulty": 3,
            "natural_language_task": task["instruction"],
            "actual_task": task["instruction"],
            "traj": traj,
        }
        if partition == "ubuntu":
            row["domain"] = "OS"
        lines.append(json.dumps(row, ensure_ascii=False))
        if task["os"] and not any(m["task_id"] == task_id for m in meta):
            meta.append(
                {"task_id": task_id, "system": task["os"], "domains": "Office", "applications": ["demo"]}
            )
    lines.insert(2, '{"task_id": "broken", "traj": [')  # a line cut short
    lines.insert(3, json.dumps({"task_id": "no-traj", "instruction": "x"}))
    return lines, meta, images


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    repo.mkdir(parents=True, exist_ok=True)
    all_meta: list[dict[str, Any]] = []
    for partition, jsonl in (
        ("ubuntu", "agentnet_ubuntu_5k.jsonl"),
        ("win_mac", "agentnet_win_mac_18k.jsonl"),
    ):
        lines, meta, images = _rows(partition)
        (repo / jsonl).write_text("\n".join(lines) + "\n", encoding="utf-8")
        all_meta += meta
        folder = repo / f"{partition}_images"
        folder.mkdir(exist_ok=True)
        if partition == "ubuntu":
            with zipfile.ZipFile(folder / "images.zip", "w", compression=zipfile.ZIP_STORED) as z:
                for name, data in sorted(images.items()):
                    z.writestr(zipfile.ZipInfo(name, date_time=(2024, 11, 5, 0, 0, 0)), data)
        else:
            for name, data in images.items():
                (folder / name).write_bytes(data)
    (repo / "meta_data_merged.jsonl").write_text(
        "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in all_meta) + "{not json\n", encoding="utf-8"
    )
    return repo
