"""The rules of dataset_info.json against the shards on disk: its keys, the shard list, sizes,
hashes, frame sizes and the shard cap."""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gui_assets.validate.format import (
    BUILD_KEYS,
    DATASET_INFO,
    DEFAULT_SHARD_CAP_BYTES,
    INFO_KEYS,
    SHARD_KEYS,
    STATS_KEYS,
    UPSTREAM_FILE_KEYS,
    UPSTREAM_KEYS,
)
from gui_assets.validate.report import Target
from gui_assets.validate.shards import ShardSummary
from gui_assets.validate.values import short

HASH_BLOCK = 4 << 20


def read_info(target: Target, folder: Path, name: str) -> dict[str, Any] | None:
    """The parsed dataset_info.json, or None (reported) when it is missing or is not a JSON object."""
    target.check("info.read")
    path = folder / DATASET_INFO
    if not path.is_file():
        target.find("info.read", "dataset_info.json is missing", DATASET_INFO)
        return None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        target.find("info.read", f"dataset_info.json does not parse: {e}", DATASET_INFO)
        return None
    if not isinstance(info, dict):
        target.find(
            "info.read", f"dataset_info.json holds {type(info).__name__}, not an object", DATASET_INFO
        )
        return None
    _keys(target, info)
    target.check("info.identity")
    if info.get("directory") != name:
        target.find(
            "info.identity",
            f"directory is {short(info.get('directory'))}, the folder is {name!r}",
            DATASET_INFO,
        )
    return info


def declared_source(info: dict[str, Any] | None) -> dict[str, Any]:
    """build.source, what the build recorded of its source (platform, subsplit_attr, ...); empty
    where dataset_info.json records none."""
    build = (info or {}).get("build")
    record = build.get("source") if isinstance(build, dict) else None
    return record if isinstance(record, dict) else {}


