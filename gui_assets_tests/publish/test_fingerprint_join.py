"""The exact near-duplicate join: per query and group, the nearest reference row a brute-force
comparison finds, at every distance up to the threshold, and nothing beyond it."""

from __future__ import annotations

import numpy as np
import pytest

from gui_assets.core.fingerprint import FINGERPRINT_BITS, WORDS, hamming
from gui_assets.publish import fingerprint_join
from gui_assets.publish.fingerprint_join import band_keys, nearest_by_group


def _flip(word_row: np.ndarray, bits: np.ndarray) -> np.ndarray:
    out = word_row.copy()
    for b in bits:
        out[b // 64] ^= np.uint64(1) << np.uint64(63 - b % 64)
    return out


@pytest.mark.parametrize("threshold", [0, 5, 12])
def test_the_nearest_row_of_each_group_is_what_brute_force_finds(threshold, monkeypatch):
    monkeypatch.setattr(fingerprint_join, "MAX_CANDIDATES", 50)  # many small batches
    rng = np.random.default_rng(threshold)
    reference = rng.integers(0, 2**63, (400, WORDS), dtype=np.uint64)
    reference[200:] = reference[:200]  # duplicates: the lower rank must win the tie
    group = rng.integers(0, 3, 400)
    rank = rng.permutation(400)
    query = rng.integers(0, 2**63, (120, WORDS), dtype=np.uint64)
    for i in range(0, 120, 2):  # a copy at every distance 0..threshold + 3, the bits spread anywhere
        flips = rng.choice(FINGERPRINT_BITS, i // 2 % (threshold + 4), replace=False)
        query[i] = _flip(reference[rng.integers(400)], flips)
    best_d, best_rank = nearest_by_group(query, reference, group, rank, 3, threshold)
    brute = hamming(query[:, None, :], reference[None, :, :])
    assert (brute <= threshold).sum() > 0
    for g in range(3):
        d = np.where(group[None, :] == g, brute, 10**6)
        nearest = d.min(axis=1)
        want_rank = np.array([rank[(d[i] == nearest[i])].min() for i in range(len(query))])
        within = nearest <= threshold
        assert np.array_equal(best_d[:, g] <= threshold, within)
        assert np.array_equal(best_d[within, g], nearest[within])
        assert np.array_equal(best_rank[within, g], want_rank[within])
        assert (best_rank[~within, g] == -1).all()


def test_band_keys_take_every_bands_bits_from_across_the_fingerprint():
    words = np.zeros((1, WORDS), np.uint64)
    words[0, 0] = np.uint64(1) << np.uint64(63)  # bit 0 only: band 0's first bit
    keys = band_keys(words, 13)
    assert keys[0, 0] == np.uint64(1) << np.uint64(63) and not keys[0, 1:].any()


def test_nothing_to_join_is_an_answer_of_no_match():
    empty = np.empty((0, WORDS), np.uint64)
    d, rank = nearest_by_group(
        np.ones((2, WORDS), np.uint64), empty, np.empty(0, int), np.empty(0, int), 2, 12
    )
    assert d.shape == (2, 2) and (d == 13).all() and (rank == -1).all()
