"""A small Multimodal-Mind2Web mirror in the upstream parquet format, generated deterministically.

Layout and schema follow the hub repo:
`osunlp/Multimodal-Mind2Web/data/<split>-NNNNN-of-NNNNN-<hash>.parquet`, `operation` as a
JSON string, `pos_candidates` as JSON strings whose `attributes` is itself a
JSON string holding `bounding_box_rect` "x,y,w,h", `target_action_index` as a string, and
`screenshot` as an HF Image struct {bytes, path} holding a full-page render.

The train split carries every edge case the adapter handles: tall pages that need one or
several SCROLL steps, a target at the page bottom, hidden and empty candidates, a page wider
than the viewport with a target right of it, a page shorter than the viewport, a JPEG
screenshot, HOVER and ENTER original ops, null and undecodable screenshots, a malformed
operation, an unknown verb, a duplicated row, a task whose every row is dropped, a task whose
rows are spread over both files, and one whose rows are stored in reverse order.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.sources.demo_render import Widget, encode, render_page
from gui_assets.sources.mind2web.adapter import REPO_ID

SCHEMA = pa.schema(
    [
        ("action_uid", pa.string()),
        ("raw_html", pa.string()),
        ("cleaned_html", pa.string()),
        ("operation", pa.string()),
        ("pos_candidates", pa.list_(pa.string())),
        ("neg_candidates", pa.list_(pa.string())),
        ("website", pa.string()),
        ("domain", pa.string()),
        ("subdomain", pa.string()),
        ("annotation_id", pa.string()),
        ("confirmed_task", pa.string()),
        ("screenshot", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("action_reprs", pa.list_(pa.string())),
        ("target_action_index", pa.string()),
        ("target_action_reprs", pa.string()),
    ]
)

# Every row's one negative candidate: the page header.
_NEG_ATTRS = {"backend_node_id": "7", "bounding_box_rect": "0,0,1280,72"}
_NEG_CANDIDATE = json.dumps({"tag": "div", "attributes": json.dumps(_NEG_ATTRS)})


@dataclass(frozen=True)
class DemoAction:
    op: str  # CLICK | TYPE | SELECT (or a bad verb for the edge cases)
    widget: Widget | None  # the target element, drawn on the page
    value: str = ""
    original_op: str | None = None
    page: tuple[int, int] = (1280, 1080)  # full-page width, height
    candidates: str = "target"  # target | hidden | empty | malformed_bbox
    screenshot: str = "png"  # png | jpg | null | garbage
    operation: str = "ok"  # ok | malformed
    file: int = 0  # which parquet file of the split holds the row
    duplicate: bool = False
    # (task, action) of the train split whose page this screen shows, its own target drawn on
    # it: a test_task website seen in training, as Mind2Web's card says (the screen-overlap audit)
    page_of: tuple[int, int] | None = None


@dataclass(frozen=True)
class DemoTask:
    task: str
    website: str
    domain: str
    subdomain: str
    actions: list[DemoAction] = field(default_factory=list)
    reverse_rows: bool = False


def _btn(label: str, x: float, y: float, w: float = 180, h: float = 44) -> Widget:
    return Widget("button", label, x, y, w, h)


def _inp(label: str, x: float, y: float, w: float = 360, h: float = 44) -> Widget:
    return Widget("input", label, x, y, w, h)


def _sel(label: str, x: float, y: float, w: float = 260, h: float = 40) -> Widget:
    return Widget("select", label, x, y, w, h)


def _tasks(split: str) -> list[DemoTask]:
    if split == "train":
        return [
            DemoTask(
                "Rent a car in Brooklyn from April 9 to April 15",
                "rentacar",
                "Travel",
                "Car rental",
                [
                    DemoAction("CLICK", _btn("Cars", 420, 180)),
                    DemoAction("TYPE", _inp("Driver age", 330, 236), "30"),  # right below: in the eye window
                    DemoAction(
                        "TYPE", _inp("Pick-up location", 300, 1620), "Brooklyn Central", page=(1280, 2400)
                    ),
                    DemoAction("SELECT", _sel("April 9", 700, 2330), "April 9", page=(1280, 2400), file=1),
                    DemoAction("CLICK", _btn("Search cars", 560, 980, 200, 52), page=(1280, 1600), file=1),
                ],
            ),
            DemoTask(
                "Find the store hours of the downtown branch",
                "shopmart",
                "Shopping",
                "General",
                [
                    DemoAction("CLICK", _btn("Stores", 300, 200), screenshot="jpg"),
                    DemoAction("CLICK", _btn("Downtown", 300, 400), candidates="hidden"),
                    DemoAction("CLICK", _btn("Hours", 300, 500), candidates="empty"),
                    DemoAction("CLICK", _btn("Close", 900, 140), candidates="malformed_bbox"),
                    DemoAction("CLICK", _btn("Menu", 640, 90), original_op="HOVER"),
                ],
            ),
            DemoTask(
                "Subscribe to the newsletter with jo@example.com",
                "newsco",
                "Info",
                "News",
                [
                    DemoAction("CLICK", _btn("Newsletter", 500, 300), screenshot="null"),
                    DemoAction("TYPE", _inp("Email", 400, 5400), "jo@example.com", page=(1280, 6000)),
                    DemoAction("CLICK", _inp("Email", 400, 700), original_op="ENTER"),
                    DemoAction("CLICK", _btn("Done", 400, 760), screenshot="garbage"),
                    DemoAction("CLICK", _btn("Weird", 400, 760), operation="malformed"),
                    DemoAction("SCROLL", _btn("Footer", 400, 760)),
                ],
            ),
            DemoTask(
                "Compare the two cheapest laptops",
                "techhub",
                "Shopping",
                "Electronics",
                [
                    DemoAction("CLICK", _btn("Compare", 1400, 300), page=(1600, 1400)),
                    DemoAction(
                        "CLICK", Widget("link", "Laptops wide banner", 900, 500, 600, 40), page=(1600, 1400)
                    ),
                    DemoAction("CLICK", _btn("Add to compare", 500, 600), page=(1280, 800)),
                    DemoAction("CLICK", _btn("Add to compare", 500, 600), page=(1280, 800), duplicate=True),
                ],
                reverse_rows=True,
            ),
            DemoTask(
                "Open the careers page",
                "acme",
                "Info",
                "Company",
                [
                    DemoAction("CLICK", _btn("Careers", 200, 200), screenshot="null"),
                    DemoAction("CLICK", _btn("Jobs", 200, 300), screenshot="null"),
                ],
            ),
            DemoTask(
                "Book a table for two at 7 pm",
                "dinefind",
                "Travel",
                "Restaurant",
                [
                    DemoAction("CLICK", _btn("Reserve", 820, 3050), page=(1280, 3100)),
                    DemoAction("SELECT", _sel("2 guests", 420, 260), "2 guests"),
                    DemoAction("SELECT", _sel("7:00 PM", 470, 300), "7:00 PM", file=1),
                    DemoAction("CLICK", _btn("Confirm", 600, 1300), page=(1280, 1500), file=1),
                ],
            ),
        ]
    sites = {
        "test_task": ("airfly", "Travel", "Airlines"),
        "test_website": ("moviebox", "Entertainment", "Movies"),
        "test_domain": ("cityhall", "Info", "Government"),
    }
    site, domain, sub = sites[split]
    return [
        DemoTask(
            f"Find tickets on {site} for next Friday",
            site,
            domain,
            sub,
            [
                DemoAction(
                    "CLICK", _btn("Tickets", 380, 220), page_of=(0, 0) if split == "test_task" else None
                ),
                DemoAction("TYPE", _inp("Date", 300, 1500), "next Friday", page=(1280, 2000)),
                DemoAction("CLICK", _btn("Search", 700, 1560), page=(1280, 2000)),
            ],
        ),
        DemoTask(
            f"Sign up for the {site} newsletter",
            site,
            domain,
            sub,
            [
                DemoAction("CLICK", _btn("Newsletter", 600, 400)),
                DemoAction("CLICK", _btn("Subscribe", 600, 450)),
            ],
        ),
    ]


def _uid(*parts: str) -> str:
    return str(uuid.UUID(hashlib.md5("/".join(parts).encode()).hexdigest()))


def _candidate(a: DemoAction, uid: str) -> list[str]:
    w = a.widget
    if a.candidates == "empty" or w is None:
        return []
    rect = {"target": f"{w.x},{w.y},{w.w},{w.h}", "hidden": "-1,-1,-1,-1", "malformed_bbox": "n/a"}[
        a.candidates
    ]
    attrs = {
        "backend_node_id": str(int(uid[:6], 16) % 9000),
        "bounding_box_rect": rect,
        "class": f"{w.kind} primary",
        "data_pw_testid_buckeye_candidate": "1",
    }
    return [json.dumps({"tag": "button" if w.kind == "button" else w.kind, "attributes": json.dumps(attrs)})]


def _page_seed(split: str, task: int, action: int) -> int:
    return int(_uid(split, str(task), str(action))[:8], 16)


def _screenshot(a: DemoAction, seed: int, site: str) -> dict[str, Any] | None:
    if a.screenshot == "null":
        return None
    if a.screenshot == "garbage":
        return {"bytes": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "path": None}
    widgets = [a.widget] if a.widget else []
    im = render_page(seed, a.page[0], a.page[1], widgets, site)
    return {"bytes": encode(im, a.screenshot), "path": None}


def _page(split: str, task: int, action: int, a: DemoAction, website: str) -> dict[str, Any] | None:
    """The action's screenshot: its own page, or the train page it repeats (`page_of`)."""
    if a.page_of is None:
        return _screenshot(a, _page_seed(split, task, action), website)
    shown = _tasks("train")[a.page_of[0]]
    return _screenshot(a, _page_seed("train", *a.page_of), shown.website)


