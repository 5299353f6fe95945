"""The LeRobot export of a whole build: every dataset of every built directory, each rewritten
only when what it is made of changed.

A dataset's key covers its directory's dataset_info.json (shard hashes included), the IR files
that decide which frames keep their original bytes, its frame size and the export's code
version. Its manifest, `<out>/_work/lerobot/<dataset>.json`, records the key, the figures and
each file's size, mtime and sha256; a dataset whose key is unchanged and whose files are still
as recorded is reused without reading a shard. Datasets of directories no longer built, and of
frame sizes a directory no longer has, are removed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import imagecodecs
import pyarrow as pa

from gui_assets.core.atomic import TMP_MARK, atomic_write_text, sha256_file, writer_alive
from gui_assets.core.code_version import version_of
from gui_assets.core.config import usable_cpus
from gui_assets.core.deflate import zlib_deflater
from gui_assets.core.episode_store import EPISODES_FILE, STEPS_FILE
from gui_assets.core.layout import WORK_DIR, DatasetInfo, OutLayout, built_directories
from gui_assets.pipeline.lineage import STAGE_MODULES
from gui_assets.publish import lerobot

MANIFEST_DIR = "lerobot"  # <out>/_work/lerobot/<dataset>.json
MANIFEST_FORMAT = 1


def code_version() -> str:
    """The export's modules (import closure) and the libraries that write its bytes."""
    libraries = {
        "pyarrow": pa.__version__,
        "imagecodecs": imagecodecs.__version__,  # its libdeflate deflates the PNGs
        "deflate_probe": len(zlib_deflater(1)(b"x" * 64)),
    }
    return version_of(STAGE_MODULES["lerobot_export"], [MANIFEST_FORMAT, libraries])


def _digest(path: Path) -> str:
    return sha256_file(path) if path.is_file() else "absent"


def part_key(info: DatasetInfo, part: lerobot.Part, layout: OutLayout, code: str, video: bool) -> str:
    episodes = layout.episodes(info.directory)
    inputs = {
        "code": code,
        "video": video,
        "dataset_info": info.to_dict(),
        "frame_hw": list(part.frame_hw),
        "name": part.name,
        "episodes": _digest(episodes / EPISODES_FILE),
        "steps": _digest(episodes / STEPS_FILE),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def _files(root: Path, known: dict[str, str]) -> list[dict[str, Any]]:
    """Every file of a dataset: size, mtime and sha256 (`known` hashes, taken as written, are not
    read again)."""
    out = []
    for p in sorted(q for q in root.rglob("*") if q.is_file()):
        rel, st = p.relative_to(root).as_posix(), p.stat()
        sha256 = known.get(rel) or sha256_file(p)
        out.append({"path": rel, "bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256})
    return out


def _still_there(root: Path, files: list[dict[str, Any]]) -> bool:
    """The recorded files, unchanged (size and mtime), and nothing else."""
    if not root.is_dir():
        return False
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    if present != {f["path"] for f in files}:
        return False
    for f in files:
        st = (root / f["path"]).stat()
        if st.st_size != f["bytes"] or st.st_mtime_ns != f["mtime_ns"]:
            return False
    return True


@dataclass
class ExportResult:
    root: Path
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> figures
    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> files
    reused: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def digest(self) -> str:
        """Content of the whole export: every file's path and sha256."""
        listing = {n: [(f["path"], f["sha256"]) for f in fs] for n, fs in sorted(self.files.items())}
        return hashlib.sha256(json.dumps(listing, sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "datasets": self.datasets,
            "reused": self.reused,
            "written": self.written,
            "removed": self.removed,
            "bytes": sum(f["bytes"] for fs in self.files.values() for f in fs),
        }


def _load_manifest(path: Path) -> dict[str, Any] | None:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or d.get("format") != MANIFEST_FORMAT:
        return None
    return d


def _remove(p: Path) -> None:
    if p.is_dir():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def _prune(export_root: Path, manifests: Path, keep: set[str]) -> list[str]:
    removed = []
    for folder in (export_root, manifests):
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            name = p.name.removesuffix(".json") if folder is manifests else p.name
            if p.name.startswith(".") and TMP_MARK in p.name:
                if not writer_alive(p.name):  # left by a killed export
                    _remove(p)
                continue
            if name not in keep:
                _remove(p)
                if folder is export_root:
                    removed.append(name)
    return removed


def write_export(out: Path, threads: int | None = None, video: bool = False) -> ExportResult:
    """Export every built directory under `out` to `<out>/lerobot/` (see the module docstring);
    `video`: the agentview stream as an AV1 video feature instead of lossless images."""
    layout = OutLayout(out)
    result = ExportResult(out / lerobot.EXPORT_DIR)
    manifests = out / WORK_DIR / MANIFEST_DIR
    code = code_version()
    keep: set[str] = set()
    with ThreadPoolExecutor(threads or usable_cpus(), thread_name_prefix="lerobot-frames") as pool:
        for info in built_directories(out):
            for part in lerobot.parts_of(info, layout.directory(info.directory)):
                keep.add(part.name)
                key = part_key(info, part, layout, code, video)
                manifest = manifests / f"{part.name}.json"
                known = _load_manifest(manifest)
                root = result.root / part.name
                if known and known["key"] == key and _still_there(root, known["files"]):
                    result.reused.append(part.name)
                    figures, files = known["figures"], known["files"]
                else:
                    figures, hashes = lerobot.export_part(out, part, pool, video)
                    files = _files(root, hashes)
                    record = {"format": MANIFEST_FORMAT, "key": key, "figures": figures, "files": files}
                    atomic_write_text(manifest, json.dumps(record, ensure_ascii=False))
                    result.written.append(part.name)
                result.datasets[part.name] = figures
                result.files[part.name] = files
    result.removed = _prune(result.root, manifests, keep)
    return result


def published_files(out: Path) -> list[tuple[str, Path, str]]:
    """(path in the repo, local file, sha256) of every exported dataset whose files are still as
    its manifest records them: what an upload sends, under `lerobot/<dataset>/`."""
    export_root = out / lerobot.EXPORT_DIR
    manifests = out / WORK_DIR / MANIFEST_DIR
    files = []
    for root in sorted(p for p in export_root.glob("*") if p.is_dir() and not p.name.startswith(".")):
        known = _load_manifest(manifests / f"{root.name}.json")
        if known is None or not _still_there(root, known["files"]):
            raise ValueError(f"{root}: not as the export left it; materialize lerobot_export again")
        for f in known["files"]:
            files.append((f"{lerobot.EXPORT_DIR}/{root.name}/{f['path']}", root / f["path"], f["sha256"]))
    return files
