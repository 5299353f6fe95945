"""The code location: every registered source (gui_assets.sources.registry) built by one function.

workspace.yaml and [tool.dagster] name this module; `dagster ... -m gui_assets` reaches the same
`defs` through the package's `code_location`. Loading it first judges the environment's
settings (gui_assets.pipeline.settings), so a bad value stops the load with its name and allowed values.
"""

from __future__ import annotations

from gui_assets.defs.location import build_definitions
from gui_assets.pipeline.settings import refuse_bad_environment
from gui_assets.sources.registry import SOURCES

refuse_bad_environment()
defs = build_definitions(SOURCES)
