"""Allocator policies for a build that runs every stage in one long process.

Measured on the benchmark's 1,200-step Mind2Web build (`dagster asset materialize --select
'mind2web*'`, the in-process executor), the CLI's peak RSS was 457-504 MB, reached in the preview
step, which holds a few hundred ~60 KB pictures and 6 MB row groups briefly:

- Arrow's default pool (mimalloc) keeps per-thread segments after a free. The system allocator
  is used instead (`use_system_arrow_pool`, when the package loads).
- glibc gives each thread that allocates its own arena (up to eight per core): the shard
  writer's decode threads, the image store's writers and Arrow's I/O threads each grew a heap of
  frame-sized buffers that later stages could not reuse. One arena for the process
  (`one_malloc_arena`) brought the peak to 314 MB at 1,200 steps and 335-353 MB at 4,800, with
  no measurable cost in time (the threads spend their time in libspng and ISA-L, not malloc).
- glibc raises its mmap threshold after each large free (up to 32 MB), so medium buffers come
  from the heap, which fragments and keeps them. A fixed 128 KB threshold for the whole build
  brought the peak to 303-309 MB but cost about a fifth of its time (every frame-sized buffer of
  the shard writer mmap'd and page-faulted anew), so it applies only inside the stages that hold
  many medium buffers (`unmapped_when_freed`, around the preview).
- The adapter stage reads upstream parquet a page at a time, and a page of screenshots is one
  buffer of tens of MB (18 MB for 50 of the benchmark's rows; pyarrow writes a row group's
  column as one page). On the heap, each new page needed a hole of its size that the screenshot
  -sized buffers freed around it had split, so the heap grew with the stage's length: the stage's
  peak RSS (alone, in a fresh process) was 333-340 MB at 1,200 steps and 343-384 MB at 4,800. With buffers of
  PAGE_MMAP and up mmap'd for the stage (`unmapped_when_freed(PAGE_MMAP)`), and the rows handed
  on one at a time so that no batch buffer reaches that size, it was 197-215 MB at 1,200 steps and
  215-217 MB at 4,800, for 0.5 s and 1.5-2 s of page faults (the pages' bytes, twice).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import gc
import os
import sys
from collections.abc import Iterator

_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
SMALL_MMAP = 128 * 1024  # from this size on, an allocation is mmap'd and unmapped when freed
PAGE_MMAP = 4 * 1024 * 1024  # an upstream page of many screenshots; one screenshot stays below
LARGE_MMAP = 32 * 1024 * 1024  # glibc's own ceiling: frame-sized buffers reuse the heap


def use_system_arrow_pool() -> str:
    """Arrow's allocations through the system allocator; returns the pool's backend name.
    Arrow's C++ default pool is chosen once, from ARROW_DEFAULT_MEMORY_POOL, when pyarrow first
    loads: the variable is set for that moment only (child processes, such as a benchmark's
    baseline script, keep their own defaults). If pyarrow was loaded already, the pool pyarrow's
    calls use is switched instead."""
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


def _load_glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None  # not glibc: its allocator's own policy stands


_GLIBC = _load_glibc()


def one_malloc_arena() -> bool:
    """Every thread of this process allocates from one glibc arena (call before threads start
    allocating). False when there is no glibc."""
    return bool(_GLIBC is not None and _GLIBC.mallopt(_M_ARENA_MAX, 1) == 1)


@contextlib.contextmanager
def unmapped_when_freed(threshold: int = SMALL_MMAP) -> Iterator[bool]:
    """Within: allocations of `threshold` bytes and up are mmap'd, so they leave the process when
    freed, and the heap's free pages are returned on entry and exit. After: LARGE_MMAP, so
    frame-sized buffers keep reusing the heap. Yields whether the policy applies (glibc only)."""
    if _GLIBC is None:
        yield False
        return
    _set_thresholds(threshold)
    _GLIBC.malloc_trim(0)
    try:
        yield True
    finally:
        _set_thresholds(LARGE_MMAP)
        _GLIBC.malloc_trim(0)


def _set_thresholds(mmap_threshold: int) -> None:
    """A fixed mmap threshold, and the trim threshold glibc's own rule would pair with it.
    Fixing the first also fixes the second, at 128 KB unless set: then every free at the heap's
    top past 128 KB went back to the kernel, and the next frame-sized buffer page-faulted it in
    again (a shard unit of 420 steps: 445,000-583,000 faults, 2.4-2.9 s of system time; with the
    trim threshold at twice the mmap threshold, 9,300 faults, 0.7-1.2 s, 13-16% less wall time and
    the same peak RSS)."""
    assert _GLIBC is not None
    _GLIBC.mallopt(_M_MMAP_THRESHOLD, mmap_threshold)
    _GLIBC.mallopt(_M_TRIM_THRESHOLD, 2 * mmap_threshold)


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """Loads what lives as long as the process (the definitions, and the Dagster modules they
    import): no cyclic collection within, and what exists at the end is frozen out of the
    collector. Every full collection of a build walked these objects again: in a 1,200-step
    `mind2web*` build (about 225,000 objects after loading), the five full collections took
    0.61-0.66 s, and 0.29-0.33 s once they were frozen. What the imports left as cyclic garbage
    is frozen with them and never freed: a few hundred objects, once per process."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def no_collection_at_exit() -> None:
    """At exit, the objects alive are frozen out of the cyclic collector. Python's shutdown runs
    full collections while it clears modules, and with Dagster loaded each one walks every
    definition object: 0.4 s after `import dagster` alone, about 1 s after a CLI build, for
    memory the process is about to return. Objects still free by reference count as modules
    clear; only garbage in reference cycles is left to the exit (everything this package writes
    is closed by `with` blocks, never by a collector)."""
    atexit.register(gc.freeze)
