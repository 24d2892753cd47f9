"""Order statistics of any window of a series, many windows at once: the wavelet matrix EDM's search
(:mod:`results.stats._edm`) asks for the medians of adjacent segments with.

References
----------
Claude, F., Navarro, G. & Ordóñez, A. (2015). The wavelet matrix: an efficient wavelet tree for large
alphabets. *Information Systems* 47, 15–32.
"""

import numpy as np

__all__ = ["WaveletMatrix"]


class WaveletMatrix:
    """Order statistics of any window ``z[lo:hi]``, vectorised over windows.

    Built over the ranks of `z` (a permutation of ``0 .. n-1``; equal values get
    consecutive ranks), one level per bit of the rank, so that the k-th
    smallest value of a window costs one pass over the ``ceil(log2 n)`` levels.
    """

    def __init__(self, z):
        order = np.argsort(z, kind="stable")
        self.sorted = z[order]
        ranks = np.empty(z.size, dtype=np.int64)
        ranks[order] = np.arange(z.size)
        self.bits = max(1, int(z.size - 1).bit_length())
        # Per level, where a window bound lands if the search goes to the 0 side / the 1 side.
        self.to_zero = np.empty((self.bits, z.size + 1), dtype=np.int64)
        self.to_one = np.empty((self.bits, z.size + 1), dtype=np.int64)
        positions = np.arange(z.size + 1)
        current = ranks
        for level in range(self.bits):
            bit = (current >> (self.bits - 1 - level)) & 1
            self.to_zero[level, 0] = 0
            np.cumsum(1 - bit, out=self.to_zero[level, 1:])
            self.to_one[level] = self.to_zero[level, -1] + positions - self.to_zero[level]
            current = np.concatenate((current[bit == 0], current[bit == 1]))

    def kth(self, lo, hi, k):
        """Value of rank `k` (0-based) in each window ``z[lo:hi]``."""
        bounds = np.stack((lo, hi))
        k = np.asarray(k, dtype=np.int64)
        rank = np.zeros(k.shape, dtype=np.int64)
        for level in range(self.bits):
            zero_side = self.to_zero[level][bounds]
            in_zeros = zero_side[1] - zero_side[0]
            one = k >= in_zeros
            k = k - in_zeros * one
            bounds = np.where(one, self.to_one[level][bounds], zero_side)
            rank = 2 * rank + one
        return self.sorted[rank]

    def median(self, lo, hi, extra=None):
        """Median of each window ``z[lo:hi]`` (even counts average the middle two).

        `extra`, a tuple ``(lo, hi, k)``, adds k-th value queries answered in the
        same pass; their values are returned second.
        """
        length = hi - lo
        even = length % 2 == 0
        middle = (length - 1) // 2
        parts = [(lo, hi, middle), (lo[even], hi[even], middle[even] + 1)]
        if extra is not None:
            parts.append(extra)
        values = self.kth(*(np.concatenate(column) for column in zip(*parts)))
        median = values[: lo.size]
        median[even] = (median[even] + values[lo.size : lo.size + even.sum()]) / 2
        return median, values[lo.size + even.sum() :]
