"""AgentNet (`xlangai/AgentNet`): PyAutoGUI trajectories on Ubuntu, Windows and macOS desktops.

Files per partition (`ubuntu`, `win_mac`):
    agentnet_<partition>*.jsonl        one trajectory per line: task_id, instruction, traj[...]
    meta_data_merged.jsonl             task_id -> system (Windows | Darwin | Ubuntu): the only OS field
    <partition>_images/                images.zip, or a split archive images.z01.. + images.zip,
                                       or the extracted PNGs; members named by traj[i].image

`traj[i].image` is the screen BEFORE step i's action (the next step's image shows its effect),
so it is o_t as it stands. `value.code` is parsed by `pyautogui_code` (ast, never executed);
coordinates are normalized to the screenshot already.

Mapping: click/doubleClick/tripleClick/rightClick/middleClick -> CLICK (the button and count
stay in action_desc: 'right_click(0.95, 0.51)'); moveTo alone -> HOVER; moveTo+dragTo -> DRAG;
scroll/hscroll -> SCROLL; write/typewrite -> TYPE (no point: mask 0, as the source records
none); press -> PRESS_ENTER for Enter, else PRESS_KEY with the keys (repeats and sequences
space-separated); hotkey -> PRESS_KEY "ctrl+c"; wait -> WAIT; terminate(success) -> STOP and
reward 1, terminate(failure|fail) -> FAIL. A trajectory without terminate(success) has reward 0.

Key spelling in action_text: PyAutoGUI's lower-case key names, whatever case the recording
used: hotkey(['CTRL', 'F']) and hotkey(['ctrl', 'f']) are both "ctrl+f" (a chord's letter names
its key), press('Enter') is "enter"; a character pressed alone keeps its case (see
pyautogui_code). Coordinates are normalized to the screenshot itself, so a screenshot smaller
than the recorded screen (1280x720 of a 1920x1080 desktop) needs no rescaling.

Steps are ordered by `traj[i].index`, a whole number in [0, 100000] (a float such as 3.0 is
that index); an item whose index is missing or is anything else cannot be placed and is
`malformed_step`. The trajectory scores kept as attrs (alignment_score, efficiency_score,
task_difficulty) are null or numbers in [0, 10]; any other value (NaN, infinite, negative,
beyond the scale) drops the trajectory as `malformed_record`.

Scroll sign convention: pyautogui's, on every platform: a positive `scroll` moves the view up,
a positive `hscroll` moves it right. The gesture starts where the wheel turned (the moveTo
point, else the causal cursor) and the content travels opposite to the view by
SCROLL_UNIT[os] of the screen per unit (Windows and Linux send about 3 units a notch; macOS
sends pixel-like deltas such as -54), clipped at the frame edge. A gesture clipped to nothing
(a pointer on the edge it would travel past) keeps its direction in action_desc with a zero
mask, ungrounded as `gesture_outside_frame`.

Episode ids are `agentnet/<task_id>` and `agentnet/<task_id>#<k>` for the k-th repeat of a
task_id (win_mac repeats 93); the holdout splits by task_id, so repeats share a side.
The trajectory file missing, or no screenshot source, fails the partition by name.

Drop reasons:
    malformed_json            a trajectory line that is not JSON
    malformed_record          a line without task_id, instruction or a traj list, or with a bad score
    malformed_metadata_line   a meta_data_merged.jsonl line that is unusable (the OS stays unknown)
    malformed_step            a traj item without a `value` object or a usable index
    empty_code                the parser's refusals of `value.code`: see pyautogui_code
    unparseable_code
    unknown_action_verb
    malformed_code
    coordinate_out_of_range
    multiple_actions
    drag_without_start
    missing_screenshot        a step whose image the archive does not hold
    unsafe_archive_member     the archive's refusals of a member
    encrypted_archive_member
    unsupported_compression
    archive_member_too_large
    truncated_archive_member
    undecodable_image         image bytes that do not decode
    unsupported_image_format  image bytes that are no PNG, JPEG or WebP
    image_too_large           an image beyond the largest this source produces (a forged header)
    empty_episode             a trajectory none of whose steps survived
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from gui_assets.core.drops import Drop, DropReason, UngroundedReason
from gui_assets.core.ir import (
    NO_MASK,
    POINT_MASK,
    SPAN_MASK,
    ActionType,
    GuiEpisode,
    GuiStep,
    Observation,
    SourceRef,
    step_builder,
    wheel_step,
)
from gui_assets.sources import archives, assembly
from gui_assets.sources.agentnet import pyautogui_code
from gui_assets.sources.agentnet.pyautogui_code import Action, parse_action
from gui_assets.sources.archives import ArchiveError, FolderImages, ImageSourceError, ZipImages, open_images
from gui_assets.sources.assembly import AdapterRun, Steps
from gui_assets.sources.mirror import RawInputError, RawPartition

REPO_ID = "xlangai/AgentNet"
PARTITIONS = ("win_mac", "ubuntu")
META_FILE = "meta_data_merged.jsonl"
OS_BY_SYSTEM = {"Windows": "windows", "Darwin": "macos", "Ubuntu": "ubuntu"}
# Share of the screen the content travels per pyautogui scroll unit.
SCROLL_UNIT = {"windows": 0.05, "ubuntu": 0.05, "macos": 0.005}
HOLDOUT_SALT = "agentnet"
HOLDOUT_FRACTION = 0.02
MAX_INDEX = 100_000  # a step number; no recorded trajectory comes near it
SCORES = ("alignment_score", "efficiency_score", "task_difficulty")  # null or in [0, 10]
DROPS = frozenset(
    {
        DropReason.MALFORMED_JSON,
        DropReason.MALFORMED_RECORD,
        DropReason.MALFORMED_METADATA_LINE,
        DropReason.MALFORMED_STEP,
        DropReason.MISSING_SCREENSHOT,
    }
    | pyautogui_code.DROPS
    | archives.MEMBER_DROPS
    | assembly.DROPS
)
_CLICK_NAMES = {
    ("left", 1): "click",
    ("left", 2): "double_click",
    ("left", 3): "triple_click",
    ("right", 1): "right_click",
    ("middle", 1): "middle_click",
}
_ENTER = {"enter", "return"}


def images_dir(partition: str) -> str:
    return f"{partition}_images/"


def file_patterns(partition: str) -> list[str]:
    return [f"agentnet_{partition}*.jsonl", META_FILE, images_dir(partition)]


def _read_meta(raw: RawPartition, run: AdapterRun) -> dict[str, dict[str, Any]]:
    """task_id -> its metadata row; the OS join. A missing file is allowed (the OS stays unknown)."""
    meta: dict[str, dict[str, Any]] = {}
    for f in raw.find(META_FILE):
        with open(f.local, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row["task_id"], str):
                        raise TypeError("task_id")
                    meta.setdefault(row["task_id"], row)
                except (ValueError, KeyError, TypeError, RecursionError):
                    run.drop(DropReason.MALFORMED_METADATA_LINE)
    return meta


def _os_of(task_id: str, partition: str, meta: dict[str, dict[str, Any]]) -> str:
    system = str(meta.get(task_id, {}).get("system", ""))
    if system in OS_BY_SYSTEM:
        return OS_BY_SYSTEM[system]
    return "ubuntu" if partition == "ubuntu" else "unknown"


def _to_step(
    a: Action,
    pointer: tuple[float, float],
    os_name: str,
    obs: Observation,
    ref: SourceRef,
    thought: str,
    notes: str,
) -> GuiStep:
    step = step_builder(obs, ref, thought=thought, annotations=notes)

    if a.kind == "click":
        name = _CLICK_NAMES.get((a.button, a.clicks), f"{a.button}_click_x{a.clicks}")
        if a.point is None:  # click() at wherever the pointer was: not recorded, not invented
            return step(ActionType.CLICK, (), NO_MASK, name=name, ungrounded=UngroundedReason.NO_POINT)
        return step(ActionType.CLICK, a.point, POINT_MASK, name=name)
    if a.kind == "hover":
        return step(ActionType.HOVER, a.point or (0, 0), POINT_MASK)
    if a.kind == "drag":
        return step(ActionType.DRAG, (*a.point, *a.end), SPAN_MASK)  # type: ignore[misc]
    if a.kind == "scroll":
        unit = SCROLL_UNIT.get(os_name, 0.05)
        h, v = a.amount  # pyautogui: a positive scroll moves the view up, a positive hscroll right
        return wheel_step(step, a.point or pointer, (h, -v), (unit, unit))
    if a.kind == "type":
        return step(ActionType.TYPE, (), NO_MASK, text=a.text)
    if a.kind == "press":
        text = " ".join(list(a.keys) * a.presses)
        enter = all(k.lower() in _ENTER for k in a.keys)
        return step(ActionType.PRESS_ENTER if enter else ActionType.PRESS_KEY, (), NO_MASK, text=text)
    if a.kind == "hotkey":
        return step(ActionType.PRESS_KEY, (), NO_MASK, text="+".join(a.keys), name="hotkey")
    if a.kind == "wait":
        return step(ActionType.WAIT, (), NO_MASK, desc=f"wait({a.seconds:g})")
    if a.status == "success":
        return step(ActionType.STOP, (), NO_MASK)
    return step(ActionType.FAIL, (), NO_MASK)


def _read_image(images: ZipImages | FolderImages, name: Any, run: AdapterRun) -> Observation:
    """The step's screenshot as a stored observation; raises Drop naming why not."""
    if not isinstance(name, str) or not name:
        raise Drop(DropReason.MISSING_SCREENSHOT, repr(name))
    key = name.rsplit("/", 1)[-1]
    if key not in images.members and "_" in key and key.split("_", 1)[1] in images.members:
        key = key.split("_", 1)[1]  # a consumer saw win_mac names with a prefix to strip
    if key not in images.members and key in images.refused:
        raise ArchiveError(images.refused[key], key)
    if key not in images.members:
        raise Drop(DropReason.MISSING_SCREENSHOT, key)
    return run.observe(images.read(key))


