"""`gui-assets view` on a tall portrait phone frame (1080 x 2400), in a real browser (Debian's
chromium): the tap's `#action-point` sits exactly on (x1, y1) of `#frame`'s box and `#eye-rect`
on the eye window, at fit and at 1:1; a direction-only SCROLL shows no arrow, and its label
names the direction its desc records. Screenshots go to test-artifacts/viewer/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gui_assets.core.config import BuildConfig
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import (
    POINT_MASK,
    ActionType,
    GuiEpisode,
    Observation,
    SourceRef,
    direction_scroll,
    step_builder,
)
from gui_assets.core.layout import shard_name
from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter
from gui_assets.sources.assembly import Steps
from gui_assets_tests.conftest import page_bytes
from gui_assets_tests.viewer import test_viewer as viewer
from gui_assets_tests.viewer.test_viewer import (
    ARTIFACTS,
    Step,
    boxes,
    open_step,
    read_steps,
    serve,
    stop,
    zoom,
)

# The real browser and a page per test, as test_viewer.py opens them.
browser = viewer.browser
page = viewer.page

PHONE = (1080, 2400)  # width, height
TOLERANCE = 0.5  # CSS px: the box is where the params say, up to sub-pixel layout rounding


@pytest.fixture(scope="module")
def phone_shard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mobile demo on a 1080 x 2400 frame: a tap, a direction-only scroll, a long press."""
    root = tmp_path_factory.mktemp("phone")
    store = ImageStore(root / "images")
    shots = [page_bytes(*PHONE, seed=s) for s in (1, 2, 3)]
    steps = Steps()
    for i, (shot, act) in enumerate(zip(shots, ("tap", "scroll", "long_press"), strict=True)):
        obs = store.put(shot, "png")
        make = step_builder(Observation(obs, "png", 0, 0, *PHONE), SourceRef("toy/phone", "e.jsonl", row=i))
        if act == "tap":
            steps.add(make(ActionType.CLICK, (0.25, 0.8), POINT_MASK))
        elif act == "scroll":
            steps.add(direction_scroll(make, "down"))
        else:
            steps.add(make(ActionType.CLICK, (0.9, 0.05), POINT_MASK, name="long_press"))
    episode = GuiEpisode("toy/e1", "toy", "open the settings", steps.items, attrs={})
    out = root / "view" / "phone_test"
    writer = LiberoShardWriter(
        out,
        "phone_test",
        "toy",
        BuildConfig(),
        platform="mobile",
        name_of=lambda i: shard_name("phone_test", i),
    )
    writer.write_episodes([episode], store)
    writer.close()
    return out / "phone_test_0000.hdf5"


@pytest.fixture(scope="module")
def phone(phone_shard: Path) -> Any:
    served = serve(phone_shard.parent)
    yield served, read_steps(phone_shard.parent)
    stop(served)


def exact_geometry(page: Any, step: Step) -> dict[str, Any]:
    b = boxes(page)
    frame = b["frame"]
    assert b["natural"] == [PHONE[0], PHONE[1]]
    if step.mask == (1, 1, 0, 0):
        point = b["point"]
        cx, cy = point["x"] + point["w"] / 2, point["y"] + point["h"] / 2
        assert abs(cx - (frame["x"] + step.params[0] * frame["w"])) <= TOLERANCE, (point, frame)
        assert abs(cy - (frame["y"] + step.params[1] * frame["h"])) <= TOLERANCE, (point, frame)
    x1, y1, x2, y2 = step.eye_rect
    eye = b["eye"]
    for got, want in (
        (eye["x"], frame["x"] + x1 * frame["w"]),
        (eye["y"], frame["y"] + y1 * frame["h"]),
        (eye["w"], (x2 - x1) * frame["w"]),
        (eye["h"], (y2 - y1) * frame["h"]),
    ):
        assert abs(got - want) <= TOLERANCE, (eye, frame, step.eye_rect)
    return b


@pytest.mark.parametrize("t", [0, 2], ids=["tap", "long press"])
def test_a_point_on_a_tall_portrait_frame_sits_exactly_on_its_params(phone, page, t):
    served, steps = phone
    step = steps[t]
    assert step.frame_hw == (PHONE[1], PHONE[0]) and step.mask == (1, 1, 0, 0)
    open_step(page, served.url, step)
    fit = exact_geometry(page, step)
    # Fit shows the whole tall frame: scaled by its height, not cropped below the fold.
    assert fit["frame"]["h"] < 900 and abs(fit["frame"]["w"] / fit["frame"]["h"] - PHONE[0] / PHONE[1]) < 0.01
    zoom(page, "1")
    assert abs(exact_geometry(page, step)["frame"]["w"] - PHONE[0]) <= TOLERANCE
    zoom(page, "fit")
    page.screenshot(path=ARTIFACTS / f"mobile-{t}.png")


def test_a_direction_only_scroll_shows_its_direction_and_no_arrow(phone, page):
    served, steps = phone
    step = steps[1]
    assert step.type == "SCROLL" and step.mask == (0, 0, 0, 0)
    open_step(page, served.url, step)
    b = exact_geometry(page, step)
    assert b["arrow"] is None and b["point"] is None
    label = page.locator("#scroll-label")
    assert label.get_attribute("data-view") == "down"
    assert "down" in label.inner_text() and "no gesture" in label.inner_text()
    page.screenshot(path=ARTIFACTS / "mobile-direction-scroll.png")
