"""Screenshot bytes: sniffing the format by content, reading the size from the header, decoding."""

from __future__ import annotations

import contextlib
import io
import struct
import threading
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from imagecodecs import deflate_crc32 as _crc32  # zlib's CRC-32 at ~10x its speed: every PNG chunk is checked
from PIL import Image, UnidentifiedImageError

from gui_assets.core.drops import Drop, DropReason

try:  # libspng through imagecodecs: about 2x Pillow's PNG decode, and it releases the GIL
    from imagecodecs import spng_decode as _spng_decode
except ImportError:  # pragma: no cover - the Pillow path below decodes the same pixels
    _spng_decode = None

try:  # Wuffs (the `fast` extra): half libspng's time, whose zlib inflates 5x slower; GIL released
    from pywuffs import ImageDecoderType, PixelFormat
    from pywuffs.aux import ImageDecoder, ImageDecoderConfig
except ImportError:  # a machine without a C++ compiler to build it: libspng decodes the same pixels
    ImageDecoder = None

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


DROPS = frozenset(
    {DropReason.UNDECODABLE_IMAGE, DropReason.UNSUPPORTED_IMAGE_FORMAT, DropReason.IMAGE_TOO_LARGE}
)


@dataclass(frozen=True, slots=True)
class ImageHeader:
    ext: str
    width: int
    height: int


class ImageError(Drop):
    """Bytes that are not a usable screenshot; `reason` is the drop reason to count."""


def sniff_ext(data: bytes) -> str | None:
    for magic, ext in _MAGIC:
        if data.startswith(magic) and (ext != "webp" or data[8:12] == b"WEBP"):
            return ext
    return None


def inspect(data: bytes, max_size: tuple[int, int] | None = None) -> ImageHeader:
    """Identify by content and read the size without decoding pixels.

    PNGs are walked chunk by chunk with every CRC checked (cheap: no inflate), which catches
    most truncation and bit rot before the image enters the store, and must carry enough
    compressed data for the size their header claims (deflate never packs more than about
    1032:1). `max_size` is the largest (width, height) the source can really produce. Raises
    ImageError naming the drop reason.
    """
    ext = sniff_ext(data)
    if ext is None:
        raise ImageError(DropReason.UNSUPPORTED_IMAGE_FORMAT, f"unknown magic {data[:8]!r}")
    layout = None
    if ext == "png":  # our own walk: Pillow's open + verify cost 4x as much for the same checks
        layout = _walk_png(data, verify=True)
        width, height = layout.width, layout.height
    else:
        try:
            with _our_pixel_limit(), Image.open(io.BytesIO(data)) as im:
                width, height = im.size
        except _DECODE_ERRORS as e:
            raise ImageError(DropReason.UNDECODABLE_IMAGE, f"{type(e).__name__}: {e}") from e
    if width <= 0 or height <= 0 or width * height > MAX_PIXELS:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"implausible size {width}x{height}")
    if max_size is not None and (width > max_size[0] or height > max_size[1]):
        raise ImageError(
            DropReason.IMAGE_TOO_LARGE,
            f"{width}x{height} is beyond this source's {max_size[0]}x{max_size[1]}",
        )
    if layout is not None:
        _require_pixel_data(layout)  # the data cannot hold the pixels the header claims
    return ImageHeader(ext=ext, width=width, height=height)


@dataclass(frozen=True, slots=True)
class PngLayout:
    """A PNG's header fields and where its compressed pixel data lies, read without inflating."""

    width: int
    height: int
    depth: int
    colour: int
    interlace: int
    idat: tuple[tuple[int, int], ...]  # (offset, length) of each IDAT chunk's data

    @property
    def stride(self) -> int:
        """Bytes per row of the inflated stream: a filter byte and the packed samples."""
        return 1 + (self.width * _CHANNELS.get(self.colour, 4) * self.depth + 7) // 8

    @property
    def simple(self) -> bool:
        """8-bit, non-interlaced RGB or RGBA: what screenshots are, and what the fast paths take."""
        return self.depth == 8 and self.colour in (2, 6) and self.interlace == 0


_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_DEFLATE_MAX_RATIO = 1032  # deflate cannot expand more than this; anything claiming more is short


# The PNG specification's bit depths for each colour type; decoders refuse anything else.
_PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}


def png_layout(data: bytes) -> PngLayout:
    """Walk a PNG's chunks (headers only). Raises ImageError when the chunk structure is broken
    or the compressed data is far too small for the rows the header claims: a forged or
    truncated file is refused before any pixel buffer is allocated."""
    layout = _walk_png(data, verify=False)
    _require_pixel_data(layout)
    return layout


