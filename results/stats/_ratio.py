"""Confidence intervals for the ratio of two means (spec §6; Kalibera & Jones §6.2, §7.2, §7.3).

Two methods for "new over old" on balanced hierarchical data: Fieller's theorem
on the top-level unit means (the asymptotic method), and the hierarchical
bootstrap resampling with replacement at every level ("RRR").
"""

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._base import (
    ConfidenceInterval,
    as_array,
    as_confidence,
    as_counts,
    as_hierarchy,
    check_confidence,
    check_positive_int,
    scalar_or_array,
)

__all__ = ["RatioResult", "ratio_bootstrap", "ratio_fieller", "ratio_fieller_from_stats"]

# Bottom-level draws per chunk of bootstrap replicates: small enough to stay in cache.
_CHUNK_DRAWS = 1 << 18
# Largest table of pre-summed value pairs the bootstrap builds (float64 entries, 32 MiB).
_PAIR_TABLE_LIMIT = 1 << 22


@dataclass(frozen=True)
class RatioResult:
    """A ratio of means with its confidence interval.

    Attributes
    ----------
    ratio : float or ndarray
        Point estimate, ``mean(new) / mean(old)``.
    low, high : float or ndarray
        Confidence limits; ``-inf`` and ``+inf`` where the interval is unbounded.
    bounded : bool or ndarray of bool
        False where no finite interval exists (Fieller: the old mean is not
        significantly different from zero).
    confidence_level : float or ndarray
    """

    ratio: float
    low: float
    high: float
    bounded: bool
    confidence_level: float

    def confidence_interval(self):
        """Return ``ConfidenceInterval(low, high)`` at :attr:`confidence_level`."""
        return ConfidenceInterval(self.low, self.high)


