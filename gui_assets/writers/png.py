"""A fast lossless PNG encoder for RGB frames, and a header test for PNGs that can be kept as-is.

Every row gets PNG's "Up" filter (the byte above subtracted, modulo 256): screenshots are mostly
flat colour and repeated rows, which Up turns into runs of zeros that deflate to almost nothing.
One filter for the whole image is a numpy subtraction instead of Pillow's per-row adaptive choice,
and libdeflate (gui_assets.deflate) deflates faster than zlib, with bytes that depend on the
pixels and the level alone; both release the GIL, so frames encode on threads. Any PNG decoder
reads the result back to the same pixels.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
from imagecodecs import deflate_crc32 as _crc32  # libdeflate's: zlib's checksum, ~10x faster

from gui_assets.deflate import zlib_deflater

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_UP = 2
_RGB8 = (8, 2)  # (bit depth, colour type): 8-bit truecolour without alpha


def _chunk(kind: bytes, body: bytes | memoryview) -> bytes:
    crc = _crc32(body, _crc32(kind)) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + bytes(body) + struct.pack(">I", crc)


def deflater(level: int) -> Callable[[bytes | memoryview], bytes]:
    """The IDAT compressor: libdeflate at `level` (1-12)."""
    return zlib_deflater(level)


def encode_rgb(frame: np.ndarray, level: int = 1) -> bytes:
    """PNG bytes of an (H, W, 3) uint8 frame, lossless; `level` is libdeflate's (1-12)."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"an RGB uint8 frame is needed, not {frame.dtype} {frame.shape}")
    h, w, _ = frame.shape
    rows = np.ascontiguousarray(frame).reshape(h, w * 3)
    filtered = np.empty((h, w * 3 + 1), np.uint8)
    filtered[:, 0] = _UP
    filtered[0, 1:] = rows[0]  # the row above the first is zeros
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # wraps modulo 256, as Up defines
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    idat = deflater(level)(memoryview(filtered).cast("B"))
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


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
