"""The registry: the sources are the folders of this package that hold a `source.py`.

Each such folder is one upstream dataset: `source.py` declares it (`SPEC`, a SourceSpec), its
adapter reads the upstream into the IR, its demo generator writes a small mirror in the real
layout. Everything else follows from the declarations found here: the asset chain and its checks,
the demo mirror, the run config (each spec's `options`), the docs pages and the README's sources
table (`gui-assets docs`). Adding a source is adding its folder (and its tests folder); no list
is kept by hand.

Imported by the code location (`definitions.py` and the resources), the commands and tests;
the stages are handed the specs they need (`gui_assets.sources.spec`).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from gui_assets.sources.spec import SourceSpec

SOURCES_DIR = Path(__file__).resolve().parent


def _declared() -> tuple[SourceSpec, ...]:
    """The SPEC of every `<folder>/source.py` under this package, sorted by folder name."""
    specs = []
    for info in sorted(pkgutil.iter_modules([str(SOURCES_DIR)]), key=lambda i: i.name):
        if not info.ispkg or not (SOURCES_DIR / info.name / "source.py").is_file():
            continue
        module = importlib.import_module(f"{__package__}.{info.name}.source")
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, SourceSpec):
            raise TypeError(f"{module.__name__} must define SPEC, a SourceSpec")
        if spec.name != info.name:
            raise ValueError(f"{module.__name__} declares {spec.name!r}: a source's name is its folder's")
        specs.append(spec)
    return tuple(specs)


SOURCES: tuple[SourceSpec, ...] = _declared()
BY_NAME: dict[str, SourceSpec] = {spec.name: spec for spec in SOURCES}


def source_named(name: str) -> SourceSpec:
    """The declaration of source `name`; KeyError naming the registered ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no source {name!r}; registered: {', '.join(BY_NAME)}") from None
