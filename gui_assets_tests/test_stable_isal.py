"""ISA-L's level-2 stream depends on where its stream struct sits in memory; ours does not.

The first test pins the upstream behaviour the module exists for: zeros with bytes 2-41 again
at 20,000 deflate to one stream with the struct at an address whose hash bucket is that of byte
2's four bytes (ISA-L files position 2 where its own lookup later finds it) and to another
stream elsewhere. The rest pin the remedy: every thread, every process and every slot gives the
same bytes, and the bytes are python-isal's own wherever the bucket does not matter.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import mmap
import platform
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("isal")
from isal import isal_zlib

from gui_assets import stable_isal
from gui_assets.stable_isal import LEVEL_BUF_BYTES, StableIsal, bucket_of, crc32c_word

REPO_ROOT = Path(__file__).resolve().parents[1]
X86 = platform.machine() in ("x86_64", "AMD64")


def _recurring(bucket: int | None = None) -> bytes:
    """Zeros, with 40 random bytes at 2 and again at 20,000: only position 2 can lead a match
    for the first of them there (ISA-L's hash table has nothing else under those four bytes).
    With `bucket`, the first four hash to it under level 2's mask."""
    rng = np.random.default_rng(7)
    marker = rng.integers(1, 256, 40, dtype=np.uint8)
    if bucket is not None:
        words = rng.integers(1 << 24, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
        words = words[(words & 0xFF).astype(bool)]  # no zero byte: none of the zeros' four bytes
        marker[:4] = np.frombuffer(words[(crc32c_word(words) & 0x7FFF) == bucket][:1].tobytes(), np.uint8)
    data = bytearray(50_000)
    data[2:42] = data[20_000:20_040] = marker.tobytes()
    return bytes(data)


def _slot_at_bucket(compressor: StableIsal, bucket: int, mask: int) -> stable_isal._Slot:
    """A slot whose stream struct sits where ISA-L files position 2 under `bucket` (of `mask`); not
    pooled, so it never serves a compressor's own calls."""
    libc = stable_isal._Libc()
    pages = np.arange(0x3000_0000, 0x3000_0000 + (1 << 20), dtype=np.uint32)
    for page in pages[(crc32c_word(pages) & np.uint32(mask)) == bucket]:
        address = int(page) << 16
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | stable_isal._MAP_FIXED_NOREPLACE
        prot = mmap.PROT_READ | mmap.PROT_WRITE
        if libc.mmap(address, stable_isal._MAPPING, prot, flags, -1, 0) == address:
            level_buf = ctypes.create_string_buffer(LEVEL_BUF_BYTES[compressor.level])
            return stable_isal._Slot(address, level_buf, ctypes.create_string_buffer(1 << 20))
    raise AssertionError(f"no free address in bucket {bucket}")


@pytest.mark.skipif(not X86, reason="the CRC-32C hash and the match loop in question are ISA-L's x86 code")
def test_isal_files_position_2_by_the_stream_address_not_the_input():
    data = _recurring()
    source = np.frombuffer(data, np.uint8)
    compressor = StableIsal(2)
    own_bucket = int(crc32c_word(np.frombuffer(data[2:6], np.uint32))[0]) & 0x7FFF  # level 2's mask
    at_own = compressor.deflate_at(_slot_at_bucket(compressor, own_bucket, 0x7FFF), source)
    elsewhere = compressor.deflate_at(_slot_at_bucket(compressor, (own_bucket + 1) & 0x7FFF, 0x7FFF), source)
    assert zlib.decompress(at_own) == zlib.decompress(elsewhere) == data
    assert at_own != elsewhere  # the same input, two streams: only the struct's address moved


def test_every_thread_and_slot_gives_the_same_bytes():
    """The input is one whose stream does depend on the bucket (its recurring bytes hash to the
    one every slot files position 2 in), so a slot anywhere else would give the other stream."""
    compressor = StableIsal(2)
    bucket = stable_isal._BUCKET & 0x7FFF
    data = _recurring(bucket)
    source = np.frombuffer(data, np.uint8)
    found = compressor.deflate_at(_slot_at_bucket(compressor, bucket, 0x7FFF), source)
    inputs = [data, np.random.default_rng(1).integers(0, 4, 300_000, dtype=np.uint8).tobytes()]
    first = [compressor(x) for x in inputs]
    elsewhere = compressor.deflate_at(_slot_at_bucket(compressor, bucket ^ 1, 0x7FFF), source)
    assert first[0] == found != elsewhere  # the bucket does decide this input's stream
    with ThreadPoolExecutor(8) as pool:  # eight threads: eight slots at eight addresses
        for _ in range(3):
            assert list(pool.map(lambda _: [compressor(x) for x in inputs], range(16))) == [first] * 16
    assert [zlib.decompress(c) for c in first] == inputs
    assert bucket_of(compressor._local.slot.address) == stable_isal._BUCKET


def test_another_process_gives_the_same_bytes():
    """A new process has its stacks, heap and mappings elsewhere (ASLR)."""
    code = (
        "import hashlib, sys; sys.path.insert(0, sys.argv[1]); from gui_assets_tests.test_stable_isal import "
        "_recurring; from gui_assets.stable_isal import _BUCKET, isal_compressor; "
        "print(hashlib.sha256(isal_compressor(2)(_recurring(_BUCKET & 0x7FFF))).hexdigest())"
    )
    runs = {subprocess.run([sys.executable, "-c", code, str(REPO_ROOT)], capture_output=True, text=True,
                           check=True).stdout.strip() for _ in range(3)}  # fmt: skip
    assert runs == {hashlib.sha256(StableIsal(2)(_recurring(stable_isal._BUCKET & 0x7FFF))).hexdigest()}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_streams_are_python_isals_where_the_bucket_does_not_matter(level):
    """Random bytes hardly ever recur, so python-isal's bucket cannot show: the streams agree,
    and shards written before this module keep their bytes."""
    rng = np.random.default_rng(level)
    compressor = StableIsal(level)
    for size in (0, 1, 3, 1000, 70_000, 300_000):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        ours = compressor(data)
        assert zlib.decompress(ours) == data
        assert ours == isal_zlib.compress(data, level)


def test_incompressible_input_grows_the_output_buffer_keeping_its_bytes():
    data = np.random.default_rng(3).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    ours = StableIsal(2)(data)
    assert len(ours) > len(data) and zlib.decompress(ours) == data
    assert ours == isal_zlib.compress(data, 2)


def test_a_memoryview_of_an_array_is_read_in_place():
    frame = np.random.default_rng(5).integers(0, 3, (64, 80, 3), dtype=np.uint8)
    view = memoryview(np.ascontiguousarray(frame)).cast("B")
    assert zlib.decompress(StableIsal(1)(view)) == frame.tobytes()


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="level 4"):
        StableIsal(4)


def test_a_platform_that_refuses_the_mapping_gets_python_isals_call(monkeypatch, caplog):
    """No struct can be placed (here mmap fails with ENOMEM): the compressor says so in the log
    and falls back to python-isal's own call, after one try, not a search of every address."""
    tries = []

    class Refusing(stable_isal._Libc):
        def __init__(self) -> None:
            super().__init__()
            self.mmap = self._refuse

        def _refuse(self, *args: object) -> int:
            tries.append(args[0])
            ctypes.set_errno(errno.ENOMEM)
            return ctypes.c_void_p(-1).value or 0

    monkeypatch.setattr(stable_isal, "_Libc", Refusing)
    monkeypatch.setattr(stable_isal, "_MAPPINGS", stable_isal._Mappings())
    with caplog.at_level("WARNING", logger="gui_assets.stable_isal"):
        compress = stable_isal.isal_compressor.__wrapped__(2)
    assert len(tries) == 1 and "Cannot allocate memory" in caplog.text
    data = _recurring()
    assert compress(data) == isal_zlib.compress(data, 2)
