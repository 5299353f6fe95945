"""A small Pango mirror: `chakra-labs/pango-sample/data/train-00000-of-00001.parquet` plus the
event documents and screenshots its rows reference, generated deterministically.

Row 1 carries its input_metadata inline, row 2 as a path in the repo, row 3 as a URL (whose
path part names the mirror file); screenshots are referenced by URL. The events use every type
of the recorder: clicks (left, right, double), cumulative and incremental input runs, a key
chord and Enter as key_down/key_up, key_press, a drag pair and an unpaired one, a drag without
coordinates, wheel runs in delta_y and deltaX spellings, mouseover pairs, an unknown type, a
click without coordinates and one whose screenshot is missing. Row 3 holds two sessions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.adapters.pango import REPO_ID
from gui_assets.demo.render import Widget, encode, render_page

W, H = 1280, 800
CDN = "https://storage.pango.example/"


def _shot(repo: Path, session: str, n: int) -> str:
    rel = f"screenshots/{session}/{n:03d}.png"
    p = repo / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    widgets = [
        Widget("button", "Share", 980, 30, 120, 40),
        Widget("input", "A1", 300, 160, 240, 32),
        Widget("link", "Slide 2", 40, 300, 160, 90),
    ]
    p.write_bytes(encode(render_page(n + len(session) * 7, W, H, widgets, "Sheets"), "png"))
    return CDN + rel


def _events(repo: Path, session: str) -> list[dict[str, Any]]:
    t = [0]
    n = [0]

    def ev(kind: str, new_shot: bool = True, **kw: Any) -> dict[str, Any]:
        t[0] += 250
        if new_shot:
            n[0] += 1
        return {
            "type": kind,
            "relative_timestamp_ms": t[0],
            "screenshot_url": _shot(repo, session, n[0]),
            **kw,
        }

    return [
        ev("click", x=420.0, y=176.0, button="button_left", click_count=1),
        ev("input", input_data="R"),
        ev("input", input_data="Re", new_shot=False),
        ev("input", input_data="Revenue", new_shot=False),
        ev("key_down", key_code="Enter"),
        ev("key_up", key_code="Enter", new_shot=False),
        ev("key_down", key_code="ControlLeft"),
        ev("key_down", key_code="KeyC", new_shot=False),
        ev("key_up", key_code="KeyC", new_shot=False),
        ev("key_up", key_code="ControlLeft", new_shot=False),
        ev("click", x=1040.0, y=50.0, button="button_right", click_count=1),
        ev("key_press", key_code="Escape"),
        ev("click", x=420.0, y=176.0, button="button_left", click_count=2),
        ev("input", input_data="1"),
        ev("input", input_data="2", new_shot=False),
        ev("drag_start", x=120.0, y=345.0),
        ev("drag_end", x=120.0, y=520.0, new_shot=False),
        ev("scroll", x=640.0, y=500.0, delta_y=120),
        ev("scroll", x=640.0, y=500.0, delta_y=120, new_shot=False),
        ev("scroll", x=640.0, y=500.0, deltaX=-200),
        ev("mouseover_start", x=1040.0, y=50.0),
        ev("mouseover_end", x=1100.0, y=60.0, new_shot=False),
        ev("drag_start", x=10.0, y=10.0),  # never ends: unpaired
        ev("click", x=300.0, y=300.0, button="button_left", click_count=1),
        ev("drag_start"),
        ev("drag_end", new_shot=False),  # no coordinates
        ev("zoom", x=1.0, y=1.0),  # not a recorder event type
        ev("click", button="button_left", click_count=1),  # no coordinates
        {"type": "click", "x": 5.0, "y": 5.0, "relative_timestamp_ms": 99999},  # no screenshot
    ]


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    (repo / "data").mkdir(parents=True, exist_ok=True)
    rows = []
    for i, quest in enumerate(("Sheets", "Slides", "Figma")):
        sid = f"sess{i}"
        events = _events(repo, sid)
        if i == 2:  # two sessions recorded under one row: they must not mix
            events += [dict(e, session_id="b") for e in _events(repo, sid + "b")[:3]]
            events = [dict(e, session_id=e.get("session_id", "a")) for e in events]
        doc = {"actions": events}
        if i == 0:
            metadata: str = json.dumps(doc)
        elif i == 1:
            (repo / "input_metadata").mkdir(exist_ok=True)
            (repo / "input_metadata" / f"{sid}.json").write_text(json.dumps(doc))
            metadata = f"input_metadata/{sid}.json"
        else:
            (repo / "events").mkdir(exist_ok=True)
            (repo / "events" / f"{sid}.json").write_text(json.dumps(doc))
            metadata = CDN + f"events/{sid}.json"
        thoughts = [
            {"target_step": 0, "thought": "Label the first column before entering numbers."},
            {"target_step": 3, "thought": "Copy the header so it can be reused on the next sheet."},
        ]
        rows.append(
            {
                "id": f"pango-demo-{i}",
                "video_url": CDN + f"video/{sid}.mp4",
                "input_metadata": metadata,
                "task_description": f"Quarterly numbers in {quest}",
                "quest_type": quest,
                "profession": "Financial analyst",
                "synthetically_generated_instruction": f"In {quest}, label the revenue column and fill it.",
                "synthetically_generated_thought_metadata": json.dumps(thoughts),
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), repo / "data" / "train-00000-of-00001.parquet")
    return repo
