"""AndroidControl (`google-research/android_control`, a storage bucket, not the hub): phone and
tablet demonstrations as GZIP TFRecord files, one `tf.train.Example` per episode.

Files (every partition reads all of them; an episode's partition comes from splits.json, never
from the shard it sits in):
    android_control-NNNNN-of-00020   the episodes (any subset of the twenty may be present)
    splits.json                      {"train", "validation", "test"}: lists of integer episode ids
    test_subsplits.json              {"IDD", "app_unseen", "task_unseen", "category_unseen"}:
                                     overlapping subsets of test (read for the test partition only)

An episode record holds `episode_id`, `goal` (the instruction, kept verbatim, its " ," and " ."
included), `screenshots` (PNG; screenshots[t] is o_t, the last one the terminal frame, which no
step carries), `screenshot_widths` / `screenshot_heights` (per screenshot: a rotation changes
them inside an episode), `actions` (JSON, one fewer than the screenshots), `step_instructions`
(one per action; one instruction spanning several actions is repeated) and
`accessibility_trees` (never decoded: nothing in the output needs them).

Mapping (x, y are pixels of that step's own screenshot, normalized by its declared size):
click -> CLICK; long_press -> CLICK with `long_press(...)` as action_desc; scroll {direction} ->
SCROLL with a zero mask and zero params (no point or travel is recorded: never invented), the
recorded view direction in action_desc (`core.ir.direction_scroll`); open_app -> GOTO with the app
name as action_text (`open_app("...")`); input_text -> TYPE, mask zero (no point recorded);
navigate_home -> PRESS_HOME; navigate_back -> PRESS_BACK; wait -> WAIT. Every episode is a
successful demonstration (no terminal action exists in the data): reward 1 on its last step.

Per-step text: the step instruction is kept on each step (`annotations`: {"step_instruction"})
and on the demo as the attr `step_instructions` (a JSON list, one per step). Attrs also carry
`upstream_episode_id` (the release's integer `episode_id`; the demo's own `episode_id` attr is
`androidcontrol/<it>`) and, on test episodes, `test_subsplits` (a JSON list of the
sub-splits holding the episode).

A shard whose framing is broken (a bad length or data CRC, a truncated record or gzip stream,
bad gzip data, an empty file), splits.json or test_subsplits.json missing or not of their shape
fails the partition naming the file. A bad step drops its whole episode (a mobile episode
without one of its actions is not the demonstration), counted once by the step's reason.

Drop reasons:
    malformed_record          an Example that does not parse, or lacks/mistypes a feature, or whose
                              lists disagree in length, or whose PNG is not its declared size
                              (an unparsable Example is counted in every partition: its id is unknown)
    duplicate_id              a second record with an episode_id already read
    malformed_step            an action that is not a JSON object of its type's fields
    unknown_action_verb       an action_type outside the eight the release documents
    coordinate_out_of_range   a click or long press outside its screenshot
    undecodable_image         screenshot bytes that do not decode
    unsupported_image_format  screenshot bytes that are no PNG, JPEG or WebP
    image_too_large           a screenshot beyond the largest this source produces (a forged header)
    empty_episode             a record without actions
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import (
    NO_MASK,
    POINT_MASK,
    VIEW_DIRECTIONS,
    ActionType,
    GuiEpisode,
    GuiStep,
    SourceRef,
    direction_scroll,
    step_builder,
)
from gui_assets.sources import assembly
from gui_assets.sources.androidcontrol.tfrecord import Example, ExampleError, TFRecordError, iter_examples
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawFile, RawInputError, RawPartition

REPO_ID = "google-research/android_control"
PARTITIONS = ("train", "validation", "test")
SHARDS = "android_control-?????-of-?????"
SPLITS_FILE = "splits.json"
SUBSPLITS_FILE = "test_subsplits.json"
SUBSPLITS_ATTR = "test_subsplits"
DROPS = frozenset(
    {
        DropReason.MALFORMED_RECORD,
        DropReason.DUPLICATE_ID,
        DropReason.MALFORMED_STEP,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.COORDINATE_OUT_OF_RANGE,
    }
    | assembly.DROPS
)
_NO_FIELDS = {
    "navigate_home": ActionType.PRESS_HOME,
    "navigate_back": ActionType.PRESS_BACK,
    "wait": ActionType.WAIT,
}
_POINTS = ("click", "long_press")

log = logging.getLogger(__name__)


def file_patterns(partition: str) -> list[str]:
    return [SHARDS, SPLITS_FILE, *([SUBSPLITS_FILE] if partition == "test" else [])]


def _read_json(raw: RawPartition, name: str) -> Any:
    found = raw.find(name)
    if not found:
        raise RawInputError(f"{raw.repo_id}/{name}: missing (it assigns the episodes to partitions)")
    try:
        return json.loads(Path(found[0].local).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RawInputError(f"{raw.repo_id}/{name}: not readable JSON ({e})") from None


def _id_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def read_splits(raw: RawPartition) -> set[int]:
    """The episode ids splits.json assigns to this partition; RawInputError naming the file."""
    splits = _read_json(raw, SPLITS_FILE)
    if not isinstance(splits, dict) or not _id_list(splits.get(raw.partition)):
        raise RawInputError(
            f"{raw.repo_id}/{SPLITS_FILE}: expected an object whose {raw.partition!r} is a list of "
            "integer episode ids"
        )
    return set(splits[raw.partition])


def read_subsplits(raw: RawPartition) -> dict[int, list[str]]:
    """Test episode id -> the sub-splits of test_subsplits.json holding it (empty outside test)."""
    if raw.partition != "test":
        return {}
    subsplits = _read_json(raw, SUBSPLITS_FILE)
    if not isinstance(subsplits, dict) or not all(_id_list(ids) for ids in subsplits.values()):
        raise RawInputError(
            f"{raw.repo_id}/{SUBSPLITS_FILE}: expected an object of sub-split name -> list of integer ids"
        )
    member: dict[int, list[str]] = {}
    for name in sorted(subsplits):
        for episode_id in subsplits[name]:
            member.setdefault(episode_id, []).append(name)
    return member


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Every record of every shard whose episode_id splits.json puts in this partition."""
    raw = run.raw
    if raw.partition not in PARTITIONS:
        raise RawInputError(f"{raw.repo_id}: no partition {raw.partition!r} (known: {', '.join(PARTITIONS)})")
    wanted = read_splits(raw)
    subsplits = read_subsplits(raw)
    shards = sorted(raw.find(SHARDS), key=lambda f: f.path)
    if not shards:
        raise RawInputError(f"{raw.repo_id}: no {SHARDS} file")
    seen: set[int] = set()
    for shard in shards:
        for row, example in _examples(raw, shard):
            if isinstance(example, ExampleError):
                run.reject(DropReason.MALFORMED_RECORD)
                continue
            try:
                episode_id = example.single_int("episode_id")
            except ExampleError:
                run.reject(DropReason.MALFORMED_RECORD)
                continue
            if episode_id not in wanted:
                continue
            run.stats.episodes_in += 1
            if episode_id in seen:
                run.drop(DropReason.DUPLICATE_ID)
                continue
            seen.add(episode_id)
            episode = _episode(run, example, episode_id, SourceRef(REPO_ID, shard.path, row=row), subsplits)
            if episode is not None:
                yield episode
    if missing := len(wanted - seen):
        log.info(
            "%s %s: %d episode(s) of splits.json are in no shard present", REPO_ID, raw.partition, missing
        )


