"""The split stage: each episode of a partition assigned to its main or val shards."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path
from gui_assets.core.episode_store import EPISODES_FILE
from gui_assets.core.layout import OutLayout
from gui_assets.core.splits import MAIN, VAL
from gui_assets.pipeline.common import count
from gui_assets.sources.spec import SourceSpec

_SPLIT_SCHEMA = pa.schema(
    [
        ("episode_id", pa.string()),
        ("part", pa.string()),
        ("content_hash", pa.string()),
        ("group", pa.string()),
        ("record_hash", pa.string()),  # the IR episode the shards are written from
    ]
)
_BATCH = 4096  # episodes assigned and written at a time

log = logging.getLogger(__name__)


def assign_splits(spec: SourceSpec, key: str, layout: OutLayout) -> dict[str, Any]:
    """Assign every episode, a batch of the episode table at a time (memory holds one batch)."""
    directory = spec.directory(key)
    rule = spec.split_rule
    counts = {MAIN: 0, VAL: 0}
    episodes = pq.ParquetFile(layout.episodes(directory) / EPISODES_FILE)
    path = layout.splits(directory)
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, _SPLIT_SCHEMA) as out:
        for batch in episodes.iter_batches(
            batch_size=_BATCH, columns=["episode_id", "attrs", "content_hash", "record_hash"]
        ):
            rows = []
            for r in batch.to_pylist():
                attrs = json.loads(r["attrs"])
                part = rule.assign(r["episode_id"], attrs)
                counts[part] += 1
                group = str(attrs.get(rule.group_key, "")) if rule.group_key else ""
                rows.append(
                    {
                        "episode_id": r["episode_id"],
                        "part": part,
                        "content_hash": r["content_hash"],
                        "group": group,
                        "record_hash": r["record_hash"],
                    }
                )
            out.write_table(pa.Table.from_pylist(rows, schema=_SPLIT_SCHEMA))
    log.info(
        f"{directory}: {count(counts[MAIN], 'episode')} to the main shards, {counts[VAL]} to the val shards"
    )
    return {
        "rule": spec.split_rule.record(),
        "episodes": counts[MAIN] + counts[VAL],
        MAIN: counts[MAIN],
        VAL: counts[VAL],
    }


def read_split_rows(layout: OutLayout, directory: str) -> list[dict[str, str]]:
    return pq.read_table(layout.splits(directory)).to_pylist()


def splits_digest(layout: OutLayout, directory: str) -> str:
    """A hash of the whole split table: every episode's part and group, and the record hash of
    the IR episode behind it, so what the shard writer reads from the IR moves it too."""
    table = pq.read_table(layout.splits(directory), columns=[f.name for f in _SPLIT_SCHEMA])
    h = hashlib.sha256()
    for column in table.column_names:
        h.update(json.dumps([column, table[column].to_pylist()]).encode("utf-8"))
    return h.hexdigest()[:16]


def read_splits(layout: OutLayout, directory: str) -> dict[str, str]:
    table = pq.read_table(layout.splits(directory), columns=["episode_id", "part"])
    return dict(zip(table["episode_id"].to_pylist(), table["part"].to_pylist(), strict=True))
