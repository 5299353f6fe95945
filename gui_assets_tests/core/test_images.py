"""Screenshot bytes are identified by content and fail with named reasons."""

from __future__ import annotations

import pytest

from gui_assets.core import images
from gui_assets.core.images import ImageError, decode_cost, decode_rgb, inspect
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


def test_the_decode_cost_is_the_rows_an_rgb_png_inflates_and_the_whole_of_anything_else(monkeypatch):
    tall = page_bytes(1280, 3000, seed=1)
    per_pixel = 8 if images.ImageDecoder is not None else 4  # Wuffs' work buffer, or libspng's rows
    assert decode_cost(tall, 1280, 3000, 1080) == per_pixel * 1280 * 1080  # only the rows a view needs
    assert decode_cost(tall, 1280, 3000, 9000) == per_pixel * 1280 * 3000
    monkeypatch.setattr(images, "WUFFS_MAX_PIXELS", 1280 * 2000)  # a page too big for Wuffs' buffers
    assert decode_cost(tall, 1280, 3000, 9000) == 4 * 1280 * 3000
    assert decode_cost(blank_png(400, 300), 400, 300, 10) == 8 * 400 * 300  # palette: Pillow, whole
    assert decode_cost(forged_jpeg(6000, 30000), 6000, 30000, 1080) == 8 * 6000 * 30000
    page = decode_rgb(blank_png(400, 300), 10)
    assert page.shape == (10, 400, 3)


def _pillow_accepts(data: bytes) -> bool:
    """The check `inspect` replaced for PNGs: Pillow's open and verify (every chunk's CRC)."""
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
    except Exception:
        return False
    return True


def _damaged(data: bytes, rng) -> bytes:
    """One byte changed, bytes cut off the end, or bytes pushed in: what bit rot and short reads do."""
    cut = int(rng.integers(8, len(data)))
    kind = int(rng.integers(3))
    if kind == 0:
        return data[:cut] + bytes([data[cut] ^ int(rng.integers(1, 256))]) + data[cut + 1 :]
    if kind == 1:
        return data[:cut]
    return data[:cut] + bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype="uint8")) + data[cut:]


@pytest.mark.parametrize("name", ["real agentnet screenshot", "rendered page"])
def test_our_png_walk_refuses_exactly_what_pillows_verify_refuses(name):
    """Our chunk walk (ISA-L CRCs) replaced Pillow's open + verify at 4x the speed: over hundreds
    of damaged copies of a real PNG the two verdicts must agree, case by case."""
    from pathlib import Path

    import numpy as np

    if name == "rendered page":
        data = page_bytes(640, 480, seed=3)
    else:
        data = (Path(__file__).parents[1] / "samples/agentnet/cot_example/10.png").read_bytes()
    rng = np.random.default_rng(20261201)
    refused = 0
    for _ in range(400):
        bad = _damaged(data, rng)
        try:
            inspect(bad)
            ours = True
        except ImageError:
            ours = False
        assert ours == _pillow_accepts(bad), f"verdicts differ on a copy of {len(bad)} bytes"
        refused += not ours
    assert refused > 200  # the damage is real: most copies must be refused


def _tiny_png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (10, 10), (200, 10, 10)).save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("edit", "detail"),
    [
        (lambda d: d[:37] + bytes([d[37] ^ 1]) + d[38:], "CRC mismatch in"),  # the chunk after IHDR
        (lambda d: d[:-12], "no IEND"),
        (lambda d: d[:24] + b"\x03" + d[25:], "IHDR"),  # bit depth 3 exists for no colour type
        (lambda d: _tiny_png()[:33] + d[-12:], "no IDAT"),  # IHDR, IEND: 10x10 passes the size check
    ],
)
def test_png_damage_is_named(edit, detail):
    with pytest.raises(ImageError) as e:
        inspect(edit(page_bytes(300, 200)))
    assert e.value.reason.value == "undecodable_image"
    assert detail in str(e.value)


def _png(pixels, **save) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG", **save)
    return buf.getvalue()


def _pillow_rgb(data: bytes):
    import io

    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


def _kinds_of_png() -> dict[str, bytes]:
    """Every PNG kind decode_rgb routes differently, each with pixels a wrong decode would change."""
    from pathlib import Path

    import numpy as np

    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, (61, 83, 3), dtype=np.uint8)
    rgba = np.dstack([rgb, rng.integers(0, 256, (61, 83, 1), dtype=np.uint8)])  # every alpha value
    keyed = rgb.copy()
    keyed[:5] = (10, 20, 30)
    return {
        "real agentnet screenshot": (
            Path(__file__).parents[1] / "samples/agentnet/cot_example/10.png"
        ).read_bytes(),
        "rendered page": page_bytes(640, 480, seed=3),
        "rgb": _png(rgb),
        "rgba, alpha dropped and never composited": _png(rgba),
        "rgb with a tRNS colour": _png(keyed, transparency=(10, 20, 30)),
        "rgb, optimised filters": _png(rgb, optimize=True),
        "grey, 16-bit": _png(rgb[..., 0].astype(np.uint16) * 257),
        "grey": _png(rgb[..., 0]),
        "palette": blank_png(40, 30),
    }


@pytest.mark.parametrize("kind", list(_kinds_of_png()))
def test_every_decoder_path_gives_pillows_pixels(kind):
    """Wuffs, libspng and Pillow must agree to the byte: which decoder ran never shows in a shard."""
    import numpy as np

    data = _kinds_of_png()[kind]
    want = _pillow_rgb(data)
    np.testing.assert_array_equal(decode_rgb(data), want)
    np.testing.assert_array_equal(decode_rgb(data, 7), want[:7])  # a view's top rows only


def test_screenshots_decode_through_wuffs_and_the_rest_through_libspng(monkeypatch):
    assert images.ImageDecoder is not None, "the `fast` extra (pywuffs) is part of the dev extra"
    calls: list[str] = []
    real_wuffs, real_spng = images._wuffs_decode, images._spng_decode
    monkeypatch.setattr(images, "_wuffs_decode", lambda *a: calls.append("wuffs") or real_wuffs(*a))
    monkeypatch.setattr(images, "_spng_decode", lambda *a: calls.append("spng") or real_spng(*a))
    kinds = _kinds_of_png()
    for kind in ("real agentnet screenshot", "rendered page", "rgba, alpha dropped and never composited"):
        calls.clear()
        decode_rgb(kinds[kind])
        assert calls == ["wuffs"], kind
    calls.clear()
    decode_rgb(kinds["rgb with a tRNS colour"])  # Wuffs would blacken the keyed colour
    assert calls == ["spng"]
    calls.clear()
    monkeypatch.setattr(images, "WUFFS_MAX_PIXELS", 100)  # a page whose work buffer is too big
    decode_rgb(kinds["rendered page"])
    assert calls == ["spng"]


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_damaged_png_is_refused_by_name_whichever_decoder_tries_first(cut):
    data = page_bytes(320, 240, seed=5)
    idat_end = data.rindex(b"IEND") - 4
    with pytest.raises(ImageError) as e:
        decode_rgb(data[: int(idat_end * cut)] + data[idat_end:])  # pixel data cut short
    assert e.value.reason.value == "undecodable_image"
