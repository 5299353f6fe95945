"""RGB frames as PNG for the writers (the encoder is gui_assets.core.png), and a header test for PNGs
that can be kept as-is."""

from __future__ import annotations

import struct

import numpy as np

from gui_assets.core.png import SIGNATURE, encode_pixels

_RGB8 = (8, 2)  # (bit depth, colour type): 8-bit truecolour without alpha


def encode_rgb(frame: np.ndarray, level: int = 1) -> bytes:
    """PNG bytes of an (H, W, 3) uint8 frame, lossless; `level` is libdeflate's (1-12)."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"an RGB uint8 frame is needed, not {frame.dtype} {frame.shape}")
    return encode_pixels(frame, level)


def is_rgb8_png(head: bytes) -> bool:
    """Whether PNG bytes (their first 29 are enough) decode to 8-bit RGB without alpha, the mode an
    image feature must have to be read back as three channels. Palette, grey, alpha and 16-bit
    PNGs decode to other modes and are re-encoded from their pixels instead."""
    if len(head) < 29 or not head.startswith(SIGNATURE) or head[12:16] != b"IHDR":
        return False
    return (head[24], head[25]) == _RGB8


def png_size(head: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR."""
    return struct.unpack(">II", head[16:24])
