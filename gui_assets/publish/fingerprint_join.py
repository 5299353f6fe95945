"""Every pair of screens within a Hamming distance of each other, found exactly.

Pigeonhole bands: the 512 fingerprint bits are dealt into B = threshold + 1 disjoint bands (at
least 8, so a band fits a 64-bit key), bit i into band i mod B, so each band samples the whole
screen and a header shared by a site's pages does not make one band's value common. Two
fingerprints at most `threshold` bits apart agree on at least one whole band, so every such pair
meets in some band's exact-match lookup; each pair met is then verified by its full distance.
Nothing is approximate: no pair within the threshold is missed, and none beyond it is kept.

The work is in bounded batches (query rows grouped so that a batch meets about MAX_CANDIDATES
pairs) and what is kept is a reduction, the nearest reference row per query row and group, so
memory does not grow with the pairs found: a cluster of near-identical screens (a loading page,
an empty desktop) shared by thousands of frames costs time, never memory.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from gui_assets.core.fingerprint import FINGERPRINT_BITS, hamming

MAX_CANDIDATES = 1_000_000  # pairs met (and verified) per batch: ~150 MB of gathered words
_KEY_ROWS = 65_536  # rows unpacked to bits at a time when the band keys are made


def band_keys(words: np.ndarray, bands: int) -> np.ndarray:
    """(n, bands) uint64: row r's bits i with i mod bands == b, packed, as band b's key."""
    if FINGERPRINT_BITS // bands > 64:
        raise ValueError(f"{bands} bands of a {FINGERPRINT_BITS}-bit fingerprint do not fit 64 bits")
    out = np.empty((len(words), bands), np.uint64)
    for start in range(0, len(words), _KEY_ROWS):
        chunk = words[start : start + _KEY_ROWS].astype(">u8").view(np.uint8)
        bits = np.unpackbits(chunk, axis=1)  # (rows, FINGERPRINT_BITS)
        for b in range(bands):
            packed = np.packbits(bits[:, b::bands], axis=1)  # (rows, <= 8) bytes
            padded = np.zeros((len(packed), 8), np.uint8)
            padded[:, : packed.shape[1]] = packed
            out[start : start + len(packed), b] = padded.view(">u8")[:, 0]
    return out


class _BandIndex:
    """One band of the reference rows, sorted by key for exact lookups."""

    def __init__(self, keys: np.ndarray) -> None:
        self.order = np.argsort(keys, kind="stable")
        self.sorted = keys[self.order]

    def ranges(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.searchsorted(self.sorted, keys, "left"), np.searchsorted(self.sorted, keys, "right")


def _expand(lo: np.ndarray, hi: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query row, reference row) of every reference row in [lo[i], hi[i]) of `order`."""
    counts = hi - lo
    rows = np.repeat(np.arange(len(lo)), counts)
    starts = np.cumsum(counts) - counts
    at = np.arange(counts.sum()) - np.repeat(starts - lo, counts)
    return rows, order[at]


def _batches(cost: np.ndarray, budget: int) -> list[slice]:
    """Consecutive slices of rows whose summed cost stays within budget plus one row's."""
    if not len(cost):
        return []
    ends = np.cumsum(cost)
    cuts = np.unique(np.searchsorted(ends, np.arange(budget, int(ends[-1]), budget), "right"))
    bounds = [0, *(int(c) for c in cuts if 0 < c < len(cost)), len(cost)]
    return [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]


def candidates(
    query: np.ndarray, reference: np.ndarray, threshold: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of (query row, reference row) that agree on a whole band: every pair within
    `threshold` bits is among them, once (in the first band it agrees on)."""
    # threshold + 1 bands are enough (more only meet more pairs); at least 8, so a band's bits
    # fit one uint64 key.
    bands = max(threshold + 1, -(-FINGERPRINT_BITS // 64))
    ref_keys, query_keys = band_keys(reference, bands), band_keys(query, bands)
    for b in range(bands):
        index = _BandIndex(ref_keys[:, b])
        lo, hi = index.ranges(query_keys[:, b])
        for rows in _batches(hi - lo, MAX_CANDIDATES):
            q, r = _expand(lo[rows], hi[rows], index.order)
            q += rows.start
            if b:  # a pair that agrees on an earlier band was met there already
                fresh = (query_keys[q, :b] != ref_keys[r, :b]).all(axis=1)
                q, r = q[fresh], r[fresh]
            yield q, r


def nearest_by_group(
    query: np.ndarray,
    reference: np.ndarray,
    group: np.ndarray,
    rank: np.ndarray,
    groups: int,
    threshold: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For each query row and each reference group (a source): the smallest distance to a
    reference row of that group, and the smallest `rank` among the rows at that distance.
    (n, groups) arrays; threshold + 1 and -1 where no row of the group is within `threshold`.
    Memory is the two arrays and one batch, however many pairs there are within the threshold."""
    best_d = np.full((len(query), groups), threshold + 1, np.int32)
    best_rank = np.full((len(query), groups), np.iinfo(np.int64).max, np.int64)
    if len(query) == 0 or len(reference) == 0:
        return best_d, np.where(best_d > threshold, -1, best_rank)
    flat_d, flat_rank = best_d.reshape(-1), best_rank.reshape(-1)
    for q, r in candidates(query, reference, threshold):
        d = hamming(query[q], reference[r])
        keep = d <= threshold
        key, d, ranks = q[keep] * groups + group[r[keep]], d[keep], rank[r[keep]]
        order = np.lexsort((ranks, d, key))  # per (query row, group): the nearest, then the lowest rank
        key, d, ranks = key[order], d[order], ranks[order]
        first = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, bool)
        key, d, ranks = key[first], d[first], ranks[first]
        better = (d < flat_d[key]) | ((d == flat_d[key]) & (ranks < flat_rank[key]))
        flat_d[key[better]], flat_rank[key[better]] = d[better], ranks[better]
    return best_d, np.where(best_d > threshold, -1, best_rank)
