"""Counters every stage keeps, mergeable with `+` and serialized under the dataset_info keys."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gui_assets.core.drops import DropReason
from gui_assets.core.ir import ActionType, GuiEpisode, GuiStep, view_direction

# Gesture magnitude (share of the frame the pointer travels) buckets of the scroll histogram.
SCROLL_BUCKETS: tuple[tuple[float, str], ...] = (
    (0.25, "0.00-0.25"),
    (0.50, "0.25-0.50"),
    (0.75, "0.50-0.75"),
    (float("inf"), "0.75-1.00"),
)


def scroll_bucket(step: GuiStep) -> tuple[str, str]:
    """(view direction, magnitude bucket) of a SCROLL step's gesture."""
    x1, y1, x2, y2 = step.params
    magnitude = max(abs(x2 - x1), abs(y2 - y1))
    label = next(lbl for edge, lbl in SCROLL_BUCKETS if magnitude <= edge)
    return view_direction(step.params), label


def drops_by_unit(drops: dict[str, int]) -> dict[str, dict[str, int]]:
    """The same counts as `drops`, grouped by each reason's unit (file, record, episode, ...)."""
    grouped: dict[str, dict[str, int]] = {}
    for reason, n in sorted(drops.items()):
        grouped.setdefault(DropReason(reason).unit.value, {})[reason] = n
    return dict(sorted(grouped.items()))


@dataclass(slots=True)
class BuildStats:
    """What one stage saw and did. Drops and ungrounded steps are counted by reason.

    files_in      the upstream files the partition is built from (its raw manifest; a folder
                  entry counts its files)
    episodes_in   the episodes the upstream holds as the adapter identifies them, each counted
                  once, before anything is dropped
    episodes_out  the episodes that leave the stage
    pointer_steps / target_inside_eye: grounded pointer steps (not SCROLL) and those whose
                  target lies inside the eye-in-hand window, counted where the window is cut
    """

    files_in: int = 0
    episodes_in: int = 0
    episodes_out: int = 0
    steps: int = 0
    drops: Counter[str] = field(default_factory=Counter)
    ungrounded_steps: int = 0
    ungrounded_by_reason: Counter[str] = field(default_factory=Counter)
    action_type_counts: Counter[str] = field(default_factory=Counter)
    scroll_histogram: dict[str, Counter[str]] = field(default_factory=dict)
    pointer_steps: int = 0
    target_inside_eye: int = 0
    # Steps whose pre-action frame was not recorded, the last frame standing in (obs_stale).
    stale_steps: int = 0
    # User-facing calls of the upstream recorder that made no step, by their API name.
    ignored_calls: Counter[str] = field(default_factory=Counter)

    def drop(self, reason: DropReason, n: int = 1) -> None:
        if not isinstance(reason, DropReason):
            raise TypeError(f"drop reasons are DropReason members, not {reason!r}")
        self.drops[reason.value] += n

    @property
    def target_inside_eye_in_hand_rate(self) -> float:
        return round(self.target_inside_eye / self.pointer_steps, 6) if self.pointer_steps else 0.0

    def count_step(self, step: GuiStep) -> None:
        self.steps += 1
        self.action_type_counts[step.action_type.name] += 1
        if step.action_type in (ActionType.SCROLL,) and step.grounded:
            direction, bucket = scroll_bucket(step)
            self.scroll_histogram.setdefault(direction, Counter())[bucket] += 1
        if not step.grounded and step.ungrounded_reason:
            self.ungrounded_steps += 1
            self.ungrounded_by_reason[step.ungrounded_reason] += 1
        self.stale_steps += step.obs_stale

    def count_episode(self, episode: GuiEpisode) -> None:
        """Count an episode that leaves this stage, with all its steps."""
        self.episodes_out += 1
        for step in episode.steps:
            self.count_step(step)

    def __add__(self, other: BuildStats) -> BuildStats:
        hist = {d: Counter(c) for d, c in self.scroll_histogram.items()}
        for d, c in other.scroll_histogram.items():
            hist.setdefault(d, Counter()).update(c)
        return BuildStats(
            files_in=self.files_in + other.files_in,
            episodes_in=self.episodes_in + other.episodes_in,
            episodes_out=self.episodes_out + other.episodes_out,
            steps=self.steps + other.steps,
            drops=self.drops + other.drops,
            ungrounded_steps=self.ungrounded_steps + other.ungrounded_steps,
            ungrounded_by_reason=self.ungrounded_by_reason + other.ungrounded_by_reason,
            action_type_counts=self.action_type_counts + other.action_type_counts,
            scroll_histogram=hist,
            pointer_steps=self.pointer_steps + other.pointer_steps,
            target_inside_eye=self.target_inside_eye + other.target_inside_eye,
            stale_steps=self.stale_steps + other.stale_steps,
            ignored_calls=self.ignored_calls + other.ignored_calls,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "files_in": self.files_in,
            "episodes_in": self.episodes_in,
            "episodes_out": self.episodes_out,
            "steps": self.steps,
            "drops": dict(sorted(self.drops.items())),
            "drops_by_unit": drops_by_unit(self.drops),
            "ungrounded_steps": self.ungrounded_steps,
            "ungrounded_by_reason": dict(sorted(self.ungrounded_by_reason.items())),
            "action_type_counts": dict(sorted(self.action_type_counts.items())),
            "scroll_histogram": {
                d: dict(sorted(c.items())) for d, c in sorted(self.scroll_histogram.items())
            },
            "stale_steps": self.stale_steps,
            "ignored_calls": dict(sorted(self.ignored_calls.items())),
            "target_inside_eye_in_hand_rate": self.target_inside_eye_in_hand_rate,
            "target_inside_eye_in_hand": {
                "numerator": self.target_inside_eye,
                "denominator": self.pointer_steps,
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BuildStats:
        return cls(
            files_in=int(d.get("files_in", 0)),
            episodes_in=int(d.get("episodes_in", 0)),
            episodes_out=int(d.get("episodes_out", 0)),
            steps=int(d.get("steps", 0)),
            drops=Counter(d.get("drops", {})),
            ungrounded_steps=int(d.get("ungrounded_steps", 0)),
            ungrounded_by_reason=Counter(d.get("ungrounded_by_reason", {})),
            action_type_counts=Counter(d.get("action_type_counts", {})),
            scroll_histogram={k: Counter(v) for k, v in d.get("scroll_histogram", {}).items()},
            pointer_steps=int(d.get("target_inside_eye_in_hand", {}).get("denominator", 0)),
            target_inside_eye=int(d.get("target_inside_eye_in_hand", {}).get("numerator", 0)),
            stale_steps=int(d.get("stale_steps", 0)),
            ignored_calls=Counter(d.get("ignored_calls", {})),
        )
