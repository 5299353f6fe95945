"""The screen fingerprint: integer arithmetic on the pixels, so the same pixels give the same
bits anywhere; a typed character or a moved pointer changes a few bits, a scroll many."""

from __future__ import annotations

import numpy as np
import pytest

from gui_assets.core.fingerprint import (
    FINGERPRINT_BYTES,
    MATCH_THRESHOLD,
    WORDS,
    as_words,
    block_brightness,
    hamming,
    screen_fingerprint,
)
from gui_assets.core.images import decode_rgb
from gui_assets_tests.conftest import page_bytes


def _distance(a: np.ndarray, b: np.ndarray) -> int:
    return int(hamming(as_words(screen_fingerprint(a)), as_words(screen_fingerprint(b)))[0])


def test_block_sums_are_exact_integers_of_the_sampled_pixels():
    frame = np.zeros((170, 340, 3), np.uint8)
    frame[:10, :20] = (10, 20, 30)  # block (0, 0) is rows 0..9, columns 0..19
    sums, pixels = block_brightness(frame)
    assert sums.shape == (17, 17) and pixels == len(range(0, 10, 4)) * len(range(0, 20, 2))
    assert sums[0, 0] == pixels * (10 + 2 * 20 + 30) and sums[1:].sum() == 0 and sums[0, 1:].sum() == 0


def test_the_same_pixels_give_the_same_bytes_whatever_their_memory_layout():
    page = decode_rgb(page_bytes(900, 700, seed=4))
    window = page[50:650, 30:830]  # a cropped view, as the writer holds a frame
    fp = screen_fingerprint(window)
    assert len(fp) == FINGERPRINT_BYTES and fp == screen_fingerprint(np.ascontiguousarray(window))
    assert as_words(fp + fp).shape == (2, WORDS)


def test_a_typed_character_is_a_near_duplicate_and_a_scroll_is_not():
    page = decode_rgb(page_bytes(800, 1400, seed=9))
    view = page[:600]
    typed = view.copy()
    typed[300:316, 400:410] = 20  # a glyph-sized dark mark
    assert _distance(view, typed) <= MATCH_THRESHOLD
    assert _distance(view, page[150:750]) > MATCH_THRESHOLD  # a quarter of a viewport further down
    other = decode_rgb(page_bytes(800, 600, seed=10))
    assert _distance(view, other) > MATCH_THRESHOLD


@pytest.mark.parametrize("shape", [(1, 1, 3), (5, 40, 3), (16, 16, 3)])
def test_a_frame_smaller_than_the_grid_is_fingerprinted_not_refused(shape):
    assert len(screen_fingerprint(np.full(shape, 128, np.uint8))) == FINGERPRINT_BYTES


def test_what_is_not_a_frame_is_refused_by_name():
    with pytest.raises(ValueError, match="uint8 frame"):
        screen_fingerprint(np.zeros((20, 20), np.uint8))
