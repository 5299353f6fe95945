"""Screenshot bytes are identified by content and fail with named reasons."""

from __future__ import annotations

import pytest

from gui_assets.images import ImageError, decode_cost, decode_rgb, inspect
from gui_assets_tests.conftest import page_bytes
from gui_assets_tests.fuzz_damage import blank_png, forged_jpeg


def test_png_and_jpeg_are_identified_by_content():
    assert inspect(page_bytes(300, 200)).ext == "png"
    h = inspect(page_bytes(300, 200, fmt="jpg"))
    assert (h.ext, h.width, h.height) == ("jpg", 300, 200)
    assert decode_rgb(page_bytes(300, 200)).shape == (200, 300, 3)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GIF89a....", "unsupported_image_format"),
        (b"", "unsupported_image_format"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 30, "undecodable_image"),
        (b"\xff\xd8\xff\xe0garbage", "undecodable_image"),
    ],
)
def test_bad_bytes_name_their_drop_reason(data, reason):
    with pytest.raises(ImageError) as e:
        inspect(data)
    assert e.value.reason.value == reason


def test_a_truncated_png_is_caught_before_it_reaches_the_store():
    data = page_bytes(400, 300)
    with pytest.raises(ImageError):
        inspect(data[: len(data) - 200])


def test_pages_beyond_pillows_default_pixel_limit_are_not_dropped(monkeypatch):
    """Mind2Web pages reach ~11.8k x 85k px; Pillow's process-wide limit must not decide."""
    from PIL import Image

    data = page_bytes(300, 200)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # far below this 300x200 page
    assert inspect(data).width == 300
    assert decode_rgb(data).shape == (200, 300, 3)
    assert Image.MAX_IMAGE_PIXELS == 1000  # restored after each read


def test_the_decode_cost_is_the_rows_an_rgb_png_inflates_and_the_whole_of_anything_else():
    tall = page_bytes(1280, 3000, seed=1)
    assert decode_cost(tall, 1280, 3000, 1080) == 4 * 1280 * 1080  # only the rows a view needs
    assert decode_cost(tall, 1280, 3000, 9000) == 4 * 1280 * 3000
    assert decode_cost(blank_png(400, 300), 400, 300, 10) == 8 * 400 * 300  # palette: Pillow, whole
    assert decode_cost(forged_jpeg(6000, 30000), 6000, 30000, 1080) == 8 * 6000 * 30000
    page = decode_rgb(blank_png(400, 300), 10)
    assert page.shape == (10, 400, 3)
