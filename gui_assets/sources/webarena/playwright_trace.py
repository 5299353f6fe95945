"""Playwright trace archives read in place: calls, pages and screencast frames, format v3 to v10.

Members read: every `*.trace` of the archive. A library recording holds `trace.trace` (beside
`trace.network`, `trace.stacks`); the test runner's merged archive holds `test.trace` (its own
steps, class `Test`, which mirror the library calls: not read as calls) and one
`<n>-trace.trace` per browser context. Each file is one context: its own version, viewport and
pages, its call ids scoped to it (two contexts both have a `call@5`).

Event shapes:
- v3: one `{"type": "action", "metadata": {...}}` per call, the class in `metadata.type` and one
  `point`, the last input point (a drag's drop point); `internal` and `tracing*` calls are
  skipped as Playwright's trace viewer skips them;
- v4 to v9: `before` / `input` / `after` joined on `callId`, `before.pageId` naming the page;
  each `input` is one pointer placement (a dragAndDrop has two: the source, then the target);
  v7 repeats the last point in `after.point`; v8 renames apiName to `title`;
- v10: `before` has class + method and no pageId: the page is the one of the frame snapshot
  taken for the call, else the context's only page; `input` adds the element's `box`;
  screencast frames name their member by `file` instead of `sha1`.
A call is named by its protocol class + method (`Frame.click`, `Page.mouseWheel`), the same in
every SDK; an SDK's apiName (`Locator.click`, `page.click`, Java `Page.navigate`, .NET
`Locator.ClickAsync`) is read only when a line lacks class + method (`api_call`).

Geometry: points and boxes are CSS px of the viewport. A screencast frame declares the CSS size
of the viewport it shows (CDP's deviceWidth/deviceHeight: fractional under a zoom, changed by
setViewportSize, the window's size with noDefaultViewport) while its JPEG is downscaled to fit
800 px; a point is placed on a frame by that declared size, else by the viewport of the call's
snapshot, else by the context's (`Trace.css_size`), never by a default. Times are the
recorder's monotonic ms, one clock for calls and frames (v3's hrtime clock is large).

Every number is checked where it is read: a mistyped, NaN, infinite, negative or absurd time,
point, box, size or params is not used and its event counted as `invalid_trace_value` (a call
with no usable startTime is not read). A line that is no JSON is `malformed_json`; one with a
missing or unknown `type`, a required field missing, or an `input` / `after` of no call is
`malformed_trace_event`. The counts are `Trace.refused`. The archive is read with
gui_assets.sources.archives (member paths guarded, nothing extracted).
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_assets.core.drops import DropReason
from gui_assets.sources.archives import ArchiveError, ZipImages

Point = tuple[float, float]
Box = tuple[float, float, float, float]  # x, y, width, height (CSS px)
Size = tuple[float, float]  # width, height (CSS px)

MAX_TIME_MS = 1e13  # a monotonic clock in ms: three centuries of uptime; past it is no clock
MAX_CSS_PX = 1e6  # no viewport, point, box or wheel delta comes near a million CSS px
MAX_VERSION = 1000
# Every event type of trace formats v3 to v10 (trace.ts, the trace viewer's modernizer).
EVENT_TYPES = frozenset(
    {
        "context-options",
        "screencast-frame",
        "before",
        "input",
        "after",
        "action",
        "event",
        "object",
        "log",
        "console",
        "resource-snapshot",
        "frame-snapshot",
        "stdout",
        "stderr",
        "error",
        "screenshot",
        "video",
        "aria-snapshot",
    }
)
# What reading a trace can count or raise besides opening its archive (archives.OPEN_DROPS).
DROPS = frozenset(
    {
        DropReason.MISSING_TRACE,
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_TRACE_EVENT,
        DropReason.INVALID_TRACE_VALUE,
    }
)
_DEVICES = ("mouse", "keyboard", "touchscreen")  # the page's input devices: `Page.mouseWheel`
# SDK method names the protocol spells otherwise (Java's goto is `navigate`, ...).
_API_ALIASES = {
    "navigate": "goto",
    "dragto": "draganddrop",
    "presssequentially": "type",
    "clear": "fill",
    "mousedblclick": "dblclick",
}


def number(v: Any, low: float, high: float = MAX_CSS_PX) -> float | None:
    """`v` as a float when it is a JSON number in [low, high]; None for anything else (a bool,
    a string, NaN, an infinity, an integer too large for a float)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) and low <= f <= high else None


