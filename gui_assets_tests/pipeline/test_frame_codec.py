"""Frames deflated outside HDF5 (libdeflate + write_direct_chunk) and the threaded frame encoder.

What a training loader relies on: plain h5py reads the frames as an ordinary gzip dataset, one
chunk per frame, pixel for pixel the screenshot, in no more bytes than h5py's gzip-4 filter
would store; order survives the thread pool; a bad image drops its episode and nothing else; and
memory stays bounded by the episode, not the 500 MB shard.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from benchmarks.frames import screenshot
from gui_assets.core.config import DEFAULT_DEFLATE_LEVEL, BuildConfig
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.images import decode_rgb
from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode
from gui_assets.pipeline.frames import FrameEncoder, plan_episode
from gui_assets.pipeline.libero_hdf5 import LiberoShardWriter
from gui_assets_tests.conftest import page_bytes
from gui_assets_tests.pipeline.test_libero_hdf5 import step

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return ImageStore(tmp_path / "images")


def _episodes(store: ImageStore, n: int, steps: int, size=(1280, 1080)) -> list[GuiEpisode]:
    eps = []
    for e in range(n):
        shots = [screenshot(e * steps + t, *size)[0] for t in range(steps)]
        eps.append(
            GuiEpisode(
                f"ep{e}",
                "test",
                f"task {e}",
                [
                    step(store, s, ActionType.CLICK, (0.2 + 0.1 * t, 0.4, 0, 0), POINT_MASK)
                    for t, s in enumerate(shots)
                ],
            )
        )
    return eps


def _write(tmp: Path, name: str, store: ImageStore, eps: list[GuiEpisode], threads: int = 2, **cfg) -> Path:
    w = LiberoShardWriter(tmp / name, "d", "test", BuildConfig(**cfg), platform="desktop")
    assert w.write_episodes(eps, store, threads=threads) == [True] * len(eps)
    (entry,) = w.close()
    return tmp / name / entry.file


def test_frames_deflated_outside_hdf5_are_plain_gzip_chunks_that_h5py_reads_back_exactly(tmp_path, store):
    eps = _episodes(store, 2, 3)
    shard = _write(tmp_path, "d", store, eps)
    with h5py.File(shard, "r") as f:
        for i, ep in enumerate(eps):
            av = f[f"data/demo_{i}/obs/agentview_rgb"]
            eye = f[f"data/demo_{i}/obs/eye_in_hand_rgb"]
            assert av.compression == "gzip" and av.chunks == (1, 1080, 1280, 3)
            assert eye.compression == "gzip" and eye.chunks == (1, 128, 128, 3)
            for t, s in enumerate(ep.steps):
                want = decode_rgb(store.get(s.observation.image_sha256, "png"))
                np.testing.assert_array_equal(av[t], want)
                x0, y0 = (round(v) for v in (f[f"data/demo_{i}/eye_rect"][t][:2] * (1280, 1080)))
                np.testing.assert_array_equal(eye[t], want[y0 : y0 + 128, x0 : x0 + 128])


def test_frame_chunks_are_no_larger_than_h5py_gzip_4_writes_for_the_same_pixels(tmp_path, store):
    """The hand-written script's recipe (h5py's gzip-4 filter, one chunk per frame) is the size
    every downloader would pay without this project; the default level stays at or below it."""
    eps = _episodes(store, 2, 3)
    shard = _write(tmp_path, "d", store, eps)
    ours = theirs = 0
    with h5py.File(shard, "r") as f, h5py.File(tmp_path / "script.hdf5", "w") as g:
        for i in range(len(eps)):
            for key in ("agentview_rgb", "eye_in_hand_rgb"):
                dset = f[f"data/demo_{i}/obs/{key}"]
                pixels = dset[()]
                ref = g.create_dataset(
                    f"{i}/{key}", data=pixels, chunks=dset.chunks, compression="gzip", compression_opts=4
                )
                for t in range(dset.shape[0]):
                    ours += len(dset.id.read_direct_chunk((t, 0, 0, 0))[1])
                    theirs += len(ref.id.read_direct_chunk((t, 0, 0, 0))[1])
    assert ours <= theirs, (ours, theirs)


def test_a_higher_level_writes_smaller_shards_with_the_same_pixels(tmp_path, store):
    eps = _episodes(store, 2, 3)
    small = _write(tmp_path, "nine", store, eps, libdeflate_level=9)
    fast = _write(tmp_path, "one", store, eps, libdeflate_level=1)
    assert small.stat().st_size < fast.stat().st_size
    with h5py.File(small, "r") as a, h5py.File(fast, "r") as b:
        for i in range(2):
            for key in ("agentview_rgb", "eye_in_hand_rgb"):
                np.testing.assert_array_equal(
                    a[f"data/demo_{i}/obs/{key}"][()], b[f"data/demo_{i}/obs/{key}"][()]
                )


def test_a_reader_without_gui_assets_or_imagecodecs_reads_the_frames(tmp_path, store):
    """LIBERO's loader opens shards with plain h5py (robomimic's swmr/libver flags)."""
    eps = _episodes(store, 1, 2)
    shard = _write(tmp_path, "d", store, eps)
    script = textwrap.dedent(
        f"""
        import sys, hashlib, json
        sys.modules["imagecodecs"] = None  # the reader has nothing but h5py
        import h5py
        with h5py.File({str(shard)!r}, "r", swmr=True, libver="latest") as f:
            av = f["data/demo_0/obs/agentview_rgb"]
            print(json.dumps([hashlib.sha256(av[t].tobytes()).hexdigest() for t in range(av.shape[0])]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    want = [
        __import__("hashlib")
        .sha256(decode_rgb(store.get(s.observation.image_sha256, "png")).tobytes())
        .hexdigest()
        for s in eps[0].steps
    ]
    assert json.loads(out.stdout) == want


def test_the_deflate_level_is_recorded_and_validated():
    assert BuildConfig(libdeflate_level=9).to_dict()["libdeflate_level"] == 9
    assert BuildConfig().to_dict()["libdeflate_level"] == DEFAULT_DEFLATE_LEVEL
    assert not {"frame_codec", "isal_level", "gzip_level"} & set(BuildConfig().to_dict())
    for bad in (0, 13):
        with pytest.raises(ValueError, match="libdeflate_level"):
            BuildConfig(libdeflate_level=bad)


def test_encoder_keeps_order_across_episodes_and_drops_only_the_broken_one(tmp_path, store):
    """Runs of later episodes are encoded ahead on 3 threads; a truncated PNG in the middle
    episode drops that episode (counted) and every other frame lands where it belongs."""
    good = [page_bytes(320, 240, seed=s) for s in range(12)]
    broken = good[0][: len(good[0]) // 2]
    eps = []
    for e in range(5):
        shots = good[e * 2 : e * 2 + 3]
        if e == 2:
            shots = [shots[0], broken, shots[2]]
        steps = [
            step(store, s, ActionType.CLICK, (0.5, 0.5, 0, 0), POINT_MASK) for s in shots if s is not broken
        ]
        if e == 2:  # the broken bytes were never inspected: as if they rotted in the store
            sha = store.put(broken, "png")
            from dataclasses import replace

            steps.insert(1, replace(steps[0], observation=replace(steps[0].observation, image_sha256=sha)))
        eps.append(GuiEpisode(f"e{e}", "test", "i", steps))
    w = LiberoShardWriter(tmp_path / "d", "d", "test", BuildConfig(), platform="desktop")
    assert w.write_episodes(eps, store, threads=3) == [True, True, False, True, True]
    (entry,) = w.close()
    assert w.stats.drops == {"undecodable_frame": 1}
    with h5py.File(tmp_path / "d" / entry.file, "r") as f:
        assert [f[f"data/demo_{i}"].attrs["episode_id"] for i in range(4)] == ["e0", "e1", "e3", "e4"]
        for i, ep in enumerate(e for e in eps if e.episode_id != "e2"):
            av = f[f"data/demo_{i}/obs/agentview_rgb"]
            for t, s in enumerate(ep.steps):
                np.testing.assert_array_equal(av[t], decode_rgb(store.get(s.observation.image_sha256, "png")))


def test_consecutive_views_of_one_page_decode_it_once(store, monkeypatch):
    from gui_assets.pipeline import frames

    shot = page_bytes(300, 900, seed=3)
    windows = [(0, 0, 300, 300), (0, 300, 300, 300), (0, 600, 300, 300)]
    ep = GuiEpisode("e", "test", "i", [step(store, shot, ActionType.SCROLL, window=w) for w in windows])
    plan = plan_episode(ep)
    assert len(plan.runs) == 1 and len(plan.runs[0].steps) == 3
    calls = []
    real = frames.decode_rgb
    monkeypatch.setattr(frames, "decode_rgb", lambda b, rows=None: calls.append(1) or real(b, rows))
    with FrameEncoder(store, BuildConfig(), threads=2) as enc:
        ((_, chunks),) = list((p, list(c)) for p, c in enc.episodes([plan]))
    assert len(chunks) == 3 and len(calls) == 1


@pytest.mark.slow
def test_a_500mb_shard_of_1920x1080_frames_peaks_under_400mb(tmp_path):
    """Bounded by the episode: one full 500 MB shard (and the start of the next) of realistic
    1080p frames, written by the threaded encoder in its own process."""
    images = ImageStore(tmp_path / "images")
    for i in range(6):
        images.put(screenshot(i, 1920, 1080)[0], "png")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gui_assets_tests.publish.memory_probe",
            "30",
            "24",
            str(tmp_path),
            "1920",
            "1080",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    got = json.loads(r.stdout)
    assert got["steps"] == 720 and got["shards"] == 2, got
    assert got["shard_bytes"][0] >= 450e6, got  # the first shard really is cap-sized
    assert got["peak_mb"] < 400, got
