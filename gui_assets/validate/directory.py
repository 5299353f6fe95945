"""A `<directory>/` (its files, every shard, dataset_info.json) and a single shard on its own."""

from __future__ import annotations

import re
from pathlib import Path

from gui_assets.validate.format import DATASET_INFO, SHARD_NAME
from gui_assets.validate.info import check_cap, check_listing, declared_source, read_info
from gui_assets.validate.report import Target
from gui_assets.validate.shards import Sampling, ShardSummary, check_shard
from gui_assets.validate.stats import check_splits, check_stats


def is_directory(folder: Path) -> bool:
    """Does this folder look like a `<directory>/` (a dataset_info.json or shards of its own)?"""
    return (folder / DATASET_INFO).is_file() or any(p.suffix == ".hdf5" for p in folder.iterdir())


def _series(target: Target, folder: Path, name: str) -> dict[str, list[str]]:
    """The folder's shards by series ("shards" main, "val_shards"), each in index order."""
    target.check("files.naming", "files.unexpected", "files.contiguous", "files.no_shards")
    patterns = {
        "shards": re.compile(re.escape(name) + r"_(\d{4})\.hdf5"),
        "val_shards": re.compile(re.escape(name) + r"_val_(\d{4})\.hdf5"),
    }
    found: dict[str, dict[int, str]] = {"shards": {}, "val_shards": {}}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue  # a download tool's own state (.cache/), a desktop's (.DS_Store)
        matched = [(s, m) for s, p in patterns.items() if (m := p.fullmatch(entry.name)) and entry.is_file()]
        if matched:
            series, match = matched[0]
            found[series][int(match.group(1))] = entry.name
        elif entry.suffix == ".hdf5":
            target.find(
                "files.naming", f"{entry.name} is not {name}_NNNN.hdf5 nor {name}_val_NNNN.hdf5", entry.name
            )
        elif entry.name != DATASET_INFO:
            kind = "folder" if entry.is_dir() else "file"
            target.find("files.unexpected", f"a {kind} {entry.name} beside the shards", entry.name)
    for series, shards in found.items():
        if sorted(shards) != list(range(len(shards))):
            missing = sorted(set(range(len(shards))) - set(shards))
            extra = sorted(set(shards) - set(range(len(shards))))
            label = "_val_ series" if series == "val_shards" else "series"
            target.find(
                "files.contiguous",
                f"the {label} of {len(shards)} has {[f'{i:04d}' for i in extra[:5]]} in place of "
                f"{[f'{i:04d}' for i in missing[:5]]}",
                name,
            )
    if not found["shards"]:
        target.find("files.no_shards", f"no {name}_0000.hdf5 (no main shard)", name)
    return {series: [shards[i] for i in sorted(shards)] for series, shards in found.items()}


def check_directory(folder: Path, sampling: Sampling) -> Target:
    name = folder.name
    target = Target(name, str(folder), "directory")
    on_disk = _series(target, folder, name)
    info = read_info(target, folder, name)
    source = info.get("source") if info and isinstance(info.get("source"), str) else None
    declared = declared_source(info)
    judged: dict[str, list[ShardSummary]] = {}
    for series, names in on_disk.items():
        judged[series] = [check_shard(target, folder / n, name, source, sampling, declared) for n in names]
    target.figures["shards"] = sum(len(v) for v in judged.values())
    if info is not None:
        everything = judged["shards"] + judged["val_shards"]
        check_listing(target, folder, info, on_disk, everything)
        check_cap(target, folder, info, everything)
        check_stats(target, info, everything)
        check_splits(target, info, judged["shards"], judged["val_shards"])
    return target


def check_integrity(folder: Path) -> Target:
    """A directory's files against each other and its dataset_info.json: naming, numbering, each
    shard opening with its counts, the listing, sizes, hashes, the cap and the stats' totals, as
    check_directory judges them, but no demo's contents (the shard_integrity asset check)."""
    name = folder.name
    target = Target(name, str(folder), "directory")
    on_disk = _series(target, folder, name)
    info = read_info(target, folder, name)
    files = [folder / n for names in on_disk.values() for n in names]
    everything = [check_shard(target, path, name, None, None) for path in files]  # no demo's contents
    target.figures["shards"] = len(everything)
    if info is not None:
        check_listing(target, folder, info, on_disk, everything)
        check_cap(target, folder, info, everything)
        check_stats(target, info, everything)  # the totals: no demo's counts are judged here
    return target


def check_single_shard(path: Path, sampling: Sampling) -> Target:
    """One shard alone: its name, its contents; dataset_info.json is not looked for."""
    target = Target(path.name, str(path), "shard")
    target.check("files.naming")
    match = SHARD_NAME.fullmatch(path.name)
    if match is None:
        target.find(
            "files.naming",
            f"{path.name} is not <directory>_NNNN.hdf5 nor <directory>_val_NNNN.hdf5",
            path.name,
        )
    check_shard(target, path, match.group("directory") if match else None, None, sampling)
    target.figures["shards"] = 1
    target.notes.append("a shard alone: dataset_info.json and the directory's rules were not judged")
    return target