def _attrs(
    row: dict[str, Any], task_id: str, os_name: str, meta: dict[str, Any], repeat: int
) -> dict[str, str]:
    def text(v: Any) -> str:
        return "null" if v is None else json.dumps(v) if isinstance(v, bool | int | float) else str(v)

    attrs = {"task_id": task_id, "os": os_name, "system": str(meta.get("system", "")), "repeat": str(repeat)}
    for k in (
        "task_completed",
        "alignment_score",
        "efficiency_score",
        "task_difficulty",
        "domain",
        "natural_language_task",
        "actual_task",
        "reason",
    ):
        if k in row:
            attrs[k] = text(row[k])
    for k in ("domains", "applications", "websites"):
        if k in meta:
            attrs[k] = json.dumps(meta[k], ensure_ascii=False)
    return attrs


def episodes(run: AdapterRun) -> Iterator[GuiEpisode]:
    """Stream one partition's trajectory file; each line becomes one episode (or a counted drop)."""
    raw = run.raw
    partition = raw.partition
    trajectories = raw.find(f"agentnet_{partition}*.jsonl")
    if partition not in PARTITIONS or len(trajectories) != 1:
        raise RawInputError(
            f"{raw.repo_id}: expected one agentnet_<partition>*.jsonl, found {len(trajectories)}"
        )
    traj_file = trajectories[0]
    meta = _read_meta(raw, run)
    try:
        images = open_images(raw.root / images_dir(partition))
    except (ImageSourceError, ArchiveError) as e:
        raise RawInputError(f"{raw.repo_id}/{images_dir(partition)}: {e}") from None
    seen: Counter[str] = Counter()
    try:
        with open(traj_file.local, encoding="utf-8", errors="replace") as fh:
            lines = ((n, line) for n, line in enumerate(fh) if line.strip())
            for line_no, line in run.candidates(lines):
                ref = SourceRef(raw.repo_id, traj_file.path, row=line_no)
                try:
                    row = json.loads(line)
                except (ValueError, RecursionError):
                    run.drop(DropReason.MALFORMED_JSON)
                    continue
                task_id, instruction, traj = (
                    (row.get(k) for k in ("task_id", "instruction", "traj"))
                    if isinstance(row, dict)
                    else (None, None, None)
                )
                if not (
                    isinstance(task_id, str)
                    and task_id
                    and isinstance(instruction, str)
                    and isinstance(traj, list)
                    and all(_score_ok(row.get(k)) for k in SCORES)
                ):
                    run.drop(DropReason.MALFORMED_RECORD)
                    continue
                repeat = seen[task_id]
                seen[task_id] += 1
                os_name = _os_of(task_id, partition, meta)
                steps, success = _steps(traj, os_name, images, run, ref)
                episode = run.episode(
                    task_id + (f"#{repeat}" if repeat else ""),
                    instruction,
                    steps,
                    success and bool(steps.items) and steps.items[-1].action_type == ActionType.STOP,
                    _attrs(row, task_id, os_name, meta.get(task_id, {}), repeat),
                )
                if episode is not None:
                    yield episode
    finally:
        images.close()


