"""Every knob that changes output bytes. Recorded whole in dataset_info.json build.config."""

from __future__ import annotations

import importlib.util
import os
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_SHARD_CAP_BYTES = 500 * 1000 * 1000
FRAME_CODECS = ("isal", "gzip")


def deflate_available() -> bool:
    """ISA-L's igzip (the `isal` package) is importable."""
    return importlib.util.find_spec("isal") is not None


def default_frame_codec() -> str:
    return "isal" if deflate_available() else "gzip"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class BuildConfig:
    shard_cap_bytes: int = DEFAULT_SHARD_CAP_BYTES
    # Frames are always stored behind HDF5's built-in gzip filter, which every LIBERO/robomimic
    # loader reads without plugins. "isal": deflated by ISA-L outside HDF5 at isal_level (0-3)
    # and written with write_direct_chunk; "gzip": h5py's own filter at gzip_level.
    frame_codec: str = field(default_factory=default_frame_codec)
    isal_level: int = 2
    gzip_level: int = 4
    # Mind2Web: the capture viewport and the wheel step used to reach targets below the fold.
    viewport_width: int = 1280
    viewport_height: int = 1080
    scroll_step_fraction: float = 0.75
    # A target closer than this share of the viewport to its bottom edge is scrolled past it.
    scroll_bottom_margin: float = 0.10
    # Pango: keep mouseover_start/_end pairs as HOVER steps (else they are dropped as pointer noise).
    pango_hover: bool = False
    # Everything the shard writer holds decoded at once (pages being cropped, chunks read ahead);
    # a page that alone needs more is left out by name (frame_over_budget), never decoded.
    decode_budget_mb: int = 512
    # [H, W] every agentview frame of the build is resized to, so whole directories (and all of
    # them together) batch in one DataLoader; None keeps each demo's native size (one size per
    # shard either way). The eye-in-hand crop is always cut at native pixels; native_hw keeps
    # each step's source size.
    agentview_hw: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.shard_cap_bytes <= 0:
            raise ValueError("shard_cap_bytes must be positive")
        if not 0 <= self.gzip_level <= 9:
            raise ValueError("gzip_level must be 0..9")
        if self.frame_codec not in FRAME_CODECS:
            raise ValueError(f"frame_codec must be one of {FRAME_CODECS}, not {self.frame_codec!r}")
        if self.frame_codec == "isal" and not deflate_available():
            raise ValueError("frame_codec 'isal' needs the isal package (pip install isal)")
        if not 0 <= self.isal_level <= 3:
            raise ValueError("isal_level must be 0..3")
        if self.agentview_hw is not None:
            hw = tuple(int(v) for v in self.agentview_hw)
            if len(hw) != 2 or not all(16 <= v <= 8192 for v in hw):
                raise ValueError("agentview_hw must be [H, W], each 16..8192")
            object.__setattr__(self, "agentview_hw", hw)
        if self.decode_budget_mb < 64:
            raise ValueError("decode_budget_mb must be at least 64")
        if not 0 < self.scroll_step_fraction <= 1:
            raise ValueError("scroll_step_fraction must be in (0, 1]")
        if not 0 <= self.scroll_bottom_margin < 1 - self.scroll_step_fraction + 1e-9:
            # Otherwise a scroll step could carry the target past the top of the view.
            raise ValueError("scroll_bottom_margin must be below 1 - scroll_step_fraction")

    @property
    def decode_budget_bytes(self) -> int:
        return self.decode_budget_mb * 1000 * 1000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def frame_deflater(config: BuildConfig) -> Callable[[bytes | memoryview], bytes]:
    """The zlib-stream compressor a frame chunk gets under `config`: ISA-L at isal_level for
    "isal", zlib at gzip_level (what HDF5's filter does) for "gzip". Both release the GIL."""
    if config.frame_codec == "isal":
        from isal import isal_zlib  # imported where used: the gzip fallback must not need it

        return lambda data: isal_zlib.compress(data, config.isal_level)
    return lambda data: zlib.compress(data, config.gzip_level)
