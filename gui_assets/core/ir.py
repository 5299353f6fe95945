"""The intermediate representation every adapter produces and every writer consumes.

A `GuiEpisode` is one demonstration: an instruction and an ordered list of `GuiStep`s. A step
pairs one action with the observation the demonstrator saw BEFORE it (o_t, the pre-action
frame). Observations are references into a content-addressed store of the ORIGINAL encoded
screenshot bytes plus the pixel window of that image that was on screen, so nothing is decoded
or re-encoded before the writer.

Coordinates are normalized to [0, 1] against the observation window. A parameter slot whose
mask is 0 holds 0: the IR never carries a coordinate the demonstration did not constrain.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gui_assets.core.drops import UngroundedReason


class ActionType(enum.IntEnum):
    """The action space; the integer code is the index (written to /data.attrs gui_action_types)."""

    CLICK = 0
    TYPE = 1
    SELECT = 2
    HOVER = 3
    SCROLL = 4
    DRAG = 5
    PRESS_BACK = 6
    PRESS_HOME = 7
    PRESS_ENTER = 8
    PRESS_KEY = 9
    GOTO = 10
    WAIT = 11
    STOP = 12
    FAIL = 13


ACTION_TYPE_NAMES: list[str] = [t.name for t in ActionType]
PARAM_NAMES: list[str] = ["x1", "y1", "x2", "y2"]

POINT_MASK = (1.0, 1.0, 0.0, 0.0)
SPAN_MASK = (1.0, 1.0, 1.0, 1.0)
NO_MASK = (0.0, 0.0, 0.0, 0.0)

# The mask of a grounded step of each type. An ungrounded step (no locatable element) of a
# pointer type keeps its type with NO_MASK instead.
GROUNDED_MASK: dict[ActionType, tuple[float, float, float, float]] = {
    ActionType.CLICK: POINT_MASK,
    ActionType.HOVER: POINT_MASK,
    ActionType.SELECT: POINT_MASK,
    ActionType.TYPE: POINT_MASK,
    ActionType.SCROLL: SPAN_MASK,
    ActionType.DRAG: SPAN_MASK,
}
POINTER_TYPES = frozenset(GROUNDED_MASK)


def allowed_masks(action_type: ActionType) -> set[tuple[float, ...]]:
    """Masks a step of this type may carry: its grounded row, or all-zero (ungrounded)."""
    grounded = GROUNDED_MASK.get(action_type)
    return {NO_MASK} if grounded is None else {grounded, NO_MASK}


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(value: str) -> str:
    """Text every writer can store: NUL (which HDF5 strings cannot hold) and lone surrogates
    (which UTF-8 cannot encode; JSON escapes let them in) become U+FFFD, the replacement
    character, so the damage stays visible where it was. Everything else is kept as is."""
    return _UNSTORABLE.sub("\ufffd", value) if _UNSTORABLE.search(value) else value


@dataclass(frozen=True, slots=True)
class SourceRef:
    """Where a record came from upstream: enough to find the raw bytes again. The file's revision
    is not here but in dataset_info.json (each upstream file with its own), so a record's bytes
    never depend on edits elsewhere in its file."""

    repo_id: str
    file: str
    row: int | None = None
    member: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "file", storable_text(str(self.file)))
        if self.member is not None:
            object.__setattr__(self, "member", storable_text(str(self.member)))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"repo_id": self.repo_id, "file": self.file}
        if self.row is not None:
            d["row"] = self.row
        if self.member is not None:
            d["member"] = self.member
        return d


@dataclass(frozen=True, slots=True)
class Observation:
    """The pre-action frame: the window (left, top, width, height) of a stored image.

    `image_sha256` names the original encoded bytes in the image store. The window is in that
    image's pixels; a window equal to the whole image is an ordinary screenshot.
    """

    image_sha256: str
    image_ext: str
    left: int
    top: int
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class GuiStep:
    """One action a_t with its pre-action observation o_t."""

    action_type: ActionType
    params: tuple[float, float, float, float]
    mask: tuple[float, float, float, float]
    text: str
    desc: str
    observation: Observation
    scroll: tuple[float, float]
    ref: SourceRef
    thought: str = ""
    obs_stale: bool = False
    ungrounded_reason: str = ""
    # Other per-step text the source recorded (AgentNet: observation, action, reflection), as JSON.
    annotations: str = ""

    def __post_init__(self) -> None:
        for name in ("text", "desc", "thought", "annotations", "ungrounded_reason"):
            object.__setattr__(self, name, storable_text(str(getattr(self, name))))
        # A broken invariant here is our bug, never a data problem: raise.
        if self.mask not in allowed_masks(self.action_type):
            raise ValueError(f"{self.action_type.name} cannot carry mask {self.mask}")
        for p, m in zip(self.params, self.mask, strict=True):
            if m == 0.0 and p != 0.0:
                raise ValueError(f"masked slot holds {p}: an invented coordinate ({self.desc})")
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"coordinate {p} outside [0, 1] ({self.desc})")

    @property
    def grounded(self) -> bool:
        return self.mask != NO_MASK


@dataclass(slots=True)
class GuiEpisode:
    """One demonstration. `attrs` holds source ids (annotation_id, task_id, ...) as strings."""

    episode_id: str
    source: str
    instruction: str
    steps: list[GuiStep]
    success: bool = True
    attrs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.episode_id = storable_text(str(self.episode_id))
        self.instruction = storable_text(str(self.instruction))
        self.attrs = {storable_text(str(k)): storable_text(str(v)) for k, v in self.attrs.items()}

    def source_ref_json(self) -> str:
        """The demo-level source_ref: the first step's ref plus every step's (file, row/member)."""
        d = self.steps[0].ref.to_dict()
        d["steps"] = [[s.ref.file, s.ref.row if s.ref.row is not None else s.ref.member] for s in self.steps]
        return json.dumps(d, sort_keys=True, ensure_ascii=False)


def params4(values: tuple[float, ...] | list[float] = ()) -> tuple[float, float, float, float]:
    """[x1, y1, x2, y2] from the slots a step constrains; the rest hold 0, never a guess."""
    p = [float(v) for v in values][:4]
    return (*p, *([0.0] * (4 - len(p))))  # type: ignore[return-value]


def step_builder(observation: Observation, ref: SourceRef, **defaults: Any) -> Callable[..., GuiStep]:
    """A maker of steps that share an observation and a source ref (and `defaults`, e.g.
    scroll, thought, obs_stale, annotations): `make(kind, params, mask, text, name=, desc=,
    ungrounded=)` pads params to four slots and describes the step unless `desc` is given."""

    def make(
        kind: ActionType,
        params: tuple[float, ...] = (),
        mask: tuple[float, float, float, float] = NO_MASK,
        text: str = "",
        name: str = "",
        desc: str = "",
        ungrounded: str = "",
    ) -> GuiStep:
        p = params4(params)
        fields = {"scroll": (0.0, 0.0), **defaults, "ungrounded_reason": str(ungrounded)}
        return GuiStep(
            kind, p, mask, text, desc or describe(kind, p, mask, text, name), observation, ref=ref, **fields
        )

    return make


def _clip(v: float) -> float:
    return min(max(v, 0.0), 1.0)


def wheel_gesture(
    start: tuple[float, float], delta: tuple[float, float], scale: tuple[float, float]
) -> tuple[tuple[float, float, float, float] | None, str]:
    """A wheel turned at `start` that moved the view by `delta` (source units, +x right, +y down).

    Returns (gesture params, view direction). The axis is the one the view moved most along in
    the source's own units; the gesture is the content's travel, the opposite way, `delta` times
    `scale` (source units -> share of the frame), clipped at the frame edge. None when the clip
    leaves no travel (a pointer on the edge the content would cross): the direction still holds.
    """
    (x, y), (dx, dy) = start, delta
    if abs(dy) >= abs(dx):
        end, direction = (x, _clip(y - dy * scale[1])), "down" if dy > 0 else "up"
    else:
        end, direction = (_clip(x - dx * scale[0]), y), "right" if dx > 0 else "left"
    return ((x, y, *end) if end != (x, y) else None), direction


def wheel_step(
    make: Callable[..., GuiStep],
    start: tuple[float, float],
    delta: tuple[float, float],
    scale: tuple[float, float],
) -> GuiStep:
    """The SCROLL step of `wheel_gesture`: grounded, or (no travel left) ungrounded with its
    direction in action_desc as `gesture_outside_frame`."""
    params, direction = wheel_gesture(start, delta, scale)
    if params is None:
        return make(
            ActionType.SCROLL, desc=f"scroll({direction})", ungrounded=UngroundedReason.GESTURE_OUTSIDE_FRAME
        )
    return make(ActionType.SCROLL, params, SPAN_MASK)


VIEW_DIRECTIONS = ("up", "down", "left", "right")


def direction_scroll(make: Callable[..., GuiStep], direction: str) -> GuiStep:
    """The SCROLL of a source that records only the way the VIEW moved (AndroidControl's
    `scroll(down)`): an all-zero mask and zero params, no gesture invented, the direction in
    action_desc. Not ungrounded: there was no element to locate. A direction outside
    VIEW_DIRECTIONS is our bug or an unchecked record: ValueError."""
    if direction not in VIEW_DIRECTIONS:
        raise ValueError(f"a scroll's view direction is one of {VIEW_DIRECTIONS}, not {direction!r}")
    return make(ActionType.SCROLL, desc=f"scroll({direction})")


def fmt_coord(v: float) -> str:
    return f"{v:.2f}"


def view_direction(params: tuple[float, float, float, float]) -> str:
    """The direction the VIEW moves for a scroll gesture: the inverse of the pointer travel."""
    dx, dy = params[2] - params[0], params[3] - params[1]
    if abs(dy) >= abs(dx):
        return "down" if dy < 0 else "up"
    return "right" if dx < 0 else "left"


def describe(
    action_type: ActionType, params: tuple[float, ...], mask: tuple[float, ...], text: str, name: str = ""
) -> str:
    """A short human-readable rendering, e.g. 'click(0.71, 0.78)', 'scroll(down)'.

    `name` overrides the verb where the action space is coarser than the source
    ('right_click(0.95, 0.51)' is a CLICK).
    """
    name = name or action_type.name.lower()
    if action_type in (ActionType.SCROLL,):
        return f"scroll({view_direction(params)})"  # type: ignore[arg-type]
    args: list[str] = []
    if mask[0]:
        args += [fmt_coord(params[0]), fmt_coord(params[1])]
    if mask[2]:
        args += [fmt_coord(params[2]), fmt_coord(params[3])]
    if text:
        args.append(json.dumps(text, ensure_ascii=False))
    return f"{name}({', '.join(args)})"
