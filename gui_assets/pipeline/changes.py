"""What changed since the previous build of a partition: episodes added, removed and changed (by
content hash), the step count and the drops, and the upstream revision each build came from.

The info stage compares the IR it is publishing with the snapshot the previous build left
(`_work/<dir>/built_episodes.parquet`, episode id -> content hash) and with the previous
dataset_info.json, then leaves its own snapshot for the next build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path, atomic_write_text
from gui_assets.core.episode_store import read_episode_table
from gui_assets.core.layout import DatasetInfo, OutLayout

CHANGE_FILE = "build_change.json"


def current_episodes(layout: OutLayout, directory: str) -> dict[str, str]:
    table = read_episode_table(layout.episodes(directory)).select(["episode_id", "content_hash"])
    return dict(zip(table["episode_id"].to_pylist(), table["content_hash"].to_pylist(), strict=True))


def _previous_episodes(path: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    table = pq.read_table(path)
    return dict(zip(table["episode_id"].to_pylist(), table["content_hash"].to_pylist(), strict=True))


def _previous_info(path: Path) -> DatasetInfo | None:
    try:
        return DatasetInfo.read(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def compare(
    before: dict[str, str] | None, now: dict[str, str], previous: DatasetInfo | None, info: DatasetInfo
) -> dict[str, Any]:
    """The change record of `info` against the previous build (None: there was none)."""
    revision = info.build.get("upstream", {}).get("revision")
    if before is None or previous is None:
        return {
            "first_build": True,
            "episodes": len(now),
            "steps": info.stats.get("steps", 0),
            "revision": revision,
        }
    drops_then, drops_now = previous.stats.get("drops", {}), info.stats.get("drops", {})
    return {
        "first_build": False,
        "episodes_added": sorted(set(now) - set(before)),
        "episodes_removed": sorted(set(before) - set(now)),
        "episodes_changed": sorted(e for e in set(now) & set(before) if now[e] != before[e]),
        "steps_before": previous.stats.get("steps", 0),
        "steps": info.stats.get("steps", 0),
        "steps_change": info.stats.get("steps", 0) - previous.stats.get("steps", 0),
        "drops_change": {
            r: drops_now.get(r, 0) - drops_then.get(r, 0)
            for r in sorted(set(drops_then) | set(drops_now))
            if drops_now.get(r, 0) != drops_then.get(r, 0)
        },
        "revision_before": previous.build.get("upstream", {}).get("revision"),
        "revision": revision,
    }


def record_build(layout: OutLayout, directory: str, info: DatasetInfo, write_info: Any) -> dict[str, Any]:
    """Compare with the previous build, publish `info` (by calling `write_info`), then leave the
    snapshot and the change record for the next one. Returns the change record."""
    snapshot = layout.built_episodes(directory)
    now = current_episodes(layout, directory)
    change = compare(_previous_episodes(snapshot), now, _previous_info(layout.dataset_info(directory)), info)
    write_info()
    with atomic_path(snapshot) as tmp:
        table = pa.table({"episode_id": list(now), "content_hash": list(now.values())})
        pq.write_table(table, tmp)
    atomic_write_text(layout.work(directory) / CHANGE_FILE, json.dumps(change, indent=1) + "\n")
    return change


def read_change(layout: OutLayout, directory: str) -> dict[str, Any]:
    return json.loads((layout.work(directory) / CHANGE_FILE).read_text(encoding="utf-8"))
