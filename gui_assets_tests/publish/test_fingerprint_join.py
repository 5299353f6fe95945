"""The exact near-duplicate join: the pigeonhole bands find every pair a brute-force comparison
finds, at every distance up to the threshold, and nothing beyond it."""

from __future__ import annotations

import numpy as np
import pytest

from gui_assets.core.fingerprint import FINGERPRINT_BITS, WORDS, hamming
from gui_assets.publish import fingerprint_join
from gui_assets.publish.fingerprint_join import band_keys, near_pairs


def _flip(word_row: np.ndarray, bits: np.ndarray) -> np.ndarray:
    out = word_row.copy()
    for b in bits:
        out[b // 64] ^= np.uint64(1) << np.uint64(63 - b % 64)
    return out


@pytest.mark.parametrize("threshold", [0, 5, 12])
def test_every_pair_within_the_threshold_is_found_and_no_other(threshold, monkeypatch):
    monkeypatch.setattr(fingerprint_join, "MAX_CANDIDATES", 50)  # many small batches
    rng = np.random.default_rng(threshold)
    reference = rng.integers(0, 2**63, (400, WORDS), dtype=np.uint64)
    reference[200:] = reference[:200]  # duplicates: a query meets both copies
    query = rng.integers(0, 2**63, (120, WORDS), dtype=np.uint64)
    for i in range(0, 120, 2):  # a copy at every distance 0..threshold + 3, the bits spread anywhere
        flips = rng.choice(FINGERPRINT_BITS, i // 2 % (threshold + 4), replace=False)
        query[i] = _flip(reference[rng.integers(400)], flips)
    q, r, d = near_pairs(query, reference, threshold)
    brute = hamming(query[:, None, :], reference[None, :, :])
    want = np.argwhere(brute <= threshold)
    assert len(want) > 0
    assert np.array_equal(np.stack([q, r], axis=1), want) and np.array_equal(d, brute[q, r])


def test_band_keys_take_every_bands_bits_from_across_the_fingerprint():
    words = np.zeros((1, WORDS), np.uint64)
    words[0, 0] = np.uint64(1) << np.uint64(63)  # bit 0 only: band 0's first bit
    keys = band_keys(words, 13)
    assert keys[0, 0] == np.uint64(1) << np.uint64(63) and not keys[0, 1:].any()


def test_nothing_to_join_is_an_empty_answer():
    empty = np.empty((0, WORDS), np.uint64)
    assert all(len(a) == 0 for a in near_pairs(empty, np.ones((3, WORDS), np.uint64), 12))
