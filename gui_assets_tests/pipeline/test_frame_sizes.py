"""Frames that batch: one frame size per shard, the size most of a demo's steps have, a build-wide
size on request (agentview_hw), and Mind2Web's full viewport below a short page."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from gui_assets.core.episode_store import ImageStore, iter_episodes
from gui_assets.core.images import decode_rgb, window_pixels
from gui_assets.core.ir import POINT_MASK, ActionType, GuiEpisode
from gui_assets.core.layout import DatasetInfo, OutLayout
from gui_assets.core.shard_reader import demos, shard_files
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.pipeline.frames import frame_size, plan_episode
from gui_assets.sources.mind2web.source import SPEC as MIND2WEB
from gui_assets.sources.registry import SOURCES
from gui_assets_tests.conftest import m2w_row, page_bytes
from gui_assets_tests.pipeline.test_libero_hdf5 import step


def test_every_shard_of_every_demo_directory_holds_one_frame_size(every_demo):
    from gui_assets.core.layout import built_directories

    infos = built_directories(every_demo)
    assert len(infos) == sum(len(s.partition_keys) for s in SOURCES)
    mixed = 0
    for info in infos:
        sizes = set()
        for entry in info.shards + info.val_shards:
            with h5py.File(every_demo / info.directory / entry.file) as f:
                shapes = {f["data"][d]["obs/agentview_rgb"].shape[1:3] for d in f["data"]}
            assert shapes == {tuple(entry.frame_hw)}, (entry.file, shapes)
            sizes |= shapes
        mixed += len(sizes) > 1
    assert mixed >= 1  # the demo has directories of several sizes (AgentNet win_mac: 1366x768, 1024x640)


def test_a_demo_takes_the_size_most_of_its_steps_have():
    assert frame_size([(396, 800), (450, 800), (450, 800)]) == (450, 800)
    assert frame_size([(446, 649), (446, 800)]) == (446, 800)  # a tie: the larger
    assert frame_size([(396, 800)], fixed=(720, 1280)) == (720, 1280)


def test_an_odd_first_frame_is_resized_to_the_others(tmp_path):
    store = ImageStore(tmp_path / "images")
    odd, usual = page_bytes(800, 396, seed=1), page_bytes(800, 450, seed=2)
    steps = [step(store, odd, ActionType.CLICK, (0.2, 0.2, 0, 0), POINT_MASK)] + [
        step(store, usual, ActionType.CLICK, (0.3 + 0.2 * i, 0.5, 0, 0), POINT_MASK) for i in range(3)
    ]
    plan = plan_episode(GuiEpisode("e", "test", "i", steps))
    assert plan.frame_hw == (450, 800) and plan.native_hw[0] == (396, 800)


def test_agentview_hw_makes_every_directory_one_size_with_native_eye_crops(agentview_hw_build):
    out = agentview_hw_build
    for directory in ("mind2web_train", "agentnet_win_mac"):
        info = DatasetInfo.read(out / directory / "dataset_info.json")
        assert list(info.build["config"]["agentview_hw"]) == [360, 640]
        assert {tuple(e.frame_hw) for e in info.shards + info.val_shards} == {(360, 640)}
    layout = OutLayout(out)
    images = ImageStore(layout.image_store)
    for directory in ("mind2web_train", "agentnet_win_mac"):
        episodes = {e.episode_id: e for e in iter_episodes(layout.episodes(directory))}
        for _, demo in demos(shard_files(out / directory, directory)):
            assert demo["obs/agentview_rgb"].shape[1:] == (360, 640, 3)
            ep = episodes[demo.attrs["episode_id"]]
            rects, native, eye = demo["eye_rect"][:], demo["native_hw"][:], demo["obs/eye_in_hand_rgb"]
            for t, s in enumerate(ep.steps):
                o = s.observation
                assert tuple(native[t]) == (o.height, o.width)  # the source's size, not the frame's
                frame = window_pixels(
                    decode_rgb(images.get(o.image_sha256, o.image_ext)), o.left, o.top, o.width, o.height
                )
                x0, y0 = round(float(rects[t, 0]) * o.width), round(float(rects[t, 1]) * o.height)
                np.testing.assert_array_equal(eye[t], frame[y0 : y0 + 128, x0 : x0 + 128])  # native pixels


def test_a_short_mind2web_page_fills_the_viewport_with_its_background(write_m2w, tmp_path):
    short = page_bytes(1280, 700, seed=4)
    mirror = write_m2w([[m2w_row("t", "0", screenshot=short, rect="100,100,200,50")]])
    info = build_directory(MIND2WEB, "train", tmp_path / "out", RawSettings("mirror", mirror))
    assert info.shards[0].frame_hw == [1080, 1280]
    (shard,) = shard_files(tmp_path / "out" / "mind2web_train", "mind2web_train")
    with h5py.File(shard) as f:
        demo = f["data/demo_0"]
        frame, native, params = (demo[k][0] for k in ("obs/agentview_rgb", "native_hw", "action_params"))
    page = decode_rgb(short)
    np.testing.assert_array_equal(frame[:700], page)
    last_row_colours, counts = np.unique(page[-1], axis=0, return_counts=True)
    assert (frame[700:] == last_row_colours[np.argmax(counts)]).all()
    assert tuple(native) == (1080, 1280)
    assert params[:2] == pytest.approx((200 / 1280, 125 / 1080), abs=1e-6)
