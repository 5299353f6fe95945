"""The frame codec is deterministic by construction: its output is a function of the input bytes
and the level alone, whatever thread, process or order of calls makes it, and on frames like
the benchmark's the default level writes no more than zlib level 4 (the hand-written script's
h5py gzip-4 filter)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from benchmarks.frames import screenshot
from gui_assets.core.config import DEFAULT_DEFLATE_LEVEL
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.deflate import zlib_deflater
from gui_assets.core.images import decode_rgb
from gui_assets.sources.demo_render import render_page

REPO = Path(__file__).resolve().parents[2]


def _inputs() -> list[bytes]:
    """Inputs of every kind a frame chunk is: photo-like and text screenshots, their eye crops,
    noise, flat colour, a repeat pattern with long matches, tiny and empty."""
    rng = np.random.default_rng(40)
    shot = decode_rgb(screenshot(7, 640, 360)[0])
    page = np.asarray(render_page(11, 640, 360, [], "site-11.example"))
    repeat = np.tile(rng.integers(0, 256, 4099, dtype=np.uint8), 97)
    return [
        shot.tobytes(),
        np.ascontiguousarray(shot[:EYE_SIZE, :EYE_SIZE]).tobytes(),
        page.tobytes(),
        rng.integers(0, 256, 300_000, dtype=np.uint8).tobytes(),
        bytes(200_000),
        repeat.tobytes(),
        b"x",
        b"",
    ]


def _digests(level: int) -> list[str]:
    deflate = zlib_deflater(level)
    return [hashlib.sha256(deflate(data)).hexdigest() for data in _inputs()]


@pytest.mark.parametrize("level", [1, DEFAULT_DEFLATE_LEVEL, 12])
def test_output_is_a_zlib_stream_of_the_input_the_same_on_every_thread(level):
    deflate = zlib_deflater(level)
    inputs = _inputs()
    want = [deflate(data) for data in inputs]
    assert [zlib.decompress(w) for w in want] == inputs
    # Eight threads, each input many times, interleaved with the others and with other levels:
    # nothing a call leaves behind (buffers, hash tables, addresses) may reach another call.
    other = zlib_deflater(3)
    jobs = [(i, data) for _ in range(6) for i, data in enumerate(inputs)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda job: (job[0], deflate(job[1]), other(job[1])), jobs))
    assert all(out == want[i] for i, out, _ in got)
    # A memoryview of the same bytes, as the writer passes, gives the same stream.
    assert [deflate(memoryview(data)) for data in inputs] == want


def test_a_fresh_process_writes_the_same_bytes():
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from gui_assets_tests.core.test_deflate import _digests; "
        f"print(json.dumps(_digests({DEFAULT_DEFLATE_LEVEL})))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code, str(REPO)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(runs) == 1
    assert runs == {__import__("json").dumps(_digests(DEFAULT_DEFLATE_LEVEL))}


@pytest.mark.parametrize("kind", ["screenshots", "pages"])
def test_the_default_level_writes_no_more_than_zlib_4_on_benchmark_frames(kind):
    """The benchmark's two kinds of 1280x1080 frame (photo-like tiles over a tenth; the rendered
    page alone), each with its eye crop, at indices no other test uses."""
    deflate = zlib_deflater(DEFAULT_DEFLATE_LEVEL)
    ours = zlib4 = 0
    for i in range(3):
        if kind == "pages":
            frame = np.asarray(render_page(700_000 + i, 1280, 1080, [], f"site-{i}.example"))
        else:
            frame = decode_rgb(screenshot(700_000 + i, 1280, 1080)[0])
        for chunk in (frame, np.ascontiguousarray(frame[:EYE_SIZE, :EYE_SIZE])):
            data = chunk.tobytes()
            ours += len(deflate(data))
            zlib4 += len(zlib.compress(data, 4))
    assert ours <= zlib4, (ours, zlib4)


def test_a_level_outside_libdeflate_s_range_is_refused_by_name():
    for bad in (0, 13, -1):
        with pytest.raises(ValueError, match=r"libdeflate level must be 1\.\.12"):
            zlib_deflater(bad)