def _missing(target: Target, where: str, value: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(value, dict):
        target.find("info.keys", f"{where} is {short(value)}, not an object", DATASET_INFO)
        return
    for key in keys:
        if key not in value:
            target.find("info.keys", f"{where} has no key {key}", DATASET_INFO)


def _upstream_files(target: Target, upstream: Any) -> None:
    """Each upstream file names its path, size, content hash and its own revision."""
    files = upstream.get("files", []) if isinstance(upstream, dict) else []
    if not isinstance(files, list):
        target.find("info.keys", f"build.upstream.files is {short(files)}, not a list", DATASET_INFO)
        return
    for i, entry in enumerate(files):
        where = f"build.upstream.files[{i}]"
        _missing(target, where, entry, UPSTREAM_FILE_KEYS)
        if isinstance(entry, dict) and "sha256" not in entry and "lfs_oid" not in entry:
            target.find("info.keys", f"{where} has neither sha256 nor lfs_oid", DATASET_INFO)


def _keys(target: Target, info: dict[str, Any]) -> None:
    target.check("info.keys")
    _missing(target, "dataset_info.json", info, INFO_KEYS)
    if "build" in info:
        _missing(target, "build", info["build"], BUILD_KEYS)
        if isinstance(info["build"], dict) and "upstream" in info["build"]:
            _missing(target, "build.upstream", info["build"]["upstream"], UPSTREAM_KEYS)
            _upstream_files(target, info["build"]["upstream"])
    if "stats" in info:
        _missing(target, "stats", info["stats"], STATS_KEYS)
    for series in ("shards", "val_shards"):
        entries = info.get(series, [])
        if not isinstance(entries, list):
            target.find("info.keys", f"{series} is {short(entries)}, not a list", DATASET_INFO)
            continue
        for i, entry in enumerate(entries):
            _missing(target, f"{series}[{i}]", entry, SHARD_KEYS)


def entries(info: dict[str, Any] | None, series: str) -> dict[str, dict[str, Any]]:
    """The listed shards of one series (shards or val_shards) by file name."""
    listed = (info or {}).get(series, [])
    if not isinstance(listed, list):
        return {}
    return {e["file"]: e for e in listed if isinstance(e, dict) and isinstance(e.get("file"), str)}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def check_listing(
    target: Target,
    folder: Path,
    info: dict[str, Any],
    on_disk: dict[str, list[str]],
    shards: list[ShardSummary],
) -> None:
    """Every shard on disk listed in its series, every listed one on disk, and each entry's figures."""
    target.check("info.shards.listed", "info.shards.present")
    listed = {series: entries(info, series) for series in ("shards", "val_shards")}
    for series, names in on_disk.items():
        other = "val_shards" if series == "shards" else "shards"
        for name in names:
            if name not in listed[series]:
                where = f"under {other}, not {series}" if name in listed[other] else "nowhere"
                target.find("info.shards.listed", f"{name} is on disk but listed {where}", DATASET_INFO)
        for name in listed[series]:
            if name not in names and not (folder / name).is_file():
                target.find(
                    "info.shards.present", f"{series} lists {name}, which is not on disk", DATASET_INFO
                )
    by_name = {s.name: s for s in shards}
    present = [
        (folder / n, e) for series in listed.values() for n, e in series.items() if (folder / n).is_file()
    ]
    hashed = [p for p, e in present if "sha256" in e]
    # Every byte of every shard is hashed, on every core (hashlib lets go of the GIL).
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        hashes = dict(zip(hashed, pool.map(sha256_of, hashed), strict=True))
    for path, entry in present:
        _entry(target, path, entry, by_name.get(path.name), hashes.get(path))


def _entry(
    target: Target, path: Path, entry: dict[str, Any], shard: ShardSummary | None, sha256: str | None
) -> None:
    target.check("info.shards.counts", "info.shards.bytes", "info.shards.sha256", "info.shards.frame_hw")
    name = path.name
    if shard is not None and shard.opened:
        for key, actual in (("demos", len(shard.demos)), ("steps", shard.steps)):
            if entry.get(key) != actual:
                target.find(
                    "info.shards.counts",
                    f"{name} is listed with {key} {short(entry.get(key))}, the file holds {actual}",
                    DATASET_INFO,
                )
        listed_hw = entry.get("frame_hw")
        if (
            "frame_hw" in entry
            and shard.frame_hws
            and (not isinstance(listed_hw, list) or {tuple(listed_hw)} != shard.frame_hws)
        ):
            target.find(
                "info.shards.frame_hw",
                f"{name} is listed with frame_hw {short(entry['frame_hw'])}, "
                f"its frames are {sorted(shard.frame_hws)}",
                DATASET_INFO,
            )
    size = path.stat().st_size
    if entry.get("bytes") != size:
        target.find(
            "info.shards.bytes",
            f"{name} is listed with {short(entry.get('bytes'))} bytes, the file has {size}",
            DATASET_INFO,
        )
    if sha256 is not None and entry["sha256"] != sha256:
        target.find(
            "info.shards.sha256",
            f"{name} is listed with sha256 {short(entry['sha256'])}, the file's is {sha256}",
            DATASET_INFO,
        )


def shard_cap(info: dict[str, Any]) -> int:
    """build.config.shard_cap_bytes, or the format's default where the build does not record one."""
    build = info.get("build")
    config = build.get("config") if isinstance(build, dict) else None
    cap = config.get("shard_cap_bytes") if isinstance(config, dict) else None
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else DEFAULT_SHARD_CAP_BYTES


def check_cap(target: Target, folder: Path, info: dict[str, Any], shards: list[ShardSummary]) -> None:
    """A shard rolls before a demo that would pass the cap, so it passes the cap by less than its
    last demo: the demo's datasets plus its even share of the file's own bookkeeping."""
    target.check("info.shards.cap")
    cap = shard_cap(info)
    for shard in shards:
        if not shard.opened or not shard.demos or shard.last_demo not in shard.demo_bytes:
            continue
        size = (folder / shard.name).stat().st_size
        overhead = max(size - sum(shard.demo_bytes.values()), 0)
        last = shard.demo_bytes[shard.last_demo] + overhead / len(shard.demos)
        if size - last > cap:
            target.find(
                "info.shards.cap",
                f"{size} B: over the cap {cap} B by more than its last demo ({last:.0f} B)",
                shard.name,
            )
