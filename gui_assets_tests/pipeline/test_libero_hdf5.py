"""The LIBERO HDF5 writer: contract, round trip, cap rollover, causal eye-in-hand. (Final names,
atomic publishing and pruning belong to the sharding module: test_sharding.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from gui_assets.core.atomic import sha256_file
from gui_assets.core.config import BuildConfig
from gui_assets.core.cursor import EYE_SIZE
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.images import decode_rgb
from gui_assets.core.ir import (
    ACTION_TYPE_NAMES,
    NO_MASK,
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    describe,
)
from gui_assets.core.layout import shard_name
from gui_assets.pipeline.libero_hdf5 import DEMO_DATASETS, LiberoShardWriter
from gui_assets_tests.conftest import page_bytes

REF = SourceRef("org/repo", "data/x.parquet", row=0)


def step(
    store: ImageStore,
    shot: bytes,
    t: ActionType,
    params=(0.0, 0.0, 0.0, 0.0),
    mask=NO_MASK,
    text: str = "",
    window: tuple[int, int, int, int] | None = None,
) -> GuiStep:
    ext = "png" if shot.startswith(b"\x89PNG") else "jpg"
    sha = store.put(shot, ext)
    h, w = decode_rgb(shot).shape[:2]
    left, top, ww, wh = window or (0, 0, w, h)
    return GuiStep(
        t,
        params,
        mask,
        text,
        describe(t, params, mask, text),
        Observation(sha, ext, left, top, ww, wh),
        (0.0, float(top)),
        REF,
    )


def episode(store: ImageStore, n: int = 3, eid: str = "ep", seed: int = 1, size=(640, 480)) -> GuiEpisode:
    shot = page_bytes(*size, seed=seed)
    steps = [
        step(store, shot, ActionType.CLICK, (0.1 + 0.2 * i, 0.3, 0.0, 0.0), POINT_MASK) for i in range(n)
    ]
    return GuiEpisode(eid, "test", f"instruction {eid}", steps, attrs={"task_id": eid})


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return ImageStore(tmp_path / "images")


def writer(out: Path, **cfg) -> LiberoShardWriter:
    """A writer of directory `d` naming its shards as published ones (d_NNNN.hdf5)."""
    return LiberoShardWriter(
        out, "d", "test", BuildConfig(**cfg), platform="desktop", name_of=lambda i: shard_name("d", i)
    )


def write(tmp_path: Path, store: ImageStore, episodes: list[GuiEpisode], **cfg) -> tuple[Path, list]:
    out = tmp_path / "d"
    w = writer(out, **cfg)
    for ep in episodes:
        w.write_episodes([ep], store)
    return out, w.close()


def test_every_dataset_and_attribute_of_the_contract(tmp_path, store):
    out, entries = write(tmp_path, store, [episode(store, 4)])
    with h5py.File(out / "d_0000.hdf5") as f:
        data = f["data"]
        for k in (
            "env_name",
            "env_args",
            "problem_info",
            "num_demos",
            "total",
            "tag",
            "gui_action_types",
            "gui_param_names",
        ):
            assert k in data.attrs
        assert json.loads(data.attrs["gui_action_types"]) == ACTION_TYPE_NAMES
        assert json.loads(data.attrs["gui_param_names"]) == ["x1", "y1", "x2", "y2"]
        assert json.loads(data.attrs["problem_info"])["language_instruction"] == ""
        assert data.attrs["num_demos"] == 1 and data.attrs["total"] == 4
        demo = data["demo_0"]
        for key, (shape, dtype) in DEMO_DATASETS.items():
            assert demo[key].shape == (4, *shape), key
            if dtype is not h5py.string_dtype("utf-8"):
                assert demo[key].dtype == np.dtype(dtype), key
        assert demo["obs/agentview_rgb"].shape == (4, 480, 640, 3)
        assert demo["obs/agentview_rgb"].chunks == (1, 480, 640, 3)
        assert demo["obs/agentview_rgb"].compression == "gzip"
        assert demo["obs/eye_in_hand_rgb"].shape == (4, EYE_SIZE, EYE_SIZE, 3)
        assert demo.attrs["language_instruction"] == "instruction ep"
        assert demo.attrs["num_samples"] == 4 and demo.attrs["task_id"] == "ep"
        assert demo.attrs["platform"] == "desktop"  # the writer's, from the source's declaration
        assert json.loads(demo.attrs["source_ref"])["repo_id"] == "org/repo"
        np.testing.assert_array_equal(demo["dones"][:], [0, 0, 0, 1])
        np.testing.assert_array_equal(demo["rewards"][:], [0, 0, 0, 1])
        np.testing.assert_allclose(demo["states"][:, 4], [0, 0.25, 0.5, 0.75])
        np.testing.assert_array_equal(demo["obs/joint_states"][:], np.zeros((4, 7)))
        acts = demo["actions"][:]
        np.testing.assert_allclose(acts[:, :4], demo["action_params"][:])
        np.testing.assert_array_equal(acts[:, 4:], [[0, 0, 2]] * 4)
    assert entries[0].demos == 1 and entries[0].steps == 4


@pytest.mark.parametrize("platform", ["browser", "mobile"])
def test_every_demo_carries_the_platform_the_writer_was_given(tmp_path, store, platform):
    out = tmp_path / "d"
    w = LiberoShardWriter(out, "d", "test", BuildConfig(), platform=platform)
    w.write_episodes([episode(store, 2, "a"), episode(store, 3, "b")], store)
    (piece,) = w.close()
    with h5py.File(out / piece.file) as f:
        assert [f["data"][d].attrs["platform"] for d in ("demo_0", "demo_1")] == [platform, platform]


@pytest.mark.parametrize("attr", ["platform", "source", "num_samples"])
def test_an_episode_attr_that_would_overwrite_a_format_attr_is_refused(tmp_path, store, attr):
    ep = episode(store, 2)
    ep.attrs[attr] = "x"
    w = writer(tmp_path / "d")
    with pytest.raises(ValueError, match="clash with the format's demo attrs"):
        w.write_episodes([ep], store)
    w.abort()


def test_frames_round_trip_exactly_and_the_window_is_the_viewport(tmp_path, store):
    shot = page_bytes(800, 2000, seed=3)
    page = decode_rgb(shot)
    steps = [
        step(store, shot, ActionType.SCROLL, (0.5, 0.8, 0.5, 0.2), SPAN_MASK, window=(0, 0, 800, 600)),
        step(store, shot, ActionType.CLICK, (0.5, 0.5, 0, 0), POINT_MASK, window=(0, 450, 800, 600)),
    ]
    out, _ = write(tmp_path, store, [GuiEpisode("e", "test", "i", steps)])
    with h5py.File(out / "d_0000.hdf5") as f:
        av = f["data/demo_0/obs/agentview_rgb"][:]
    np.testing.assert_array_equal(av[0], page[0:600])
    np.testing.assert_array_equal(av[1], page[450:1050])


def test_eye_in_hand_follows_the_causal_cursor_never_the_target(tmp_path, store):
    out, _ = write(tmp_path, store, [episode(store, 3)])
    with h5py.File(out / "d_0000.hdf5") as f:
        d = f["data/demo_0"]
        rect, prm, av, eye = (
            d["eye_rect"][:],
            d["action_params"][:],
            d["obs/agentview_rgb"][:],
            d["obs/eye_in_hand_rgb"][:],
        )
        cursor = d["obs/cursor_states"][:]
    np.testing.assert_allclose(cursor[0], [0.5, 0.5])  # step 0: screen centre
    np.testing.assert_allclose(cursor[1:], prm[:-1, :2])  # then where the previous click left it
    for t in range(3):
        x0, y0 = round(rect[t, 0] * 640), round(rect[t, 1] * 480)
        np.testing.assert_array_equal(eye[t], av[t, y0 : y0 + 128, x0 : x0 + 128])
        centre = ((rect[t, 0] + rect[t, 2]) / 2, (rect[t, 1] + rect[t, 3]) / 2)
        assert centre == pytest.approx(tuple(cursor[t]), abs=1 / 480)
    # Targets are 0.2 apart (128 px) so none of them sits in its own eye window.
    inside = [
        (rect[t, 0] <= prm[t, 0] <= rect[t, 2]) and (rect[t, 1] <= prm[t, 1] <= rect[t, 3]) for t in range(3)
    ]
    assert inside == [False, False, False]


def test_eye_window_is_clamped_inside_the_frame(tmp_path, store):
    shot = page_bytes(640, 480)
    steps = [
        step(store, shot, ActionType.CLICK, (0.99, 0.01, 0, 0), POINT_MASK),
        step(store, shot, ActionType.CLICK, (0.5, 0.5, 0, 0), POINT_MASK),
    ]
    out, _ = write(tmp_path, store, [GuiEpisode("e", "test", "i", steps)])
    with h5py.File(out / "d_0000.hdf5") as f:
        rect = f["data/demo_0/eye_rect"][1]
    assert rect == pytest.approx([(640 - 128) / 640, 0.0, 1.0, 128 / 480])


def test_frames_of_another_size_are_resized_and_keep_their_native_hw(tmp_path, store):
    a, b = page_bytes(640, 480, seed=1), page_bytes(320, 240, seed=2)
    steps = [
        step(store, a, ActionType.CLICK, (0.5, 0.5, 0, 0), POINT_MASK),
        step(store, b, ActionType.CLICK, (0.25, 0.25, 0, 0), POINT_MASK),
    ]
    out, _ = write(tmp_path, store, [GuiEpisode("e", "test", "i", steps)])
    with h5py.File(out / "d_0000.hdf5") as f:
        d = f["data/demo_0"]
        assert d["obs/agentview_rgb"].shape == (2, 480, 640, 3)
        np.testing.assert_array_equal(d["native_hw"][:], [[480, 640], [240, 320]])
        # The eye crop is native pixels of the small frame, centred on the causal cursor there.
        np.testing.assert_array_equal(d["obs/eye_in_hand_rgb"][1], decode_rgb(b)[56:184, 96:224])


def test_shards_roll_at_the_cap_on_demo_boundaries(tmp_path, store):
    eps = [episode(store, 3, eid=f"e{i}", seed=i) for i in range(6)]
    out, entries = write(tmp_path, store, eps, shard_cap_bytes=700_000)
    names = sorted(p.name for p in out.glob("*.hdf5"))
    assert names == [f"d_{i:04d}.hdf5" for i in range(len(names))] and len(names) >= 2
    per_episode = max(e.bytes / e.demos for e in entries)
    for e in entries:
        assert e.bytes <= 700_000 + per_episode  # over the cap by less than one episode
        with h5py.File(out / e.file) as f:
            assert sorted(f["data"]) == [f"demo_{i}" for i in range(e.demos)]  # restarts at demo_0
            assert f["data"].attrs["num_demos"] == e.demos
    assert sum(e.demos for e in entries) == 6 and sum(e.steps for e in entries) == 18


def test_close_is_idempotent_and_a_closed_writer_refuses_episodes(tmp_path, store):
    w = writer(tmp_path / "d")
    w.write_episodes([episode(store)], store)
    first = w.close()
    assert w.close() == first
    with pytest.raises(RuntimeError):
        w.write_episodes([episode(store)], store)


def test_shard_bytes_are_deterministic(tmp_path, store):
    out_a, a = write(tmp_path / "a", store, [episode(store, 3)])
    out_b, b = write(tmp_path / "b", store, [episode(store, 3)])
    assert sha256_file(out_a / a[0].file) == sha256_file(out_b / b[0].file)


def test_abort_removes_everything_the_writer_wrote(tmp_path, store):
    out = tmp_path / "d"
    w = writer(out)
    w.write_episodes([episode(store)], store)
    w.abort()  # a failed unit
    assert not out.exists()


def test_an_image_that_does_not_decode_drops_the_episode_and_is_counted(tmp_path, store):
    good = episode(store, 2, eid="good")
    broken = episode(store, 2, eid="broken", seed=9)
    sha = broken.steps[1].observation.image_sha256
    path = store.path(sha, "png")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated after the adapter accepted it
    w = writer(tmp_path / "d")
    assert w.write_episodes([broken], store) == [False]
    assert w.write_episodes([good], store) == [True]
    entries = w.close()
    assert w.stats.drops == {"undecodable_frame": 1}  # the whole episode is left out
    with h5py.File(tmp_path / "d" / entries[0].file) as f:
        assert list(f["data"]) == ["demo_0"] and f["data/demo_0"].attrs["episode_id"] == "good"


def test_failed_episode_rewards_zero_and_strings_keep_non_ascii(tmp_path, store):
    ep = episode(store, 2)
    ep.success = False
    shot = page_bytes(640, 480)
    ep.steps.append(step(store, shot, ActionType.TYPE, text="Zürich 東京 ✓"))
    out, _ = write(tmp_path, store, [ep])
    with h5py.File(out / "d_0000.hdf5") as f:
        d = f["data/demo_0"]
        assert d["rewards"][-1] == 0 and d["dones"][-1] == 1
        assert d["action_text"][2].decode() == "Zürich 東京 ✓"
        assert d["actions"][2, 5] == 1.0 and d["actions"][2, 6] == 4.0  # has_text, 4 masked slots


def test_memory_does_not_grow_with_the_shard(tmp_path):
    """Streaming: 16 episodes of 1280x1080 frames (530 MB decoded) peak like 4 episodes do."""
    import subprocess
    import sys

    store = ImageStore(tmp_path / "images")
    for i in range(3):
        store.put(page_bytes(1280, 1080, seed=i), "png")
    peaks = {}
    for n in (4, 16):
        r = subprocess.run(
            [sys.executable, "-m", "gui_assets_tests.publish.memory_probe", str(n), "8", str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(r.stdout)
        assert got["steps"] == n * 8 and got["shards"] == 1
        peaks[n] = got["peak_mb"]
    assert peaks[16] - peaks[4] < 16, peaks  # a held shard would add ~400 MB


def test_the_stored_eye_rect_is_reproducible_from_the_stored_float32_params(tmp_path, store):
    """A cursor on a half pixel: float64 and float32 round the window edge apart; the shard must
    agree with what a reader derives from the float32 params it holds."""
    from gui_assets.checks import invariants
    from gui_assets.core import shard_reader

    shot = page_bytes(1125, 700)
    x, y = 312.5 / 1125, 97.5 / 700  # window edges at 248.5 and 33.5 px before rounding
    steps = [
        step(store, shot, ActionType.CLICK, (x, y, 0, 0), POINT_MASK),
        step(store, shot, ActionType.PRESS_KEY),
    ]
    out, _ = write(tmp_path, store, [GuiEpisode("e", "test", "i", steps)])
    verdict = invariants.causal_cursor(shard_reader.shard_files(out, "d"))
    assert verdict.passed, verdict.examples
