"""Playwright trace archives (`trace.zip`) read in place: calls, pages and screencast frames.

Format versions 3 to 10 are read:
- v3: one `{"type": "action", "metadata": {...}}` event per call (point and log inside it);
- v4 to v8: `before` / `input` / `after` events joined on `callId` (`log` inside `after` up to
  v5, separate `log` lines from v6 on), `before.pageId` naming the page;
- v10 (Playwright 1.5x-1.6x, seen here): `before` has no pageId, so a call's page comes from the
  frame snapshot taken for it (`frame-snapshot.snapshot.callId` -> `pageId`); screencast frames
  name their member by `file` (`screencast/<page>-<ts>.jpeg`) instead of `sha1` (`resources/<sha1>`).
Points and boxes are CSS px of the viewport (`context-options.options.viewport`); frames may be
downscaled (older versions fit them into 800x600), so points are rescaled per frame. Times are
the trace's monotonic milliseconds, the same clock for calls and frames.

The archive is read with gui_assets.archives (member paths guarded, nothing extracted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.archives import ArchiveError, ZipImages
from gui_assets.drops import DropReason

DEFAULT_VIEWPORT = (1280, 720)
# What reading a trace can raise besides opening its archive (archives.OPEN_DROPS).
DROPS = frozenset({DropReason.MISSING_TRACE})  # Playwright's default when a context sets none


@dataclass(slots=True)
class Call:
    """One Playwright API call, its events merged."""

    call_id: str
    cls: str
    method: str
    params: dict[str, Any]
    start: float
    end: float | None = None
    page: str | None = None
    point: tuple[float, float] | None = None
    box: tuple[float, float, float, float] | None = None  # x, y, width, height (CSS px)
    error: str | None = None
    result: Any = None


@dataclass(frozen=True, slots=True)
class Frame:
    page: str
    member: str  # file name inside the archive
    width: int
    height: int
    time: float


@dataclass(slots=True)
class Trace:
    version: int
    viewport: tuple[int, int]
    calls: list[Call] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    page_viewports: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Events that parse but are no event (no string "type", not an object): counted, skipped.
    malformed_events: int = 0

    def frame_before(self, page: str, time: float) -> Frame | None:
        """The last screencast frame of `page` at or before `time`: the screen the call acted on."""
        best = None
        for f in self.frames:
            if f.page == page and f.time <= time and (best is None or f.time >= best.time):
                best = f
        return best

    def viewport_of(self, page: str) -> tuple[int, int]:
        return self.page_viewports.get(page, self.viewport)


def _pt(v: Any) -> tuple[float, float] | None:
    if isinstance(v, dict) and isinstance(v.get("x"), int | float) and isinstance(v.get("y"), int | float):
        return float(v["x"]), float(v["y"])
    return None


def _box(v: Any) -> tuple[float, float, float, float] | None:
    if isinstance(v, dict) and all(isinstance(v.get(k), int | float) for k in ("x", "y", "width", "height")):
        return float(v["x"]), float(v["y"]), float(v["width"]), float(v["height"])
    return None


def _member_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def read_trace(archive: ZipImages) -> Trace:
    """Parse the trace events of an open archive. Raises ArchiveError when there is no trace."""
    names = sorted(n for n in archive.members if n.endswith("trace.trace"))
    if not names:
        raise ArchiveError(DropReason.MISSING_TRACE, "no trace.trace in the archive")
    trace = Trace(version=0, viewport=DEFAULT_VIEWPORT)
    calls: dict[str, Call] = {}
    snapshot_page: dict[str, str] = {}
    for name in names:
        for line in archive.read(name).decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed recording; the rest is usable
            if isinstance(e, dict) and isinstance(e.get("type"), str) and e["type"]:
                _event(e, trace, calls, snapshot_page)
            else:
                trace.malformed_events += 1
    for c in calls.values():
        if c.page is None:
            c.page = snapshot_page.get(c.call_id)
    trace.calls = sorted(calls.values(), key=lambda c: (c.start, c.call_id))
    trace.frames.sort(key=lambda f: f.time)
    return trace


def _event(e: dict[str, Any], trace: Trace, calls: dict[str, Call], snapshot_page: dict[str, str]) -> None:
    kind = e.get("type")
    if kind == "context-options":
        trace.version = int(e.get("version", 0) or 0)
        vp = (e.get("options") or {}).get("viewport")
        if isinstance(vp, dict) and vp.get("width") and vp.get("height"):
            trace.viewport = (int(vp["width"]), int(vp["height"]))
    elif kind == "screencast-frame":
        member = e.get("file") or (f"resources/{e['sha1']}" if e.get("sha1") else None)
        if member and e.get("pageId") is not None and isinstance(e.get("timestamp"), int | float):
            trace.frames.append(
                Frame(
                    str(e["pageId"]),
                    _member_name(member),
                    int(e.get("width") or 0),
                    int(e.get("height") or 0),
                    float(e["timestamp"]),
                )
            )
    elif kind == "action" and isinstance(e.get("metadata"), dict):  # v3
        m = e["metadata"]
        cid = str(m.get("id") or len(calls))
        calls[cid] = Call(
            cid,
            str(m.get("type", "")),
            str(m.get("method", "")),
            m.get("params") or {},
            float(m.get("startTime") or 0),
            m.get("endTime"),
            m.get("pageId"),
            _pt(m.get("point")),
            None,
            _error(m.get("error")),
            m.get("result"),
        )
    elif kind == "before":
        cid = str(e.get("callId"))
        calls[cid] = Call(
            cid,
            str(e.get("class", "")),
            str(e.get("method", "")),
            e.get("params") or {},
            float(e.get("startTime") or 0),
            page=e.get("pageId"),
        )
    elif kind in ("input", "after") and str(e.get("callId")) in calls:
        c = calls[str(e["callId"])]
        c.point = _pt(e.get("point")) or c.point
        c.box = _box(e.get("box")) or c.box
        if kind == "after":
            c.end = e.get("endTime")
            c.error = _error(e.get("error")) or c.error
            c.result = e.get("result", c.result)
    elif kind == "frame-snapshot" and isinstance(e.get("snapshot"), dict):
        s = e["snapshot"]
        if s.get("isMainFrame", True) and s.get("callId") and s.get("pageId"):
            snapshot_page.setdefault(str(s["callId"]), str(s["pageId"]))
            vp = s.get("viewport")
            if isinstance(vp, dict) and vp.get("width") and vp.get("height"):
                trace.page_viewports[str(s["pageId"])] = (int(vp["width"]), int(vp["height"]))


def _error(v: Any) -> str | None:
    if not v:
        return None
    if isinstance(v, dict):
        inner = v.get("error") if isinstance(v.get("error"), dict) else v
        return str(inner.get("message") or inner.get("name") or "error")[:200]
    return str(v)[:200]


def open_trace(path: Path) -> tuple[ZipImages, Trace]:
    archive = ZipImages(path)
    try:
        return archive, read_trace(archive)
    except BaseException:
        archive.close()
        raise
