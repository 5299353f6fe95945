"""Every knob that changes output bytes, declared once. Recorded in dataset_info.json build.config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

DEFAULT_SHARD_CAP_BYTES = 500 * 1000 * 1000
# libdeflate's level for frame chunks, chosen by measurement (docs/performance.md, frame deflate):
# shards stay under the hand-written script's zlib-4 bytes in both benchmarks with some margin;
# level 5 would save about 1 ms of CPU a frame for a third of that margin.
DEFAULT_DEFLATE_LEVEL = 6


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def knob(
    default: Any = MISSING,
    *,
    meaning: str,
    default_factory: Any = MISSING,
    default_text: str = "",
    typed_as: str = "",
    unit: float = 1,
) -> Any:
    """A BuildConfig field declared with what run config and the README need: its one-line
    `meaning`, the README's `default_text` where the value alone would mislead, and, for a
    knob typed in another unit, its run-config name (`typed_as`) and `unit` (config value =
    typed value x unit). `gui_assets.pipeline.settings` turns these into the build resource's fields."""
    metadata = {"meaning": meaning, "default_text": default_text, "typed_as": typed_as, "unit": unit}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, slots=True)
class BuildConfig:
    """Every knob that changes output bytes, each declared once, here (with its meaning for run
    config and the README), plus each source's options (declared on its SourceSpec)."""

    shard_cap_bytes: int = knob(
        DEFAULT_SHARD_CAP_BYTES,
        meaning="shard size cap; a shard rolls on a demo boundary",
        typed_as="shard_cap_mb",
        unit=1e6,
    )
    # Frames are stored behind HDF5's built-in gzip filter, which every LIBERO/robomimic loader
    # reads without plugins; libdeflate writes the chunks (zlib streams, as the filter would) and
    # write_direct_chunk stores them. Its bytes are a function of the pixels and this level alone.
    libdeflate_level: int = knob(
        DEFAULT_DEFLATE_LEVEL,
        meaning="libdeflate level (1-12) of the frame chunks: higher is smaller and slower",
    )
    # Everything the shard writer holds decoded at once (pages being cropped, chunks read ahead);
    # a page that alone needs more is left out by name (frame_over_budget), never decoded.
    decode_budget_mb: int = knob(
        512,
        meaning="memory the shard writer may hold decoded (at least 64); a page needing more is "
        "dropped by name",
    )
    # [H, W] every agentview frame of the build is resized to, so whole directories (and all of
    # them together) batch in one DataLoader; None keeps each demo's native size (one size per
    # shard either way). The eye-in-hand crop is always cut at native pixels; native_hw keeps
    # each step's source size.
    agentview_hw: tuple[int, int] | None = knob(
        None,
        meaning="`[H, W]` every agentview frame is resized to, so all shards batch together",
        default_text="each demo's own size",
    )
    # {source: {option: value}}: as given (run config), or resolved for one source by its spec
    # (SourceSpec.resolve_config).
    source_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The source this config was resolved for ("" before): whose options `options` holds.
    source: str = ""

    def __post_init__(self) -> None:
        if self.shard_cap_bytes <= 0:
            raise ValueError("shard_cap_bytes must be positive")
        if not 1 <= self.libdeflate_level <= 12:
            raise ValueError("libdeflate_level must be 1..12")
        if self.agentview_hw is not None:
            hw = tuple(int(v) for v in self.agentview_hw)
            if len(hw) != 2 or not all(16 <= v <= 8192 for v in hw):
                raise ValueError("agentview_hw must be [H, W], each 16..8192")
            object.__setattr__(self, "agentview_hw", hw)
        if self.decode_budget_mb < 64:
            raise ValueError("decode_budget_mb must be at least 64")
        if not isinstance(self.source_options, Mapping) or not all(
            isinstance(v, Mapping) for v in self.source_options.values()
        ):
            raise ValueError("source_options must map each source's name to {option: value}")
        # A copy: the caller's mappings are not the config's.
        object.__setattr__(self, "source_options", {k: dict(v) for k, v in self.source_options.items()})

    @property
    def decode_budget_bytes(self) -> int:
        return self.decode_budget_mb * 1000 * 1000

    @property
    def options(self) -> Mapping[str, Any]:
        """The options of the source this config was resolved for (SourceSpec.resolve_config)."""
        if not self.source:
            raise LookupError(
                "this BuildConfig was resolved for no source: call spec.resolve_config(config) first"
            )
        return self.source_options[self.source]

    def to_dict(self) -> dict[str, Any]:
        """dataset_info.json `build.config`: every knob, and the options of every source held."""
        d = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("source", "source_options")
        }
        d["source_options"] = {k: dict(v) for k, v in sorted(self.source_options.items())}
        return d
