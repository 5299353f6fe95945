"""Bad data in Playwright traces: every number is checked where it is read, every line
that is no event is counted, and nothing but a named Drop leaves the adapter."""

from __future__ import annotations

import json
import math
import random
import zipfile
from pathlib import Path
from typing import Any

from gui_assets.core.drops import DropReason
from gui_assets.core.ir import NO_MASK, POINT_MASK, ActionType
from gui_assets.sources.archives import ZipImages
from gui_assets.sources.webarena import adapter as webarena
from gui_assets.sources.webarena.playwright_trace import read_trace
from gui_assets_tests.conftest import page_bytes
from gui_assets_tests.sources.webarena.test_playwright_shapes import adapt, after, before, ctx, frame, inp
from gui_assets_tests.sources.webarena.test_webarena import mirror_with, run, zip_of

DEMO = Path(webarena.__file__).resolve().parent / "data"


NESTED = "[" * 900 + "]" * 900
NESTED_VALUE = '"params": {"value": ' + NESTED + "}"


def raw_lines(*items: dict | str) -> bytes:
    """Trace lines: an event as JSON (NaN and Infinity as Python writes them), a str as is."""
    return "\n".join(i if isinstance(i, str) else json.dumps(i) for i in items).encode()


def test_bad_lines_and_values_are_counted_and_never_used(tmp_path):
    good = [
        ctx(7, (800, 600)),
        frame("p", "f1", 1, 800, 600),
        frame("p", "zero", 2, 0, 600),  # a frame declaring no size: the context's viewport stands in
        before("ok", 5, "Frame", "click", pageId="p"),
        inp("ok", (400, 300)),
        after("ok", 6),
    ]
    bad_values = [
        before("nan", math.nan, "Frame", "click", pageId="p"),
        inp("nan", (1, 1)),  # belongs to a refused call: no orphan
        frame("p", "inf", math.inf, 800, 600),
        frame("p", "neg", -5, 800, 600),
        frame("p", "far", 1e300, 800, 600),
        before("huge", 10**400, "Frame", "click", pageId="p"),
        before("strx", 7, "Frame", "click", pageId="p"),
        {"type": "input", "callId": "strx", "point": {"x": "12", "y": 3}},  # mistyped: not used
        after("strx", 8, endTime="soon"),
        before("negbox", 9, "Frame", "fill", {"value": "v"}, pageId="p"),
        inp("negbox", box=(10, 10, -3, 5)),
        after("negbox", 10),
        {
            "type": "before",
            "callId": "lst",
            "startTime": 11,
            "class": "Frame",
            "method": "hover",
            "pageId": "p",
        }
        | {"params": ["not", "a", "dict"]},
        after("lst", 12),
    ]
    not_events = [
        "[1, 2]",
        '"text"',
        '{"no": "type"}',
        '{"type": ["before"]}',
        '{"type": "mystery"}',
        {"type": "input", "callId": "ghost", "point": {"x": 1, "y": 1}},
        {"type": "before", "startTime": 3, "class": "Frame", "method": "click"},  # no callId
        {"type": "before", "callId": "anon", "startTime": 3},  # neither class + method nor apiName
        {"type": "log", "callId": "ghost", "time": 4, "message": "tolerated, as the viewer does"},
    ]
    unparsable = ["[" * 100_000 + "]" * 100_000, "{torn"]
    bad_params = [
        before("w1", 20, "Page", "mouseWheel", {"deltaX": 0, "deltaY": math.nan}, pageId="p"),
        before("w2", 21, "Page", "mouseWheel", {"deltaX": 0, "deltaY": 0}, pageId="p"),
        before("k", 22, "Page", "keyboardPress", {}, pageId="p"),
        before("g", 23, "Frame", "goto", {"url": 5}, pageId="p"),
        # nested values are never rendered into text (one close to the recursion limit would
        # parse, then raise when rendered)
        json.dumps(before("deep", 24, "Frame", "fill", pageId="p")).replace('"params": {}', NESTED_VALUE),
        before("err", 25, "Frame", "click", pageId="p"),
        json.dumps(after("err", 26)).replace('"endTime": 26', '"endTime": 26, "error": ' + NESTED),
    ]
    data = raw_lines(*good, *bad_values, *not_events, *unparsable, *bad_params)
    members = {"trace.trace": data, "resources/f1": page_bytes(800, 600, "jpeg")}
    members["resources/zero"] = page_bytes(400, 300, "jpeg")
    mirror = mirror_with(tmp_path, {"5.zip": zip_of(members)}, [5])
    (ep,), stats = run(mirror, tmp_path)

    ok, strx, negbox, lst = ep.steps
    assert ok.mask == POINT_MASK and ok.params[:2] == (0.5, 0.5)
    # the frame that declared no size, its point placed by the context's 800x600 viewport
    assert (ok.observation.width, ok.observation.height) == (400, 300)
    assert (strx.action_type, strx.mask, strx.ungrounded_reason) == (ActionType.CLICK, NO_MASK, "no_point")
    assert (negbox.action_type, negbox.mask, negbox.text) == (ActionType.TYPE, NO_MASK, "v")
    assert (lst.action_type, lst.mask) == (ActionType.HOVER, NO_MASK)
    assert stats.drops == {
        "invalid_trace_value": 10,  # zero, nan, inf, neg, far, huge, the str point, "soon", the box, the list
        "malformed_trace_event": 8,
        "malformed_json": 2,
        "malformed_step": 4,
        "failed_call": 1,
        "empty_scroll": 1,
    }


