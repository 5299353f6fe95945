"""The embedded default: a demo mirror generated on first use, so everything runs offline.

Each source's part, `<mirror>/<repo_id>/`, is written by the generator its declaration names
(`SourceSpec.demo`, the `write_mirror` of its folder's `demo.py`). A part's version is derived,
never kept by hand: a hash over the generator's module and every package module it imports
(normalized so comments and formatting move nothing, see core.code_version), the bytes of the
files it ships (its module's `DATA` path, when it has one), and the source's name and repo. The
stamp at the mirror's root holds each part's version by source name (it also marks the folder
as the generated demo mirror, whose data is never published). Only the parts a build reads are
generated; a part whose version differs is regenerated whole and moved into place atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from gui_assets.core.atomic import atomic_write_text, file_lock
from gui_assets.core.code_version import version_of
from gui_assets.core.layout import DEMO_STAMP as _STAMP
from gui_assets.sources.spec import SourceSpec

_LOCK_PREFIX = ".gui_assets_demo."  # + "lock" for the stamp, + "<source>.lock" per part


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
    """The version of the demo parts of `sources` together (the stamp holds each part's own,
    `demo_version([spec])`)."""
    parts = demo_sources(sources)
    modules = sorted({s.demo.__module__ for s in parts if s.demo is not None})
    data = {
        "sources": [(s.name, s.repo_id, getattr(s.demo, "__qualname__", "")) for s in parts],
        "shipped": {m: _shipped_files(m) for m in modules},
    }
    return version_of(modules, data)


def ensure_demo_mirror(root: Path, sources: Sequence[SourceSpec]) -> Path:
    """The demo mirror at root with the parts of `sources`, in their order: each part whose
    version in the stamp is not this code's is generated (in a temp folder, then moved into place
    over the old part); other parts are left as they are, so a build of one source generates only
    its own. Each part has a lock of its own: concurrent processes generate a part once, and two
    that ask for different parts generate them side by side."""
    root.mkdir(parents=True, exist_ok=True)
    stamp = root / _STAMP
    for spec in sources:
        if spec.demo is None:
            continue
        version = demo_version([spec])
        with file_lock(root / f"{_LOCK_PREFIX}{spec.name}.lock"):
            if _stamped_versions(stamp).get(spec.name) == version and (root / spec.repo_id).is_dir():
                continue
            _generate_part(root, spec)
            with file_lock(root / f"{_LOCK_PREFIX}lock"):  # the stamp is every part's
                versions = _stamped_versions(stamp)
                versions[spec.name] = version
                atomic_write_text(stamp, json.dumps(versions, indent=1, sort_keys=True) + "\n")
    if not stamp.is_file():  # a mirror of no part is still the generated demo mirror
        with file_lock(root / f"{_LOCK_PREFIX}lock"):
            if not stamp.is_file():
                atomic_write_text(stamp, "{}\n")
    return root


def _stamped_versions(stamp: Path) -> dict[str, str]:
    """Each part's version by source name; nothing for a missing stamp or one of another shape
    (an older layout's single version line), so every part asked for is generated anew."""
    try:
        found = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _generate_part(root: Path, spec: SourceSpec) -> None:
    """Runs `spec`'s generator into a temp folder beside the parts and moves its repo folder into
    place; a generator that fails, or writes outside `<repo_id>/`, leaves the old part as it was."""
    assert spec.demo is not None
    tmp = root / f".{spec.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        spec.demo(tmp)
        written = {str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file()}
        outside = sorted(w for w in written if not Path(w).is_relative_to(spec.repo_id))
        if outside or not written:
            raise RuntimeError(
                f"the demo generator of {spec.name} must write its files under {spec.repo_id}/ "
                f"and nowhere else; it wrote {outside[:5] or 'nothing'}"
            )
        part = root / spec.repo_id
        if part.exists():
            old = tmp.with_name(f".{spec.name}.old-{os.getpid()}")
            os.replace(part, old)
            shutil.rmtree(old, ignore_errors=True)
        part.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / spec.repo_id, part)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