def _examples(raw: RawPartition, shard: RawFile) -> Iterator[tuple[int, Example | ExampleError]]:
    """(record index, its Example or why not) of one shard; a broken shard fails the partition."""
    try:
        for record, example in iter_examples(shard.local):
            yield record.index, example
    except TFRecordError as e:
        where = "" if e.offset is None else f" at byte {e.offset}"
        raise RawInputError(f"{raw.repo_id}/{shard.path}{where}: {e.problem}") from None


def _episode(
    run: AdapterRun, example: Example, episode_id: int, ref: SourceRef, subsplits: dict[int, list[str]]
) -> GuiEpisode | None:
    """One record as an episode; None with its drop counted when it cannot be one."""
    try:
        goal = example.single_text("goal")
        screenshots = example.bytes_list("screenshots")
        widths = example.int64_list("screenshot_widths")
        heights = example.int64_list("screenshot_heights")
        actions = example.text_list("actions")
        instructions = example.text_list("step_instructions")
    except ExampleError:
        run.drop(DropReason.MALFORMED_RECORD)
        return None
    if not (len(screenshots) == len(widths) == len(heights) == len(actions) + 1 == len(instructions) + 1):
        run.drop(DropReason.MALFORMED_RECORD)
        return None
    steps = Steps()
    try:
        for t, (action, instruction) in enumerate(zip(actions, instructions, strict=True)):
            obs = run.observe(screenshots[t])
            if (obs.width, obs.height) != (widths[t], heights[t]):
                raise Drop(DropReason.MALFORMED_RECORD, f"screenshot {t} is not its declared size")
            step_ref = SourceRef(ref.repo_id, ref.file, row=ref.row, member=f"actions[{t}]")
            note = json.dumps({"step_instruction": instruction}, ensure_ascii=False)
            steps.add(to_step(action, step_builder(obs, step_ref, annotations=note), obs.width, obs.height))
    except Drop as e:
        run.drop(e.reason)
        return None
    attrs = {
        "upstream_episode_id": str(episode_id),
        "step_instructions": json.dumps(instructions, ensure_ascii=False),
    }
    if run.raw.partition == "test":
        attrs[SUBSPLITS_ATTR] = json.dumps(subsplits.get(episode_id, []))
    return run.episode(str(episode_id), goal, steps, True, attrs)


