"""The export's PNG encoder: lossless for any pixels, read back by Pillow as RGB; and the header
test that decides which stored screenshots keep their bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from gui_assets.publish.rgb_png import encode_rgb, is_rgb8_png, png_size


def _pil_png(mode: str, size: tuple[int, int] = (7, 5)) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size).save(buf, format="png")
    return buf.getvalue()


@pytest.mark.parametrize("hw", [(1, 1), (5, 7), (64, 33), (300, 517)])
@pytest.mark.parametrize("level", [1, 6, 12])
def test_encoded_frames_decode_to_the_same_pixels(hw, level):
    rng = np.random.default_rng(hw[0] * 1000 + hw[1])
    noise = rng.integers(0, 256, (*hw, 3), dtype=np.uint8)
    flat = np.full((*hw, 3), 200, np.uint8)
    flat[hw[0] // 2 :, :, 1] = 3  # an edge between rows: Up's difference wraps below zero
    for frame in (noise, flat):
        data = encode_rgb(frame, level)
        with Image.open(io.BytesIO(data)) as im:
            assert im.mode == "RGB" and im.size == (hw[1], hw[0])
            np.testing.assert_array_equal(np.asarray(im), frame)
        assert is_rgb8_png(data) and png_size(data) == (hw[1], hw[0])


def test_a_flat_screenshot_compresses_far_below_its_raw_size():
    frame = np.full((1080, 1280, 3), 245, np.uint8)
    frame[100:140, 50:900] = (20, 20, 20)
    assert len(encode_rgb(frame)) < frame.nbytes / 200


def test_only_8_bit_rgb_pngs_keep_their_bytes():
    assert is_rgb8_png(_pil_png("RGB"))
    for mode in ("RGBA", "P", "L", "LA", "I;16", "1"):
        assert not is_rgb8_png(_pil_png(mode)), mode
    assert not is_rgb8_png(b"\xff\xd8\xff\xe0" + b"\0" * 40)  # a JPEG
    assert not is_rgb8_png(_pil_png("RGB")[:20])  # cut short


def test_the_encoder_refuses_anything_but_rgb_bytes():
    for bad in (np.zeros((4, 4, 4), np.uint8), np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32)):
        with pytest.raises(ValueError):
            encode_rgb(bad)
