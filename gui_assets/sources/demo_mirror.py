"""The embedded default: a demo mirror generated on first use, so everything runs offline.

Each source's part is written by the generator its declaration names (`SourceSpec.demo`, the
`*_mirror.write_mirror` functions of this package for the registered sources). The mirror's
version is derived, never kept by hand: a hash over each generator's module and every package
module it imports (gui_assets.pipeline.lineage, normalized so comments and formatting move nothing),
the bytes of the files a generator ships (its module's `DATA` path, when it has one), and which
sources take part. A mirror whose stamp differs is regenerated whole, atomically.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from gui_assets.core.code_version import version_of
from gui_assets.core.layout import DEMO_STAMP as _STAMP
from gui_assets.sources.spec import SourceSpec


def _shipped_files(module: str) -> list[str]:
    """sha256 of every file under the generator module's `DATA` path (sorted by path)."""
    data = getattr(sys.modules[module], "DATA", None)
    if not isinstance(data, Path) or not data.exists():
        return []
    files = sorted(p for p in data.rglob("*") if p.is_file()) if data.is_dir() else [data]
    return [f"{p.relative_to(data.parent)}:{hashlib.sha256(p.read_bytes()).hexdigest()}" for p in files]


def demo_sources(sources: Sequence[SourceSpec]) -> list[SourceSpec]:
    """The sources with a demo part, by name."""
    return sorted((s for s in sources if s.demo is not None), key=lambda s: s.name)


def demo_version(sources: Sequence[SourceSpec]) -> str:
    """The version a demo mirror of `sources` carries in its stamp."""
    parts = demo_sources(sources)
    modules = sorted({s.demo.__module__ for s in parts if s.demo is not None})
    data = {
        "sources": [(s.name, s.repo_id, getattr(s.demo, "__qualname__", "")) for s in parts],
        "shipped": {m: _shipped_files(m) for m in modules},
    }
    return version_of(modules, data)


def ensure_demo_mirror(root: Path, sources: Sequence[SourceSpec]) -> Path:
    """The demo mirror of `sources` at root: generated (in a temp folder, then renamed into
    place) unless the stamp there is already this code's version."""
    version = demo_version(sources)
    stamp = root / _STAMP
    if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == version:
        return root
    tmp = root.with_name(f".{root.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for spec in demo_sources(sources):
            assert spec.demo is not None
            spec.demo(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a generator that fails leaves nothing behind
        raise
    (tmp / _STAMP).write_text(version + "\n", encoding="utf-8")
    if root.exists():
        old = root.with_name(f".{root.name}.old-{os.getpid()}")
        os.replace(root, old)
        shutil.rmtree(old, ignore_errors=True)
    os.replace(tmp, root)
    return root
