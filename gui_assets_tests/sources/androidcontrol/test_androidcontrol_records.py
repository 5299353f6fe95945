"""androidcontrol records the adapter cannot use: each a counted drop by its reason, the rest of
the shard still read."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from gui_assets.sources.androidcontrol import adapter
from gui_assets.sources.androidcontrol.source import SPEC as ANDROIDCONTROL
from gui_assets.sources.androidcontrol.tfrecord import serialize_example, write_records
from gui_assets.sources.demo_render import encode, render_page
from gui_assets_tests.conftest import run_adapter

SCREEN = encode(render_page(1, 90, 200, [], "phone"), "png")
CLICK = '{"action_type":"click","x":45,"y":100}'


def features(number: int, **changes: Any) -> dict[str, Any]:
    """A good two-step record (90x200 screens) with `changes` applied (None removes a feature)."""
    record: dict[str, Any] = {
        "episode_id": [number],
        "goal": ["Tap twice ."],
        "screenshots": [SCREEN] * 3,
        "accessibility_trees": [b""] * 3,
        "screenshot_widths": [90] * 3,
        "screenshot_heights": [200] * 3,
        "actions": [CLICK, '{"action_type":"wait"}'],
        "step_instructions": ["Tap the middle", "Wait"],
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def write_mirror(root: Path, records: list[bytes], train: list[int]) -> Path:
    repo = root / adapter.REPO_ID
    repo.mkdir(parents=True)
    write_records(repo / "android_control-00003-of-00020", records)
    (repo / "splits.json").write_text(json.dumps({"train": train, "validation": [], "test": []}))
    return root


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"goal": None}, "malformed_record"),
        ({"goal": [5]}, "malformed_record"),
        ({"actions": None}, "malformed_record"),
        ({"screenshot_widths": [90] * 2}, "malformed_record"),
        ({"step_instructions": ["Tap the middle"]}, "malformed_record"),
        ({"screenshots": [SCREEN] * 4}, "malformed_record"),
        ({"screenshot_widths": [100] * 3}, "malformed_record"),  # the PNG is not its declared size
        ({"actions": [CLICK, '{"action_type":"flick"}']}, "unknown_action_verb"),
        ({"actions": [CLICK, '{"action_type":"click","x":45,"y":201}']}, "coordinate_out_of_range"),
        ({"actions": [CLICK, "not json"]}, "malformed_step"),
        ({"screenshots": [SCREEN, b"\x89PNG\r\n\x1a\nbroken", SCREEN]}, "undecodable_image"),
        ({"screenshots": [SCREEN, b"GIF89a......", SCREEN]}, "unsupported_image_format"),
        ({"actions": [], "step_instructions": [], "screenshots": [SCREEN]}, "empty_episode"),
    ],
)
def test_a_bad_record_is_one_counted_drop_and_the_next_is_read(tmp_path, changes, reason):
    if "screenshots" in changes and "screenshot_widths" not in changes:
        n = len(changes["screenshots"])
        changes = {**changes, "screenshot_widths": [90] * n, "screenshot_heights": [200] * n}
    records = [serialize_example(features(1, **changes)), serialize_example(features(2))]
    episodes, stats = run_adapter(
        ANDROIDCONTROL, write_mirror(tmp_path / "m", records, [1, 2]), "train", tmp_path
    )
    assert [e.episode_id for e in episodes] == ["androidcontrol/2"]
    assert dict(stats.drops) == {reason: 1} and stats.episodes_in == 2


def test_an_unparsable_example_and_a_repeated_id_are_counted(tmp_path):
    records = [b"\x0a\xff", serialize_example(features(1)), serialize_example(features(1, goal=["again"]))]
    episodes, stats = run_adapter(
        ANDROIDCONTROL, write_mirror(tmp_path / "m", records, [1]), "train", tmp_path
    )
    assert [(e.episode_id, e.instruction) for e in episodes] == [("androidcontrol/1", "Tap twice .")]
    assert dict(stats.drops) == {"malformed_record": 1, "duplicate_id": 1} and stats.episodes_in == 3


def test_a_record_without_an_episode_id_is_a_malformed_record(tmp_path):
    records = [serialize_example(features(1, episode_id=None)), serialize_example(features(2))]
    episodes, stats = run_adapter(
        ANDROIDCONTROL, write_mirror(tmp_path / "m", records, [2]), "train", tmp_path
    )
    assert [e.episode_id for e in episodes] == ["androidcontrol/2"]
    assert dict(stats.drops) == {"malformed_record": 1}


def test_a_click_on_the_far_edge_is_on_the_screen(tmp_path):
    edge = features(1, actions=['{"action_type":"click","x":90,"y":200}', '{"action_type":"wait"}'])
    (episode,), _ = run_adapter(
        ANDROIDCONTROL, write_mirror(tmp_path / "m", [serialize_example(edge)], [1]), "train", tmp_path
    )
    assert episode.steps[0].params == (1.0, 1.0, 0.0, 0.0)


def damaged_features(number: int, rng: random.Random) -> dict[str, Any]:
    """A good record with one feature removed, emptied, retyped or its values mangled."""
    record = features(number)
    name = rng.choice(sorted(record))
    how = rng.choice(["remove", "empty", "ints", "texts", "truncate", "garble"])
    values = list(record[name])
    if how == "remove":
        record[name] = None
    elif how == "empty":
        record[name] = []
    elif how == "ints":
        record[name] = [rng.randrange(-(2**63), 2**63) for _ in values]
    elif how == "texts":
        record[name] = [
            rng.choice(["", "{}", "null", '{"action_type":5}', "\ud800".encode("utf-8", "surrogatepass")])
            for _ in values
        ]
    elif how == "truncate" and values:
        i = rng.randrange(len(values))
        v = values[i]
        values[i] = v[: rng.randrange(len(v))] if isinstance(v, bytes | str) and v else v
        record[name] = values
    elif values:
        i = rng.randrange(len(values))
        v = values[i]
        if isinstance(v, bytes) and v:
            at = rng.randrange(len(v))
            values[i] = v[:at] + bytes([v[at] ^ 0xFF]) + v[at + 1 :]
        record[name] = values
    return {k: v for k, v in record.items() if v is not None}


def test_damaged_records_are_kept_or_counted_never_a_crash(tmp_path):
    """Records whose framing is sound but whose content is damaged (what a CRC cannot catch: a
    publisher's bug): every record is an episode or one counted drop, and the run ends."""
    rng = random.Random(7)
    records = [serialize_example(damaged_features(n, rng)) for n in range(60)]
    mirror = write_mirror(tmp_path / "m", records, list(range(60)))
    episodes, stats = run_adapter(ANDROIDCONTROL, mirror, "train", tmp_path)
    # A record whose episode_id was damaged into another number is in no split: not counted.
    assert 55 <= stats.episodes_in <= 60 and len(episodes) + sum(stats.drops.values()) == stats.episodes_in
    assert set(stats.drops) <= {r.value for r in adapter.DROPS}
    assert len(stats.drops) >= 4 and episodes  # the damage reached several rules, and some survived
