"""The allocator policies of a gui_assets process (gui_assets.memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from gui_assets.memory import unmapped_when_freed


def _fresh_process(code: str) -> Any:
    """What `code` prints as JSON, run in a new interpreter (allocator settings are per process)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_loading_the_package_sets_the_allocators_and_leaves_the_environment_alone():
    probe = (
        "import json, os, gui_assets, pyarrow as pa;"
        "from gui_assets.memory import one_malloc_arena;"
        "pool = pa.default_memory_pool().backend_name;"
        "print(json.dumps([pool, 'ARROW_DEFAULT_MEMORY_POOL' in os.environ, one_malloc_arena()]))"
    )
    pool, leaked, arena = _fresh_process(probe)
    assert (pool, leaked) == ("system", False)  # child processes keep their own defaults
    assert arena is (sys.platform == "linux")  # glibc took the one-arena setting


def test_inside_the_policy_freed_medium_buffers_leave_the_process():
    """Many 200 KB buffers held at once, then freed, as the preview's pictures are: inside the
    policy, resident memory falls back by most of their 80 MB; outside it, they stay on the heap
    (the case the policy exists for), so the difference is what is asserted."""
    probe = (
        "import json, re, sys\n"
        "from gui_assets.memory import unmapped_when_freed\n"
        "def rss(): return int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "def hold_and_free():\n"
        "    bufs = [bytearray(200 * 1024) for _ in range(400)]\n"
        "    pins = [bytes(100) for _ in range(400)]  # small live blocks between them\n"
        "    for b in bufs: b[::4096] = b'\\x01' * len(b[::4096])\n"
        "    top = rss(); del bufs; return (top - rss()) // 1024, pins\n"
        "big = bytearray(8 * 2**20); del big  # glibc now puts buffers under 8 MB on the heap\n"
        "outside, _ = hold_and_free()\n"
        "with unmapped_when_freed() as applies:\n"
        "    inside, _ = hold_and_free()\n"
        "print(json.dumps([applies, outside, inside]))\n"
    )
    applies, outside, inside = _fresh_process(probe)
    if not applies:
        return  # not glibc: nothing to compare
    assert inside >= 60 and outside < inside, (outside, inside)  # MB given back when freed


def test_the_policy_is_restored_after_the_block_even_on_error():
    try:
        with unmapped_when_freed():
            raise ValueError("a failing stage")
    except ValueError:
        pass
    with unmapped_when_freed() as applies:
        assert applies in (True, False)
