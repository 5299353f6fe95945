"""gui_assets: GUI-agent demonstrations -> one IR -> LIBERO-layout HDF5 shards (a Dagster code location).

Importing the package, or any core module in it, changes nothing in the process: no allocator,
pool, collector or environment setting, no Dagster import, no file written. `gui_assets.defs`,
the code location's Definitions, is built on first access by gui_assets.definitions, which is
also where a build process gets its allocator and collector policies (gui_assets.memory).
`dagster ... -m gui_assets` finds it by listing the package's members (dir, then getattr).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

__all__ = ["defs"]


class _Package(types.ModuleType):
    """This package's module type: `defs` is computed on access. A module-level `__getattr__`
    would not do: loading any module of the subpackage gui_assets.defs (the Dagster shell) binds
    the name `defs` on the package to that subpackage, and `__getattr__` is then never asked."""

    @property
    def defs(self) -> dg.Definitions:
        from gui_assets.definitions import defs

        return defs

    @defs.setter
    def defs(self, value: object) -> None:
        # The import system binds each loaded subpackage on its parent; that binding is the only
        # assignment the name takes, and it is dropped so that the name stays the Definitions.
        if value is not sys.modules.get(f"{self.__name__}.defs"):
            raise AttributeError("gui_assets.defs is the code location's Definitions and cannot be replaced")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


sys.modules[__name__].__class__ = _Package
