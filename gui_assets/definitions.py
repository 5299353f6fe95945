"""The code location: every registered source (gui_assets.sources) built by one function.

Loading this module is what makes a process a build process (the dagster CLI, a code server, a
run worker), so it first applies gui_assets.memory's process-wide policies, then builds the
Definitions inside `long_lived`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gui_assets.memory import long_lived, tune_build_process

if TYPE_CHECKING:
    import dagster as dg


def _load() -> dg.Definitions:
    tune_build_process()  # before the imports below load pyarrow and start threads
    with long_lived():  # the definitions are never garbage: kept out of every later collection
        from gui_assets.defs.cli_hint import refuse_missing_partition
        from gui_assets.defs.location import build_definitions
        from gui_assets.sources import SOURCES

        refuse_missing_partition(SOURCES)  # `dagster asset materialize` without --partition: name them
        return build_definitions(SOURCES)


defs = _load()
