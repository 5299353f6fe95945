"""Every knob that changes output bytes. Recorded whole in dataset_info.json build.config."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_SHARD_CAP_BYTES = 500 * 1000 * 1000


@dataclass(frozen=True, slots=True)
class BuildConfig:
    shard_cap_bytes: int = DEFAULT_SHARD_CAP_BYTES
    # gzip is a built-in HDF5 filter: every LIBERO/robomimic loader reads it without plugins.
    gzip_level: int = 4
    # Mind2Web: the capture viewport and the wheel step used to reach targets below the fold.
    viewport_width: int = 1280
    viewport_height: int = 1080
    scroll_step_fraction: float = 0.75
    # A target closer than this share of the viewport to its bottom edge is scrolled past it.
    scroll_bottom_margin: float = 0.10
    # Pango: keep mouseover_start/_end pairs as HOVER steps (else they are dropped as pointer noise).
    pango_hover: bool = False

    def __post_init__(self) -> None:
        if self.shard_cap_bytes <= 0:
            raise ValueError("shard_cap_bytes must be positive")
        if not 0 <= self.gzip_level <= 9:
            raise ValueError("gzip_level must be 0..9")
        if not 0 < self.scroll_step_fraction <= 1:
            raise ValueError("scroll_step_fraction must be in (0, 1]")
        if not 0 <= self.scroll_bottom_margin < 1 - self.scroll_step_fraction + 1e-9:
            # Otherwise a scroll step could carry the target past the top of the view.
            raise ValueError("scroll_bottom_margin must be below 1 - scroll_step_fraction")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
