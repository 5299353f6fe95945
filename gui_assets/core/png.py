"""A fast lossless PNG encoder, for the writers' frames and the viewer's (which never imports a writer).

Every row gets PNG's "Up" filter (the byte above subtracted, modulo 256): screenshots are mostly
flat colour and repeated rows, which Up turns into runs of zeros that deflate to almost nothing.
One filter for the whole image is a numpy subtraction instead of Pillow's per-row adaptive choice,
and libdeflate (gui_assets.core.deflate) deflates faster than zlib, with bytes that depend on the
pixels and the level alone; both release the GIL, so frames encode on threads. Any PNG decoder
reads the result back to the same pixels.
"""

from __future__ import annotations

import struct

import numpy as np
from imagecodecs import deflate_crc32 as _crc32  # libdeflate's: zlib's checksum, ~10x faster

from gui_assets.core.deflate import zlib_deflater

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_UP = 2
COLOUR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)


def _chunk(kind: bytes, body: bytes | memoryview) -> bytes:
    crc = _crc32(body, _crc32(kind)) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + bytes(body) + struct.pack(">I", crc)


def encode_pixels(pixels: np.ndarray, level: int = 1) -> bytes:
    """PNG bytes of an (H, W, C) uint8 array, C one of COLOUR_TYPES, lossless; `level` is
    libdeflate's (1-12)."""
    h, w, channels = pixels.shape
    rows = np.ascontiguousarray(pixels).reshape(h, w * channels)
    filtered = np.empty((h, w * channels + 1), np.uint8)
    filtered[:, 0] = _UP
    filtered[0, 1:] = rows[0]  # the row above the first is zeros
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # wraps modulo 256, as Up defines
    header = struct.pack(">IIBBBBB", w, h, 8, COLOUR_TYPES[channels], 0, 0, 0)
    idat = zlib_deflater(level)(memoryview(filtered).cast("B"))
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
