"""Each published frame's screen fingerprint (core.fingerprint), kept beside the shards for the
screen-overlap audit.

The shard writer fingerprints every frame it deflates (the pixels are decoded there anyway),
with the Adler-32 of its pixels (the trailer of its zlib chunk; equal prints are the same pixels,
an exact duplicate), and writes one row per step, `<piece stem>.fingerprints.parquet`, beside
each piece. Publish adopts each piece's file as `_work/<directory>/fingerprints/<shard
sha256>.parquet` (by the content of the shard, like the preview's pictures, so a unit linked
back from the last build keeps its fingerprints and a rebuilt shard never meets stale ones),
then writes the directory's table, `_work/<directory>/fingerprints.parquet`: one row per step of
every published shard, in shard order. They stay in `_work`, not in the shards: the HDF5 layout
is pinned by the output format.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.core.atomic import atomic_path
from gui_assets.core.fingerprint import FINGERPRINT_BYTES
from gui_assets.core.layout import OutLayout, ShardEntry
from gui_assets.pipeline.shard_records import ShardFiles

FINGERPRINTS_DIR = "fingerprints"
FINGERPRINTS_FILE = "fingerprints.parquet"
PIECE_SCHEMA = pa.schema(
    [
        ("demo", pa.string()),
        ("episode_id", pa.string()),
        ("step", pa.int32()),
        ("fingerprint", pa.binary(FINGERPRINT_BYTES)),
        ("pixels_adler32", pa.uint32()),
    ]
)
DIRECTORY_SCHEMA = pa.schema([("shard", pa.string()), ("holdout", pa.bool_()), *PIECE_SCHEMA])


class MissingFingerprints(Exception):
    """A published shard without its fingerprints: rerun the shards step."""


def piece_file(shard: Path) -> Path:
    """Where the writer puts the fingerprints of a shard's frames."""
    return shard.with_name(shard.stem + ".fingerprints.parquet")


def kept(layout: OutLayout, directory: str) -> ShardFiles:
    """The fingerprints of the directory's shards, by shard sha256."""
    return ShardFiles(layout.work(directory) / FINGERPRINTS_DIR)


def directory_table(layout: OutLayout, directory: str) -> Path:
    return layout.work(directory) / FINGERPRINTS_FILE


class FingerprintFile:
    """A shard's fingerprints written as the shard is: one row group per demo."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer = pq.ParquetWriter(path, PIECE_SCHEMA)

    def add_demo(self, demo: str, episode_id: str, prints: Sequence[tuple[bytes, int]]) -> None:
        """One demo's (fingerprint, pixels Adler-32) per step, in step order."""
        batch = {
            "demo": [demo] * len(prints),
            "episode_id": [episode_id] * len(prints),
            "step": list(range(len(prints))),
            "fingerprint": [p[0] for p in prints],
            "pixels_adler32": [p[1] for p in prints],
        }
        self._writer.write_table(pa.Table.from_pydict(batch, schema=PIECE_SCHEMA))

    def close(self) -> None:
        self._writer.close()


def write_directory_table(
    layout: OutLayout, directory: str, shards: list[ShardEntry], holdout: list[ShardEntry]
) -> int:
    """The directory's fingerprints, one row per step of each published shard in series order;
    refuses (MissingFingerprints) a shard whose fingerprints are missing or do not cover it, and
    forgets those of shards no longer published. Returns the rows written."""
    tables, store = [], kept(layout, directory)
    for entry, val in [*((e, False) for e in shards), *((e, True) for e in holdout)]:
        path = store.path(entry.sha256)
        try:
            table = pq.read_table(path, schema=PIECE_SCHEMA)
        except (OSError, pa.ArrowException) as e:
            raise MissingFingerprints(
                f"{directory}: {entry.file} has no readable fingerprints ({path}: {e}); rerun the shards step"
            ) from None
        if table.num_rows != entry.steps:
            raise MissingFingerprints(
                f"{directory}: {path} holds {table.num_rows} fingerprints for {entry.steps} steps of "
                f"{entry.file}; rerun the shards step"
            )
        n = table.num_rows
        tables.append(
            table.add_column(0, "holdout", pa.array([val] * n)).add_column(
                0, "shard", pa.array([entry.file] * n)
            )
        )
    table = pa.concat_tables(tables).cast(DIRECTORY_SCHEMA) if tables else DIRECTORY_SCHEMA.empty_table()
    with atomic_path(directory_table(layout, directory)) as tmp:
        pq.write_table(table, tmp)
    store.keep_only({e.sha256 for e in [*shards, *holdout]})
    return table.num_rows


def read_directory_table(layout: OutLayout, directory: str) -> pa.Table:
    """The directory's fingerprints (raises OSError / ArrowException when missing or damaged)."""
    return pq.read_table(directory_table(layout, directory), schema=DIRECTORY_SCHEMA)
