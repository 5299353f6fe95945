"""gui_assets: GUI-agent demonstrations -> one IR -> LIBERO-layout HDF5 shards (a Dagster code location).

`dagster ... -m gui_assets` finds the Definitions object re-exported here.
"""

from gui_assets.memory import long_lived, no_collection_at_exit, one_malloc_arena, use_system_arrow_pool

# Before anything loads pyarrow: every stage of a build runs in one process, and what one stage
# frees must not stay resident (see gui_assets.memory).
use_system_arrow_pool()
one_malloc_arena()
no_collection_at_exit()  # a CLI build's last second (gui_assets.memory)

with long_lived():  # the definitions are never garbage: kept out of every later collection
    from gui_assets.definitions import defs

__all__ = ["defs"]
