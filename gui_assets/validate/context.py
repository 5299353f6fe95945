"""What the per-demo rules share: where they are (for findings) and the demo's arrays, read once."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gui_assets.validate.format import ACTION_TYPES
from gui_assets.validate.report import Target


@dataclass(frozen=True, slots=True)
class DemoContext:
    target: Target
    file: str
    demo: str
    directory: str | None  # the directory the demo must name; None where it is not known
    source: str | None
    # What the directory's dataset_info.json records of its source (build.source: platform,
    # subsplit_attr, scroll_gestures); empty where it is not known (a shard judged alone).
    declared: dict[str, Any] = field(default_factory=dict)

    def find(self, rule: str, message: str, step: int | None = None) -> None:
        self.target.find(rule, message, self.file, self.demo, step)

    def check(self, *rules: str) -> None:
        self.target.check(*rules)


@dataclass(slots=True)
class DemoArrays:
    """The demo's per-step arrays that have the format's shape and dtype (others are absent)."""

    steps: int
    arrays: dict[str, np.ndarray]
    frame_hw: tuple[int, int] | None  # agentview (H, W), when agentview has its shape
    fitting: set[str] = field(default_factory=set)  # every dataset with its format's shape and dtype

    def has(self, *names: str) -> bool:
        return all(n in self.arrays for n in names)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def type_names(self) -> list[str | None]:
        """Each step's action type name, None where the code indexes no type."""
        codes = self.arrays["action_type"]
        return [ACTION_TYPES[int(c)] if 0 <= int(c) < len(ACTION_TYPES) else None for c in codes]

    def grounded(self) -> np.ndarray:
        """Per step: does the mask constrain any slot?"""
        return np.any(self.arrays["action_mask"] != 0, axis=1)


@dataclass(slots=True)
class DemoSummary:
    """What the directory-level rules need from one demo."""

    steps: int
    episode_id: str = ""
    ids: dict[str, str] = field(default_factory=dict)  # task_id, intent_template_id where present
    subsplits: tuple[str, ...] = ()  # the named subsets its declared subsplit attr lists
    type_counts: Counter[str] = field(default_factory=Counter)
    ungrounded_pointer: int = 0  # all-zero mask CLICK / SELECT / HOVER / DRAG
    zero_mask_scrolls: int = 0  # all-zero mask SCROLL: ungrounded, or direction-only by declaration
    ungrounded_type: int = 0  # all-zero mask TYPE (ungrounded, or a source that never grounds it)
    scroll_directions: Counter[str] = field(default_factory=Counter)
    aimed: int = 0  # grounded CLICK / HOVER / SELECT / TYPE / DRAG steps
    aimed_inside: int = 0  # ... whose (x1, y1) lies inside eye_rect
    aimed_edge: int = 0  # ... whose (x1, y1) is on an edge of eye_rect, up to float32 rounding
    judged_counts: bool = False  # action types and masks were readable: the counts above are real