def ratio_fieller_from_stats(
    mean_new, variance_new, n_new, mean_old, variance_old, n_old, *, confidence=0.95, df=None
):
    """Fieller interval for ``mean_new / mean_old`` from summary statistics (spec §6).

    Each side is summarized like a stored result: the mean, the variance
    (ddof=1) of its n independent units (top-level unit means, or subsession
    means for one-level data) and n. All arguments broadcast, so many series
    are handled in one call.

    With ``s² = variance / n`` (the variance of a mean), ``h = t_{(1+c)/2, df}``
    and ``a = mean_old² - h² s_old²``, the limits are the roots of
    ``(mean_new - r mean_old)² = h² (s_new² + r² s_old²)``:
    ``(mean_new mean_old ∓ sqrt((mean_new mean_old)² - a (mean_new² - h² s_new²))) / a``.

    Parameters
    ----------
    mean_new, variance_new, n_new : array_like
        Numerator side: mean, unit variance ``>= 0``, number of units ``>= 2``.
    mean_old, variance_old, n_old : array_like
        Denominator side, likewise.
    confidence : float or array_like, optional
        Confidence level c in (0, 1); an array gives each series its own level.
    df : array_like, optional
        Degrees of freedom of h, ``> 0``. The default ``n_new + n_old - 2`` is
        Kalibera & Jones's (and GraphPad's) choice; mratios' ``ttestratio``
        uses the Welch–Satterthwaite df evaluated at the estimated ratio.

    Returns
    -------
    RatioResult
        Where ``a <= 0`` the old mean is not significantly non-zero and no
        finite interval exists (the confidence set is the whole line or the
        complement of an interval): ``bounded=False``, ``low=-inf``,
        ``high=+inf``. The ratio itself is ``±inf`` (or NaN for 0/0) where
        ``mean_old == 0``.
    """
    confidence = as_confidence(confidence)
    mean_new = as_array(mean_new, "mean_new")
    variance_new = as_array(variance_new, "variance_new", minimum=0.0)
    n_new = as_counts(n_new, "n_new")
    mean_old = as_array(mean_old, "mean_old")
    variance_old = as_array(variance_old, "variance_old", minimum=0.0)
    n_old = as_counts(n_old, "n_old")
    df = n_new + n_old - 2 if df is None else as_array(df, "df", minimum=0.0, inclusive=False)

    h2 = stats.t.ppf((1.0 + confidence) / 2.0, df) ** 2
    error_new = variance_new / n_new
    error_old = variance_old / n_old
    a = mean_old**2 - h2 * error_old
    bounded = a > 0.0
    safe_a = np.where(bounded, a, 1.0)
    product = mean_new * mean_old
    # Equals h² (s_old² mean_new² + s_new² a) >= 0 when a > 0; the clip absorbs rounding.
    discriminant = np.clip(product**2 - safe_a * (mean_new**2 - h2 * error_new), 0.0, None)
    root = np.sqrt(discriminant)
    low = np.where(bounded, (product - root) / safe_a, -np.inf)
    high = np.where(bounded, (product + root) / safe_a, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mean_new / mean_old
    low, high, ratio, bounded = np.broadcast_arrays(low, high, ratio, bounded)
    return RatioResult(
        ratio=scalar_or_array(ratio),
        low=scalar_or_array(low),
        high=scalar_or_array(high),
        bounded=scalar_or_array(bounded),
        confidence_level=confidence,
    )


def ratio_fieller(new, old, *, confidence=0.95):
    """Fieller interval for the ratio of grand means of hierarchical data (K&J §6.2; spec §6).

    Parameters
    ----------
    new, old : array_like
        Balanced hierarchical measurements, axis 0 = top level (e.g. builds),
        last axis = measurements within one execution; at least 2 repetitions
        per level. 1-D data is one level: pass subsession means for
        autocorrelated samples. The two sides may have different shapes.
    confidence : float, optional
        Confidence level c in (0, 1).

    Returns
    -------
    RatioResult
        See :func:`ratio_fieller_from_stats`; the statistics used are the grand
        mean, the variance of the top-level unit means and their number, with
        ``df = n_top,new + n_top,old - 2``.
    """
    confidence = check_confidence(confidence)
    new = as_hierarchy(new, "new")
    old = as_hierarchy(old, "old")
    return ratio_fieller_from_stats(
        *_top_level_statistics(new), *_top_level_statistics(old), confidence=confidence
    )


def ratio_bootstrap(new, old, *, confidence=0.95, n_resamples=10_000, rng=None):
    """Percentile hierarchical-bootstrap interval for ``mean(new) / mean(old)`` (K&J §7.3.1).

    Each replicate resamples with replacement at every level ("RRR"): n_top
    top-level units, within each drawn unit its sub-units, ... down to the
    measurements; the replicate statistic is the ratio of the two replicate
    grand means. The interval is the (1-c)/2 and (1+c)/2 quantiles.

    Parameters
    ----------
    new, old : array_like
        Balanced hierarchical measurements as for :func:`ratio_fieller`.
    confidence : float, optional
        Confidence level c in (0, 1).
    n_resamples : int, optional
        Number of bootstrap replicates B, at least 100.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    RatioResult
        ``bounded`` is True unless a replicate mean of `old` is zero.

    Notes
    -----
    Replicates are drawn in chunks to bound memory. The mean of n_1 values
    drawn with replacement from one execution is the sum of n_1 independent
    uniform draws; two such draws together are one uniform draw from the
    n_1² pairwise sums, so the bottom level is resampled from a table of
    pair sums with half the random numbers and gathers, exactly in
    distribution.
    """
    confidence = check_confidence(confidence)
    new = as_hierarchy(new, "new")
    old = as_hierarchy(old, "old")
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=100)
    rng = np.random.default_rng(rng)

    replicate_new = _resample_means(new, n_resamples, rng)
    replicate_old = _resample_means(old, n_resamples, rng)
    bounded = bool(np.all(replicate_old != 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = replicate_new / replicate_old
    if bounded:
        low, high = np.quantile(ratios, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    else:
        low, high = -np.inf, np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = new.mean() / old.mean()
    return RatioResult(
        ratio=float(ratio),
        low=float(low),
        high=float(high),
        bounded=bounded,
        confidence_level=confidence,
    )


def _top_level_statistics(data):
    """(grand mean, variance of the top-level unit means, number of top-level units)."""
    top_means = data.reshape(data.shape[0], -1).mean(axis=1)
    return data.mean(), top_means.var(ddof=1), data.shape[0]


def _resample_means(data, n_resamples, rng):
    """Grand means of `n_resamples` RRR bootstrap replicates of balanced `data`."""
    bottom = data.shape[-1]
    units = data.reshape(-1, bottom)
    if units.shape[0] * bottom**2 <= _PAIR_TABLE_LIMIT:
        pair_sums = (units[:, :, None] + units[:, None, :]).reshape(-1)
        pairs, singles = divmod(bottom, 2)
    else:
        pair_sums, pairs, singles = None, 0, bottom
    values = units.reshape(-1)

    units_per_replicate = int(np.prod(data.shape[:-1]))
    chunk = max(1, _CHUNK_DRAWS // (units_per_replicate * (pairs + singles)))
    totals = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        chosen = _resample_units(data.shape[:-1], size, rng)[:, :, None]
        total = np.zeros(size)
        if pairs:
            total += _draw_sums(pair_sums, chosen, bottom**2, pairs, rng)
        if singles:
            total += _draw_sums(values, chosen, bottom, singles, rng)
        totals[start:start + size] = total
    return totals / data.size


def _draw_sums(table, chosen, width, count, rng):
    """Per replicate, the sum of `count` uniform draws from each chosen unit's row of `table`."""
    dtype = np.uint16 if width <= 1 << 16 else np.int64
    draws = rng.integers(0, width, size=chosen.shape[:2] + (count,), dtype=dtype)
    return table[chosen * width + draws].sum(axis=(1, 2))


def _resample_units(upper, size, rng):
    """Indices of the bottom-level units (executions) chosen by RRR draws over the upper levels.

    Returns an int64 array of shape ``(size, prod(upper))``: for each replicate,
    the row of every drawn execution in ``data.reshape(-1, n_1)``.
    """
    chosen = np.zeros((size, 1), dtype=np.int64)
    for count in upper:
        draws = rng.integers(0, count, size=chosen.shape + (count,))
        chosen = (chosen[:, :, None] * count + draws).reshape(size, -1)
    return chosen
