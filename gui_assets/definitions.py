"""The code location: every registered source (gui_assets.sources) built by one function."""

from __future__ import annotations

from gui_assets.defs.cli_hint import refuse_missing_partition
from gui_assets.defs.location import build_definitions
from gui_assets.sources import SOURCES

refuse_missing_partition(SOURCES)  # `dagster asset materialize` without --partition: name them
defs = build_definitions(SOURCES)