def api_call(api: str) -> tuple[str, str]:
    """(class, protocol method in lower case) of an SDK's apiName: Python `Locator.select_option`,
    Java `Page.navigate`, JavaScript `page.click`, .NET `Keyboard.PressAsync` (a device's method
    is its page's: `Mouse.wheel` is `Page.mousewheel`)."""
    owner, _, method = api.rpartition(".")
    owner = owner.rsplit(".", 1)[-1]
    verb = method.removesuffix("Async").replace("_", "").lower()
    if owner.lower() in _DEVICES:
        owner, verb = "Page", owner.lower() + verb
    return owner, _API_ALIASES.get(verb, verb)


@dataclass(slots=True)
class Call:
    """One Playwright API call, its events merged."""

    source: str  # the trace member it was read from: "trace.trace", "0-trace.trace"
    call_id: str
    cls: str  # "Frame", "Page", "ElementHandle", ...
    method: str  # the protocol method: "click", "mouseWheel", "dragAndDrop"
    name: str  # what it is counted as: "Frame.click", or its apiName when class + method lack
    params: dict[str, Any]
    start: float
    page: str | None = None
    viewport: Size | None = None  # the CSS viewport its context declared
    inputs: list[tuple[Point | None, Box | None]] = field(default_factory=list)
    end: float | None = None
    after_point: Point | None = None
    error: str | None = None
    result: Any = None

    @property
    def verb(self) -> str:
        return self.method.lower()

    @property
    def owner(self) -> str:
        return self.cls.lower()

    @property
    def points(self) -> list[Point]:
        """Every point the call placed the pointer at, in order."""
        points = [p for p, _ in self.inputs if p is not None]
        return points or ([self.after_point] if self.after_point else [])

    @property
    def point(self) -> Point | None:
        """Where the pointer was when the call acted: its last point."""
        points = self.points
        return points[-1] if points else None

    @property
    def box(self) -> Box | None:
        boxes = [b for _, b in self.inputs if b is not None]
        return boxes[-1] if boxes else None

    def drag_points(self) -> tuple[Point | None, Point | None]:
        """(source, target) of a dragAndDrop: its first and last points, the source being the last
        one on the first point's element when boxes tell (a retried press repeats its input). A
        single point is the target: v3 keeps only the last point."""
        placed = [(p, b) for p, b in self.inputs if p is not None]
        if len(placed) < 2:
            return None, self.point
        source, first_box = placed[0]
        if first_box is not None and placed[-1][1] != first_box:
            source = [p for p, b in placed[:-1] if b == first_box][-1]
        return source, placed[-1][0]


@dataclass(frozen=True, slots=True)
class Frame:
    """One screencast frame of a page."""

    page: str
    member: str  # file name inside the archive
    size: Size | None  # CSS px of the viewport it shows, as declared (the JPEG is smaller)
    time: float


@dataclass(slots=True)
class Trace:
    """Every context of one archive: calls in start order, frames per page, refused events."""

    version: int = 0  # the newest library format version among the contexts
    calls: list[Call] = field(default_factory=list)
    frames: dict[str, list[Frame]] = field(default_factory=dict)  # per page, in time order
    snapshot_viewports: dict[tuple[str, str], Size] = field(default_factory=dict)  # (source, callId)
    refused: Counter[DropReason] = field(default_factory=Counter)
    _times: dict[str, list[float]] = field(default_factory=dict)

    def frame_before(self, page: str | None, time: float) -> Frame | None:
        """The last screencast frame of `page` at or before `time`: the screen the call acted on."""
        frames = self.frames.get(page or "")
        if not frames:
            return None
        i = bisect.bisect_right(self._times[page or ""], time)
        return frames[i - 1] if i else None

    def css_size(self, frame: Frame, call: Call) -> Size | None:
        """The CSS px size of what `frame` shows, to place `call`'s points on it."""
        return frame.size or self.snapshot_viewports.get((call.source, call.call_id)) or call.viewport

    def finish(self) -> None:
        self.calls.sort(key=lambda c: (c.start, c.source, c.call_id))
        for page, frames in self.frames.items():
            frames.sort(key=lambda f: f.time)
            self._times[page] = [f.time for f in frames]