def _walk_png(data: bytes, verify: bool) -> PngLayout:
    """The chunk walk. With `verify`, also what a decoder would refuse, in the order it reads:
    IHDR first and well-formed, every chunk whole with a matching CRC and a type of four ASCII
    letters (the specification's rule; Pillow also lets digits through), IDAT before an IEND."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise ImageError(DropReason.UNDECODABLE_IMAGE, "no IHDR")
    width, height, depth, colour, method, filtering, interlace = struct.unpack(">IIBBBBB", data[16:29])
    if verify:
        if data[8:12] != b"\0\0\0\r" or depth not in _PNG_DEPTHS.get(colour, ()):
            raise ImageError(DropReason.UNDECODABLE_IMAGE, f"IHDR: bit depth {depth}, colour type {colour}")
        if method or filtering or interlace > 1:
            raise ImageError(DropReason.UNDECODABLE_IMAGE, "IHDR: unknown compression, filter or interlace")
    view = memoryview(data)
    idat: list[tuple[int, int]] = []
    pos = 8
    ended = False
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IEND":
            ended = True
            break
        if pos + 12 + length > len(data):
            break  # a truncated last chunk: what is there is counted below
        if verify:
            if not kind.isalpha():  # bytes.isalpha: ASCII letters only
                raise ImageError(DropReason.UNDECODABLE_IMAGE, f"broken chunk type {kind!r} at byte {pos}")
            (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
            if _crc32(view[pos + 4 : pos + 8 + length]) != crc:
                raise ImageError(
                    DropReason.UNDECODABLE_IMAGE, f"CRC mismatch in {kind.decode()} at byte {pos}"
                )
        if kind == b"IDAT":
            idat.append((pos + 8, length))
        pos += 12 + length
    if verify and not ended:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"truncated: no IEND in {len(data)} bytes")
    if verify and not idat:  # a tiny image passes the data-size check below without any
        raise ImageError(DropReason.UNDECODABLE_IMAGE, "no IDAT before IEND")
    return PngLayout(width, height, depth, colour, interlace, tuple(idat))


def _require_pixel_data(layout: PngLayout) -> None:
    compressed = sum(n for _, n in layout.idat)
    if layout.stride * layout.height > compressed * _DEFLATE_MAX_RATIO + 1024:
        raise ImageError(
            DropReason.UNDECODABLE_IMAGE,
            f"{compressed} bytes of pixel data cannot hold a {layout.width}x{layout.height} image: "
            "truncated or forged",
        )


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the header alone."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    try:
        with _our_pixel_limit(), Image.open(io.BytesIO(data)) as im:
            return im.size
    except _DECODE_ERRORS as e:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"{type(e).__name__}: {e}") from e


def _top_rows_png(data: bytes, layout: PngLayout, rows: int) -> bytes:
    """A PNG of the first `rows` rows of `data`: only their part of the stream is inflated (and
    stored again uncompressed, so decoding it costs a copy), never the rows below."""
    need = rows * layout.stride
    inflater = zlib.decompressobj()
    view = memoryview(data)
    out = bytearray()
    try:
        for offset, length in layout.idat:
            out += inflater.decompress(view[offset : offset + length], need - len(out))
            if len(out) >= need:
                break
    except zlib.error as e:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"zlib: {e}") from e
    if len(out) < need:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"pixel data ends before row {rows}")
    ihdr = struct.pack(">IIBBBBB", layout.width, rows, layout.depth, layout.colour, 0, 0, 0)

    # The rows are megabytes: views and one join copy them once, where slicing and `+` copied
    # them six times (a fifth of this function's time on a 1280-wide page).
    def chunk(kind: bytes, body: bytes) -> list[bytes]:
        crc = zlib.crc32(body, zlib.crc32(kind))
        return [struct.pack(">I", len(body)), kind, body, struct.pack(">I", crc)]

    idat = zlib.compress(memoryview(out)[:need], 0)
    return b"".join([data[:8], *chunk(b"IHDR", ihdr), *chunk(b"IDAT", idat), *chunk(b"IEND", b"")])


# Wuffs inflates the whole image into a work buffer before unfiltering it into the pixels, so it
# holds about twice what libspng's row-by-row decode does (peaks of 7.2 bytes a pixel for RGB,
# 9.3 for RGBA before the alpha is cut off). Screenshots are far below this limit; a full-page
# capture above it (Mind2Web's reach 85k px tall) streams through libspng instead.
WUFFS_MAX_PIXELS = 16_000_000
_WUFFS_BYTES_PER_PIXEL = {2: 8, 6: 13}

_wuffs_decoders = threading.local()  # a Wuffs decoder is not thread-safe; one per thread and format


def _wuffs_takes(data: bytes, layout: PngLayout, rows: int) -> bool:
    """RGB without tRNS and RGBA only: given a tRNS colour or asked for RGB from RGBA, Wuffs
    composites the alpha onto black, where our pixels are the stored colours with alpha dropped."""
    if ImageDecoder is None or not layout.idat or layout.width * min(rows, layout.height) > WUFFS_MAX_PIXELS:
        return False
    return layout.colour == 6 or b"tRNS" not in data[: layout.idat[0][0]]  # tRNS comes before IDAT


def _wuffs_decode(data: bytes, colour: int) -> np.ndarray | None:
    """(H, W, 3) pixels, (H, W, 4) for RGBA as stored, or None where Wuffs reports an error (the
    caller's slower decoders then name it, so a damaged image is refused with the same message
    either way)."""
    decoders = _wuffs_decoders.__dict__
    decoder = decoders.get(colour)
    if decoder is None:
        config = ImageDecoderConfig()
        config.enabled_decoders = [ImageDecoderType.PNG]
        config.pixel_format = PixelFormat.RGBA_NONPREMUL if colour == 6 else PixelFormat.RGB
        decoder = decoders[colour] = ImageDecoder(config)
    try:
        result = decoder.decode(data)
    except Exception:  # the binding's own failures (e.g. out of memory) are refusals too
        return None
    return None if result.error_message else result.pixbuf


def decode_cost(data: bytes, width: int, height: int, rows: int) -> int:
    """Bytes decode_rgb(data, rows) holds at its peak, known from the header alone. An 8-bit
    RGB(A) PNG is inflated down to `rows` only: by Wuffs, with its work buffer, or for a page
    above WUFFS_MAX_PIXELS by libspng into one RGB(A) buffer. Anything else (a JPEG, a palette or
    16-bit PNG) Pillow decodes whole: the source mode's buffer, Pillow's 4-byte RGB and the
    array copied out of it, about 8 bytes a pixel; a budget must be asked for all of it."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and _spng_decode is not None:
        try:
            layout = png_layout(data)
        except ImageError:
            return 8 * width * height
        if layout.simple:
            decoded = width * min(rows, height)
            if _wuffs_takes(data, layout, rows):
                return _WUFFS_BYTES_PER_PIXEL[layout.colour] * decoded
            return 4 * decoded
    return 8 * width * height


