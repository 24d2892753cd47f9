"""The wavelet matrix behind EDM's medians, against numpy's sort of every window."""

import numpy as np
import pytest

from results.stats._order_statistics import WaveletMatrix


@pytest.mark.parametrize("size", [1, 2, 7, 64, 301])
def test_kth_and_median_of_every_window_match_numpy(size):
    rng = np.random.default_rng(size)
    # Ties included: half the values drawn from a few levels.
    z = np.where(rng.random(size) < 0.5, rng.integers(0, 4, size).astype(float), rng.normal(size=size))
    matrix = WaveletMatrix(z)
    lo, hi = np.triu_indices(size + 1, k=1)
    k = (rng.random(lo.size) * (hi - lo)).astype(np.int64)
    expected_kth = np.array([np.sort(z[a:b])[c] for a, b, c in zip(lo, hi, k)])
    np.testing.assert_array_equal(matrix.kth(lo, hi, k), expected_kth)
    median, _ = matrix.median(lo, hi)
    np.testing.assert_allclose(median, [np.median(z[a:b]) for a, b in zip(lo, hi)], rtol=0, atol=1e-12)
