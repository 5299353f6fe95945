"""The allocator settings a build process starts with, as environment variables.

glibc's malloc reads its tunables, and Arrow chooses its default memory pool, once, when the
process starts, so these are set where a build process is started (the shell, deploy/Dockerfile's
image, which the Helm chart runs, the runs `gui-assets demo` starts), never by this package:
importing or loading anything here leaves the process's allocators as it found them.

- MALLOC_ARENA_MAX=1: every thread allocates from one glibc arena. With an arena per thread,
  the shard writer's decode threads, the image store's writers and Arrow's I/O threads each keep
  a heap of frame-sized buffers that later stages cannot reuse; the threads spend their time in
  the codecs, not in malloc, so one arena costs no time.
- ARROW_DEFAULT_MEMORY_POOL=system: Arrow allocates through that same malloc. Its default pool,
  mimalloc, keeps per-thread segments after a free, so what one stage frees stays resident.

docs/performance.md gives what they measured.
"""

from __future__ import annotations

from collections.abc import Mapping

BUILD_PROCESS_ENV: Mapping[str, str] = {
    "MALLOC_ARENA_MAX": "1",
    "ARROW_DEFAULT_MEMORY_POOL": "system",
}


def build_process_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` (a child process's environment) with BUILD_PROCESS_ENV added where `base` sets none
    of its variables: a value the user chose stands."""
    return {**BUILD_PROCESS_ENV, **base}