class _Values:
    """One event's numbers, each checked as it is read; `bad` once a present one is refused."""

    def __init__(self) -> None:
        self.bad = False

    def num(self, v: Any, low: float, high: float = MAX_CSS_PX) -> float | None:
        if v is None:
            return None
        f = number(v, low, high)
        self.bad = self.bad or f is None
        return f

    def time(self, v: Any) -> float | None:
        return self.num(v, 0.0, MAX_TIME_MS)

    def _all(self, v: Any, keys: tuple[str, ...], lows: tuple[float, ...]) -> tuple[float, ...] | None:
        if v is None:
            return None
        got = (
            [number(v.get(k), low) for k, low in zip(keys, lows, strict=True)]
            if isinstance(v, dict)
            else [None]
        )
        if any(x is None for x in got):
            self.bad = True
            return None
        return tuple(x for x in got if x is not None)

    def point(self, v: Any) -> Point | None:
        """A viewport point: never negative (Playwright acts inside the viewport)."""
        got = self._all(v, ("x", "y"), (0.0, 0.0))
        return (got[0], got[1]) if got else None

    def box(self, v: Any) -> Box | None:
        """An element's box: its corner may lie above or left of the viewport, its size not < 0."""
        got = self._all(v, ("x", "y", "width", "height"), (-MAX_CSS_PX, -MAX_CSS_PX, 0.0, 0.0))
        return (got[0], got[1], got[2], got[3]) if got else None

    def size(self, v: Any) -> Size | None:
        """A viewport size: at least one CSS px each way."""
        got = self._all(v, ("width", "height"), (1.0, 1.0))
        return (got[0], got[1]) if got else None

    def params(self, v: Any) -> dict[str, Any]:
        if v is not None and not isinstance(v, dict):
            self.bad = True
        return v if isinstance(v, dict) else {}


def _id(v: Any) -> str | None:
    return str(v) if isinstance(v, str | int) and not isinstance(v, bool) and str(v) else None


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _error(v: Any) -> str | None:
    """The message of a call's error (v3: a string; later `{error: {message, name}}`), None when
    the call succeeded. Only strings are kept: a nested value is never rendered."""
    if not v:
        return None
    inner = v.get("error") if isinstance(v, dict) and isinstance(v.get("error"), dict) else v
    if isinstance(inner, dict):
        inner = _text(inner.get("message")) or _text(inner.get("name"))
    return (inner if isinstance(inner, str) else "error")[:200]