def _score_ok(v: Any) -> bool:
    """A trajectory score: null, or a number on the 0-10 scale (ints compare without overflow)."""
    if v is None:
        return True
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return 0 <= v <= 10  # NaN compares false


def _index_of(step: Any) -> int | None:
    """traj[i].index as a whole number in [0, MAX_INDEX], or None when it is not one."""
    idx = step.get("index") if isinstance(step, dict) else None
    if isinstance(idx, bool) or not isinstance(idx, int | float) or not 0 <= idx <= MAX_INDEX:
        return None
    return int(idx) if idx == int(idx) else None


def _steps(
    traj: list[Any], os_name: str, images: ZipImages | FolderImages, run: AdapterRun, ref: SourceRef
) -> tuple[Steps, bool]:
    """The trajectory's steps in index order, and whether it ended in terminate(success)."""
    steps = Steps()
    success = False
    placed = [(idx, pos, item) for pos, item in enumerate(traj) if (idx := _index_of(item)) is not None]
    if len(placed) < len(traj):
        run.drop(DropReason.MALFORMED_STEP, len(traj) - len(placed))
    for _, pos, item in sorted(placed, key=lambda e: e[:2]):
        value = item.get("value")
        if not isinstance(value, dict):
            run.drop(DropReason.MALFORMED_STEP)
            continue
        step_ref = SourceRef(ref.repo_id, ref.file, row=ref.row, member=f"traj[{pos}]")
        try:
            action = parse_action(value.get("code"))  # type: ignore[arg-type]
            obs = _read_image(images, item.get("image"), run)
        except Drop as e:
            run.drop(e.reason)
            continue
        thought = value.get("thought") if isinstance(value.get("thought"), str) else ""
        notes = {
            k: value[k]
            for k in ("observation", "action", "reflection", "last_step_correct", "last_step_redundant")
            if k in value
        }
        notes_json = json.dumps(notes, ensure_ascii=False, sort_keys=True) if notes else ""
        steps.add(_to_step(action, steps.pointer, os_name, obs, step_ref, thought, notes_json))
        if action.kind == "terminate":
            success = action.status == "success"
    return steps, success
