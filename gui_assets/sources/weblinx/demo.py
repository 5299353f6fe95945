"""A small WebLINX-zipped mirror: splits.json and one zip per demo, generated deterministically.

    McGill-NLP/WebLINX-zipped/splits.json
    McGill-NLP/WebLINX-zipped/demonstrations/<demo_id>.zip   replay.json + screenshots/screenshot-N-0.png

Demo `demoval` (valid) uses every intent, zoom 1.25 (screenshots in device px: the CSS viewport
times 1.25), a viewport that changes half-way, chat turns from both speakers, a textInput whose
text is under `value`, a broken and a missing screenshot and an unknown intent; its zip keeps
entries at the root. `demozzz` (valid) is at zoom 1 with entries under `<demo_id>/`. Train has
two small demos and one listed demo whose zip is absent. Each screenshot draws the turn's
element where its box says, so a point can be checked against the pixels.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gui_assets.sources.demo_render import Widget, encode, render_page
from gui_assets.sources.weblinx.adapter import REPO_ID

SPLITS = {
    "train": ["demoaaa", "demobbb", "demomis"],
    "valid": ["demoval", "demozzz"],
    "test_iid": ["demoiid"],
}


def _chat(speaker: str, text: str, ts: float) -> dict[str, Any]:
    return {"type": "chat", "speaker": speaker, "utterance": text, "timestamp": ts}


def _browser(
    intent: str,
    shot: str | None,
    *,
    vw: int,
    vh: int,
    zoom: float = 1.0,
    box: tuple | None = None,
    mouse: tuple | None = None,
    tag: str = "BUTTON",
    args: dict[str, Any] | None = None,
    props: dict[str, Any] | None = None,
    status: str = "good",
    tab: int = 1,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "url": "https://travel.example.com/",
        "tabId": tab,
        "viewportWidth": vw,
        "viewportHeight": vh,
        "zoomLevel": zoom,
    }
    if mouse:
        meta["mouseX"], meta["mouseY"] = mouse
    arguments: dict[str, Any] = {"metadata": meta, "properties": props or {}, **(args or {})}
    if box:
        x, y, w, h = box
        arguments["element"] = {
            "tagName": tag,
            "attributes": {"data-webtasks-id": f"{intent}-{x}-{y}"},
            "bbox": {
                "x": x,
                "y": y,
                "left": x,
                "top": y,
                "width": w,
                "height": h,
                "right": x + w,
                "bottom": y + h,
            },
        }
    state = {
        "screenshot": shot,
        "page": shot.replace("screenshot", "page").replace(".png", ".html") if shot else None,
        "screenshot_status": status,
    }
    return {
        "type": "browser",
        "timestamp": 1.0,
        "state": state,
        "action": {"intent": intent, "arguments": arguments},
    }


def _turns_at(vw: int, vh: int, zoom: float = 1.0, tab: int = 1) -> Callable[..., dict[str, Any]]:
    """`_browser` at one window, its screenshot named by number (None: the turn names none)."""

    def turn(intent: str, n: int | None, **kw: Any) -> dict[str, Any]:
        shot = f"screenshot-{n}-0.png" if n is not None else None
        return _browser(intent, shot, vw=vw, vh=vh, zoom=zoom, tab=tab, **kw)

    return turn


def _demo_turns(demo_id: str) -> list[dict[str, Any]]:
    if demo_id == "demoval":
        b = _turns_at(1024, 600, 1.25)
        small = _turns_at(900, 560, 1.25, tab=2)  # the resized window
        return [
            _chat("instructor", "Find the cheapest flight to Paris next week", 0),
            _chat("navigator", "Sure, opening the site", 1),
            b("load", 0, props={"url": "https://travel.example.com/"}),
            b("click", 1, box=(300, 120, 160, 40)),
            b("textInput", 2, box=(300, 180, 260, 36), tag="INPUT", args={"text": "Paris"}),
            b("scroll", 3, mouse=(500, 300), args={"scrollX": 0, "scrollY": 450}),
            _chat("instructor", "Economy class only", 5),
            b("change", 4, box=(600, 240, 200, 34), tag="SELECT", args={"value": "Economy"}),
            b("submit", 5, box=(280, 100, 520, 300), tag="FORM"),
            b("hover", 6, mouse=(700, 420)),
            b("scroll", 7, mouse=(500, 300), args={"scrollX": 0, "scrollY": 150}),
            b("tabcreate", 8, props={"tabId": 2}),
            b("tabswitch", 9, props={"tabIdOrigin": 1, "tabId": 2}),
            # the window is resized here: a smaller viewport from now on
            small("copy", 10, args={"selected": "€ 79"}),
            small("paste", 11, args={"pasted": "€ 79"}),
            small("textInput", 12, box=(100, 60, 300, 36), tag="INPUT", args={"value": "cheapest"}),
            small("click", 13, box=(420, 60, 120, 36), status="broken"),
            small("click", None, box=(420, 60, 120, 36)),
            small("dragstart", 14, mouse=(10, 10)),
            small("tabremove", 15, props={"tabId": 2}),
            b("click", 16, box=(700, 500, 140, 44)),
            _chat("navigator", "Done: the cheapest is 79 euros", 20),
        ]
    b = _turns_at(1280, 720)
    return [
        _chat("instructor", f"Open the deals page ({demo_id})", 0),
        b("click", 0, box=(80, 20, 120, 40)),
        b("textInput", 1, box=(400, 30, 300, 36), tag="INPUT", args={"text": "deals"}),
        b("submit", 2, box=(400, 30, 300, 36), tag="FORM"),
        b("scroll", 3, mouse=(640, 360), args={"scrollX": 0, "scrollY": 300}),
        b("click", 4, box=(640, 500, 180, 48)),
    ]


def _shot(turn: dict[str, Any], seed: int) -> bytes:
    args = turn["action"]["arguments"]
    meta = args["metadata"]
    z = meta["zoomLevel"]
    w, h = round(meta["viewportWidth"] * z), round(meta["viewportHeight"] * z)
    widgets = []
    if "element" in args:
        bb = args["element"]["bbox"]
        kind = {"INPUT": "input", "SELECT": "select", "FORM": "link"}.get(
            args["element"]["tagName"], "button"
        )
        widgets.append(Widget(kind, "Go", bb["left"] * z, bb["top"] * z, bb["width"] * z, bb["height"] * z))
    if "mouseX" in meta:
        x, y = meta["mouseX"] * z, meta["mouseY"] * z
        widgets.append(Widget("button", "", x - 20, y - 12, 40, 24))
    return encode(render_page(seed, w, h, widgets, "Travel"), "png")


def write_mirror(root: Path) -> Path:
    repo = root / REPO_ID
    (repo / "demonstrations").mkdir(parents=True, exist_ok=True)
    (repo / "splits.json").write_text(json.dumps(SPLITS, indent=1), encoding="utf-8")
    for d, demo_id in enumerate(["demoaaa", "demobbb", "demoval", "demozzz", "demoiid"]):
        turns = _demo_turns(demo_id)
        prefix = f"{demo_id}/" if demo_id in ("demozzz", "demobbb") else ""
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            replay = {"data": turns, "version": "1.0", "created": 1700000000}
            z.writestr(zipfile.ZipInfo(prefix + "replay.json", (2024, 1, 1, 0, 0, 0)), json.dumps(replay))
            for i, turn in enumerate(turns):
                shot = turn.get("state", {}).get("screenshot") if turn["type"] == "browser" else None
                if shot:
                    info = zipfile.ZipInfo(f"{prefix}screenshots/{shot}", (2024, 1, 1, 0, 0, 0))
                    z.writestr(info, _shot(turn, d * 100 + i), compress_type=zipfile.ZIP_STORED)
        (repo / "demonstrations" / f"{demo_id}.zip").write_bytes(buf.getvalue())
    return repo
