"""Deflate for everything the project writes: libdeflate through imagecodecs.

A call compresses its whole input in one go with a compressor of its own, so the output is a
function of the input bytes and the level alone (for one libdeflate: the shard units' keys
record the version of imagecodecs, which bundles it, in `unit_reuse.library_versions`): no
thread, address or earlier call can change it. The GIL is released while it runs, so frames
deflate on threads. Output is a standard zlib stream (RFC 1950), what HDF5's gzip filter and
PNG's IDAT hold, so plain zlib reads it.
"""

from __future__ import annotations

from collections.abc import Callable

from imagecodecs import DEFLATE, deflate_encode

LEVELS = range(1, 13)  # libdeflate's: 1-9 as zlib's, 10-12 slower still for a few percent


class DeflateUnavailable(RuntimeError):
    """imagecodecs was built without libdeflate (its published wheels include it)."""


def zlib_deflater(level: int) -> Callable[[bytes | memoryview], bytes]:
    """A function from bytes to their zlib stream at libdeflate `level` (1-12)."""
    if level not in LEVELS:
        raise ValueError(f"libdeflate level must be 1..12, not {level}")
    if not DEFLATE.available:
        raise DeflateUnavailable("imagecodecs has no libdeflate: install its published wheel")

    def deflate(data: bytes | memoryview) -> bytes:
        return deflate_encode(data, level=level)

    return deflate
