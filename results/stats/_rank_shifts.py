"""Change points of a nightly series as decisions: each split found by a rank scan and kept only when a
permutation test says it is there (spec §8).

A series of run means is split where the standardized rank-sum statistic of the two sides (Pettitt 1979,
the Mann–Whitney statistic of every split) is largest; the split is kept if that maximum is larger than
in all but a fraction α of random orderings of the same segment (a permutation test, as E-Divisive means
does: Matteson & James 2014), and both sides are searched again (binary segmentation). Ranks make the
test indifferent to the noise's shape: heavy tails, outliers and two-mode noise, where a flat series
alternating between two levels has nothing to split, since its nights are exchangeable.
"""

from dataclasses import dataclass

import numpy as np

from ._base import as_array, check_positive_int

__all__ = ["RankShifts", "rank_shifts"]


@dataclass(frozen=True)
class RankShifts:
    """The significant splits of one series.

    Attributes
    ----------
    indices : tuple of int
        Increasing indices of the first mean of every new segment.
    pvalues : tuple of float
        The permutation p-value of each split, in the segment it was found in.
    statistics : tuple of float
        The largest standardized rank-sum statistic (absolute) of each split.
    """

    indices: tuple[int, ...]
    pvalues: tuple[float, ...]
    statistics: tuple[float, ...]


def rank_shifts(means, *, min_segment=5, alpha=0.01, permutations=999, seed=0):
    """Find the shifts of a series of run means by binary segmentation with a permutation-tested rank scan.

    In a segment of L means with ranks r (ties averaged), every split s (``min_segment <= s <= L −
    min_segment``) has the statistic ``z_s = (S_s − s·r̄) / sqrt(s(L − s)/(L − 1) · var(r))``, S_s the
    sum of the first s ranks: the standardized Mann–Whitney statistic, exact under random ordering
    with ties. The split with the largest ``|z_s|`` is kept when its p-value, the share of `permutations`
    random orderings of the ranks whose largest ``|z_s|`` is at least as large (plus one, over
    permutations plus one), is below `alpha`; both sides are then searched the same way.

    Parameters
    ----------
    means : array_like
        Run means in time order (1-D, finite).
    min_segment : int, optional
        Fewest means in a segment.
    alpha : float, optional
        Significance level of each split's permutation test.
    permutations : int, optional
        Random orderings per test; the smallest p-value is ``1 / (permutations + 1)``.
    seed : int, optional
        Seed of the orderings (``np.random.default_rng``): the same series gives the same answer.

    Returns
    -------
    RankShifts

    References
    ----------
    Pettitt, A. N. (1979). A non-parametric approach to the change-point problem. *Applied Statistics*
    28(2), 126–135. Matteson, D. S. & James, N. A. (2014). A nonparametric approach for multiple change
    point analysis of multivariate data. *JASA* 109(505), 334–345.
    """
    min_segment = check_positive_int(min_segment, "min_segment")
    permutations = check_positive_int(permutations, "permutations")
    alpha = float(as_array(alpha, "alpha", minimum=0.0))
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"`alpha` must be strictly between 0 and 1; got {alpha}.")
    means = np.asarray(means, dtype=float)
    if means.ndim != 1 or not np.isfinite(means).all():
        raise ValueError("`means` must be a 1-D series of finite numbers.")
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float, float]] = []
    pending = [(0, means.size)]
    while pending:
        start, stop = pending.pop()
        if stop - start < 2 * min_segment:
            continue
        split, statistic, pvalue = _best_split(means[start:stop], min_segment, permutations, rng)
        if pvalue < alpha:
            found.append((start + split, pvalue, statistic))
            pending += [(start, start + split), (start + split, stop)]
    found.sort()
    return RankShifts(indices=tuple(index for index, _, _ in found), pvalues=tuple(p for _, p, _ in found),
                      statistics=tuple(s for _, _, s in found))


def _best_split(values, min_segment, permutations, rng):
    """The split of largest |z|, its |z| and its permutation p-value."""
    # scipy.stats is imported where it is used: it takes half a second, which most callers never need.
    from scipy import stats

    ranks = stats.rankdata(values)
    if np.ptp(ranks) == 0.0:
        return min_segment, 0.0, 1.0
    observed = _scan(ranks[None, :], min_segment)[0]
    split = int(np.argmax(observed))
    statistic = float(observed[split])
    shuffled = rng.permuted(np.broadcast_to(ranks, (permutations, ranks.size)), axis=1)
    maxima = _scan(shuffled, min_segment).max(axis=1)
    # A small tolerance: an ordering with the same maximum up to rounding counts as at least as large.
    exceed = int(np.sum(maxima >= statistic * (1.0 - 1e-12)))
    return split + min_segment, statistic, (exceed + 1) / (permutations + 1)


def _scan(ranks, min_segment):
    """|z_s| of every allowed split of each row of `ranks` (rows of one segment's ranks, in any order)."""
    length = ranks.shape[1]
    sizes = np.arange(min_segment, length - min_segment + 1)
    sums = np.cumsum(ranks, axis=1)[:, sizes - 1]
    mean = ranks[0].mean()
    spread = ranks[0].var()
    scale = np.sqrt(sizes * (length - sizes) / (length - 1) * spread)
    return np.abs(sums - sizes * mean) / scale