def decode_rgb(data: bytes, rows: int | None = None) -> np.ndarray:
    """Decode to an (H, W, 3) uint8 array, or only its top `rows` rows when fewer are needed (a
    tall page viewed near its top). Raises ImageError on bytes that will not decode."""
    layout = png_layout(data) if data.startswith(b"\x89PNG\r\n\x1a\n") else None
    if layout is not None and layout.simple and _spng_decode is not None:
        wanted = layout.height if rows is None else min(rows, layout.height)
        wuffs = _wuffs_takes(data, layout, wanted)
        if wanted < layout.height:
            data = _top_rows_png(data, layout, wanted)
        arr = _wuffs_decode(data, layout.colour) if wuffs else None
        if arr is None:
            try:
                arr = _spng_decode(data)
            except Exception:
                arr = None
        if arr is not None and arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] in (3, 4):
            return arr if arr.shape[2] == 3 else np.ascontiguousarray(arr[..., :3])  # alpha dropped
    try:
        with _our_pixel_limit(), Image.open(io.BytesIO(data)) as im:
            im.load()
            rgb = im if im.mode == "RGB" else im.convert("RGB")
            arr = np.asarray(rgb, dtype=np.uint8)
            return arr if rows is None else arr[:rows]
    except _DECODE_ERRORS as e:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"{type(e).__name__}: {e}") from e


def window_pixels(page: np.ndarray, left: int, top: int, width: int, height: int) -> np.ndarray:
    """The (height, width) window of a decoded page at (left, top). Where the window reaches past
    the page's bottom or right edge (a Mind2Web page shorter than the browser's viewport), the
    rest is the page's background, the most common colour of its last row: never a shorter frame.
    A window that starts outside the page is our bug, not the data's: ImageError names it."""
    page_h, page_w = page.shape[:2]
    if left < 0 or top < 0 or left >= page_w or top >= page_h:
        raise ImageError(DropReason.UNDECODABLE_IMAGE, f"window {width}x{height}+{left}+{top} outside image")
    window = page[top : top + height, left : left + width]
    if window.shape[:2] == (height, width):
        return window
    colours, counts = np.unique(page[-1].reshape(-1, 3), axis=0, return_counts=True)
    out = np.empty((height, width, 3), np.uint8)
    out[:] = colours[int(np.argmax(counts))]
    out[: window.shape[0], : window.shape[1]] = window
    return out
