"""ISA-L deflate whose bytes depend on the input alone.

ISA-L's level 1 and 2 match loop (`igzip_icf_body_h1_gr_bt.asm`, at `.write_first_byte`) files
the stream's third byte in its hash table under a hash taken from a register that still holds
the address of the `isal_zstream` it was given, not from the input. Where position 2 lands, and
so which matches the compressor finds thousands of bytes later (a match back to position 2 plus
a multiple of 32 KiB, or one it misses because that bucket was taken), depends on bits 16-47 of
that address. python-isal keeps the struct on the calling thread's C stack, so the same pixels
now and then deflate to another valid stream on another thread or in another process. Both odd
chunks kept from such builds trace back to it: with the struct at an address of one bucket in
32,768, ISA-L writes exactly the stream the odd build stored.

Here each thread's struct lives in a mapping of its own at an address whose bits 16-47 hash to
one fixed bucket (the hash is CRC-32C, linear in those bits, so such addresses are many), and
ISA-L is driven as python-isal drives it (same level buffer size, zlib wrapper, window and
output steps), so the stream is the one python-isal writes wherever the bucket does not matter,
and the same one on every thread and in every process where it does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import mmap
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

# From ISA-L's igzip_lib.h: each level's default level buffer (python-isal's MEM_LEVEL_DEFAULT).
_K = 1024
LEVEL_BUF_BYTES = {
    0: 0,
    1: 4 * _K + 2 * 8 * _K + 4 * 64 * _K,
    2: 4 * _K + 2 * 32 * _K + 4 * 64 * _K,
    3: 4 * _K + 16 * _K + 2 * 32 * _K + 4 * 64 * _K,
}
_COMP_OK = 0
_FULL_FLUSH = 2
_IGZIP_ZLIB = 3
_WINDOW_BITS = 15
_FIRST_OUTPUT = 16 * _K  # python-isal's first output step; it doubles the buffer when full
_STATE_BYTES = 96 * _K  # isal_zstate, about 82 KB: the hash history buffer and level 0's table
_MAPPING = 128 * _K
_MAX_INPUT = (1 << 32) - (1 << 20)  # avail_in and the output bound stay below 2**32

_BUCKET = 0x2F1D  # where every thread's struct files position 2 (any fixed value would do)
_BUCKET_BITS = 0xFFFF  # covers every level's hash mask (level 2's is 0x7FFF)
_FIRST_PAGE = 0x2000_0000  # address >> 16 where the search starts: 32 TiB, far from libraries


class _Stream(ctypes.Structure):
    """struct isal_zstream: the public fields, then the internal state ISA-L owns."""

    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint32),
        ("total_in", ctypes.c_uint32),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint32),
        ("total_out", ctypes.c_uint32),
        ("hufftables", ctypes.c_void_p),
        ("level", ctypes.c_uint32),
        ("level_buf_size", ctypes.c_uint32),
        ("level_buf", ctypes.c_void_p),
        ("end_of_stream", ctypes.c_uint16),
        ("flush", ctypes.c_uint16),
        ("gzip_flag", ctypes.c_uint16),
        ("hist_bits", ctypes.c_uint16),
        ("internal_state", ctypes.c_uint8 * _STATE_BYTES),
    ]


class StableIsalError(RuntimeError):
    """ISA-L could not be driven this way here (no exported symbols, or no such mapping)."""


@functools.cache
def _crc32c_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1).astype(np.uint32)
    return table


def crc32c_word(words: np.ndarray) -> np.ndarray:
    """The x86 `crc32 r32, r32` instruction from zero, as ISA-L hashes: CRC-32C of each 32-bit
    word, without the usual inversions."""
    table = _crc32c_table()
    crc = np.zeros(words.shape, np.uint32)
    for shift in (0, 8, 16, 24):
        crc = table[(crc ^ (words >> np.uint32(shift))) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    return crc


def bucket_of(address: int) -> int:
    """The hash bucket ISA-L files position 2 under for a stream struct at `address`."""
    word = np.array([(address >> 16) & 0xFFFF_FFFF], np.uint32)
    return int(crc32c_word(word)[0]) & _BUCKET_BITS


def _addresses(block: int = 1 << 20) -> Iterator[int]:
    """Addresses, 64 KiB apart at least, whose struct files position 2 in _BUCKET (about 16 in
    each block of 2**20 candidates), searched a block at a time as they are needed."""
    start = _FIRST_PAGE
    while start + block < 1 << 31:  # address >> 16 below 2**31: below the 47-bit user space top
        pages = np.arange(start, start + block, dtype=np.uint32)
        for page in pages[(crc32c_word(pages) & np.uint32(_BUCKET_BITS)) == _BUCKET]:
            yield int(page) << 16
        start += block


class _Libc:
    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.mmap = libc.mmap
        self.mmap.restype = ctypes.c_void_p
        int_ = ctypes.c_int
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, int_, int_, int_, ctypes.c_long]
        self.munmap = libc.munmap
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


_MAP_FIXED_NOREPLACE = 0x100000  # Linux 4.17+; an older kernel takes it as a hint, which we check
_MAX_TRIES = 256  # addresses tried before giving up (each taken one costs a failed mmap)


class _Mappings:
    """Hands out mappings at _addresses(), each to one thread, and takes them back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[int] = []
        self._candidates: Iterator[int] | None = None
        self._libc: _Libc | None = None

    def take(self) -> int:
        with self._lock:
            if self._free:
                return self._free.pop()
            if self._candidates is None:
                self._libc, self._candidates = _Libc(), _addresses()
            libc = self._libc
            assert libc is not None
            for _, wanted in zip(range(_MAX_TRIES), self._candidates, strict=False):
                flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED_NOREPLACE
                got = libc.mmap(wanted, _MAPPING, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
                if got == wanted:
                    return wanted
                if got not in (None, ctypes.c_void_p(-1).value):
                    libc.munmap(got, _MAPPING)  # taken as a hint and placed elsewhere
                elif (err := ctypes.get_errno()) != errno.EEXIST:  # not a taken address: none will do
                    raise StableIsalError(f"mmap at {wanted:#x}: {os.strerror(err)}")
            raise StableIsalError("no free address for an ISA-L stream in a fixed hash bucket")

    def give_back(self, address: int) -> None:
        self._free.append(address)  # atomic, and no lock: a slot may die inside take()


_MAPPINGS = _Mappings()


@dataclass
class _Slot:
    """One thread's stream struct (at its fixed-bucket address), level buffer and output."""

    address: int
    level_buf: ctypes.Array[ctypes.c_char]
    out: ctypes.Array[ctypes.c_char]
    pooled: bool = False  # the address came from _MAPPINGS (and goes back there)

    def __del__(self) -> None:  # the thread is gone: its mapping serves the next one
        if self.pooled and _MAPPINGS is not None:  # None while the interpreter shuts down
            _MAPPINGS.give_back(self.address)


class StableIsal:
    """`compress(data) -> zlib stream` at one ISA-L level; callable from any thread (each has its
    own slot; the GIL is released while ISA-L runs)."""

    def __init__(self, level: int, library: str | None = None) -> None:
        if level not in LEVEL_BUF_BYTES:
            raise ValueError(f"ISA-L level {level} is not 0..3")
        self.level = level
        if library is None:
            from isal import isal_zlib  # the wheel's extension exports ISA-L's own symbols

            library = isal_zlib.__file__
        try:
            lib = ctypes.CDLL(library)
            self._init = lib.isal_deflate_init
            self._deflate = lib.isal_deflate
        except (OSError, AttributeError) as e:
            raise StableIsalError(f"ISA-L's deflate symbols are not reachable in {library}: {e}") from e
        self._init.argtypes = [ctypes.c_void_p]
        self._init.restype = None
        self._deflate.argtypes = [ctypes.c_void_p]
        self._deflate.restype = ctypes.c_int
        self._local = threading.local()

    def _slot(self, size: int) -> _Slot:
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            level_buf = ctypes.create_string_buffer(max(1, LEVEL_BUF_BYTES[self.level]))
            out = ctypes.create_string_buffer(0)
            slot = self._local.slot = _Slot(_MAPPINGS.take(), level_buf, out, pooled=True)
        bound = size + size // 8 + 64 * _K  # room for stored blocks; a longer stream grows it
        if len(slot.out) < bound:
            slot.out = ctypes.create_string_buffer(bound)
        return slot

    def __call__(self, data: bytes | memoryview) -> bytes:
        source = np.frombuffer(data, np.uint8)  # no copy; read-only is fine
        if source.size > _MAX_INPUT:  # ISA-L counts in 32 bits; python-isal feeds such input in parts
            raise StableIsalError(f"{source.size} bytes is more than one ISA-L call takes")
        return self.deflate_at(self._slot(source.size), source)

    def deflate_at(self, slot: _Slot, source: np.ndarray) -> bytes:
        """`source` deflated with the stream struct at `slot.address` (tests place it anywhere)."""
        stream = _Stream.from_address(slot.address)
        self._init(slot.address)
        stream.level = self.level
        stream.level_buf_size = LEVEL_BUF_BYTES[self.level]
        stream.level_buf = ctypes.addressof(slot.level_buf) if stream.level_buf_size else None
        stream.hist_bits = _WINDOW_BITS
        stream.gzip_flag = _IGZIP_ZLIB
        stream.next_in = source.ctypes.data
        stream.avail_in = source.size
        stream.flush = _FULL_FLUSH
        stream.end_of_stream = 1
        out = ctypes.addressof(slot.out)
        length = _FIRST_OUTPUT
        stream.next_out, stream.avail_out = out, min(length, len(slot.out))
        while True:
            err = self._deflate(slot.address)
            if err != _COMP_OK:
                raise StableIsalError(f"isal_deflate failed with {err} on {source.size} bytes")
            if stream.avail_out:
                return ctypes.string_at(out, stream.total_out)
            occupied, length = length, 2 * length  # python-isal's steps, so its streams are ours
            if length > len(slot.out):  # past the bound: grow as python-isal does, keeping the bytes
                grown = ctypes.create_string_buffer(length)
                ctypes.memmove(grown, slot.out, occupied)
                slot.out, out = grown, ctypes.addressof(grown)
            stream.next_out, stream.avail_out = out + occupied, length - occupied


@functools.cache
def isal_compressor(level: int) -> Callable[[bytes | memoryview], bytes]:
    """ISA-L at `level` with input-only bytes, one per level and process; python-isal's own call
    (valid, but its bytes can vary by thread) where this platform cannot place the struct, said
    once in the log."""
    try:
        compressor = StableIsal(level)
        compressor(b"")  # places this thread's struct now: a platform that cannot says so here
        return compressor
    except StableIsalError as e:
        log.warning(f"ISA-L deflate may vary by thread and process here: {e}")
        from isal import isal_zlib

        return lambda data: isal_zlib.compress(data, level)
