"""Every pair of screens within a Hamming distance of each other, found exactly.

Pigeonhole bands: the 512 fingerprint bits are dealt into B = threshold + 1 disjoint bands (at
least 8, so a band fits a 64-bit key), bit i into band i mod B, so each band samples the whole
screen and a header shared by a site's pages does not make one band's value common. Two
fingerprints at most `threshold` bits apart agree on at least one whole band, so every such pair
meets in some band's exact-match lookup; each pair met is then verified by its full distance.
Nothing is approximate: no pair within the threshold is missed, and none beyond it is kept.

The work is in bounded batches: query rows are grouped so that no group meets more than
MAX_CANDIDATES pairs, whatever the distribution of band values.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gui_assets.core.fingerprint import FINGERPRINT_BITS, hamming

MAX_CANDIDATES = 4_000_000  # pairs met (and verified) per batch of query rows
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


def _batches(cost: np.ndarray, budget: int) -> Iterator[slice]:
    """Consecutive slices of rows whose summed cost stays within budget (a row over it alone)."""
    start, total = 0, 0
    for i, c in enumerate(cost.tolist()):
        if i > start and total + c > budget:
            yield slice(start, i)
            start, total = i, 0
        total += c
    if start < len(cost):
        yield slice(start, len(cost))


def near_pairs(
    query: np.ndarray, reference: np.ndarray, threshold: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query row, reference row, distance) with the (n, WORDS) fingerprints at most
    `threshold` bits apart, sorted by query row then reference row."""
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32))
    if len(query) == 0 or len(reference) == 0:
        return empty
    # threshold + 1 bands are enough (more only meet more pairs); at least 8, so a band's bits
    # fit one uint64 key.
    bands = max(threshold + 1, -(-FINGERPRINT_BITS // 64))
    ref_keys, query_keys = band_keys(reference, bands), band_keys(query, bands)
    index = [_BandIndex(ref_keys[:, b]) for b in range(bands)]
    spans = [ix.ranges(query_keys[:, b]) for b, ix in enumerate(index)]
    cost = sum(hi - lo for lo, hi in spans)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for rows in _batches(np.asarray(cost), MAX_CANDIDATES):
        met = [_expand(lo[rows], hi[rows], ix.order) for (lo, hi), ix in zip(spans, index, strict=True)]
        q = np.concatenate([m[0] for m in met]) + rows.start
        r = np.concatenate([m[1] for m in met])
        pair = np.unique(q * len(reference) + r)  # a pair met in several bands, once
        q, r = pair // len(reference), pair % len(reference)
        d = hamming(query[q], reference[r])
        keep = d <= threshold
        found.append((q[keep], r[keep], d[keep]))
    if not found:
        return empty
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))  # type: ignore[return-value]
