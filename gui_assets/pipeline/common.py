"""What every stage shares: one message for a full disk, whatever wrote it; counts in words."""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from gui_assets.core.errors import DiskFullError


def count(n: int, noun: str) -> str:
    """`1 shard`, `2 shards`: a count for a progress line."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _disk_full(e: BaseException) -> bool:
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left on device" in str(e)


@contextlib.contextmanager
def disk_full_named(
    stage: str, where: Path, needed: Callable[[], int | None] | None = None
) -> Iterator[None]:
    """Turn ENOSPC (from Python, h5py or pyarrow, which word it differently) into one message,
    naming the folder, the bytes free and, where `needed` can estimate it, the bytes the stage
    still needs (asked only once the disk is full)."""
    try:
        yield
    except Exception as e:
        if not _disk_full(e):
            raise
        free = shutil.disk_usage(where if where.exists() else where.parent).free
        more = needed() if needed is not None else None
        room = f"{free} bytes free" + (f", about {more} bytes needed to finish" if more else "")
        raise DiskFullError(
            f"{stage}: the disk holding {where} is full ({room}); nothing partial was kept, "
            f"free space and rerun ({type(e).__name__}: {e})"
        ) from None
