"""Screenshot bytes: sniffing the format by content, reading the size from the header, decoding."""

from __future__ import annotations

import contextlib
import io
import struct
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from PIL import Image, UnidentifiedImageError

from gui_assets.ir import DropReason

try:  # libspng through imagecodecs: about 2x Pillow's PNG decode, and it releases the GIL
    from imagecodecs import spng_decode as _spng_decode
except ImportError:  # pragma: no cover - the Pillow path below decodes the same pixels
    _spng_decode = None

# Formats a screenshot may arrive in, by magic bytes; the writer decodes only these.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpg"),
    (b"RIFF", "webp"),
)

# A decompression bomb guard: no GUI screenshot comes close (Mind2Web's largest full page is
# about 11.8k x 85k px). Pillow's own limit (an error above ~179 Mpx) would reject real pages.
MAX_PIXELS = 1_500_000_000
_DECODE_ERRORS = (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError)


@contextlib.contextmanager
def _our_pixel_limit() -> Iterator[None]:
    """Pillow checks a process-wide limit; apply ours for the duration of one read."""
    saved = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = MAX_PIXELS // 2  # Pillow raises at twice this value
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            yield
    finally:
        Image.MAX_IMAGE_PIXELS = saved


@dataclass(frozen=True, slots=True)
class ImageHeader:
    ext: str
    width: int
    height: int


class ImageError(Exception):
    """Bytes that are not a usable screenshot; `reason` is the drop reason to count."""

    def __init__(self, reason: DropReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason


def sniff_ext(data: bytes) -> str | None:
    for magic, ext in _MAGIC:
        if data.startswith(magic) and (ext != "webp" or data[8:12] == b"WEBP"):
            return ext
    return None


def inspect(data: bytes) -> ImageHeader:
    """Identify by content and read the size without decoding pixels.

    PNGs are also CRC-verified (cheap: no inflate), which catches most truncation and bit
    rot before the image enters the store. Raises ImageError naming the drop reason.
    """
    ext = sniff_ext(data)
    if ext is None:
        raise ImageError(DropReason.UNSUPPORTED_IMAGE_FORMAT, f"unknown magic {data[:8]!r}")
    try:
        with _our_pixel_limit(), Image.open(io.BytesIO(data)) as im:
            width, height = im.size
            if ext == "png":
                im.verify()
    except _DECODE_ERRORS as e:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"{type(e).__name__}: {e}") from e
    if width <= 0 or height <= 0 or width * height > MAX_PIXELS:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"implausible size {width}x{height}")
    return ImageHeader(ext=ext, width=width, height=height)


def _png_fast_path(data: bytes) -> bool:
    """An 8-bit, non-interlaced RGB or RGBA PNG within the pixel limit: what screenshots are.

    Anything else (palette, grey, 16-bit, Adam7) takes Pillow's path, whose conversions define
    the pixels; for these two layouts both decoders give the same bytes (tested).
    """
    if _spng_decode is None or len(data) < 33 or not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    if data[12:16] != b"IHDR":
        return False
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data[16:29])
    return depth == 8 and colour in (2, 6) and interlace == 0 and 0 < width * height <= MAX_PIXELS


def decode_rgb(data: bytes) -> np.ndarray:
    """Decode to an (H, W, 3) uint8 array. Raises ImageError on bytes that will not decode."""
    if _png_fast_path(data):
        try:
            arr = _spng_decode(data)
        except Exception:
            arr = None
        if arr is not None and arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] in (3, 4):
            return arr if arr.shape[2] == 3 else np.ascontiguousarray(arr[..., :3])
    try:
        with _our_pixel_limit(), Image.open(io.BytesIO(data)) as im:
            im.load()
            rgb = im if im.mode == "RGB" else im.convert("RGB")
            return np.asarray(rgb, dtype=np.uint8)
    except _DECODE_ERRORS as e:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"{type(e).__name__}: {e}") from e
