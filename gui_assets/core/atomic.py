"""Atomic file writes: a temp name in the same directory, fsync, then os.replace.

A killed process leaves at worst a hidden `.<name>.tmp-<pid>` file, never a partial file under a
final name; `sweep_temps` removes such leftovers when the directory is written again.
`move_into_place` is os.replace that also works across file systems (a build directory on a
data disk while the work folder is elsewhere). `file_lock` is the exclusive lock a process takes
around a read-modify-write of a file other processes share.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gui_assets.core.config import usable_cpus

TMP_MARK = ".tmp-"


def temp_path(final: Path) -> Path:
    return final.with_name(f".{final.name}{TMP_MARK}{os.getpid()}")


@contextlib.contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temp path to write; on success it replaces `final`, on error it is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(final)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive flock on `path` (created, with its folder, if missing) until the block
    ends; the lock goes with the file descriptor, so a killed holder never leaves it taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def atomic_write_bytes(final: Path, data: bytes) -> None:
    with atomic_path(final) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(final: Path, text: str) -> None:
    atomic_write_bytes(final, text.encode("utf-8"))


def move_into_place(src: Path, final: Path) -> None:
    """os.replace(src, final) for a file, also when the two sit on different file systems: there a
    rename fails (EXDEV), so `src` is copied to a temp name beside `final` (on its file system),
    made durable, renamed over `final`, and only then removed. A reader sees the old file or the
    new, never part of one."""
    try:
        os.replace(src, final)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    with atomic_path(final) as tmp:
        shutil.copyfile(src, tmp)
        shutil.copystat(src, tmp)
    src.unlink()


def writer_alive(name: str) -> bool:
    """Is the process whose pid ends this temp name (`...tmp-<pid>`) still running?"""
    try:
        pid = int(name.rsplit(TMP_MARK, 1)[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def sweep_temps(directory: Path, only_dead_writers: bool = False) -> int:
    """Remove temp files (and temp folders) a killed writer left behind; returns how many.

    With `only_dead_writers`, a temp file whose writing process still runs is left alone:
    for directories that concurrent builds share (the image store).
    """
    if not directory.is_dir():
        return 0
    n = 0
    for p in directory.iterdir():
        if p.name.startswith(".") and TMP_MARK in p.name:
            if only_dead_writers and writer_alive(p.name):
                continue
            if p.is_dir():  # a folder written whole and swapped in (the IR)
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            n += 1
    return n


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_files(paths: Sequence[Path]) -> list[str]:
    """sha256_file of each path, in order; sha256 releases the GIL, so files are read on every
    core at once."""
    if len(paths) < 2:
        return [sha256_file(p) for p in paths]
    with ThreadPoolExecutor(min(usable_cpus(), len(paths))) as pool:
        return list(pool.map(sha256_file, paths))
