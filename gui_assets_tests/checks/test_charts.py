"""The contact sheet draws what the viewer draws: the action's point, a gesture's arrow with a
scroll's view direction, and the eye-in-hand window, each where the step's numbers say."""

from __future__ import annotations

import io
import json
from pathlib import Path

import h5py
import numpy as np
from PIL import Image

from gui_assets.checks import charts

WHITE = (255, 255, 255)
TYPES = ["CLICK", "TYPE", "SELECT", "HOVER", "SCROLL", "DRAG"]


def near(pixel: tuple[int, ...], colour: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(int(a) - b) <= tolerance for a, b in zip(pixel, colour, strict=False))


def blank(w: int = 400, h: int = 300) -> Image.Image:
    return Image.new("RGB", (w, h), WHITE)


def count(im: Image.Image, colour: tuple[int, int, int]) -> int:
    px = np.asarray(im).astype(int)
    return int((np.abs(px - colour).max(axis=2) <= 40).sum())


def test_a_grounded_point_gets_a_red_cross_on_it_and_the_eye_rect_a_green_box():
    im = blank()
    charts.draw_step_overlay(im, "CLICK", [0.25, 0.5, 0, 0], [1, 1, 0, 0], [0.5, 0.1, 0.75, 0.4])
    assert near(im.getpixel((100, 150)), charts.POINT_RED)
    assert near(im.getpixel((106, 150)), charts.POINT_RED)  # an arm of the cross
    assert near(im.getpixel((200, 60)), charts.EYE_GREEN)  # the box's left edge (x = 0.5 * 400)
    assert near(im.getpixel((250, 120)), charts.EYE_GREEN)  # its bottom edge (y = 0.4 * 300)
    assert im.getpixel((250, 60)) == WHITE  # the window's inside stays the frame's


def test_an_ungrounded_step_gets_no_point():
    im = blank()
    charts.draw_step_overlay(im, "CLICK", [0, 0, 0, 0], [0, 0, 0, 0], [0.4, 0.4, 0.6, 0.6])
    assert count(im, charts.POINT_RED) == 0 and count(im, charts.GESTURE_ORANGE) == 0
    assert count(im, charts.EYE_GREEN) > 0


def test_a_scroll_gets_an_arrow_along_the_gesture_and_the_inverse_as_its_label():
    im = blank()
    gesture_up = [0.5, 0.8, 0.5, 0.3]  # pointer travels up: the view scrolls down
    charts.draw_step_overlay(im, "SCROLL", gesture_up, [1, 1, 1, 1], [0.0, 0.0, 0.1, 0.1])
    assert near(im.getpixel((200, 180)), charts.GESTURE_ORANGE)  # the shaft, halfway
    assert near(im.getpixel((200, 95)), charts.GESTURE_ORANGE)  # the head, near (x2, y2)
    assert count(im, charts.POINT_RED) == 0
    assert charts.gesture_label("SCROLL", gesture_up) == "view down"
    assert charts.gesture_label("SCROLL", [0.5, 0.3, 0.5, 0.8]) == "view up"
    assert charts.gesture_label("SCROLL", [0.8, 0.5, 0.2, 0.5]) == "view right"
    assert charts.gesture_label("DRAG", gesture_up) is None


def test_a_drag_gets_an_arrow_from_start_to_end():
    im = blank()
    charts.draw_step_overlay(im, "DRAG", [0.1, 0.1, 0.6, 0.1], [1, 1, 1, 1], [0.8, 0.8, 0.9, 0.9])
    assert near(im.getpixel((120, 30)), charts.GESTURE_ORANGE)
    assert im.getpixel((120, 60)) == WHITE


def write_shard(path: Path, w: int = 600, h: int = 400) -> None:
    """Two steps in the output format's layout: a CLICK at the centre, then a SCROLL."""
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["gui_action_types"] = json.dumps(TYPES)
        d = data.create_group("demo_0")
        d.attrs["num_samples"] = 2
        d["obs/agentview_rgb"] = np.full((2, h, w, 3), 255, np.uint8)
        d["action_type"] = np.array([0, 4], np.int64)
        d["action_params"] = np.array([[0.5, 0.5, 0, 0], [0.5, 0.8, 0.5, 0.3]], np.float32)
        d["action_mask"] = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.float32)
        d["eye_rect"] = np.array([[0.1, 0.1, 0.3, 0.3], [0.4, 0.4, 0.6, 0.6]], np.float32)
        d["action_desc"] = np.array([b"click(0.50, 0.50)", b"scroll(down)"], dtype=h5py.string_dtype())


def test_the_contact_sheet_draws_each_sampled_step_on_its_tile(tmp_path):
    shard = tmp_path / "d_0000.hdf5"
    write_shard(shard)
    sheet = charts.contact_sheet_image([shard], thumb_w=300)
    assert sheet is not None
    gap = charts.SHEET_GAP
    assert sheet.size == (charts.SHEET_COLS * (300 + gap) + gap, 200 + charts.LABEL_H + 2 * gap)
    assert near(sheet.getpixel((gap + 150, gap + 100)), charts.POINT_RED)  # tile 0: the click
    second = gap + 300 + gap
    assert near(sheet.getpixel((second + 150, gap + 130)), charts.GESTURE_ORANGE)  # tile 1: the scroll
    assert not near(sheet.getpixel((second + 150, gap + 100)), charts.POINT_RED)
    jpeg = charts.contact_sheet_jpeg([shard], thumb_w=300)
    assert jpeg is not None and Image.open(io.BytesIO(jpeg)).size == sheet.size


def test_no_frames_no_sheet(tmp_path):
    empty = tmp_path / "e_0000.hdf5"
    with h5py.File(empty, "w") as f:
        f.create_group("data")
    assert charts.contact_sheet_jpeg([empty]) is None
