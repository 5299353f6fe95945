"""Allocator and collector policies for a process that runs a build's stages one after another.

Each policy changes the whole process, so none applies on import: a build process (the dagster
CLI, a code server, a run worker) loads gui_assets.definitions, which calls `tune_build_process`
and builds the Definitions inside `long_lived`; a library user's process keeps its own settings.

- Arrow allocates through the system allocator (`use_system_arrow_pool`): Arrow's default pool,
  mimalloc, keeps per-thread segments after a free, so what one stage frees stays resident.
- Every thread allocates from one glibc arena (`one_malloc_arena`). With an arena per thread, the
  shard writer's decode threads, the image store's writers and Arrow's I/O threads each keep a
  heap of frame-sized buffers that later stages cannot reuse; the threads spend their time in the
  codecs, not in malloc, so one arena costs no time.
- Inside the stages that hold many medium buffers at once (the adapter's upstream pages, the
  preview's pictures), buffers from a threshold up are mmap'd (`unmapped_when_freed`): they leave
  the process when freed instead of splitting the heap into holes no later buffer fits. Outside,
  glibc's 32 MB ceiling keeps frame-sized buffers on the heap, where the next frame reuses them; a
  low threshold for the whole build would page-fault every frame anew (about a fifth more time).
- What lives as long as the process (the definitions and the modules they import) is frozen out
  of the cyclic collector (`long_lived`), and so is everything alive at exit
  (`no_collection_at_exit`), so no full collection walks those objects again.

With the process-wide ones, a 1,200-step Mind2Web build peaks near 320 MB of RSS; without them,
near 430 MB.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import gc
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
SMALL_MMAP = 128 * 1024  # from this size on, an allocation is mmap'd and unmapped when freed
PAGE_MMAP = 4 * 1024 * 1024  # an upstream page of many screenshots; one screenshot stays below
LARGE_MMAP = 32 * 1024 * 1024  # glibc's own ceiling: frame-sized buffers reuse the heap


def use_system_arrow_pool() -> str:
    """Routes Arrow's allocations through the system allocator and returns the pool's backend
    name. Arrow's C++ default pool is chosen once, from ARROW_DEFAULT_MEMORY_POOL, when pyarrow
    first loads: if it is not loaded yet, the variable is set for that moment only, so child
    processes keep their own defaults; if it is, the pool pyarrow's calls use is switched."""
    if "pyarrow" not in sys.modules and "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
        try:
            import pyarrow as pa

            pa.default_memory_pool()
        finally:
            del os.environ["ARROW_DEFAULT_MEMORY_POOL"]
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    return str(pa.default_memory_pool().backend_name)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """glibc, loaded on first use (by soname: no library search at import), or None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None  # not glibc: its allocator's own policy stands


def one_malloc_arena() -> bool:
    """Makes every thread of this process allocate from one glibc arena (effective for threads
    that have not allocated yet). False when there is no glibc."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, 1) == 1)


@contextlib.contextmanager
def unmapped_when_freed(threshold: int = SMALL_MMAP) -> Iterator[bool]:
    """Within the block, allocations of `threshold` bytes and up are mmap'd, so they leave the
    process when freed, and the heap's free pages are returned on entry and exit. After it, the
    threshold is LARGE_MMAP, so frame-sized buffers keep reusing the heap. Yields whether the
    policy applies (glibc only)."""
    libc = _glibc()
    if libc is None:
        yield False
        return
    _set_thresholds(libc, threshold)
    libc.malloc_trim(0)
    try:
        yield True
    finally:
        _set_thresholds(libc, LARGE_MMAP)
        libc.malloc_trim(0)


def _set_thresholds(libc: ctypes.CDLL, mmap_threshold: int) -> None:
    """Fixes the mmap threshold and sets the trim threshold to twice it, the pair glibc's own
    rule keeps. Fixing the first leaves the second at 128 KB unless it is set too, and then every
    free at the heap's top hands its pages back, so the next frame-sized buffer faults them in
    again (hundreds of thousands of page faults in one shard unit)."""
    libc.mallopt(_M_MMAP_THRESHOLD, mmap_threshold)
    libc.mallopt(_M_TRIM_THRESHOLD, 2 * mmap_threshold)


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """For loading what lives as long as the process (the definitions, and the Dagster modules
    they import): no cyclic collection runs within the block, and every object alive at its end
    is frozen out of the collector, so later full collections do not walk them again (about half
    their time in a build). Cyclic garbage the imports left is frozen with them and never freed:
    a few hundred objects, once per process. An application that had the collector off keeps it
    off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def no_collection_at_exit() -> None:
    """Freezes the objects alive at exit out of the cyclic collector. Python's shutdown runs full
    collections while it clears modules, and with Dagster loaded each one walks every definition
    object (about a second after a CLI build) for memory the process is about to return. Objects
    still free by reference count as modules clear; only garbage in reference cycles is left to
    the exit, and everything this package writes is closed by `with` blocks, never by a
    collector."""
    atexit.register(gc.freeze)


@dataclass(frozen=True)
class BuildTuning:
    """What `tune_build_process` applied: Arrow's pool backend, and whether glibc took one arena."""

    arrow_pool: str
    one_arena: bool


@functools.cache
def tune_build_process() -> BuildTuning:
    """Applies the process-wide policies of a build process: the system Arrow pool, one malloc
    arena and no collection at exit. Call it before pyarrow loads and before threads allocate,
    where a build process starts (gui_assets.definitions does); once per process, so a second
    call returns the first one's result."""
    arrow_pool = use_system_arrow_pool()
    one_arena = one_malloc_arena()
    no_collection_at_exit()
    return BuildTuning(arrow_pool=arrow_pool, one_arena=one_arena)
