"""The AgentNet adapter: mapping, OS join, image archives (plain, split, folder), holdout."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import h5py
import pytest

from gui_assets.checks import invariants
from gui_assets.core import shard_reader
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, GuiEpisode
from gui_assets.core.layout import OutLayout
from gui_assets.core.stats import BuildStats
from gui_assets.pipeline.chain import RawSettings, build_directory, read_split_rows
from gui_assets.sources.agentnet import adapter as agentnet
from gui_assets.sources.agentnet.demo import val_task_id
from gui_assets.sources.agentnet.source import SPEC as AGENTNET
from gui_assets.sources.mirror import RawInputError
from gui_assets_tests.conftest import page_bytes, run_adapter

REPO = agentnet.REPO_ID
SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "agentnet"


def row(task_id: str, codes: list[str], images: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    images = images or [f"{task_id}-{i}.png" for i in range(len(codes))]
    traj = [
        {
            "index": i,
            "image": img,
            "value": {
                "code": c,
                "thought": f"think {i}",
                "observation": f"see {i}",
                "reflection": "ok",
                "last_step_correct": True,
            },
        }
        for i, (c, img) in enumerate(zip(codes, images, strict=True))
    ]
    return {"task_id": task_id, "instruction": f"do {task_id}", "traj": traj, **extra}


def write_agentnet(
    root: Path,
    partition: str,
    rows: list[dict[str, Any]],
    meta: list[dict[str, Any]],
    archive: str = "folder",
    skip: set[str] = frozenset(),
) -> Path:
    """An AgentNet mirror; every image a row names is rendered unless listed in `skip`."""
    repo = root / REPO
    repo.mkdir(parents=True, exist_ok=True)
    (repo / f"agentnet_{partition}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (repo / "meta_data_merged.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta))
    folder = repo / f"{partition}_images"
    src = root / "rendered"
    src.mkdir(exist_ok=True)
    names = sorted({s["image"] for r in rows for s in r["traj"]} - set(skip))
    for i, name in enumerate(names):
        (src / name).write_bytes(page_bytes(640, 400, seed=i))
    folder.mkdir()
    if archive == "folder":
        for name in names:
            shutil.copy(src / name, folder / name)
    elif archive == "zip":
        with zipfile.ZipFile(folder / "images.zip", "w") as z:
            for name in names:
                z.write(src / name, name)
    else:  # a real split archive, as `zip -s` writes it
        subprocess.run(["zip", "-q", "-s", "64k", str(folder / "images.zip"), *names], cwd=src, check=True)
    return root


def run(root: Path, partition: str, tmp: Path) -> tuple[list[GuiEpisode], BuildStats]:
    return run_adapter(AGENTNET, root, partition, tmp)


CODES = [
    "pyautogui.click(x=0.25, y=0.5)",
    "pyautogui.rightClick(x=0.5, y=0.5)",
    "pyautogui.moveTo(x=0.2, y=0.3)\npyautogui.dragTo(x=0.6, y=0.7, button='left')",
    "pyautogui.moveTo(x=0.4, y=0.5)\npyautogui.scroll(-3)",
    "pyautogui.moveTo(x=0.4, y=0.5)\npyautogui.hscroll(2)",
    "pyautogui.write(message='Zürich ✓')",
    "pyautogui.press('enter')",
    "pyautogui.press('down', presses=2)",
    "pyautogui.hotkey(['ctrl', 'å'])",
    "computer.wait(2)",
    "pyautogui.moveTo(x=0.9, y=0.1)",
    "computer.terminate(status='success')",
]


def test_every_action_maps_to_type_params_mask_and_text(tmp_path):
    root = write_agentnet(tmp_path, "ubuntu", [row("t1", CODES)], [{"task_id": "t1", "system": "Ubuntu"}])
    (ep,), stats = run(root, "ubuntu", tmp_path)
    got = [
        (s.action_type.name, tuple(round(p, 4) for p in s.params), s.mask, s.text, s.desc) for s in ep.steps
    ]
    assert got == [
        ("CLICK", (0.25, 0.5, 0, 0), POINT_MASK, "", "click(0.25, 0.50)"),
        ("CLICK", (0.5, 0.5, 0, 0), POINT_MASK, "", "right_click(0.50, 0.50)"),
        ("DRAG", (0.2, 0.3, 0.6, 0.7), SPAN_MASK, "", "drag(0.20, 0.30, 0.60, 0.70)"),
        ("SCROLL", (0.4, 0.5, 0.4, 0.35), SPAN_MASK, "", "scroll(down)"),  # -3 units: view down 0.15
        ("SCROLL", (0.4, 0.5, 0.3, 0.5), SPAN_MASK, "", "scroll(right)"),  # hscroll(+2): content left
        ("TYPE", (0, 0, 0, 0), NO_MASK, "Zürich ✓", 'type("Zürich ✓")'),
        ("PRESS_ENTER", (0, 0, 0, 0), NO_MASK, "enter", 'press_enter("enter")'),
        ("PRESS_KEY", (0, 0, 0, 0), NO_MASK, "down down", 'press_key("down down")'),
        ("PRESS_KEY", (0, 0, 0, 0), NO_MASK, "ctrl+å", 'hotkey("ctrl+å")'),
        ("WAIT", (0, 0, 0, 0), NO_MASK, "", "wait(2)"),
        ("HOVER", (0.9, 0.1, 0, 0), POINT_MASK, "", "hover(0.90, 0.10)"),
        ("STOP", (0, 0, 0, 0), NO_MASK, "", "stop()"),
    ]
    assert ep.success and stats.ungrounded_steps == 0
    assert ep.steps[0].thought == "think 0"
    assert json.loads(ep.steps[0].annotations) == {
        "observation": "see 0",
        "reflection": "ok",
        "last_step_correct": True,
    }
    assert ep.attrs["os"] == "ubuntu" and ep.attrs["task_id"] == "t1"


def test_macos_scroll_amounts_are_pixel_like(tmp_path):
    codes = [
        "pyautogui.moveTo(x=0.45, y=0.73)\npyautogui.scroll(-54)",
        "computer.terminate(status='failure')",
    ]
    root = write_agentnet(tmp_path, "win_mac", [row("m", codes)], [{"task_id": "m", "system": "Darwin"}])
    (ep,), _ = run(root, "win_mac", tmp_path)
    assert ep.attrs["os"] == "macos" and ep.steps[0].params == pytest.approx((0.45, 0.73, 0.45, 0.46))
    assert ep.steps[-1].action_type == ActionType.FAIL and not ep.success


def test_a_scroll_at_the_frame_edge_keeps_its_direction_without_coordinates(tmp_path):
    codes = ["pyautogui.moveTo(x=0.5, y=0.0)\npyautogui.scroll(-3)"]
    root = write_agentnet(tmp_path, "ubuntu", [row("e", codes)], [])
    (ep,), stats = run(root, "ubuntu", tmp_path)
    (s,) = ep.steps
    assert (s.action_type, s.mask, s.desc) == (ActionType.SCROLL, NO_MASK, "scroll(down)")
    assert stats.ungrounded_by_reason == {"gesture_outside_frame": 1}


def test_os_comes_from_the_metadata_join_and_repeats_get_unique_ids(tmp_path):
    rows = [
        row("w", ["pyautogui.click(x=0.1, y=0.1)"]),
        row("w", ["pyautogui.click(x=0.2, y=0.2)"], ["w-b.png"]),
        row("orphan", ["pyautogui.click(x=0.3, y=0.3)"]),
    ]
    root = write_agentnet(tmp_path, "win_mac", rows, [{"task_id": "w", "system": "Windows"}])
    eps, _ = run(root, "win_mac", tmp_path)
    assert [(e.episode_id, e.attrs["os"], e.attrs["repeat"]) for e in eps] == [
        ("agentnet/w", "windows", "0"),
        ("agentnet/w#1", "windows", "1"),
        ("agentnet/orphan", "unknown", "0"),
    ]


@pytest.mark.parametrize("archive", ["folder", "zip", "split"])
def test_screenshots_from_every_archive_form_give_the_same_bytes(tmp_path, archive):
    if archive == "split" and shutil.which("zip") is None:
        pytest.fail("the `zip` tool is needed to make a real split archive (apt-get install zip)")
    rows = [
        row(f"t{i}", ["pyautogui.click(x=0.5, y=0.5)", "computer.terminate(status='success')"])
        for i in range(6)
    ]
    root = write_agentnet(tmp_path, "ubuntu", rows, [], archive=archive)
    if archive == "split":
        assert len(list((root / REPO / "ubuntu_images").glob("images.z0*"))) >= 2
    eps, _ = run(root, "ubuntu", tmp_path)
    assert len(eps) == 6
    store = ImageStore(tmp_path / "images")
    for ep in eps:
        for i, s in enumerate(ep.steps):
            want = (tmp_path / "rendered" / f"{ep.attrs['task_id']}-{i}.png").read_bytes()
            assert store.get(s.observation.image_sha256, "png") == want


def test_a_missing_image_drops_its_step_and_an_unsafe_member_is_refused(tmp_path):
    rows = [
        row(
            "t",
            [
                "pyautogui.click(x=0.1, y=0.1)",
                "pyautogui.click(x=0.2, y=0.2)",
                "pyautogui.click(x=0.3, y=0.3)",
            ],
            ["a.png", "gone.png", "evil.png"],
        )
    ]
    root = write_agentnet(tmp_path, "ubuntu", rows, [], archive="zip", skip={"gone.png", "evil.png"})
    with zipfile.ZipFile(root / REPO / "ubuntu_images" / "images.zip", "a") as z:
        z.writestr("../evil.png", page_bytes(320, 200))  # a path that would escape an extraction
    (ep,), stats = run(root, "ubuntu", tmp_path)
    assert len(ep.steps) == 1
    assert stats.drops == {"missing_screenshot": 1, "unsafe_archive_member": 1}


def test_a_missing_archive_fails_the_partition_by_name(tmp_path):
    repo = tmp_path / REPO
    repo.mkdir(parents=True)
    (repo / "agentnet_ubuntu_5k.jsonl").write_text(json.dumps(row("t", ["computer.wait()"])) + "\n")
    (repo / "ubuntu_images").mkdir()
    with pytest.raises(RawInputError, match=r"ubuntu_images/.*no images\.zip and no extracted images"):
        run(tmp_path, "ubuntu", tmp_path / "work")


def test_the_real_opencua_example_trajectory(tmp_path):
    """The published pre-CoT row with its real step-10 screenshot (the others rendered here)."""
    real = json.loads((SAMPLES / "cot_example" / "raw_example.jsonl").read_text().splitlines()[0])
    root = write_agentnet(
        tmp_path, "ubuntu", [real], [{"task_id": real["task_id"], "system": "Ubuntu"}], skip={"10.png"}
    )
    shutil.copy(SAMPLES / "cot_example" / "10.png", root / REPO / "ubuntu_images" / "10.png")
    (ep,), stats = run(root, "ubuntu", tmp_path)
    assert len(ep.steps) == 15 and not stats.drops and ep.success
    assert [s.action_type.name for s in ep.steps[:6]] == [
        "CLICK",
        "CLICK",
        "CLICK",
        "DRAG",
        "CLICK",
        "SCROLL",
    ]
    step10 = ep.steps[10].observation
    assert (
        step10.image_sha256 == hashlib.sha256((SAMPLES / "cot_example" / "10.png").read_bytes()).hexdigest()
    )
    assert ep.steps[10].params[:2] == pytest.approx((0.7606, 0.724))


def test_demo_partitions_build_main_and_val_shards_with_the_holdout_recorded(demo_mirror, tmp_path):
    for key in ("ubuntu", "win_mac"):
        info = build_directory(AGENTNET, key, tmp_path, RawSettings(mode="mirror", mirror=demo_mirror))
        d = tmp_path / f"agentnet_{key}"
        # a shard per frame size (win_mac's demos are 1366x768 and 1024x640 screens), so batches stack
        names = [s.file for s in info.shards]
        assert names == [f"agentnet_{key}_{i:04d}.hdf5" for i in range(len(names))]
        for name in names:
            with h5py.File(d / name) as f:
                assert len({f["data"][n]["obs/agentview_rgb"].shape[1:] for n in f["data"]}) == 1, name
        assert [s.file for s in info.val_shards] == [f"agentnet_{key}_val_0000.hdf5"]
        rule = info.build["holdout_rule"]
        assert rule["name"] == "hash_holdout" and rule["fraction"] == 0.02 and rule["val_episodes"] == 1
        with h5py.File(d / f"agentnet_{key}_val_0000.hdf5") as f:
            assert f["data/demo_0"].attrs["task_id"] == val_task_id(key)
        rows = read_split_rows(OutLayout(tmp_path), f"agentnet_{key}")
        verdict = invariants.split_disjointness(invariants.SplitTable(key, rows), [], (0.015, 0.025))
        assert verdict.passed, verdict.summary
        for check in (invariants.action_mask, invariants.causal_cursor):
            assert check(shard_reader.shard_files(d, f"agentnet_{key}")).passed
    repeats = [r for r in read_split_rows(OutLayout(tmp_path), "agentnet_win_mac") if "#" in r["episode_id"]]
    assert repeats and all(r["part"] == "main" for r in repeats)
    texts, thoughts = [], []
    for shard in sorted((tmp_path / "agentnet_win_mac").glob("agentnet_win_mac_0*.hdf5")):
        with h5py.File(shard) as f:
            texts += [t.decode() for n in f["data"] for t in f["data"][n]["action_text"][:]]
            thoughts += [t.decode() for n in f["data"] for t in f["data"][n]["step_thought"][:]]
    assert "Zürich weather ✓\n" in texts and "alt+å" in texts
    assert all(thoughts)


def test_hotkey_names_in_any_case_are_stored_in_pyautogui_lower_case(tmp_path):
    codes = [
        "pyautogui.hotkey(['CTRL', 'c'])",
        "pyautogui.hotkey(keys=['ctrl', 'F'])",
        "pyautogui.hotkey('Alt', 'F4')",
        "pyautogui.press('Enter')",
        "pyautogui.press(['Tab', 'A'])",
    ]
    root = write_agentnet(tmp_path, "ubuntu", [row("k", codes)], [])
    (ep,), stats = run(root, "ubuntu", tmp_path)
    assert [(s.action_type.name, s.text) for s in ep.steps] == [
        ("PRESS_KEY", "ctrl+c"),
        ("PRESS_KEY", "ctrl+f"),
        ("PRESS_KEY", "alt+f4"),
        ("PRESS_ENTER", "enter"),
        ("PRESS_KEY", "tab A"),  # a character pressed alone keeps its case: it types a capital
    ]
    assert not stats.drops


def test_points_land_on_their_targets_in_a_screenshot_smaller_than_the_screen(tmp_path):
    """A 1920x1080 desktop captured at 1280x720: normalized coordinates need no rescaling."""
    from PIL import Image, ImageDraw

    screen, shot_size = (1920, 1080), (1280, 720)
    target = (1500, 800, 1620, 860)  # the button on the real screen, in its px
    cx, cy = (target[0] + target[2]) / 2 / screen[0], (target[1] + target[3]) / 2 / screen[1]
    code = f"pyautogui.click(x={cx:.4f}, y={cy:.4f})"
    root = write_agentnet(
        tmp_path,
        "ubuntu",
        [row("small", [code, "computer.terminate(status='success')"])],
        [],
        skip={"small-0.png"},
    )
    im = Image.new("RGB", shot_size, (250, 250, 252))
    sx, sy = shot_size[0] / screen[0], shot_size[1] / screen[1]
    ImageDraw.Draw(im).rectangle(
        [target[0] * sx, target[1] * sy, target[2] * sx, target[3] * sy], fill=(220, 30, 30)
    )
    im.save(root / REPO / "ubuntu_images" / "small-0.png")
    (ep,), _ = run(root, "ubuntu", tmp_path / "adapter")
    click = ep.steps[0]
    assert (click.observation.width, click.observation.height) == shot_size
    assert click.params[:2] == pytest.approx((0.8125, 0.7685))
    build_directory(AGENTNET, "ubuntu", tmp_path / "out", RawSettings(mode="mirror", mirror=root))
    shards = shard_reader.shard_files(tmp_path / "out" / "agentnet_ubuntu", "agentnet_ubuntu")
    with h5py.File(shards[0]) as f:
        frame = f["data/demo_0/obs/agentview_rgb"][0]
        x, y = f["data/demo_0/action_params"][0, :2]
    assert frame.shape == (720, 1280, 3)
    assert frame[round(y * 719), round(x * 1279)].tolist() == [220, 30, 30]  # on the button


@pytest.mark.parametrize(
    ("index", "kept"),
    [
        (3.0, True),  # a whole float is that index
        (None, False),
        ("3", False),
        (True, False),
        (2.5, False),
        (-1, False),
        (float("nan"), False),
        (float("inf"), False),
        (float("-inf"), False),
        (10**30, False),
    ],
)
def test_a_traj_item_without_a_usable_index_is_counted_not_reordered(tmp_path, index, kept):
    r = row("ix", ["pyautogui.click(x=0.1, y=0.1)", "pyautogui.click(x=0.2, y=0.2)", "computer.wait()"])
    r["traj"][1]["index"] = index
    root = write_agentnet(tmp_path, "ubuntu", [r], [])
    (ep,), stats = run(root, "ubuntu", tmp_path)
    if kept:
        assert [s.desc for s in ep.steps] == ["click(0.10, 0.10)", "wait(1)", "click(0.20, 0.20)"]
        assert not stats.drops
    else:
        assert [s.desc for s in ep.steps] == ["click(0.10, 0.10)", "wait(1)"]
        assert stats.drops == {"malformed_step": 1}


@pytest.mark.parametrize(
    ("score", "kept"),
    [
        (7, True),
        (None, True),
        (0.0, True),
        (10, True),
        (float("nan"), False),
        (float("inf"), False),
        (float("-inf"), False),
        (-1, False),
        (11, False),
        (10**30, False),
        ("7", False),
    ],
)
@pytest.mark.parametrize("key", ["alignment_score", "efficiency_score", "task_difficulty"])
def test_trajectory_scores_are_null_or_on_the_0_to_10_scale(tmp_path, key, score, kept):
    root = write_agentnet(tmp_path, "ubuntu", [row("sc", ["computer.wait()"], **{key: score})], [])
    eps, stats = run(root, "ubuntu", tmp_path)
    assert len(eps) == int(kept) and stats.drops == ({} if kept else {"malformed_record": 1})


def test_hostile_lines_are_counted_never_raised(tmp_path):
    """A line nested past the recursion limit, a line whose JSON has Infinity, a metadata line
    with a task_id that is no string, a huge integer literal in the code."""
    rows = [
        row("ok", ["pyautogui.click(x=1" + "0" * 400 + ", y=0.5)", "computer.wait()"]),
        row("inf", ["pyautogui.click(x=0.5, y=0.5)"], alignment_score=float("inf")),
    ]
    root = write_agentnet(tmp_path, "ubuntu", rows, [{"task_id": 5, "system": "Ubuntu"}])
    traj = root / REPO / "agentnet_ubuntu_test.jsonl"
    traj.write_text(traj.read_text() + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "Infinity" in traj.read_text()
    (ep,), stats = run(root, "ubuntu", tmp_path)
    assert [s.desc for s in ep.steps] == ["wait(1)"]
    assert stats.drops == {
        "coordinate_out_of_range": 1,
        "malformed_record": 1,
        "malformed_json": 1,
        "malformed_metadata_line": 1,
    }
