"""The guiodyssey adapter: its demo part, every action of the table, the annotation and
screenshot layouts, the split_file option and the public names."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, view_direction
from gui_assets.sources.guiodyssey import demo
from gui_assets.sources.guiodyssey.adapter import REPO_ID, map_action
from gui_assets.sources.guiodyssey.source import SPEC as GUIODYSSEY
from gui_assets.sources.mirror import RawInputError
from gui_assets.sources.spec import OptionError
from gui_assets_tests.conftest import run_adapter

FIXTURES = Path(__file__).parent / "fixtures"
PHONE, TALL, TABLET, DRAG, NO_SHOT = (f"0000000000000{n}" for n in ("101", "102", "203", "304", "405"))


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    demo.write_mirror(tmp_path / "mirror")
    return tmp_path / "mirror"


def ids(episodes: list) -> list[str]:
    return [e.episode_id for e in episodes]


# --- public names ---------------------------------------------------------------------------


def test_public_names_are_pinned():
    assert GUIODYSSEY.name == "guiodyssey" and GUIODYSSEY.repo_id == "OpenGVLab/GUI-Odyssey"
    assert GUIODYSSEY.partition_keys == ("train", "test")
    assert [GUIODYSSEY.directory(k) for k in GUIODYSSEY.partition_keys] == [
        "guiodyssey_train",
        "guiodyssey_test",
    ]
    assert GUIODYSSEY.platform_of("train") == "mobile" and GUIODYSSEY.scrolls
    assert (GUIODYSSEY.split_role_of("train"), GUIODYSSEY.split_role_of("test")) == ("train", "validation")
    assert GUIODYSSEY.license == "cc-by-4.0"
    assert GUIODYSSEY.resolve_options({}) == {"split_file": "random_split"}


# --- the demo part ---------------------------------------------------------------------------


def test_train_of_the_demo_keeps_two_episodes_and_counts_each_drop(mirror, tmp_path):
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert ids(episodes) == [f"guiodyssey/{PHONE}", f"guiodyssey/{TALL}"]
    assert stats.episodes_in == 4
    assert stats.drops == {"unknown_action_verb": 1, "missing_screenshot": 1}  # DRAG, and a lost frame
    phone, tall = episodes
    assert [s.desc for s in phone.steps] == [
        "click(0.50, 0.14)",
        'type("weather Zürich")',
        "scroll(down)",  # the finger went up: the view moves down
        "long_press(0.32, 0.46)",
        "stop()",
    ]
    assert [s.action_type for s in tall.steps] == [
        ActionType.PRESS_HOME,
        ActionType.PRESS_KEY,
        ActionType.PRESS_BACK,
        ActionType.SCROLL,
        ActionType.TYPE,
        ActionType.FAIL,
    ]
    assert tall.steps[1].text == "KEY_APPSELECT" and tall.steps[3].desc == "scroll(right)"
    assert (phone.success, tall.success) == (True, False)
    assert "episode_id" not in phone.attrs and phone.attrs["split_file"] == "random_split"
    assert phone.attrs["apps"] == '["Chrome", "Keep"]' and phone.attrs["category"] == "Information_Management"
    assert phone.attrs["device_name"] == "Demo Phone" and tall.attrs["upstream_split"] == "train"
    assert json.loads(tall.steps[5].annotations)["ps"] == "Item not found"  # why it was given up
    assert phone.steps[0].ref.file == f"annotations/{PHONE}.json" and phone.steps[0].ref.member == "steps[0]"


def test_test_of_the_demo_is_the_landscape_tablet_at_its_native_size(mirror, tmp_path):
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "test", tmp_path)
    assert ids(episodes) == [f"guiodyssey/{TABLET}"]
    assert stats.drops == {"missing_input_metadata": 1}  # a split entry no layout answers
    frames = {(s.observation.width, s.observation.height) for s in episodes[0].steps}
    assert frames == {(640, 400)}
    assert episodes[0].steps[1].desc == "scroll(up)"  # the finger went down


@pytest.mark.parametrize(
    ("split_file", "train", "test"),
    [
        ("app_split", [PHONE, TABLET], [TALL]),
        ("device_split", [PHONE, TALL], [TABLET]),
        ("task_split", [TALL, TABLET], [PHONE]),
    ],
)
def test_the_split_file_option_chooses_the_lists(mirror, tmp_path, split_file, train, test):
    options = {"split_file": split_file}
    for key, expected in (("train", train), ("test", test)):
        episodes, _ = run_adapter(GUIODYSSEY, mirror, key, tmp_path / key, options)
        assert ids(episodes) == [f"guiodyssey/{i}" for i in expected]
        assert {e.attrs["split_file"] for e in episodes} == {split_file}


def test_an_unknown_split_file_is_refused_and_a_missing_one_fails_by_name(mirror, tmp_path):
    with pytest.raises(OptionError, match="split_file must be one of random_split"):
        run_adapter(GUIODYSSEY, mirror, "train", tmp_path / "a", {"split_file": "my_split"})
    (mirror / REPO_ID / "splits" / "task_split.json").unlink()
    with pytest.raises(RawInputError, match=r"splits/task_split\.json is missing"):
        run_adapter(GUIODYSSEY, mirror, "train", tmp_path / "b", {"split_file": "task_split"})


# --- actions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "info", "kind", "params", "mask", "text", "name"),
    [
        ("CLICK", [[374, 621], [374, 621]], ActionType.CLICK, (0.374, 0.621), POINT_MASK, "", "click"),
        ("CLICK", [[0, 1000]], ActionType.CLICK, (0.0, 1.0), POINT_MASK, "", "click"),
        (
            "LONG_PRESS",
            [[882, 837], [882, 837]],
            ActionType.CLICK,
            (0.882, 0.837),
            POINT_MASK,
            "",
            "long_press",
        ),
        ("CLICK", "KEY_HOME", ActionType.PRESS_HOME, (), NO_MASK, "", ""),
        ("LONG_PRESS", "KEY_BACK", ActionType.PRESS_BACK, (), NO_MASK, "", ""),
        ("CLICK", "KEY_APPSELECT", ActionType.PRESS_KEY, (), NO_MASK, "KEY_APPSELECT", ""),
        ("TEXT", "Todoist", ActionType.TYPE, (), NO_MASK, "Todoist", ""),
        ("TYPE", "Todoist", ActionType.TYPE, (), NO_MASK, "Todoist", ""),
        ("COMPLETE", "", ActionType.STOP, (), NO_MASK, "", ""),
        ("INCOMPLETE", "", ActionType.FAIL, (), NO_MASK, "", ""),
    ],
)
def test_each_action_of_the_table(action, info, kind, params, mask, text, name):
    mapped = map_action(action, info)
    assert (mapped.kind, mapped.params, mapped.mask, mapped.text, mapped.name) == (
        kind,
        params,
        mask,
        text,
        name,
    )


@pytest.mark.parametrize(
    ("finger", "view"),
    [
        ([[500, 800], [510, 300]], "down"),  # finger up: the content below comes into view
        ([[500, 300], [490, 800]], "up"),
        ([[850, 500], [150, 520]], "right"),  # finger left
        ([[150, 500], [850, 480]], "left"),
    ],
)
def test_a_swipe_is_a_scroll_gesture_described_by_the_view_direction(finger, view):
    mapped = map_action("SCROLL", finger)
    (x1, y1), (x2, y2) = finger
    assert mapped.kind == ActionType.SCROLL and mapped.mask == SPAN_MASK
    assert mapped.params == (x1 / 1000, y1 / 1000, x2 / 1000, y2 / 1000)
    assert view_direction(mapped.params) == view  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "info", "reason"),
    [
        ("DRAG", [[1, 2], [3, 4]], DropReason.UNKNOWN_ACTION_VERB),
        ("CLICK", "KEY_VOLUME_UP", DropReason.UNKNOWN_ACTION_VERB),
        (None, "", DropReason.UNKNOWN_ACTION_VERB),
        ("CLICK", [], DropReason.MALFORMED_STEP),
        ("CLICK", [[1, 2, 3]], DropReason.MALFORMED_STEP),
        ("CLICK", [[True, 2]], DropReason.MALFORMED_STEP),
        ("CLICK", [[1001, 5]], DropReason.COORDINATE_OUT_OF_RANGE),
        ("CLICK", [[-1, 5]], DropReason.COORDINATE_OUT_OF_RANGE),
        ("CLICK", [[float("nan"), 5]], DropReason.COORDINATE_OUT_OF_RANGE),
        ("SCROLL", [[500, 500]], DropReason.MALFORMED_STEP),
        ("SCROLL", [[500, 500], [500, 500]], DropReason.EMPTY_SCROLL),
        ("TEXT", "", DropReason.MALFORMED_STEP),  # four real episodes type nothing
        ("TEXT", ["a"], DropReason.MALFORMED_STEP),
    ],
)
def test_what_cannot_be_mapped_is_dropped_by_reason(action, info, reason):
    with pytest.raises(Drop) as dropped:
        map_action(action, info)
    assert dropped.value.reason == reason


def test_the_real_annotation_excerpt_maps_its_tap(mirror, tmp_path):
    """A real 2025 annotation (see fixtures/PROVENANCE.md): its id stays a string, its tap is
    press and release at one point."""
    real = json.loads((FIXTURES / "annotation_excerpt_6565803623678743.json").read_text())
    real["steps"].append(
        {"step": 1, "screenshot": "6565803623678743_1.png", "action": "COMPLETE", "info": ""}
    )
    repo = mirror / REPO_ID
    (repo / "annotations" / "6565803623678743.json").write_text(json.dumps(real))
    (repo / "splits" / "random_split.json").write_text(
        json.dumps({"train": ["6565803623678743.json"], "test": []})
    )
    shutil.rmtree(repo / "zips")
    (repo / "screenshots").mkdir()
    frame = mirror / "frame.png"
    frame.write_bytes(demo.screenshots()[f"{PHONE}_0.png"])
    for step in (0, 1):
        shutil.copy(frame, repo / "screenshots" / f"6565803623678743_{step}.png")
    (episode,), _ = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert episode.episode_id == "guiodyssey/6565803623678743" and episode.success
    assert episode.steps[0].params[:2] == (0.374, 0.621) and episode.steps[0].desc == "click(0.37, 0.62)"
    assert json.loads(episode.steps[0].annotations)["ps"] == "[(374, 621)]"
    assert episode.attrs["apps"] == '["Chrome", "X"]' and episode.attrs["device_name"] == "Medium Phone"


# --- layouts ----------------------------------------------------------------------------------


def test_annotations_from_the_zip_when_the_folder_is_absent(mirror, tmp_path):
    shutil.rmtree(mirror / REPO_ID / "annotations")
    episodes, _ = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert ids(episodes) == [f"guiodyssey/{PHONE}", f"guiodyssey/{TALL}"]
    assert episodes[0].steps[0].ref.file == "zips/annotations.zip"
    assert episodes[0].steps[0].ref.member == f"annotations/{PHONE}.json:steps[0]"


def test_annotation_zip_members_refused_or_damaged_drop_their_episode_by_reason(mirror, tmp_path):
    repo = mirror / REPO_ID
    shutil.rmtree(repo / "annotations")
    with zipfile.ZipFile(repo / "zips" / "annotations.zip", "w") as z:
        z.writestr(f"annotations/{PHONE}.json", json.dumps(demo.annotation(PHONE)))
        z.writestr(f"../{TALL}.json", json.dumps(demo.annotation(TALL)))  # an unsafe path
        z.writestr(f"annotations/{TABLET}.json", json.dumps(demo.annotation(TABLET)))
        z.writestr(f"annotations/{DRAG}.json", json.dumps(demo.annotation(DRAG)))
    raw = bytearray((repo / "zips" / "annotations.zip").read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
        tablet = z.getinfo(f"annotations/{TABLET}.json")
    raw[tablet.header_offset + 30 + len(tablet.filename) + 5] ^= 0xFF  # its bytes fail their CRC
    central = raw.find(f"annotations/{DRAG}.json".encode(), raw.find(b"PK\x01\x02")) - 46
    raw[central + 8] |= 0x1  # marked encrypted
    (repo / "zips" / "annotations.zip").write_bytes(bytes(raw))
    split = {"train": [f"{i}.json" for i in (PHONE, TALL, TABLET, DRAG)], "test": []}
    (repo / "splits" / "random_split.json").write_text(json.dumps(split))
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert ids(episodes) == [f"guiodyssey/{PHONE}"]
    assert stats.drops == {
        "unsafe_archive_member": 1,
        "truncated_archive_member": 1,
        "encrypted_archive_member": 1,
    }


@pytest.mark.parametrize("name", ["all_anno.json", "all_annot.json"])
def test_annotations_from_the_all_in_one_file(mirror, tmp_path, name):
    repo = mirror / REPO_ID
    every = [demo.annotation(i) for i in demo.EPISODES]
    every[0]["episode_id"] = int(every[0]["episode_id"])  # a re-export that lost the zeros
    (repo / name).write_text(json.dumps(every))
    shutil.rmtree(repo / "annotations")
    (repo / "zips" / "annotations.zip").unlink()
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert ids(episodes) == [f"guiodyssey/{PHONE}", f"guiodyssey/{TALL}"]
    assert episodes[0].steps[0].ref.file == name and episodes[0].steps[0].ref.member == "[0]:steps[0]"
    assert stats.drops == {"unknown_action_verb": 1, "missing_screenshot": 1}


def test_no_annotations_anywhere_fails_the_partition(mirror, tmp_path):
    shutil.rmtree(mirror / REPO_ID / "annotations")
    (mirror / REPO_ID / "zips" / "annotations.zip").unlink()
    with pytest.raises(RawInputError, match="no annotations: neither annotations/"):
        run_adapter(GUIODYSSEY, mirror, "train", tmp_path)


def _screenshots_as(mirror: Path, layout: str) -> None:
    repo = mirror / REPO_ID
    for part in (repo / "zips").glob("screenshots_*"):
        part.unlink()
    images = demo.screenshots()
    if layout == "plain_zip":
        with zipfile.ZipFile(repo / "zips" / "screenshots.zip", "w") as z:
            for name, data in images.items():
                z.writestr(f"screenshots/{name}", data)
        return
    for k, (name, data) in enumerate(sorted(images.items())):
        folder = repo / "screenshots" / (f"data_{k % 3}" if layout == "data_folders" else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


@pytest.mark.parametrize("layout", ["flat_folder", "data_folders", "plain_zip"])
def test_every_screenshot_layout_gives_the_same_episodes(mirror, tmp_path, layout):
    parts, _ = run_adapter(GUIODYSSEY, mirror, "train", tmp_path / "parts")
    _screenshots_as(mirror, layout)
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "train", tmp_path / layout)
    assert ids(episodes) == ids(parts)
    assert [s.observation for e in episodes for s in e.steps] == [
        s.observation for e in parts for s in e.steps
    ]
    assert stats.drops == {"unknown_action_verb": 1, "missing_screenshot": 1}


def test_the_demo_cuts_a_screenshot_across_its_byte_ranges():
    data, cut = demo.screenshot_zip()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        spans = [
            (i.header_offset, i.header_offset + 30 + len(i.filename) + i.compress_size) for i in z.infolist()
        ]
    assert any(start < cut < end for start, end in spans)


def test_a_missing_screenshot_part_fails_the_partition_naming_it(mirror, tmp_path):
    zips = mirror / REPO_ID / "zips"
    data = (zips / "screenshots_01").read_bytes() + (zips / "screenshots_02").read_bytes()
    third = len(data) // 3
    for n, chunk in enumerate((data[:third], data[third : 2 * third], data[2 * third :]), start=1):
        (zips / f"screenshots_{n:02d}").write_bytes(chunk)
    (zips / "screenshots_02").unlink()
    with pytest.raises(RawInputError, match=r"zip parts missing in .*zips: screenshots_02"):
        run_adapter(GUIODYSSEY, mirror, "train", tmp_path)


def test_a_truncated_screenshot_zip_fails_the_partition_naming_its_parts(mirror, tmp_path):
    last = mirror / REPO_ID / "zips" / "screenshots_02"
    last.write_bytes(last.read_bytes()[:-30])  # the end record is cut
    with pytest.raises(
        RawInputError, match=r"2 part\(s\) screenshots_01, screenshots_02 in .*zips\): no end of central"
    ):
        run_adapter(GUIODYSSEY, mirror, "train", tmp_path)


def test_broken_records_are_each_dropped_and_counted_once(mirror, tmp_path):
    repo = mirror / REPO_ID
    folder = repo / "annotations"
    after_end = demo.annotation(PHONE)
    after_end["episode_id"] = "0000000000000501"
    after_end["steps"].append(dict(after_end["steps"][0], step=5))  # a tap after COMPLETE
    (folder / "0000000000000501.json").write_text(json.dumps(after_end))
    no_steps = dict(demo.annotation(PHONE), episode_id="0000000000000502", steps=[])
    (folder / "0000000000000502.json").write_text(json.dumps(no_steps))
    (folder / "0000000000000503.json").write_text('{"episode_id": "0000000000000503", "steps": [')
    (folder / "0000000000000504.json").write_text(json.dumps(demo.annotation(TALL)))  # holds another id
    no_ending = dict(demo.annotation(PHONE), episode_id="0000000000000505")
    no_ending["steps"] = no_ending["steps"][:2]
    (folder / "0000000000000505.json").write_text(json.dumps(no_ending))
    listed = [f"000000000000050{n}.json" for n in range(1, 6)]
    split = {"train": [*listed, 42, "../../etc/0000000000000999.json", "not-an-id.json"], "test": []}
    (repo / "splits" / "random_split.json").write_text(json.dumps(split))
    episodes, stats = run_adapter(GUIODYSSEY, mirror, "train", tmp_path)
    assert ids(episodes) == ["guiodyssey/0000000000000505"] and not episodes[0].success
    assert stats.episodes_in == 8
    assert stats.drops == {
        "malformed_step": 1,
        "empty_episode": 1,
        "malformed_json": 1,
        "malformed_record": 3,  # another id inside; 42 and not-an-id.json (no annotation file names)
        "missing_input_metadata": 1,  # a path is looked up by its file name only: nothing holds it
    }
