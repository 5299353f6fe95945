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
from pathlib import Path
from typing import Any

from gui_assets.adapters.weblinx import REPO_ID
from gui_assets.demo.render import Widget, encode, render_page

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


def _demo_turns(demo_id: str) -> list[dict[str, Any]]:
    if demo_id == "demoval":
        z, (vw, vh), (vw2, vh2) = 1.25, (1024, 600), (900, 560)
        b = _browser
        return [
            _chat("instructor", "Find the cheapest flight to Paris next week", 0),
            _chat("navigator", "Sure, opening the site", 1),
            b(
                "load",
                "screenshot-0-0.png",
                vw=vw,
                vh=vh,
                zoom=z,
                props={"url": "https://travel.example.com/"},
            ),
            b("click", "screenshot-1-0.png", vw=vw, vh=vh, zoom=z, box=(300, 120, 160, 40)),
            b(
                "textInput",
                "screenshot-2-0.png",
                vw=vw,
                vh=vh,
                zoom=z,
                box=(300, 180, 260, 36),
                tag="INPUT",
                args={"text": "Paris"},
            ),
            b(
                "scroll",
                "screenshot-3-0.png",
                vw=vw,
                vh=vh,
                zoom=z,
                mouse=(500, 300),
                args={"scrollX": 0, "scrollY": 450},
            ),
            _chat("instructor", "Economy class only", 5),
            b(
                "change",
                "screenshot-4-0.png",
                vw=vw,
                vh=vh,
                zoom=z,
                box=(600, 240, 200, 34),
                tag="SELECT",
                args={"value": "Economy"},
            ),
            b("submit", "screenshot-5-0.png", vw=vw, vh=vh, zoom=z, box=(280, 100, 520, 300), tag="FORM"),
            b("hover", "screenshot-6-0.png", vw=vw, vh=vh, zoom=z, mouse=(700, 420)),
            b(
                "scroll",
                "screenshot-7-0.png",
                vw=vw,
                vh=vh,
                zoom=z,
                mouse=(500, 300),
                args={"scrollX": 0, "scrollY": 150},
            ),
            b("tabcreate", "screenshot-8-0.png", vw=vw, vh=vh, zoom=z, props={"tabId": 2}),
            b("tabswitch", "screenshot-9-0.png", vw=vw, vh=vh, zoom=z, props={"tabIdOrigin": 1, "tabId": 2}),
            # the window is resized here: a smaller viewport from now on
            b("copy", "screenshot-10-0.png", vw=vw2, vh=vh2, zoom=z, args={"selected": "€ 79"}, tab=2),
            b("paste", "screenshot-11-0.png", vw=vw2, vh=vh2, zoom=z, args={"pasted": "€ 79"}, tab=2),
            b(
                "textInput",
                "screenshot-12-0.png",
                vw=vw2,
                vh=vh2,
                zoom=z,
                box=(100, 60, 300, 36),
                tag="INPUT",
                args={"value": "cheapest"},
                tab=2,
            ),
            b(
                "click",
                "screenshot-13-0.png",
                vw=vw2,
                vh=vh2,
                zoom=z,
                box=(420, 60, 120, 36),
                status="broken",
                tab=2,
            ),
            b("click", None, vw=vw2, vh=vh2, zoom=z, box=(420, 60, 120, 36), tab=2),
            b("dragstart", "screenshot-14-0.png", vw=vw2, vh=vh2, zoom=z, mouse=(10, 10), tab=2),
            b("tabremove", "screenshot-15-0.png", vw=vw2, vh=vh2, zoom=z, props={"tabId": 2}, tab=2),
            b("click", "screenshot-16-0.png", vw=vw, vh=vh, zoom=z, box=(700, 500, 140, 44)),
            _chat("navigator", "Done: the cheapest is 79 euros", 20),
        ]
    vw, vh = 1280, 720
    b = _browser
    return [
        _chat("instructor", f"Open the deals page ({demo_id})", 0),
        b("click", "screenshot-0-0.png", vw=vw, vh=vh, box=(80, 20, 120, 40)),
        b(
            "textInput",
            "screenshot-1-0.png",
            vw=vw,
            vh=vh,
            box=(400, 30, 300, 36),
            tag="INPUT",
            args={"text": "deals"},
        ),
        b("submit", "screenshot-2-0.png", vw=vw, vh=vh, box=(400, 30, 300, 36), tag="FORM"),
        b(
            "scroll",
            "screenshot-3-0.png",
            vw=vw,
            vh=vh,
            mouse=(640, 360),
            args={"scrollX": 0, "scrollY": 300},
        ),
        b("click", "screenshot-4-0.png", vw=vw, vh=vh, box=(640, 500, 180, 48)),
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
