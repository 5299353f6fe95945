"""What the viewer serves: the served root, the shard files under it, and their index.

The index of a shard is its file-level attributes and, per demo, a few attributes and small
datasets (action types, masks, rewards): never a frame. It is cached per file by (mtime, size),
so reloading the page re-reads only the shards that changed.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import h5py
import numpy as np

SHARD_SUFFIXES = (".hdf5", ".h5")
BUILD_WORK_AREA = "_work"
BUILD_HUB_COPY = "hub"
LISTING_TTL_S = 2.0
INFO_NAME = "dataset_info.json"
# The output format's action types, in code order; a shard's `gui_action_types` attribute wins.
ACTION_TYPES = (
    "CLICK", "TYPE", "SELECT", "HOVER", "SCROLL", "DRAG", "PRESS_BACK", "PRESS_HOME", "PRESS_ENTER",
    "PRESS_KEY", "GOTO", "WAIT", "STOP", "FAIL",
)  # fmt: skip
POINTER_TYPES = frozenset({"CLICK", "TYPE", "SELECT", "HOVER", "SCROLL", "DRAG"})
# A demo's summary attributes, as the list shows them.
SUMMARY_ATTRS = ("language_instruction", "source", "directory", "episode_id")


class ViewerInputError(ValueError):
    """A path given on the command line that cannot be served (missing, not a shard)."""


class BadPath(ValueError):
    """A client path that is absolute or climbs out of the served root (HTTP 400)."""


class NotServed(LookupError):
    """A client path, demo or step that the served files do not hold (HTTP 404)."""


class UnreadableShard(ValueError):
    """A served file that h5py cannot open or that has no /data group (HTTP 422)."""


def jsonable(value: Any) -> Any:
    """An HDF5 attribute or array as JSON: text decoded, numpy unboxed, non-finite floats as null."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()] if value.dtype.kind in "fOSU" else value.tolist()
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def attrs_of(obj: h5py.Group | h5py.Dataset) -> dict[str, Any]:
    return {k: jsonable(obj.attrs[k]) for k in sorted(obj.attrs)}


def demo_names(data: h5py.Group) -> list[str]:
    """The demos of a /data group in number order (demo_2 before demo_10), other groups after."""

    def key(name: str) -> tuple[int, int, str]:
        suffix = name.removeprefix("demo_")
        return (0, int(suffix), "") if name.startswith("demo_") and suffix.isdigit() else (1, 0, name)

    return sorted((n for n in data if data.get(n, getclass=True) is h5py.Group), key=key)


def action_type_names(data: h5py.Group) -> list[str]:
    raw = data.attrs.get("gui_action_types")
    if raw is not None:
        try:
            names = json.loads(jsonable(raw))
        except (TypeError, ValueError):
            names = None
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return names
    return list(ACTION_TYPES)


def file_version(path: Path) -> str:
    """Changes whenever the file is rewritten: frame URLs carry it, so the browser may cache them."""
    st = path.stat()
    return f"{st.st_mtime_ns:x}-{st.st_size:x}"


@dataclass(frozen=True)
class ServedRoot:
    """The paths given on the command line and the folder every client path is relative to."""

    root: Path
    inputs: tuple[Path, ...]

    @classmethod
    def from_paths(cls, paths: Sequence[str | Path]) -> ServedRoot:
        if not paths:
            raise ViewerInputError("no PATH given: name a shard, a directory or a whole build")
        # abspath, not resolve: a hub download's shards are symlinks into the cache's blobs, and
        # the folder the user named is the one to serve.
        given = tuple(Path(os.path.abspath(p)) for p in paths)
        for p in given:
            if not p.exists():
                raise ViewerInputError(f"{p}: no such file or directory")
            if p.is_file() and p.suffix not in SHARD_SUFFIXES:
                raise ViewerInputError(f"{p}: not an HDF5 shard ({' or '.join(SHARD_SUFFIXES)})")
        common = Path(os.path.commonpath([str(p) for p in given]))
        root = common.parent if common.is_file() else common
        return cls(root, given)

    def shard_files(self) -> list[str]:
        """Every shard under the given paths, relative to the root, sorted. Folders whose name
        starts with "_" or "." (a build's `_work` area, caches) are not entered, nor a build's
        `hub/` folder (the local copy of an upload: the same shards again)."""
        found: set[str] = set()
        for p in self.inputs:
            files = [p] if p.is_file() else _walk_shards(p)
            found.update(f.relative_to(self.root).as_posix() for f in files)
        return sorted(found)

    def resolve(self, rel: str, served: Sequence[str] | None = None) -> Path:
        """The file a client path names: relative, no "..", and one of the served shards."""
        if not rel or "\\" in rel or "\x00" in rel:
            raise BadPath(f"not a relative path: {rel!r}")
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts:
            raise BadPath(f"outside the served root: {rel!r}")
        if pure.as_posix() not in (served if served is not None else self.shard_files()):
            raise NotServed(f"not a served shard: {rel!r}")
        return self.root.joinpath(*pure.parts)


def _walk_shards(directory: Path) -> Iterator[Path]:
    for here, dirs, files in os.walk(directory, followlinks=True):
        # A build root (it has a `_work` area) also holds `hub/`, a copy of what an upload sends.
        skip = {BUILD_HUB_COPY} if BUILD_WORK_AREA in dirs else set()
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")) and d not in skip)
        for name in sorted(files):
            if name.endswith(SHARD_SUFFIXES):
                yield Path(here) / name


