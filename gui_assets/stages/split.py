"""The split stage: each episode of a partition assigned to its main or val shards."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.atomic import atomic_path
from gui_assets.episode_store import read_episode_table
from gui_assets.layout import OutLayout
from gui_assets.source_spec import SourceSpec
from gui_assets.splits import MAIN, VAL

_SPLIT_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("part", pa.string()),
        ("content_hash", pa.string()),
        ("group", pa.string()),
    ]
)


def assign_splits(spec: SourceSpec, key: str, layout: OutLayout) -> dict[str, Any]:
    directory = spec.directory(key)
    table = read_episode_table(layout.episodes(directory))
    rows = []
    rule = spec.split_rule
    for r in table.select(["episode_id", "attrs", "content_hash"]).to_pylist():
        attrs = json.loads(r["attrs"])
        part = rule.assign(r["episode_id"], attrs)
        group = str(attrs.get(rule.group_key, "")) if rule.group_key else ""
        rows.append(
            {"episode_id": r["episode_id"], "part": part, "content_hash": r["content_hash"], "group": group}
        )
    path = layout.splits(directory)
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=_SPLIT_SCHEMA), tmp)
    return {
        "rule": spec.split_rule.record(),
        "episodes": len(rows),
        MAIN: sum(r["part"] == MAIN for r in rows),
        VAL: sum(r["part"] == VAL for r in rows),
    }


def read_split_rows(layout: OutLayout, directory: str) -> list[dict[str, str]]:
    return pq.read_table(layout.splits(directory)).to_pylist()


def read_splits(layout: OutLayout, directory: str) -> dict[str, str]:
    table = pq.read_table(layout.splits(directory), columns=["episode_id", "part"])
    return dict(zip(table["episode_id"].to_pylist(), table["part"].to_pylist(), strict=True))
