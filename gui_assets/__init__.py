"""gui_assets: GUI-agent demonstrations -> one IR -> LIBERO-layout HDF5 shards (a Dagster code location).

`dagster ... -m gui_assets` finds the Definitions object re-exported here.
"""

from gui_assets.definitions import defs

__all__ = ["defs"]
