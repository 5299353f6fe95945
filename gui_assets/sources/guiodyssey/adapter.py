"""GUI-Odyssey (`OpenGVLab/GUI-Odyssey`): cross-app navigation on Android phones and tablets.

Files (every partition; the split file chooses the episodes):
    splits/{random,app,device,task}_split.json   {"train": [...], "test": [...]} of `<id>.json`
    annotations/<episode_id>.json                 one episode (else zips/annotations.zip, else
                                                  all_anno.json / all_annot.json: `annotations`)
    screenshots/ (flat or data_<k>/), screenshots/screenshots.z01.. + .zip, zips/screenshots.zip,
    or zips/screenshots_01, _02, ...              the PNGs by name: `screenshots`

The source option `split_file` names the split file (default `random_split`); the partition key
is its list, read in its order. The instruction is `task_info.instruction` (the concrete task),
else `task_info.task`; the other labels are attrs (task, category, meta_task, apps as JSON,
device_name, product, release_version, sdk_version, device_w, device_h, split_file,
upstream_split). A step's `screenshot` (else `<episode_id>_<i>.png`) is the screen BEFORE its
action. Coordinates are integers in [0, 1000] of the screen: normalized = v / 1000. An episode
without COMPLETE (INCOMPLETE, or no ending at all) is not a success.

Mapping: CLICK / LONG_PRESS with `info` a list of points ([[x, y]], or press and release
[[x, y], [x, y]]: the first) -> CLICK (a long press is `long_press(x, y)` in action_desc);
CLICK / LONG_PRESS whose `info` is KEY_HOME -> PRESS_HOME, KEY_BACK -> PRESS_BACK,
KEY_APPSELECT -> PRESS_KEY "KEY_APPSELECT"; SCROLL with `info` [[x1, y1], [x2, y2]] (the
finger's travel) -> SCROLL with params (x1, y1, x2, y2) / 1000, mask 1,1,1,1, action_desc the
VIEW direction (the inverse of the finger's dominant axis); TEXT (documented as TYPE) -> TYPE
with the text, mask all zero; COMPLETE -> STOP and success; INCOMPLETE -> FAIL. Each step's
other fields (`ps`, `description`, `intention`, `low_level_instruction`, `context`) are kept as
JSON in its annotations.

An episode is one demonstration: a step that cannot be mapped drops the whole episode (counted
once, by the step's reason), so no episode is missing an action. The split file, or the
screenshot archive, unusable fails the partition naming the files.

Drop reasons:
    malformed_json            an annotation file that is not JSON
    malformed_record          a split entry or an annotation without its id, instruction or steps
    missing_input_metadata    a split entry whose annotation no layout holds
    unknown_action_verb       an action outside the table (the episode is dropped)
    malformed_step            a step whose info has the wrong shape, a TEXT without text, a step
                              after COMPLETE / INCOMPLETE
    coordinate_out_of_range   a point outside [0, 1000]
    empty_scroll              a SCROLL whose finger did not move
    missing_screenshot        a step whose screenshot no layout holds
    unsafe_archive_member     the archive's refusals of a member
    encrypted_archive_member
    unsupported_compression
    archive_member_too_large
    truncated_archive_member  a damaged member (screenshot or annotation)
    undecodable_image         image bytes that do not decode
    unsupported_image_format  image bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             an annotation with no steps
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gui_assets.core.drops import Drop, DropReason
from gui_assets.core.ir import NO_MASK, POINT_MASK, SPAN_MASK, ActionType, GuiEpisode, SourceRef, step_builder
from gui_assets.sources import archives, assembly
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.guiodyssey.annotations import Annotations, annotation_name, episode_key, read_split
from gui_assets.sources.guiodyssey.screenshots import Screenshots, open_screenshots
from gui_assets.sources.mirror import RawInputError

REPO_ID = "OpenGVLab/GUI-Odyssey"
PARTITIONS = ("train", "test")
SPLIT_FILES = ("random_split", "app_split", "device_split", "task_split")
DEFAULT_SPLIT_FILE = "random_split"
SCALE = 1000  # coordinates are integers in [0, SCALE] of the screen
KEYS = {
    "KEY_HOME": ActionType.PRESS_HOME,
    "KEY_BACK": ActionType.PRESS_BACK,
    "KEY_APPSELECT": ActionType.PRESS_KEY,
}
POINTER_ACTIONS = {"CLICK": "click", "LONG_PRESS": "long_press"}
TYPING_ACTIONS = ("TEXT", "TYPE")
ENDINGS = {"COMPLETE": ActionType.STOP, "INCOMPLETE": ActionType.FAIL}
STEP_NOTES = ("ps", "description", "intention", "low_level_instruction", "context")
DROPS = frozenset(
    {
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_RECORD,
        DropReason.MISSING_INPUT_METADATA,
        DropReason.UNKNOWN_ACTION_VERB,
        DropReason.MALFORMED_STEP,
        DropReason.COORDINATE_OUT_OF_RANGE,
        DropReason.EMPTY_SCROLL,
        DropReason.MISSING_SCREENSHOT,
    }
    | archives.MEMBER_DROPS
    | assembly.DROPS
)


def file_patterns(partition: str) -> list[str]:
    """Every layout's files: the split lists are read at build time (the option chooses the
    file), and one screenshot archive serves both partitions."""
    return [
        "splits/*.json",
        "annotations/",
        "zips/annotations.zip",
        "all_anno.json",
        "all_annot.json",
        "screenshots/",
        "zips/screenshots*",
    ]


def _point(value: Any) -> tuple[float, float]:
    """[x, y] in [0, SCALE] -> normalized; Drop naming why not."""
    if not (isinstance(value, list | tuple) and len(value) == 2):
        raise Drop(DropReason.MALFORMED_STEP, f"not a point: {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise Drop(DropReason.MALFORMED_STEP, f"not a point: {value!r}")
    if not all(0 <= v <= SCALE for v in value):  # NaN compares false
        raise Drop(DropReason.COORDINATE_OUT_OF_RANGE, repr(value))
    return value[0] / SCALE, value[1] / SCALE


def _points(info: Any, at_least: int) -> list[tuple[float, float]]:
    if not isinstance(info, list) or len(info) < at_least:
        raise Drop(DropReason.MALFORMED_STEP, f"info {info!r}: expected at least {at_least} point(s)")
    return [_point(p) for p in info]


@dataclass(frozen=True, slots=True)
class Mapped:
    """An annotated action in the action space, before its frame is attached."""

    kind: ActionType
    params: tuple[float, ...] = ()
    mask: tuple[float, float, float, float] = NO_MASK
    text: str = ""
    name: str = ""  # the verb in action_desc when it differs from the type's (long_press)


def map_action(action: Any, info: Any) -> Mapped:
    """One annotated action (`action`, `info`) in the action space; Drop naming why not."""
    if action in POINTER_ACTIONS:
        if isinstance(info, str):
            if info not in KEYS:
                raise Drop(DropReason.UNKNOWN_ACTION_VERB, f"{action} {info}")
            return Mapped(KEYS[info], text=info if KEYS[info] == ActionType.PRESS_KEY else "")
        x, y = _points(info, 1)[0]  # a tap is recorded as press and release: the same point twice
        return Mapped(ActionType.CLICK, (x, y), POINT_MASK, name=POINTER_ACTIONS[action])
    if action == "SCROLL":
        (x1, y1), (x2, y2) = _points(info, 2)[:2]
        if (x1, y1) == (x2, y2):
            raise Drop(DropReason.EMPTY_SCROLL, repr(info))
        return Mapped(ActionType.SCROLL, (x1, y1, x2, y2), SPAN_MASK)  # described by its view direction
    if action in TYPING_ACTIONS:
        if not isinstance(info, str) or not info:
            raise Drop(DropReason.MALFORMED_STEP, f"{action} without text: {info!r}")
        return Mapped(ActionType.TYPE, text=info)
    if action in ENDINGS:
        return Mapped(ENDINGS[action])
    raise Drop(DropReason.UNKNOWN_ACTION_VERB, repr(action))


def _screenshot_name(step: dict[str, Any], episode_id: str, index: int) -> str:
    name = step.get("screenshot")
    if isinstance(name, str) and name:
        return name.replace("\\", "/").rsplit("/", 1)[-1]
    return f"{episode_id}_{index}.png"  # the release's naming, when a step leaves it out


def _steps(
    raw_steps: list[Any], episode_id: str, screenshots: Screenshots, run: AdapterRun, ref: SourceRef
) -> tuple[Steps, bool]:
    """The episode's steps and whether it ended in COMPLETE; Drop for the first step that
    cannot be mapped (the caller drops the episode)."""
    steps = Steps()
    ended: ActionType | None = None
    for i, step in enumerate(raw_steps):
        if not isinstance(step, dict):
            raise Drop(DropReason.MALFORMED_STEP, f"steps[{i}]")
        if ended is not None:
            raise Drop(DropReason.MALFORMED_STEP, f"steps[{i}] after {ended.name}")
        name = _screenshot_name(step, episode_id, i)
        step_ref = SourceRef(
            ref.repo_id, ref.file, member=f"{ref.member + ':' if ref.member else ''}steps[{i}]"
        )
        notes = {k: step[k] for k in STEP_NOTES if step.get(k) not in (None, "")}
        # The action is mapped before the screenshot is read: an unknown one costs no image.
        mapped = map_action(step.get("action"), step.get("info"))
        if name not in screenshots.members and name not in screenshots.refused:
            raise Drop(DropReason.MISSING_SCREENSHOT, name)
        obs = run.observe(screenshots.read(name))  # a refused or damaged member: ArchiveError, a Drop
        notes_json = json.dumps(notes, ensure_ascii=False, sort_keys=True) if notes else ""
        make = step_builder(obs, step_ref, annotations=notes_json)
        steps.add(make(mapped.kind, mapped.params, mapped.mask, mapped.text, name=mapped.name))
        if mapped.kind in ENDINGS.values():
            ended = mapped.kind
    return steps, ended == ActionType.STOP


def _attrs(annotation: dict[str, Any], split_file: str, partition: str) -> dict[str, str]:
    task = annotation.get("task_info") if isinstance(annotation.get("task_info"), dict) else {}
    device = annotation.get("device_info") if isinstance(annotation.get("device_info"), dict) else {}

    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    # No `episode_id` attr: the writer's demo attr of that name is `guiodyssey/<id>` already.
    attrs = {"split_file": split_file, "upstream_split": partition}
    for key in ("task", "category", "meta_task", "instruction"):
        if key in task:
            attrs[key] = text(task[key])
    if "app" in task:
        attrs["apps"] = text(task["app"])
    for key in ("device_name", "product", "release_version", "sdk_version", "w", "h"):
        if key in device:
            attrs[f"device_{key}" if key in ("w", "h") else key] = text(device[key])
    return attrs


def _instruction(annotation: Any) -> str | None:
    task = annotation.get("task_info") if isinstance(annotation, dict) else None
    if not isinstance(task, dict):
        return None
    for key in ("instruction", "task"):
        if isinstance(task.get(key), str) and task[key].strip():
            return task[key]
    return None


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """The episodes the chosen split file lists under this partition, in its order."""
    raw = run.raw
    split_file = str(run.config.options["split_file"])
    entries = read_split(raw.root, split_file, raw.partition)
    annotations = Annotations(raw.root)
    try:
        screenshots = open_screenshots(raw.root)
    except (archives.ImageSourceError, archives.ArchiveError, OSError) as e:
        annotations.close()
        raise RawInputError(f"{raw.repo_id}: {e}") from None
    try:
        for entry in run.candidates(entries):
            episode = _episode(entry, annotations, screenshots, run, split_file)
            if episode is not None:
                yield episode
    except OSError as e:  # a file that went away or cannot be read mid-run: its error names it
        raise RawInputError(f"{raw.repo_id}: {e}") from None
    finally:
        screenshots.close()
        annotations.close()


def _episode(
    entry: Any, annotations: Annotations, screenshots: Screenshots, run: AdapterRun, split_file: str
) -> GuiEpisode | None:
    name = annotation_name(entry)
    if name is None:
        run.drop(DropReason.MALFORMED_RECORD)
        return None
    episode_id = name.removesuffix(".json")
    try:
        found = annotations.get(name)
        annotation = found.annotation
        instruction = _instruction(annotation)
        raw_steps = annotation.get("steps") if isinstance(annotation, dict) else None
        if instruction is None or not isinstance(raw_steps, list):
            raise Drop(DropReason.MALFORMED_RECORD, name)
        if episode_key(annotation.get("episode_id", episode_id)) != episode_id:
            raise Drop(DropReason.MALFORMED_RECORD, f"{name} holds episode {annotation.get('episode_id')!r}")
        ref = SourceRef(run.raw.repo_id, found.file, member=found.member)
        steps, success = _steps(raw_steps, episode_id, screenshots, run, ref)
    except Drop as e:
        run.drop(e.reason)
        return None
    attrs = _attrs(annotation, split_file, run.raw.partition)
    return run.episode(episode_id, instruction, steps, success, attrs)