def test_a_bad_context_viewport_is_refused_not_guessed(tmp_path):
    events = [
        {
            "type": "context-options",
            "version": "ten",
            "options": {"viewport": {"width": math.nan, "height": 9}},
        },
        frame("p", "f1", 1, None, None),
        before("c", 5, "Frame", "click", pageId="p"),
        inp("c", (10, 10)),
        after("c", 6),
    ]
    path = tmp_path / "t.zip"
    path.write_bytes(zip_of({"trace.trace": raw_lines(*events)}))
    archive = ZipImages(path)
    trace = read_trace(archive)
    archive.close()
    (call,) = trace.calls
    assert call.viewport is None and trace.version == 0
    assert trace.refused == {DropReason.INVALID_TRACE_VALUE: 1}
    ep, _ = adapt(tmp_path, {"trace.trace": events, "resources/f1": page_bytes(800, 600, "jpeg")})
    assert ep.steps[0].ungrounded_reason == "no_viewport"


# --- damage to a real trace ----------------------------------------------------------------

_BAD: list[Any] = [math.nan, math.inf, -math.inf, -1, -1e9, 1e300, 10**400, "7", None, [], {}, True]


def _damage(event: Any, rng: random.Random) -> Any:
    """One value somewhere in `event` replaced by a bad one, or one key deleted."""
    if not isinstance(event, dict) or not event:
        return rng.choice(_BAD)
    key = rng.choice(sorted(event))
    if isinstance(event[key], dict) and event[key] and rng.random() < 0.7:
        return event | {key: _damage(event[key], rng)}
    if rng.random() < 0.25:
        return {k: v for k, v in event.items() if k != key}
    return event | {key: rng.choice(_BAD)}


def test_damaged_real_traces_raise_nothing_and_keep_the_mask_table(tmp_path):
    """Twenty copies of a real recorded trace, each with a twentieth of its lines damaged: the
    adapter finishes, every step's parameters are finite shares of its frame."""
    with zipfile.ZipFile(DEMO / "274.zip") as z:
        members = {n: z.read(n) for n in z.namelist()}
    events = [json.loads(line) for line in members["trace.trace"].decode().splitlines()]
    refused_total = 0
    for seed in range(20):
        rng = random.Random(seed)
        damaged = [_damage(e, rng) if rng.random() < 0.05 else e for e in events]
        trace = "\n".join(json.dumps(e) for e in damaged).encode()
        work = tmp_path / str(seed)
        mirror = mirror_with(work, {"274.zip": zip_of(members | {"trace.trace": trace})}, [274])
        eps, stats = run(mirror, work)
        for step in (s for ep in eps for s in ep.steps):
            assert all(math.isfinite(v) and 0 <= v <= 1 for v in step.params), (seed, step.desc)
            assert step.mask in ((0, 0, 0, 0), (1, 1, 0, 0), (1, 1, 1, 1))
        refused_total += sum(stats.drops.values())
    assert refused_total > 20  # the damage was seen and counted, not passed over


def test_every_line_of_an_undamaged_real_trace_is_read(tmp_path):
    path = tmp_path / "t.zip"
    with zipfile.ZipFile(DEMO / "275.zip") as z:
        path.write_bytes(zip_of({"trace.trace": z.read("trace.trace")}))
    archive = ZipImages(path)
    trace = read_trace(archive)
    archive.close()
    assert not trace.refused and trace.calls  # nothing refused in a real recording
