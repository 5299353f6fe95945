"""The androidcontrol source: its public names, the adapter over its demo part, every action
mapping, a rotation, and what broken input becomes (counted drops, or the partition failing
naming the file)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import NO_MASK, POINT_MASK, ActionType, Observation, SourceRef, step_builder
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.androidcontrol import adapter, demo
from gui_assets.sources.androidcontrol.source import SPEC as ANDROIDCONTROL
from gui_assets.sources.androidcontrol.tfrecord import iter_records
from gui_assets.sources.mirror import RawInputError
from gui_assets_tests.conftest import run_adapter

SHARD = "android_control-00007-of-00020"  # holds episodes 3, 4 and 5


@pytest.fixture(scope="module")
def demo_part(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.write_mirror(tmp_path_factory.mktemp("androidcontrol") / "mirror").parent.parent


@pytest.fixture
def mirror(demo_part: Path, tmp_path: Path) -> Path:
    """A copy of the demo part this test may damage."""
    return Path(shutil.copytree(demo_part, tmp_path / "mirror"))


def test_public_names_are_pinned():
    assert ANDROIDCONTROL.name == "androidcontrol"
    assert ANDROIDCONTROL.repo_id == "google-research/android_control"
    assert ANDROIDCONTROL.partition_keys == ("train", "validation", "test")
    assert [ANDROIDCONTROL.directory(k) for k in ANDROIDCONTROL.partition_keys] == [
        "androidcontrol_train",
        "androidcontrol_validation",
        "androidcontrol_test",
    ]
    assert ANDROIDCONTROL.platform == "mobile" and ANDROIDCONTROL.scrolls
    assert not ANDROIDCONTROL.scroll_gestures and ANDROIDCONTROL.subsplit_attr == "test_subsplits"
    assert [ANDROIDCONTROL.split_role_of(k) for k in ANDROIDCONTROL.partition_keys] == [
        "train",
        "validation",
        "validation",
    ]
    assert ANDROIDCONTROL.license == "apache-2.0"


def test_the_demo_mirror_has_the_release_layout_and_the_same_bytes_every_time(tmp_path: Path):
    first = demo.write_mirror(tmp_path / "a")
    second = demo.write_mirror(tmp_path / "b")
    names = sorted(p.name for p in first.iterdir())
    assert names == [
        "android_control-00000-of-00020",
        "android_control-00007-of-00020",
        "android_control-00019-of-00020",
        "splits.json",
        "test_subsplits.json",
    ]
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in names)
    assert (first / SHARD).read_bytes()[:2] == b"\x1f\x8b"  # GZIP, as the release ships
    assert [r.index for r in iter_records(first / SHARD)] == [0, 1, 2]


@pytest.mark.parametrize(
    ("key", "ids", "drops"),
    [
        ("train", ["0", "1", "9"], {"empty_episode": 1, "unknown_action_verb": 1}),
        ("validation", ["3", "7"], {}),
        ("test", ["4", "6"], {}),
    ],
)
def test_each_partition_takes_its_episodes_from_splits_json(mirror, tmp_path, key, ids, drops):
    episodes, stats = run_adapter(ANDROIDCONTROL, mirror, key, tmp_path)
    assert [e.episode_id for e in episodes] == [f"androidcontrol/{i}" for i in ids]
    assert [e.attrs["upstream_episode_id"] for e in episodes] == ids
    assert dict(stats.drops) == drops
    # Episode 8 sits in a shard but in no split; ids 11 and 21 are in splits.json but in no shard.
    assert stats.episodes_in == len(ids) + sum(drops.values())
    assert all(e.success for e in episodes)


def test_goal_step_instructions_and_test_subsplits_are_kept(mirror, tmp_path):
    (zoho, search, _), _ = run_adapter(ANDROIDCONTROL, mirror, "train", tmp_path / "train")
    assert zoho.instruction == "Open the Zoho Meet app , view the scheduled meetings ."  # verbatim
    assert json.loads(search.attrs["step_instructions"])[3:] == ["Go back to the home screen"] * 3
    assert [json.loads(s.annotations)["step_instruction"] for s in zoho.steps] == [
        "Open the Zoho Meet app",
        "Tap on the meetings tab",
        "Scroll down",
        "Open the first meeting",
    ]
    assert "test_subsplits" not in zoho.attrs
    test, _ = run_adapter(ANDROIDCONTROL, mirror, "test", tmp_path / "test")
    assert [json.loads(e.attrs["test_subsplits"]) for e in test] == [
        ["IDD", "task_unseen"],
        ["IDD", "app_unseen", "category_unseen"],
    ]


def make_step(width: int = 1080, height: int = 2400):
    obs = Observation("0" * 64, "png", 0, 0, width, height)
    return step_builder(obs, SourceRef(adapter.REPO_ID, SHARD, row=0, member="actions[0]"))


@pytest.mark.parametrize(
    ("action", "kind", "params", "mask", "text", "desc"),
    [
        (
            {"action_type": "click", "x": 540, "y": 600},
            ActionType.CLICK,
            (0.5, 0.25),
            POINT_MASK,
            "",
            "click(0.50, 0.25)",
        ),
        (
            {"action_type": "long_press", "x": 270, "y": 2400},
            ActionType.CLICK,
            (0.25, 1.0),
            POINT_MASK,
            "",
            "long_press(0.25, 1.00)",
        ),
        ({"action_type": "scroll", "direction": "down"}, ActionType.SCROLL, (), NO_MASK, "", "scroll(down)"),
        ({"action_type": "scroll", "direction": "left"}, ActionType.SCROLL, (), NO_MASK, "", "scroll(left)"),
        (
            {"action_type": "open_app", "app_name": "Zoho Meeting"},
            ActionType.GOTO,
            (),
            NO_MASK,
            "Zoho Meeting",
            'open_app("Zoho Meeting")',
        ),
        (
            {"action_type": "input_text", "text": "Paramedic news"},
            ActionType.TYPE,
            (),
            NO_MASK,
            "Paramedic news",
            'type("Paramedic news")',
        ),
        ({"action_type": "navigate_home"}, ActionType.PRESS_HOME, (), NO_MASK, "", "press_home()"),
        ({"action_type": "navigate_back"}, ActionType.PRESS_BACK, (), NO_MASK, "", "press_back()"),
        ({"action_type": "wait"}, ActionType.WAIT, (), NO_MASK, "", "wait()"),
    ],
)
def test_every_action_type_maps_as_the_table_says(action, kind, params, mask, text, desc):
    step = adapter.to_step(json.dumps(action, separators=(",", ":")), make_step(), 1080, 2400)
    assert step.action_type == kind
    assert step.params == (*params, *([0.0] * (4 - len(params))))
    assert (step.mask, step.text, step.desc) == (mask, text, desc)
    assert step.ungrounded_reason == ""  # a scroll had no element to locate: it is not ungrounded


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ('{"action_type":"double_tap","x":1,"y":2}', DropReason.UNKNOWN_ACTION_VERB),
        ('{"action_type":"type","x":1,"y":2,"text":"a"}', DropReason.UNKNOWN_ACTION_VERB),  # pre-release
        ('{"action_type":"click","x":1081,"y":2}', DropReason.COORDINATE_OUT_OF_RANGE),
        ('{"action_type":"click","x":-1,"y":2}', DropReason.COORDINATE_OUT_OF_RANGE),
        ('{"action_type":"click","x":"1","y":2}', DropReason.MALFORMED_STEP),
        ('{"action_type":"long_press","x":1}', DropReason.MALFORMED_STEP),
        ('{"action_type":"scroll","direction":"sideways"}', DropReason.MALFORMED_STEP),
        ('{"action_type":"open_app"}', DropReason.MALFORMED_STEP),
        ('{"action_type":"input_text","text":5}', DropReason.MALFORMED_STEP),
        ('{"x":1}', DropReason.MALFORMED_STEP),
        ("[1, 2]", DropReason.MALFORMED_STEP),
        ("click(1, 2)", DropReason.MALFORMED_STEP),
    ],
)
def test_an_action_that_cannot_be_mapped_is_a_named_drop(action, reason):
    with pytest.raises(Drop) as caught:
        adapter.to_step(action, make_step(), 1080, 2400)
    assert caught.value.reason == reason


def test_a_rotation_normalizes_each_step_by_its_own_screenshot(mirror, tmp_path):
    (rotated, _), _ = run_adapter(ANDROIDCONTROL, mirror, "test", tmp_path)
    sizes = [(s.observation.width, s.observation.height) for s in rotated.steps]
    assert sizes == [(360, 800), (800, 360), (800, 360), (800, 360)]
    first, turned = rotated.steps[0], rotated.steps[1]
    assert first.params[:2] == pytest.approx((100 / 360, 150 / 800))
    assert turned.params[:2] == pytest.approx((700 / 800, 300 / 360))


def test_a_landscape_tablet_keeps_its_frame(mirror, tmp_path):
    (tablet, _), _ = run_adapter(ANDROIDCONTROL, mirror, "validation", tmp_path)
    assert {(s.observation.width, s.observation.height) for s in tablet.steps} == {(800, 500)}
    assert [s.desc for s in tablet.steps] == [
        "click(0.78, 0.16)",
        'type("weekly groceries")',
        "click(0.82, 0.24)",
        "scroll(right)",
    ]


# --- broken input ------------------------------------------------------------------------


def rewrite_stream(path: Path, change) -> None:
    """The shard's decompressed record stream changed by `change`, gzip-compressed again."""
    path.write_bytes(gzip.compress(change(gzip.decompress(path.read_bytes())), mtime=0))


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (
            lambda p: rewrite_stream(p, lambda s: s[:40] + bytes([s[40] ^ 1]) + s[41:]),
            "bad data CRC in record #0",
        ),
        (
            lambda p: rewrite_stream(p, lambda s: s[:3] + bytes([s[3] ^ 1]) + s[4:]),
            "bad length CRC in record #0",
        ),
        (lambda p: rewrite_stream(p, lambda s: s[: len(s) - 100]), "truncated record #2"),
        (lambda p: p.write_bytes(p.read_bytes()[:-5000]), "truncated gzip stream"),
        (lambda p: p.write_bytes(p.read_bytes()[:-4] + b"\0\0\0\0"), "bad gzip stream"),  # gzip size field
        (lambda p: p.write_bytes(b""), "empty file"),
    ],
)
@pytest.mark.parametrize("key", ["train", "test"])
def test_a_broken_shard_fails_every_partition_naming_the_file(mirror, tmp_path, damage, problem, key):
    damage(mirror / adapter.REPO_ID / SHARD)
    with pytest.raises(RawInputError) as caught:
        run_adapter(ANDROIDCONTROL, mirror, key, tmp_path)
    assert f"google-research/android_control/{SHARD}" in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("file", "text", "key", "says"),
    [
        ("splits.json", "{not json", "train", r"splits\.json: not readable JSON"),
        ("splits.json", '{"train": ["0"]}', "train", r"splits\.json: expected an object"),
        ("splits.json", '{"train": [0]}', "validation", r"splits\.json: expected an object"),
        ("test_subsplits.json", '{"IDD": 4}', "test", r"test_subsplits\.json: expected an object"),
    ],
)
def test_a_bad_split_file_fails_the_partition_naming_it(mirror, tmp_path, file, text, key, says):
    (mirror / adapter.REPO_ID / file).write_text(text)
    with pytest.raises(RawInputError, match=says):
        run_adapter(ANDROIDCONTROL, mirror, key, tmp_path)


def test_a_missing_splits_file_fails_the_partition_naming_it(mirror, tmp_path):
    (mirror / adapter.REPO_ID / "test_subsplits.json").unlink()
    assert len(run_adapter(ANDROIDCONTROL, mirror, "train", tmp_path / "train")[0]) == 3  # train needs none
    with pytest.raises(RawInputError, match=r"android_control/test_subsplits\.json: missing"):
        run_adapter(ANDROIDCONTROL, mirror, "test", tmp_path / "test")


def test_hub_mode_is_refused_naming_what_to_mirror_and_where():
    mode = ANDROIDCONTROL.hub_mode()
    assert not mode.works
    assert "gs://gresearch/android_control" in mode.detail
    assert "<mirror>/google-research/android_control/" in mode.detail
    with pytest.raises(RawInputError, match="androidcontrol cannot be fetched with GUI_ASSETS_SOURCE=hub"):
        build_directory(ANDROIDCONTROL, "train", Path("/nonexistent"), RawSettings(mode="hub", mirror=Path()))