def _rows(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    files: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for ti, t in enumerate(_tasks(split)):
        annotation_id = _uid(split, t.task)
        reprs = [
            f"[{a.widget.kind if a.widget else 'span'}]  {a.widget.label if a.widget else ''} -> "
            f"{a.op}{': ' + a.value if a.value else ''}"
            for a in t.actions
        ]
        rows = []
        for i, a in enumerate(t.actions):
            uid = _uid(annotation_id, str(i))
            op = json.dumps({"original_op": a.original_op or a.op, "value": a.value, "op": a.op})
            row = {
                "action_uid": uid,
                "raw_html": f"<html><body><div id='{uid[:8]}'>{t.website}</div></body></html>",
                "cleaned_html": f'<html backend_node_id="1"><body>{t.website}</body></html>',
                "operation": op if a.operation == "ok" else op[:-3],
                "pos_candidates": _candidate(a, uid),
                "neg_candidates": [_NEG_CANDIDATE],
                "website": t.website,
                "domain": t.domain,
                "subdomain": t.subdomain,
                "annotation_id": annotation_id,
                "confirmed_task": t.task,
                "screenshot": _page(split, ti, i, a, t.website),
                "action_reprs": reprs,
                "target_action_index": str(i - 1 if a.duplicate else i),
                "target_action_reprs": reprs[i],
            }
            rows.append((a.file, row))
        if t.reverse_rows:
            rows.reverse()
        for f, row in rows:
            files[f].append(row)
    return files


def write_mirror(
    root: Path, splits: tuple[str, ...] = ("train", "test_task", "test_website", "test_domain")
) -> Path:
    """Write the demo parquet files under root/osunlp/Multimodal-Mind2Web/data/; returns that repo dir."""
    repo = root / REPO_ID
    (repo / "data").mkdir(parents=True, exist_ok=True)
    for split in splits:
        files = [rows for rows in _rows(split) if rows]
        for i, rows in enumerate(files):
            table = pa.Table.from_pylist(rows, schema=SCHEMA)
            digest = hashlib.sha256(json.dumps([r["action_uid"] for r in rows]).encode()).hexdigest()[:16]
            pq.write_table(table, repo / "data" / f"{split}-{i:05d}-of-{len(files):05d}-{digest}.parquet")
    (repo / "README.md").write_text(
        "# Multimodal-Mind2Web (gui_assets demo mirror)\n\nGenerated by gui_assets.sources.demo_mirror; "
        "same layout and "
        "schema as osunlp/Multimodal-Mind2Web, synthetic pages.\n",
        encoding="utf-8",
    )
    return repo