def _demo_summary(name: str, demo: h5py.Group, types: list[str]) -> dict[str, Any]:
    """What the demo list shows of one demo: a few attributes, step and type counts, outcome."""
    summary: dict[str, Any] = {"name": name}
    summary.update((key, jsonable(demo.attrs[key]) if key in demo.attrs else None) for key in SUMMARY_ATTRS)
    codes = np.asarray(demo["action_type"][()], np.int64) if "action_type" in demo else np.zeros(0, np.int64)
    summary["steps"] = int(demo.attrs.get("num_samples", codes.shape[0]))
    summary["type_counts"] = {
        types[code] if 0 <= code < len(types) else f"#{code}": int(n)
        for code, n in zip(*np.unique(codes, return_counts=True), strict=True)
    }
    ungrounded = 0
    if "action_mask" in demo and codes.size:
        mask = np.asarray(demo["action_mask"][()])
        pointer = np.array([0 <= c < len(types) and types[c] in POINTER_TYPES for c in codes])
        if mask.shape == (codes.shape[0], 4):
            ungrounded = int((pointer & ~mask.any(axis=1)).sum())
    summary["ungrounded"] = ungrounded
    summary["success"] = _success(demo)
    return summary


def _success(demo: h5py.Group) -> bool | None:
    """rewards[-1] (1 on the last step iff the episode succeeded), else a `success` attribute."""
    rewards = demo.get("rewards")
    if isinstance(rewards, h5py.Dataset) and rewards.ndim == 1 and rewards.shape[0]:
        return bool(rewards[rewards.shape[0] - 1])
    if "success" in demo.attrs:
        return bool(jsonable(demo.attrs["success"]))
    return None


def read_file_index(path: Path) -> dict[str, Any]:
    """A shard's attributes and demo summaries, from attributes and small datasets only."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise UnreadableShard(f"h5py cannot open it: {e}") from None
    with f:
        data = f.get("data")
        if not isinstance(data, h5py.Group):
            raise UnreadableShard("no /data group")
        types = action_type_names(data)
        demos = []
        for name in demo_names(data):
            try:
                demos.append(_demo_summary(name, data[name], types))
            except (KeyError, ValueError, TypeError, OSError) as e:  # one damaged demo, not the file
                demos.append({"name": name, "steps": 0, "type_counts": {}, "error": f"unreadable: {e}"})
        return {"attrs": attrs_of(data), "action_types": types, "demos": demos}


def read_directory_info(directory: Path) -> dict[str, Any] | None:
    """The parts of a directory's dataset_info.json the page shows (None when there is none:
    a lone shard downloaded on its own)."""
    try:
        info = json.loads((directory / INFO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    build = info.get("build") if isinstance(info.get("build"), dict) else {}
    upstream = build.get("upstream") if isinstance(build.get("upstream"), dict) else {}
    return {
        "directory": info.get("directory"),
        "source": info.get("source"),
        "split": info.get("split"),
        "gui_assets_version": build.get("gui_assets_version"),
        "upstream_repo": upstream.get("repo_id"),
        "upstream_revision": upstream.get("revision"),
        "stats": info.get("stats"),
        "shards": info.get("shards"),
    }


class Catalog:
    """The served shards and their index, re-listed on every request and re-read per changed file."""

    def __init__(self, served: ServedRoot, listing_ttl_s: float = LISTING_TTL_S) -> None:
        self.served = served
        self.listing_ttl_s = listing_ttl_s
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, dict[str, Any]]] = {}
        self._listing: tuple[float, list[str]] | None = None

    def files(self) -> list[str]:
        """The served shards, listed again once the last listing is `listing_ttl_s` old: every
        frame request checks its path against it, and a whole build is a deep tree to walk."""
        with self._lock:
            listing = self._listing
        if listing is not None and time.monotonic() - listing[0] < self.listing_ttl_s:
            return listing[1]
        files = self.served.shard_files()
        with self._lock:
            self._listing = (time.monotonic(), files)
        return files

    def path(self, rel: str) -> Path:
        return self.served.resolve(rel, self.files())

    def file_entry(self, rel: str) -> dict[str, Any]:
        path = self.served.root / rel
        version = file_version(path)
        with self._lock:
            hit = self._cache.get(rel)
        if hit is not None and hit[0] == version:
            return hit[1]
        directory = PurePosixPath(rel).parent.as_posix()
        entry: dict[str, Any] = {"path": rel, "directory": directory, "bytes": path.stat().st_size}
        entry["version"] = version
        try:
            entry.update(read_file_index(path))
        except UnreadableShard as e:
            entry.update({"error": str(e), "attrs": {}, "action_types": list(ACTION_TYPES), "demos": []})
        with self._lock:
            self._cache[rel] = (version, entry)
        return entry

    def index(self, only: dict[str, set[str]] | None = None) -> dict[str, Any]:
        """Every served file's entry (or, with `only`, those files and demos), and the
        dataset_info.json summary of each directory that has one."""
        files = []
        for rel in self.files():
            if only is not None and rel not in only:
                continue
            entry = self.file_entry(rel)
            if only is not None:
                entry = {**entry, "demos": [d for d in entry["demos"] if d["name"] in only[rel]]}
            files.append(entry)
        folders = sorted({e["directory"] for e in files})
        infos = {d: read_directory_info(self.served.root / d) for d in folders}
        directories = {d: info for d, info in infos.items() if info is not None}
        return {"root": str(self.served.root), "files": files, "directories": directories}
