"""The token walker that explains a differing frame chunk in the determinism test's failures."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gui_assets_tests.deflate_tokens import first_difference, tokens


def _inflate(stream: bytes) -> bytes:
    out = bytearray()
    for kind, _, value, distance in tokens(stream):
        if kind == "lit":
            out.append(value)
        else:
            for _ in range(value):
                out.append(out[-distance])
    return bytes(out)


def _page() -> bytes:
    rng = np.random.default_rng(3)
    page = np.full((90, 160, 3), 245, np.uint8)
    page[10:60, 20:140] = rng.integers(0, 256, (50, 120, 3), dtype=np.uint8)
    page[70:80] = page[20:30]  # a repeat far enough back for long matches
    return page.tobytes()


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_tokens_rebuild_the_data_from_stored_fixed_and_dynamic_blocks(level):
    data = _page()
    assert _inflate(zlib.compress(data, level)) == data
    short = b"abcabcabcabc"  # zlib gives such input a fixed-code block
    assert _inflate(zlib.compress(short, level)) == short


def test_the_first_differing_decision_is_named_with_its_position():
    data = _page()
    fast, best = zlib.compress(data, 1), zlib.compress(data, 9)
    assert fast != best
    said = first_difference(fast, best)
    position = int(said.split("inflated byte ")[1].split(":")[0])
    # Both streams agree on every token before that byte, and both still inflate to the data.
    before_fast = [t for t in tokens(fast) if t[1] < position]
    assert before_fast == [t for t in tokens(best) if t[1] < position]
    assert _inflate(fast) == _inflate(best) == data
    assert "match" in said
    assert first_difference(fast, fast).startswith("the streams' tokens agree")


def test_bytes_that_are_not_a_deflate_stream_are_said_so_not_raised():
    data = _page()
    stream = zlib.compress(data, 6)
    said = first_difference(stream, stream[: len(stream) // 2])
    assert said.startswith("not comparable as deflate streams after ("), said
