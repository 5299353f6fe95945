"""The allocator and collector policies of a build process (gui_assets.memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gui_assets.lineage import CACHE_DIR_ENV
from gui_assets.memory import PAGE_MMAP, unmapped_when_freed


def _fresh_process(code: str) -> Any:
    """What `code` prints as JSON, run in a new interpreter (allocator settings are per process)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("load", ["import gui_assets.definitions", "import gui_assets; gui_assets.defs"])
def test_loading_the_definitions_tunes_the_process(load, tmp_path):
    """A build process: the system Arrow pool (the variable that chose it gone again), one arena,
    the definitions frozen and the collector on, gc.freeze registered for the exit."""
    probe = (
        "import atexit, gc, json, os\n"
        "hooks = []\n"
        "register = atexit.register\n"
        "def recording(fn, *args, **kwargs):\n"
        "    hooks.append(getattr(fn, '__qualname__', ''))\n"
        "    return register(fn, *args, **kwargs)\n"
        "atexit.register = recording\n"
        f"{load}\n"
        "import pyarrow as pa\n"
        "from gui_assets.memory import tune_build_process\n"
        "tuning = tune_build_process()\n"
        "print(json.dumps([pa.default_memory_pool().backend_name, tuning.arrow_pool, tuning.one_arena,"
        " 'ARROW_DEFAULT_MEMORY_POOL' in os.environ, gc.isenabled(), gc.get_freeze_count() > 50_000,"
        " hooks.count('freeze')]))\n"
    )
    env = {**os.environ, CACHE_DIR_ENV: str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    pool, tuned_pool, arena, leaked, enabled, frozen, freeze_hooks = json.loads(out.stdout)
    assert (pool, tuned_pool, leaked) == ("system", "system", False)  # children keep their defaults
    assert arena is (sys.platform == "linux")  # glibc took the one-arena setting
    assert (enabled, frozen, freeze_hooks) == (True, True, 1)  # once, however often it is asked


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


def test_a_threshold_sends_only_buffers_above_it_to_mmap():
    """The adapter stage's setting: an upstream page (here 8 MB) is mmap'd, a screenshot-sized
    buffer (1 MB) stays on the heap; after the block, neither is. glibc's own count of mmap'd
    bytes (mallinfo2's hblkhd) while each buffer is held says where it went."""
    probe = (
        "import ctypes, json\n"
        "from gui_assets.memory import PAGE_MMAP, unmapped_when_freed\n"
        "class Info(ctypes.Structure): _fields_ = [(n, ctypes.c_size_t) for n in "
        "('arena','ordblks','smblks','hblks','hblkhd','usmblks','fsmblks','uordblks','fordblks','keepcost')]\n"
        "libc = ctypes.CDLL('libc.so.6'); libc.mallinfo2.restype = Info\n"
        "def mapped_mb(size):\n"
        "    before = libc.mallinfo2().hblkhd; buf = bytearray(size)\n"
        "    grown = libc.mallinfo2().hblkhd - before; del buf; return grown // 2**20\n"
        "warm = bytearray(16 * 2**20); del warm  # raises glibc's own threshold, as a long build does\n"
        "with unmapped_when_freed(PAGE_MMAP) as applies:\n"
        "    inside = [mapped_mb(8 * 2**20), mapped_mb(2**20)]\n"
        "after = [mapped_mb(8 * 2**20), mapped_mb(2**20)]\n"
        "print(json.dumps([applies, inside, after]))\n"
    )
    applies, inside, after = _fresh_process(probe)
    if not applies:
        return  # not glibc
    assert PAGE_MMAP <= 8 * 2**20
    assert inside == [8, 0], inside  # the page mmap'd, the screenshot on the heap
    assert after == [0, 0], after  # LARGE_MMAP again: both reuse the heap


def test_a_frame_sized_buffer_freed_at_the_heap_top_stays_for_the_next_one():
    """After the block the shard writer allocates and frees a 4 MB frame per step. With the mmap
    threshold fixed, glibc's trim threshold stays at 128 KB unless set too, and every such free
    handed the pages back, so the next frame faulted all of them in again (about a thousand
    page faults a frame). Counted with getrusage over 40 frames."""
    probe = (
        "import json, resource\n"
        "from gui_assets.memory import PAGE_MMAP, unmapped_when_freed\n"
        "with unmapped_when_freed(PAGE_MMAP) as applies:\n"
        "    pass\n"
        "def faults():\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "frame = bytearray(4 * 2**20); del frame\n"
        "start = faults()\n"
        "for _ in range(40):\n"
        "    frame = bytearray(4 * 2**20)  # zero-filled: every page is touched\n"
        "    del frame\n"
        "print(json.dumps([applies, faults() - start]))\n"
    )
    applies, faults = _fresh_process(probe)
    if not applies:
        return  # not glibc
    assert faults < 40 * 100, faults  # trimmed each time, it would be about 40 x 1,024


def test_loading_the_definitions_freezes_their_objects_and_the_rest_at_exit(tmp_path):
    """Loading the definitions freezes what they loaded (the collector stays on), and the last
    atexit hook to run (registered first) sees what was made after loading frozen too; neither
    happens when only the package or only Dagster is loaded. What the process printed in between
    still arrives."""
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > loaded, flush=True))\n"
        "import {module}\n"
        "loaded = gc.get_freeze_count()\n"
        "print('loaded', loaded > 50_000, gc.isenabled(), flush=True)\n"
        "made_after = [[i] for i in range(1000)]\n"
    )
    env = {**os.environ, CACHE_DIR_ENV: str(tmp_path / "cache")}
    for module, frozen in (("gui_assets.definitions", True), ("gui_assets", False), ("dagster", False)):
        out = subprocess.run(
            [sys.executable, "-c", probe.format(module=module)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout
        assert out.splitlines() == [f"loaded {frozen} True", f"frozen at exit: {frozen}"], (module, out)


def test_long_lived_freezes_even_on_failure_and_restores_the_collector():
    probe = (
        "import gc, json\n"
        "from gui_assets.memory import long_lived\n"
        "seen = []\n"
        "before = gc.get_freeze_count()\n"
        "try:\n"
        "    with long_lived():\n"
        "        seen.append(gc.isenabled())\n"
        "        kept = [[i] for i in range(1000)]\n"
        "        raise RuntimeError\n"
        "except RuntimeError:\n"
        "    pass\n"
        "seen += [gc.isenabled(), gc.get_freeze_count() >= before + 1000]\n"
        "gc.disable()\n"
        "with long_lived():\n"
        "    pass\n"
        "seen.append(gc.isenabled())  # an application that had it off keeps it off\n"
        "print(json.dumps(seen))\n"
    )
    assert _fresh_process(probe) == [False, True, True, False]
