"""The shard-integrity promise: shards open, are numbered contiguously, respect the cap, and
match what dataset_info.json says of them (counts, sizes, hashes)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import h5py

from gui_assets.atomic import sha256_files
from gui_assets.invariants import ERROR, Offenders, Verdict
from gui_assets.layout import DatasetInfo, shard_pattern


def _demo_bytes(group: h5py.Group) -> int:
    total = 0

    def visit(_: str, obj: Any) -> None:
        nonlocal total
        if isinstance(obj, h5py.Dataset):
            total += obj.id.get_storage_size()

    group.visititems(visit)
    return total


def shard_integrity(directory: Path, name: str) -> Verdict:
    """ERROR when a shard will not open, numbering has a gap, a shard passes the cap by more
    than its last episode, or dataset_info.json's counts, sizes or hashes differ from the files."""
    bad = Offenders()
    info_path = directory / "dataset_info.json"
    try:
        info = DatasetInfo.read(info_path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Verdict(False, ERROR, f"dataset_info.json unreadable: {e}", {})
    cap = int(info.build.get("config", {}).get("shard_cap_bytes", 0))
    listed = {s.file: s for s in info.shards + info.val_shards}
    totals = Counter[str]()
    to_hash: list[tuple[Path, str]] = []  # shards whose counts match: their bytes are checked last
    for val in (False, True):
        pat = shard_pattern(name, val)
        found = sorted(p for p in directory.glob("*.hdf5") if pat.fullmatch(p.name))
        if [int(pat.fullmatch(p.name).group(1)) for p in found] != list(range(len(found))):  # type: ignore[union-attr]
            bad.add("shard numbering not contiguous from 0000", f"{'val ' if val else ''}series")
        for p in found:
            entry = listed.pop(p.name, None)
            try:
                with h5py.File(p, "r") as f:
                    demos = [k for k in f["data"] if k.startswith("demo_")]
                    steps = sum(int(f["data"][k].attrs["num_samples"]) for k in demos)
                    last = max(demos, key=lambda k: int(k[5:]), default=None)
                    last_bytes = _demo_bytes(f["data"][last]) if last else 0
                    attrs = (int(f["data"].attrs["num_demos"]), int(f["data"].attrs["total"]))
            except (OSError, KeyError, ValueError) as e:
                bad.add(f"h5py cannot read it ({type(e).__name__})", p.name)
                continue
            size = p.stat().st_size
            totals["demos"] += len(demos)
            totals["steps"] += steps
            if attrs != (len(demos), steps):
                bad.add(f"num_demos/total attrs {attrs} != {(len(demos), steps)}", p.name)
            if cap and size > cap + last_bytes:
                bad.add(
                    f"{size} B is over the cap {cap} by more than its last episode ({last_bytes} B)", p.name
                )
            if entry is None:
                bad.add("not listed in dataset_info.json", p.name)
            elif (entry.demos, entry.steps, entry.bytes) != (len(demos), steps, size):
                bad.add(
                    f"listed as {entry.demos}/{entry.steps}/{entry.bytes}, is {len(demos)}/{steps}/{size}",
                    p.name,
                )
            else:
                to_hash.append((p, entry.sha256))
    # Every byte is hashed (a sample would not be as strict), the shards on every core at once.
    for (p, listed_sha), sha in zip(to_hash, sha256_files([p for p, _ in to_hash]), strict=True):
        if sha != listed_sha:
            bad.add("sha256 differs from dataset_info.json", p.name)
    for missing in listed:
        bad.add("listed in dataset_info.json but missing", missing)
    for key, stat in (("steps", "steps"), ("demos", "episodes_out")):
        if info.stats.get(stat) != totals[key]:
            bad.add(f"stats.{stat} {info.stats.get(stat)} != shards' {totals[key]}", "dataset_info.json")
    figures = {
        "shards": len(info.shards),
        "val_shards": len(info.val_shards),
        "demos": totals["demos"],
        "steps": totals["steps"],
        "cap_bytes": cap,
        "problems": bad.total,
    }
    if bad.total:
        return Verdict(False, ERROR, f"{bad.total} integrity problems", figures, bad.examples)
    return Verdict(
        True, ERROR, f"{figures['shards'] + figures['val_shards']} shards match dataset_info.json", figures
    )