class _FileReader:
    """The events of one `*.trace` member: one browser context, or the test runner's steps."""

    def __init__(self, name: str, trace: Trace) -> None:
        self.name = name
        self.trace = trace
        self.runner = name == "test.trace" or name.endswith("-test.trace")
        self.viewport: Size | None = None
        self.calls: dict[str, Call] = {}
        self.skipped: set[str] = set()  # runner steps and refused calls: their events are no orphans
        self.pages: set[str] = set()
        self.snapshot_page: dict[str, str] = {}
        self.handlers: dict[str, Callable[[dict[str, Any], _Values], bool]] = {
            "context-options": self._context,
            "screencast-frame": self._frame,
            "action": self._action,
            "before": self._before,
            "input": self._input,
            "after": self._after,
            "frame-snapshot": self._snapshot,
            "event": self._page_event,
        }

    def read(self, data: bytes) -> None:
        for line in data.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except (ValueError, RecursionError):  # a torn last line of a killed recording, say
                self.trace.refused[DropReason.MALFORMED_JSON] += 1
                continue
            kind = e.get("type") if isinstance(e, dict) else None
            if not isinstance(kind, str) or kind not in EVENT_TYPES:
                self.trace.refused[DropReason.MALFORMED_TRACE_EVENT] += 1
                continue
            values = _Values()
            handler = self.handlers.get(kind)
            complete = handler(e, values) if handler else True
            if values.bad:
                self.trace.refused[DropReason.INVALID_TRACE_VALUE] += 1
            elif not complete:
                self.trace.refused[DropReason.MALFORMED_TRACE_EVENT] += 1
        self._finish()

    def _context(self, e: dict[str, Any], values: _Values) -> bool:
        self.runner = self.runner or e.get("origin") == "testRunner"
        version = values.num(e.get("version"), 0.0, MAX_VERSION)
        if version is not None and not self.runner:
            self.trace.version = max(self.trace.version, int(version))
        options = e.get("options")
        if isinstance(options, dict):
            self.viewport = values.size(options.get("viewport"))
        return True

    def _frame(self, e: dict[str, Any], values: _Values) -> bool:
        member = _text(e.get("file")) or _text(e.get("sha1"))  # `screencast/<f>` or `resources/<sha1>`
        page, time = _text(e.get("pageId")), values.time(e.get("timestamp"))
        has_size = e.get("width") is not None or e.get("height") is not None
        size = values.size({"width": e.get("width"), "height": e.get("height")} if has_size else None)
        if member is None or page is None or time is None:
            return False
        self.pages.add(page)
        self.trace.frames.setdefault(page, []).append(Frame(page, member.rsplit("/", 1)[-1], size, time))
        return True

    def _action(self, e: dict[str, Any], values: _Values) -> bool:
        """A v3 call: everything in one event."""
        m = e.get("metadata")
        if not isinstance(m, dict):
            return False
        method = m.get("method")
        if m.get("internal") or (isinstance(method, str) and method.startswith("tracing")):
            return True
        fields = (m.get("type"), method, m.get("apiName"), m.get("params"), m.get("startTime"))
        call = self._new_call(_id(m.get("id")), *fields, m.get("pageId"), values)
        if call is None:
            return False
        call.end = values.time(m.get("endTime"))
        call.inputs.append((values.point(m.get("point")), None))
        call.error, call.result = _error(m.get("error")), m.get("result")
        return True

    def _before(self, e: dict[str, Any], values: _Values) -> bool:
        cid = _id(e.get("callId"))
        if self.runner or e.get("class") == "Test":  # the runner's step of a call the library records
            if cid:
                self.skipped.add(cid)
            return True
        api = e.get("apiName") or e.get("title")
        fields = (e.get("class"), e.get("method"), api, e.get("params"), e.get("startTime"))
        return self._new_call(cid, *fields, e.get("pageId"), values) is not None

    def _new_call(
        self, cid: str | None, cls: Any, method: Any, api: Any, params: Any, start: Any, page: Any, v: _Values
    ) -> Call | None:
        """A call from its `before` (or v3 `action`) fields; None when one it needs is unusable."""
        begin, kwargs = v.time(start), v.params(params)
        cls_name, method_name, api_name = _text(cls), _text(method), _text(api)
        if cls_name and method_name:
            owner, verb, name = cls_name, method_name, f"{cls_name}.{method_name}"
        elif api_name and "." in api_name:
            (owner, verb), name = api_call(api_name), api_name
        else:
            owner = verb = name = ""
        if cid is None or not name or begin is None:
            if cid:
                self.skipped.add(cid)
            return None
        page = _text(page)
        if page:
            self.pages.add(page)
        call = Call(self.name, cid, owner, verb, name, kwargs, begin, page, self.viewport)
        self.calls[cid] = call
        return call

    def _joined(self, e: dict[str, Any]) -> Call | bool:
        """The call an `input` / `after` belongs to; True when it belongs to a skipped one."""
        cid = _id(e.get("callId"))
        call = self.calls.get(cid) if cid else None
        return call if call is not None else bool(cid and cid in self.skipped)

    def _input(self, e: dict[str, Any], values: _Values) -> bool:
        call = self._joined(e)
        if isinstance(call, Call):
            call.inputs.append((values.point(e.get("point")), values.box(e.get("box"))))
            return True
        return call

    def _after(self, e: dict[str, Any], values: _Values) -> bool:
        call = self._joined(e)
        if isinstance(call, Call):
            call.end = values.time(e.get("endTime"))
            call.after_point = values.point(e.get("point"))
            call.error, call.result = _error(e.get("error")), e.get("result")
            return True
        return call

    def _snapshot(self, e: dict[str, Any], values: _Values) -> bool:
        """A DOM snapshot: the page of the call it was taken for, and the viewport then."""
        s = e.get("snapshot")
        if not isinstance(s, dict):
            return False
        page, cid = _text(s.get("pageId")), _id(s.get("callId"))
        if page:
            self.pages.add(page)
        if page and cid and s.get("isMainFrame", True):
            self.snapshot_page.setdefault(cid, page)
            viewport = values.size(s.get("viewport"))
            if viewport:  # the first one, taken before the call acted
                self.trace.snapshot_viewports.setdefault((self.name, cid), viewport)
        return True

    def _page_event(self, e: dict[str, Any], values: _Values) -> bool:
        """`BrowserContext.page` / `pageClosed` events name every page, framed or not."""
        params = e.get("params")
        page = _text(params.get("pageId")) if isinstance(params, dict) else None
        if page:
            self.pages.add(page)
        return True

    def _finish(self) -> None:
        only = next(iter(self.pages)) if len(self.pages) == 1 else None
        for call in self.calls.values():
            call.page = call.page or self.snapshot_page.get(call.call_id) or only
        self.trace.calls.extend(self.calls.values())


def read_trace(archive: ZipImages) -> Trace:
    """Parse every `*.trace` member of an open archive. Raises ArchiveError when there is none
    (or, with its reason, when the archive refuses one)."""
    names = sorted(n for n in {*archive.members, *archive.refused} if n.endswith(".trace"))
    if not names:
        raise ArchiveError(DropReason.MISSING_TRACE, "no *.trace member in the archive")
    trace = Trace()
    for name in names:
        _FileReader(name, trace).read(archive.read(name))
    trace.finish()
    return trace


def open_trace(path: Path) -> tuple[ZipImages, Trace]:
    archive = ZipImages(path)
    try:
        return archive, read_trace(archive)
    except BaseException:
        archive.close()
        raise
