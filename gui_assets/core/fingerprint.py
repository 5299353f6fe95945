"""A perceptual fingerprint of a screen: 512 bits that stay (nearly) the same when a character is
typed, the pointer moves or the frame is JPEG re-encoded, and change when the page or its scroll
offset does.

The frame is cut into a grid of (GRID + 1) x (GRID + 1) equal blocks, and each block's brightness
is summed in integers (R + 2G + B over every fourth row and every other column of the block). Bit (r, c) of
the first half says block (r, c + 1) is brighter than block (r, c) by more than MARGIN per
sampled pixel (a horizontal gradient); the second half says the same of block (r + 1, c) (a
vertical one, which is what moves when a page scrolls). The margin keeps flat areas, where two
blocks tie, from flipping bits under JPEG noise. Every step is integer arithmetic on the uint8
pixels, so the same pixels give the same bits on every machine, whatever its SIMD or float
rounding. The grid, the sampling and the margin were chosen by measurement on real screenshots
(benchmarks/screen_fingerprint.py; docs/screen_overlap.md has the rates).

Pixels past the last whole block (at most GRID rows at the bottom and GRID columns on the right)
are left out, so all blocks are the same size and their sums compare as they are.
"""

from __future__ import annotations

import numpy as np

GRID = 16  # gradients per row and per column
FINGERPRINT_BITS = 2 * GRID * GRID
FINGERPRINT_BYTES = FINGERPRINT_BITS // 8
WORDS = FINGERPRINT_BITS // 64  # the fingerprint as big-endian uint64 words, for the audit's join
# Rows every ROW_STEP and columns every COL_STEP: an eighth of the pixels read, the same verdicts
# on the measured pairs as every pixel (a line of text is taller than ROW_STEP px).
ROW_STEP = 4
COL_STEP = 2
MARGIN = 8  # in R + 2G + B per sampled pixel: two grey levels
# Two frames are near-duplicates when at most this many bits differ: above every measured
# near-duplicate pair (typed character, moved pointer, JPEG re-encode) and below every pair of
# different pages or scroll offsets (benchmarks/screen_fingerprint.py).
MATCH_THRESHOLD = 12


def block_brightness(frame: np.ndarray) -> tuple[np.ndarray, int]:
    """((GRID + 1, GRID + 1) int64 sums of R + 2G + B per block, sampled pixels per block)."""
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8 or 0 in frame.shape:
        raise ValueError(f"a fingerprint needs an (H, W, 3) uint8 frame, not {frame.shape} {frame.dtype}")
    n = GRID + 1
    if frame.shape[0] < n or frame.shape[1] < n:  # a tiny frame: each pixel repeated, never a crash
        frame = np.repeat(np.repeat(frame, -(-n // frame.shape[0]), axis=0), -(-n // frame.shape[1]), axis=1)
    bh, bw = frame.shape[0] // n, frame.shape[1] // n
    rs = ROW_STEP if bh >= 2 * ROW_STEP else 1
    cs = COL_STEP if bw >= 2 * COL_STEP else 1
    sampled_rows = len(range(0, bh, rs))
    # Whole pixel rows first (splitting the first axis is a view even of a cropped window), then
    # R + 2G + B of the (n, W) row sums in place (the brightness of a sum is the sum of the
    # brightnesses), then each block's sampled columns. The temporaries stay small (uint16 while
    # a row sum's R + 2G + B cannot overflow it): the allocator hands back freed heap, where
    # large int64 ones cost page faults, three times the arithmetic.
    acc = np.uint16 if sampled_rows * 4 * 255 <= np.iinfo(np.uint16).max else np.uint32
    rows = frame[: n * bh].reshape(n, bh, *frame.shape[1:])[:, ::rs].sum(axis=1, dtype=acc)
    light = rows[..., 1].astype(acc)
    light += light
    light += rows[..., 0]
    light += rows[..., 2]
    sums = light[:, : n * bw].reshape(n, n, bw)[:, :, ::cs].sum(axis=2, dtype=np.int64)
    return sums, sampled_rows * len(range(0, bw, cs))


def screen_fingerprint(frame: np.ndarray) -> bytes:
    """The frame's FINGERPRINT_BYTES-byte fingerprint: the horizontal gradient bits, then the
    vertical ones, each in row-major grid order, most significant bit first."""
    sums, pixels = block_brightness(frame)
    margin = MARGIN * pixels
    across = (sums[:-1, 1:] - sums[:-1, :-1]) > margin
    down = (sums[1:, :-1] - sums[:-1, :-1]) > margin
    return np.packbits(np.concatenate([across.ravel(), down.ravel()])).tobytes()


def as_words(fingerprints: bytes | np.ndarray) -> np.ndarray:
    """(n, WORDS) uint64 words of n concatenated fingerprints (bytes, or a uint8 array)."""
    raw = np.frombuffer(fingerprints, np.uint8) if isinstance(fingerprints, bytes) else fingerprints
    return np.ascontiguousarray(raw, dtype=np.uint8).view(">u8").reshape(-1, WORDS).astype(np.uint64)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bits differing between rows of (n, WORDS) word arrays a and b (broadcast), as int32."""
    return np.bitwise_count(np.bitwise_xor(a, b)).sum(axis=-1, dtype=np.int32)
