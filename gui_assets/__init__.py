"""gui_assets: GUI-agent demonstrations -> one IR -> LIBERO-layout HDF5 shards (a Dagster code location).

Importing the package, or any core module in it, changes nothing in the process: no allocator,
pool, collector or environment setting, no Dagster import, no file written. The code location's
Definitions live in gui_assets.definitions (`defs`), which workspace.yaml and [tool.dagster]
name. `dagster ... -m gui_assets` lists the package's members and takes the one Definitions
among them: `code_location`, a lazy module attribute (PEP 562) that loads gui_assets.definitions
when it is first asked for, so importing the core alone never builds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

__all__ = ["code_location"]


def __getattr__(name: str) -> dg.Definitions:
    if name == "code_location":
        from gui_assets.definitions import defs

        return defs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
