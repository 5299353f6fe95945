"""A small Pango mirror in the real layout, generated deterministically.

`chakra-labs/pango-sample/train.csv` at the repo root with the real columns (id, submission_date,
video_url, duration_ms, version, input_metadata_preview_url, input_metadata, task_description,
quest_type, profession, synthetically_generated_instruction, artifact_history_preview_url);
input_metadata is a URL on the collector's bucket, and the documents and screenshots it names
sit where a mirror keeps them, at the URL's path under the repo folder
(`finalized/<id>/actions_v3.json`, `finalized/<id>/screenshots/[<session>-]NNNN.png`).

CSV row 0 holds `{"actions": [...]}` and a task_description with quotes, a comma and a newline;
row 1 a bare list of events recorded as two sessions; row 2 names a document that is not there
(`missing_input_metadata`, a 404 in hub mode). One older-layout case stays:
`data/train-00000-of-00001.parquet`, a row with its document inline, screenshots by repo path,
and generated thoughts. The events use every type of the recorder: clicks (left, right,
double), cumulative and incremental input runs, a key chord and Enter as key_down/key_up,
key_press, a drag pair and an unpaired one, a drag without coordinates, wheel runs in delta_y
and deltaX spellings, mouseover pairs, an unknown type, a click without coordinates and one
whose screenshot is missing.

`write_mirror(root, bucket=...)` writes the same files with another bucket URL (the hub-mode
tests serve the documents and screenshots over https from the repo folder itself).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.sources.demo_render import Widget, encode, render_page
from gui_assets.sources.pango.adapter import REPO_ID

W, H = 1280, 800
BUCKET = "https://storage.pango.example/"  # a reserved name: the real bucket's host is not public
IDS = (
    "0b7c6a2e-3f1d-4c8e-9a51-2d4f6e8b1c30",
    "5e2f9d14-8a6b-4f0c-b3d7-61c0a9e4f2b8",
    "9c41e7a0-2b5d-4e93-8f16-c7a3d0b58e21",
)
LEGACY_ID = "pango-legacy-0"


def _screenshot(repo: Path, rel: str, seed: int) -> None:
    p = repo / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    widgets = [
        Widget("button", "Share", 980, 30, 120, 40),
        Widget("input", "A1", 300, 160, 240, 32),
        Widget("link", "Slide 2", 40, 300, 160, 90),
    ]
    p.write_bytes(encode(render_page(seed, W, H, widgets, "Sheets"), "png"))


def _events(repo: Path, shot_ref: Callable[[int], str], seed: int) -> list[dict[str, Any]]:
    """The recorder's events; `shot_ref(n)` is the repo path of screenshot n (written here) and
    what screenshot_url names it by."""
    t = [0]
    n = [0]

    def ev(kind: str, new_shot: bool = True, **kw: Any) -> dict[str, Any]:
        t[0] += 250
        if new_shot:
            n[0] += 1
        rel, url = shot_ref(n[0]), shot_ref(-n[0])
        if not (repo / rel).exists():
            _screenshot(repo, rel, n[0] + seed)
        return {"type": kind, "relative_timestamp_ms": t[0], "screenshot_url": url, **kw}

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


def _bucket_shots(bucket: str, rid: str, session: str = "") -> Callable[[int], str]:
    """Screenshot n of a session on the bucket: its mirror path for n > 0, its URL for -n."""

    def ref(n: int) -> str:
        rel = f"finalized/{rid}/screenshots/{session}{abs(n):04d}.png"
        return rel if n > 0 else bucket + rel

    return ref


def _csv_row(i: int, rid: str, bucket: str) -> dict[str, str]:
    quest = ("sheets", "slides", "figma")[i]
    return {
        "id": rid,
        "submission_date": f"2025-06-1{i}T14:03:1{i}.000Z",
        "video_url": f"{bucket}finalized/{rid}/video.mp4",
        "duration_ms": str(7250 + 1000 * i),
        "version": "0.2",
        "input_metadata_preview_url": f"https://pango.example/preview/{rid}/actions",
        "input_metadata": f"{bucket}finalized/{rid}/actions_v3.json",
        "task_description": f'Quarterly numbers in {quest}, "Q3" first\nthen the totals',
        "quest_type": quest,
        "profession": "Financial analyst",
        "synthetically_generated_instruction": f"In {quest}, label the revenue column and fill it.",
        "artifact_history_preview_url": f"https://pango.example/preview/{rid}/artifacts",
    }


def _legacy_parquet(repo: Path) -> None:
    """The older layout: a parquet export whose row carries its document inline."""
    events = _events(repo, lambda n: f"screenshots/legacy/{abs(n):03d}.png", 40)
    thoughts = [
        {"target_step": 0, "thought": "Label the first column before entering numbers."},
        {"target_step": 3, "thought": "Copy the header so it can be reused on the next sheet."},
    ]
    row = {
        "id": LEGACY_ID,
        "input_metadata": json.dumps({"actions": events}),
        "task_description": "Quarterly numbers in Sheets",
        "quest_type": "Sheets",
        "profession": "Financial analyst",
        "synthetically_generated_instruction": "In Sheets, label the revenue column and fill it.",
        "synthetically_generated_thought_metadata": json.dumps(thoughts),
    }
    (repo / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([row]), repo / "data" / "train-00000-of-00001.parquet")


def write_mirror(root: Path, bucket: str = BUCKET) -> Path:
    repo = root / REPO_ID
    repo.mkdir(parents=True, exist_ok=True)
    rows = [_csv_row(i, rid, bucket) for i, rid in enumerate(IDS)]
    doc0 = {"actions": _events(repo, _bucket_shots(bucket, IDS[0]), 0)}
    session_a = _events(repo, _bucket_shots(bucket, IDS[1], "a-"), 10)
    session_b = _events(repo, _bucket_shots(bucket, IDS[1], "b-"), 20)[:3]
    doc1 = [dict(e, session_id=s) for s, evs in (("a", session_a), ("b", session_b)) for e in evs]
    for rid, doc in ((IDS[0], doc0), (IDS[1], doc1)):  # IDS[2]'s document is never written
        path = repo / "finalized" / rid / "actions_v3.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc), encoding="utf-8")
    with open(repo / "train.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))  # the upstream CSV's column order
        writer.writeheader()
        writer.writerows(rows)
    _legacy_parquet(repo)
    return repo