def _pixel(value: Any, size: int) -> float:
    """A pixel coordinate as a share of `size`; Drop when it is no number or off the screen."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Drop(DropReason.MALFORMED_STEP, f"coordinate {value!r}")
    if not 0 <= value <= size:
        raise Drop(DropReason.COORDINATE_OUT_OF_RANGE, f"{value} of {size}")
    return value / size


def _text(action: dict[str, Any], key: str) -> str:
    value = action.get(key)
    if not isinstance(value, str):
        raise Drop(DropReason.MALFORMED_STEP, f"{action.get('action_type')} without a string {key}")
    return value


def to_step(action_json: str, make: Callable[..., GuiStep], width: int, height: int) -> GuiStep:
    """One `actions` element as a step made by `make` (a `step_builder`); Drop when it cannot be."""
    try:
        action = json.loads(action_json)
    except (ValueError, RecursionError):
        raise Drop(DropReason.MALFORMED_STEP, "action is not JSON") from None
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        raise Drop(DropReason.MALFORMED_STEP, "action is not an object with an action_type")
    kind = action["action_type"]
    if kind in _POINTS:
        point = (_pixel(action.get("x"), width), _pixel(action.get("y"), height))
        return make(ActionType.CLICK, point, POINT_MASK, name=kind)
    if kind == "scroll":
        direction = action.get("direction")
        if direction not in VIEW_DIRECTIONS:
            raise Drop(DropReason.MALFORMED_STEP, f"scroll direction {direction!r}")
        return direction_scroll(make, direction)
    if kind == "open_app":
        return make(ActionType.GOTO, (), NO_MASK, text=_text(action, "app_name"), name="open_app")
    if kind == "input_text":
        return make(ActionType.TYPE, (), NO_MASK, text=_text(action, "text"))
    if kind in _NO_FIELDS:
        return make(_NO_FIELDS[kind])
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, kind)
