"""What every adapter shares: image bytes into stored observations, episodes assembled the
same way, and one definition of what is counted.

An adapter is `adapter(run) -> Iterator[GuiEpisode]` over an `AdapterRun`; it keeps only what
is its own (how its upstream unit becomes steps) and leaves the rest here:

- `run.observe(data)`: screenshot bytes identified by content, checked and stored once under
  their sha256; the step's `Observation` is the whole image (Mind2Web windows it itself).
- `Steps`: an episode's steps as they are made, with the causal cursor each one leaves (the
  pointer a later wheel turns at, and where the eye-in-hand crop will look).
- `run.episode(local_id, ...)`: the episode with its source and `<source>/<local_id>` id, or
  None with `empty_episode` counted when no step survived.
- `run.candidates(items)`: each upstream episode candidate counted once as `episodes_in`.
- `Drop` (gui_assets.core.drops) is the one exception carrying a reason; `run.drop` counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from gui_assets.core import images
from gui_assets.core.config import BuildConfig
from gui_assets.core.cursor import SCREEN_CENTRE, next_cursor
from gui_assets.core.drops import DropReason
from gui_assets.core.episode_store import ImageStore
from gui_assets.core.images import inspect
from gui_assets.core.ir import GuiEpisode, GuiStep, Observation
from gui_assets.core.stats import BuildStats
from gui_assets.sources.mirror import RawPartition

T = TypeVar("T")
# What the shared assembly itself can drop: an empty episode, and images observe() refuses.
DROPS = frozenset({DropReason.EMPTY_EPISODE}) | images.DROPS


class Steps:
    """An episode's steps in order, and where the last of them left the pointer."""

    def __init__(self) -> None:
        self.items: list[GuiStep] = []
        self.pointer: tuple[float, float] = SCREEN_CENTRE

    def add(self, step: GuiStep) -> None:
        self.items.append(step)
        self.pointer = next_cursor(self.pointer, step.action_type, step.params, step.grounded)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(slots=True)
class AdapterRun:
    """One adapter run over one raw partition."""

    source: str  # the declaration's name: every episode's `source` and id prefix
    raw: RawPartition
    store: ImageStore
    stats: BuildStats
    config: BuildConfig
    max_image: tuple[int, int] | None = None  # the source's largest real screenshot (width, height)

    def drop(self, reason: DropReason, n: int = 1) -> None:
        self.stats.drop(reason, n)

    def candidates(self, items: Iterable[T]) -> Iterator[T]:
        """Yield each upstream episode candidate, counting it once as episodes_in."""
        for item in items:
            self.stats.episodes_in += 1
            yield item

    def reject(self, reason: DropReason) -> None:
        """An upstream record dropped before its episodes could be told apart (a row that does
        not parse): one episode candidate in, and the drop."""
        self.stats.episodes_in += 1
        self.drop(reason)

    def observe(self, data: bytes) -> Observation:
        """Screenshot bytes as a stored whole-image observation; ImageError (a Drop) otherwise."""
        header = inspect(data, self.max_image)
        sha = self.store.put(data, header.ext)
        return Observation(sha, header.ext, 0, 0, header.width, header.height)

    def episode(
        self,
        local_id: str,
        instruction: str,
        steps: Steps,
        success: bool = True,
        attrs: dict[str, str] | None = None,
    ) -> GuiEpisode | None:
        """The assembled episode `<source>/<local_id>`; None, counted, when it has no step."""
        if not steps.items:
            self.drop(DropReason.EMPTY_EPISODE)
            return None
        return GuiEpisode(
            episode_id=f"{self.source}/{local_id}",
            source=self.source,
            instruction=instruction,
            steps=steps.items,
            success=success,
            attrs=attrs or {},
        )
