"""What lets the cua-lite export reuse a directory's share: its key and its manifest.

A directory's share of the export (its parquet files and its figures) is recorded in
`<out>/_work/cua_lite/<directory>.json` under a key of everything that output is made of: the
directory's dataset_info.json, the IR files the export reads (episode and step tables, the split
table), `evaluation_as_validation`, and the export's code version (the import closure of the
export module, as `lineage` computes it, plus the Pillow, zlib and pyarrow versions whose encoders
write the bytes). A share whose key is unchanged, whose parquet files still hold the recorded
bytes (size and sha256) and whose every named image is present is reused without reading the
episodes; any other is recomputed, and `ExportRun.recomputed` says why.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import PIL
import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import sha256_file, sweep_temps
from gui_assets.core.code_version import version_of
from gui_assets.core.episode_store import EPISODES_FILE, STEPS_FILE
from gui_assets.core.layout import WORK_DIR, DatasetInfo, OutLayout
from gui_assets.pipeline.lineage import STAGE_MODULES

MANIFEST_DIR = "cua_lite"  # <out>/_work/cua_lite/<directory>.json
MANIFEST_FORMAT = 2  # bump when the manifest's shape changes

# Why a directory was recomputed rather than reused (ExportRun.recomputed).
NEW, CHANGED, UNREADABLE_MANIFEST = "new", "changed", "unreadable_manifest"
FILE_MISSING, FILE_CHANGED, IMAGE_MISSING = "file_missing", "file_changed", "image_missing"
UNSAFE_NAME = "unsafe_name"


def code_version() -> str:
    """The export's code: its module's import closure (normalized, as asset code versions are),
    and the libraries whose encoders write the bytes (PNG windows, parquet files)."""
    libraries = {"pillow": PIL.__version__, "zlib": zlib.ZLIB_RUNTIME_VERSION, "pyarrow": pa.__version__}
    return version_of(STAGE_MODULES["cua_lite_export"], [MANIFEST_FORMAT, libraries])


def _file_digest(path: Path) -> str:
    return sha256_file(path) if path.is_file() else "absent"


def directory_key(info: DatasetInfo, layout: OutLayout, evaluation_as_validation: bool, code: str) -> str:
    """What a directory's share of the export is made of: its dataset_info.json (as read, so the
    key is of the record this export uses), the IR files it reads, the setting and the code."""
    episodes = layout.episodes(info.directory)
    inputs = {
        "code": code,
        "evaluation_as_validation": evaluation_as_validation,
        "dataset_info": info.to_dict(),
        "episodes": _file_digest(episodes / EPISODES_FILE),
        "steps": _file_digest(episodes / STEPS_FILE),
        "splits": _file_digest(layout.splits(info.directory)),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def _counts(value: Any) -> None:
    if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
        raise ValueError(f"not a count by reason: {value!r}")


@dataclass(slots=True)
class DirectoryExport:
    """One directory's share of the export, as recorded in its manifest. The images its rows
    name are not listed (that list grows with the directory): they are read back from the
    files' `images` column when the share is checked."""

    key: str
    figures: dict[str, Any]  # platform, split_role, rows by split
    tally: dict[str, Any]  # the export's left_out / truncated counts of this directory alone
    files: list[dict[str, Any]]  # {path, rows, bytes, sha256}, in write order

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "key": self.key,
            "figures": self.figures,
            "tally": self.tally,
            "files": self.files,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DirectoryExport:
        """ValueError / KeyError / TypeError for anything but a manifest this code wrote."""
        if d.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"manifest format {d.get('format')!r}")
        counts = d["tally"]
        for part in ("episodes", "steps", "keys"):
            _counts(counts["left_out"][part])
        _counts(counts["truncated"])
        files = [
            {
                "path": str(f["path"]),
                "rows": int(f["rows"]),
                "bytes": int(f["bytes"]),
                "sha256": str(f["sha256"]),
            }
            for f in d["files"]
        ]
        figures = d["figures"]
        if not isinstance(figures, dict) or not {"platform", "split_role", "rows"} <= set(figures):
            raise ValueError("manifest figures")
        # The files must carry exactly the rows the figures count (a file per split with rows).
        written = {f["path"].split("/")[-2]: f["rows"] for f in files}
        if written != {split: n for split, n in figures["rows"].items() if n}:
            raise ValueError("manifest files and figures disagree")
        return cls(str(d["key"]), figures, counts, files)


def manifest_path(out: Path, directory: str) -> Path | None:
    """`<out>/_work/cua_lite/<directory>.json`; None for a name that is no plain file name."""
    if not directory or directory.startswith(".") or Path(directory).name != directory:
        return None
    return out / WORK_DIR / MANIFEST_DIR / f"{directory}.json"


def _named_images(path: Path) -> Iterator[str]:
    """The image paths a parquet file's rows name, a row group at a time."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1024, columns=["images"]):
        for images in batch.column(0).to_pylist():
            yield from images


def reusable(manifest: Path | None, key: str, root: Path) -> tuple[DirectoryExport | None, str]:
    """The recorded share when it can stand as this export's (same key, its files intact and
    every image they name present), else (None, why not)."""
    if manifest is None:
        return None, UNSAFE_NAME
    if not manifest.is_file():
        return None, NEW
    try:
        cached = DirectoryExport.from_dict(json.loads(manifest.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, UNREADABLE_MANIFEST
    if cached.key != key:
        return None, CHANGED
    for f in cached.files:
        path = root / f["path"]
        if not path.is_file():
            return None, FILE_MISSING
        if path.stat().st_size != f["bytes"] or sha256_file(path) != f["sha256"]:
            return None, FILE_CHANGED
    for f in cached.files:
        if not all((root / rel).is_file() for rel in _named_images(root / f["path"])):
            return None, IMAGE_MISSING
    return cached, ""


@dataclass(slots=True)
class ExportRun:
    """How an export went, beside its result: which directories were reused and why the others
    were recomputed, and how their images were placed (link / reflink / copy / encoded /
    present). Not part of the result, which is the same whichever way it was reached."""

    reused: list[str] = field(default_factory=list)
    recomputed: dict[str, str] = field(default_factory=dict)
    images: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"reused": self.reused, "recomputed": self.recomputed, "images": self.images}


def sweep_manifests(out: Path, built: set[str]) -> None:
    """Drop the manifests of directories no longer built, and temp files of killed writers."""
    folder = out / WORK_DIR / MANIFEST_DIR
    sweep_temps(folder, only_dead_writers=True)  # another export may be writing one now
    if folder.is_dir():
        for p in folder.glob("*.json"):
            if p.stem not in built:
                p.unlink(missing_ok=True)
