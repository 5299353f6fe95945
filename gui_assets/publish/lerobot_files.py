"""The LeRobot export's data files: parquet written on a thread of its own and hashed as written."""

from __future__ import annotations

import hashlib
import io
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gui_assets.publish import lerobot_meta as meta


class HashingFile(io.RawIOBase):
    """A file that hashes what is written to it, so no file is read back to be hashed."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.sha = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.sha.update(data)
        return self._fh.write(data)

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


class DataFiles:
    """data/chunk-*/file-*.parquet: a new file once the open one holds DATA_FILE_MB. Tables are
    written on a thread of their own (pyarrow releases the GIL), at most one waiting, so the
    next frames encode while the last are written. Each file is hashed as it is written."""

    def __init__(self, root: Path, schema: pa.Schema) -> None:
        self.root, self.schema = root, schema
        self.index = -1
        self._held = 0  # bytes handed to the open file
        self._writer: pq.ParquetWriter | None = None
        self._file: HashingFile | None = None
        self._path: Path | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="lerobot-parquet")
        self._pending: Future[None] | None = None
        self.written: list[tuple[Path, str]] = []

    def at_episode_start(self) -> tuple[int, int]:
        """(chunk, file) the next episode goes to."""
        if self._writer is None or self._held > meta.DATA_FILE_MB << 20:
            self._open()
        return divmod(self.index, meta.CHUNKS_SIZE)

    def _open(self) -> None:
        self._close_file()
        self.index += 1
        chunk, file = divmod(self.index, meta.CHUNKS_SIZE)
        self._path = self.root / meta.DATA_PATH.format(chunk_index=chunk, file_index=file)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # Image bytes are PNG already: compressing them again costs time for nothing.
        compression = {
            n: "none" if n.startswith("observation.images.") else "snappy" for n in self.schema.names
        }
        self._file = HashingFile(self._path)
        self._writer = pq.ParquetWriter(self._file, self.schema, compression=compression)
        self._held = 0

    def write(self, table: pa.Table) -> None:
        writer = self._writer
        assert writer is not None
        self._wait()
        self._held += table.nbytes
        self._pending = self._thread.submit(writer.write_table, table, row_group_size=max(1, table.num_rows))

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _close_file(self) -> None:
        self._wait()
        if self._writer is not None and self._file is not None and self._path is not None:
            self._writer.close()
            self._file.close()
            self.written.append((self._path, self._file.sha.hexdigest()))
            self._writer = self._file = None

    def close(self) -> list[tuple[Path, str]]:
        """Finish the last file; every file written, with its sha256."""
        try:
            self._close_file()
        finally:
            self._thread.shutdown(wait=True)
        return self.written
