"""Confidence intervals for the ratio of two means (spec §6; Kalibera & Jones §6.2, §7.2, §7.3).

Two methods for "new over old" on balanced hierarchical data: Fieller's theorem
on the top-level unit means (the asymptotic method), and the bootstrap: by
default of the top-level unit means with a BCa interval (Ren et al. 2010), or
resampling with replacement at every level ("RRR", K&J §7.3.1).
"""

import warnings
from dataclasses import dataclass

import numpy as np

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
from ._compare import welch_degrees_of_freedom
from ._distributions import t_quantile

__all__ = ["RatioResult", "RatioTest", "ratio_bootstrap", "ratio_fieller", "ratio_fieller_from_stats"]

# Bottom-level draws per chunk of bootstrap replicates: small enough to stay in cache.
_CHUNK_DRAWS = 1 << 18
# Largest table of pre-summed value pairs the bootstrap builds (float64 entries, 32 MiB).
_PAIR_TABLE_LIMIT = 1 << 22
# The bootstrap's resampling schemes: top level only (the default), or every level (K&J's "RRR").
_BOOTSTRAP_METHODS = ("studentized", "bca", "rrr")


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


@dataclass(frozen=True)
class RatioTest(RatioResult):
    """A ratio of means with its confidence interval and the test of the two means behind it: the common part
    of the comparisons' results (:func:`compare_summaries`, :func:`compare_with_history`, :func:`recent_shift`).

    Attributes
    ----------
    statistic : float or ndarray
        The test's t statistic.
    pvalue : float or ndarray
        Its two-sided p-value.
    """

    statistic: float
    pvalue: float


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
        Degrees of freedom of h, ``> 0``. The default is that of Welch's test of
        the same two sides (:func:`welch_degrees_of_freedom`: Welch–Satterthwaite,
        or Hsu's ``min(n) − 1`` where a side has fewer than 5 units), so an
        interval and its test agree (spec §5, revised; mratios' ``ttestratio``
        also takes the Welch–Satterthwaite df). ``n_new + n_old - 2``, Kalibera &
        Jones's and GraphPad's choice, overstates the certainty when the
        variances differ: 2 vs 3 units gave +4.4%..+16.1% where ν = 1.71 gives
        +1.2%..+20.1%.

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
    if df is None:
        df = welch_degrees_of_freedom(variance_new, n_new, variance_old, n_old)[0]
    else:
        df = as_array(df, "df", minimum=0.0, inclusive=False)

    h2 = t_quantile((1.0 + confidence) / 2.0, df) ** 2
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
        Kalibera & Jones's ``df = n_top,new + n_top,old - 2`` (spec §6).
    """
    confidence = check_confidence(confidence)
    new = as_hierarchy(new, "new")
    old = as_hierarchy(old, "old")
    return ratio_fieller_from_stats(
        *_top_level_statistics(new), *_top_level_statistics(old), confidence=confidence,
        df=new.shape[0] + old.shape[0] - 2,
    )


def ratio_bootstrap(new, old, *, confidence=0.95, n_resamples=10_000, rng=None, method="studentized"):
    """Bootstrap confidence interval for ``mean(new) / mean(old)`` of hierarchical data (spec §6).

    By default only the top level is resampled (Ren et al. 2010): the data of
    each side are reduced to their top-level unit means, and the two samples of
    means are resampled independently with replacement. A top-level unit mean
    already carries the variation of every level below it, so resampling the
    lower levels again would count it twice. For 1-D data (one level) the values
    themselves are resampled. The default interval is the studentized one
    (bootstrap-t; Efron & Tibshirani 1993, §12.5): each replicate's ratio is
    standardized by its own delta-method standard error
    ``sqrt(s_new²/n_new + r² s_old²/n_old) / |mean_old|``, and the quantiles of
    those t values scale the estimate's standard error. ``method="bca"`` gives
    the bias-corrected and accelerated interval of the same replicates (Efron
    1987), computed by :func:`scipy.stats.bootstrap`.

    ``method="rrr"`` keeps Kalibera & Jones's hierarchical bootstrap (their
    §7.3.1): each replicate resamples with replacement at every level, n_top
    top-level units, within each drawn unit its sub-units, ... down to the
    measurements; the replicate statistic is the ratio of the two replicate
    grand means and the interval is the (1-c)/2 and (1+c)/2 quantiles (the
    percentile interval). It counts the lower levels' variation a second time,
    so it is conservative where the variation sits at the lower levels (spec
    §6, revision 2026-11-23).

    Parameters
    ----------
    new, old : array_like
        Balanced hierarchical measurements as for :func:`ratio_fieller`: axis 0
        is the top level, at least 2 repetitions at every level (so at least 2
        top-level units on each side). The two sides may have different shapes.
    confidence : float, optional
        Confidence level c in (0, 1).
    n_resamples : int, optional
        Number of bootstrap replicates B, at least 100.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness, passed to :func:`numpy.random.default_rng`; the
        resulting generator is handed to :func:`scipy.stats.bootstrap` as its
        ``rng``.
    method : {"studentized", "bca", "rrr"}, optional
        ``"studentized"`` (default) and ``"bca"``: top-level resampling with a
        studentized or a BCa interval. ``"rrr"``: resampling at every level with
        a percentile interval.

    Returns
    -------
    RatioResult
        ``ratio`` is ``mean(new) / mean(old)`` of all measurements. ``bounded``
        is True unless the grand mean of `old` or a replicate mean of `old` is
        zero (the replicate ratio is not finite); then ``low = -inf`` and
        ``high = +inf``.

    Raises
    ------
    ValueError
        If `confidence`, `n_resamples` or `method` is invalid, or `new` or `old`
        is not balanced, holds NaN or infinite values, or has fewer than 2
        repetitions at a level (in particular fewer than 2 top-level units).

    Notes
    -----
    BCa is undefined for degenerate data. Where every top-level unit mean of
    `new` is equal and so is every one of `old`, every replicate equals the
    estimate and the interval is the point ``[ratio, ratio]``. Where scipy
    cannot compute the BCa limits otherwise (the estimate lies outside the
    bootstrap distribution, or a jackknife mean of `old` is zero), the
    percentile interval of the same replicates is returned instead.

    Coverage of the 95% interval on 20 x 10 x 30 normal data with true ratio
    1.05 (2,000 data sets, 2,000 resamples): "studentized" 0.950 with the
    variation between builds and 0.945 with it between measurements; "bca" 0.934
    and 0.929; "rrr" 0.932 and 0.999 (0.992 with 10%/2%/0.5% at
    measurement/execution/build). Top-level resampling does not depend on where
    the variation sits; BCa corrects bias and skewness but not the bootstrap's
    narrowness with 20 units (the plug-in variance and normal quantiles), which
    the studentized interval's t values carry.

    For "rrr", replicates are drawn in chunks to bound memory. The mean of n_1
    values drawn with replacement from one execution is the sum of n_1
    independent uniform draws; two such draws together are one uniform draw
    from the n_1² pairwise sums, so the bottom level is resampled from a table
    of pair sums with half the random numbers and gathers, exactly in
    distribution.

    References
    ----------
    .. [1] S. Ren, H. Lai, W. Tong, M. Aminzadeh, X. Hou and S. Lai,
       "Nonparametric bootstrapping for hierarchical data", Journal of Applied
       Statistics 37(9), 1487-1498, 2010.
    .. [2] B. Efron, "Better bootstrap confidence intervals", Journal of the
       American Statistical Association 82(397), 171-185, 1987.
    .. [3] T. Kalibera and R. Jones, "Quantifying performance changes with
       effect size confidence intervals", University of Kent technical report
       4-12, 2012, §7.3.1.
    """
    confidence = check_confidence(confidence)
    new = as_hierarchy(new, "new")
    old = as_hierarchy(old, "old")
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=100)
    if not (isinstance(method, str) and method in _BOOTSTRAP_METHODS):
        raise ValueError(f"`method` must be 'studentized', 'bca' or 'rrr'; got {method!r}.")
    rng = np.random.default_rng(rng)

    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(new.mean() / old.mean())
    if old.mean() == 0.0:
        low, high, bounded = -np.inf, np.inf, False
    elif method == "rrr":
        low, high, bounded = _rrr_interval(new, old, confidence, n_resamples, rng)
    elif method == "bca":
        low, high, bounded = _top_level_interval(new, old, ratio, confidence, n_resamples, rng)
    else:
        low, high, bounded = _studentized_interval(new, old, confidence, n_resamples, rng)
    return RatioResult(
        ratio=ratio,
        low=float(low),
        high=float(high),
        bounded=bounded,
        confidence_level=confidence,
    )


def _top_level_interval(new, old, ratio, confidence, n_resamples, rng):
    """(low, high, bounded) of the BCa interval from resampling the top-level unit means only."""
    # scipy.stats is imported where it is used: it takes half a second, which most callers never need.
    from scipy import stats

    samples = (_top_level_means(new), _top_level_means(old))
    if np.ptp(samples[0]) == 0.0 and np.ptp(samples[1]) == 0.0:
        # Every replicate equals the estimate; BCa's acceleration would be 0/0.
        return ratio, ratio, True
    if samples[1].mean() == 0.0:  # 0 by rounding where the grand mean was not
        return -np.inf, np.inf, False
    # Rows of resampled means per batch: bounds scipy's index arrays like the RRR chunks.
    batch = max(1, _CHUNK_DRAWS // max(sample.size for sample in samples))
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # A NaN BCa limit (degenerate data) is handled below with the percentile interval.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            samples, _ratio_of_means, n_resamples=n_resamples, batch=batch, vectorized=True,
            paired=False, confidence_level=confidence, method="BCa", rng=rng,
        )
    replicates = result.bootstrap_distribution
    if not np.all(np.isfinite(replicates)):  # a replicate mean of `old` is zero
        return -np.inf, np.inf, False
    low, high = result.confidence_interval
    if not (np.isfinite(low) and np.isfinite(high)):
        low, high = np.quantile(replicates, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return low, high, True


def _studentized_interval(new, old, confidence, n_resamples, rng):
    """(low, high, bounded) of the bootstrap-t interval from resampling the top-level unit means only."""
    a, b = _top_level_means(new), _top_level_means(old)
    estimate, error = _ratio_and_error(a[None, :], b[None, :])
    estimate, error = float(estimate[0]), float(error[0])
    if error == 0.0:
        return estimate, estimate, True
    t = np.empty(n_resamples)
    chunk = max(1, _CHUNK_DRAWS // (a.size + b.size))
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        drawn_a = a[rng.integers(0, a.size, size=(size, a.size))]
        drawn_b = b[rng.integers(0, b.size, size=(size, b.size))]
        ratio, replicate_error = _ratio_and_error(drawn_a, drawn_b)
        if not np.all(np.isfinite(ratio)):  # a replicate mean of `old` is zero
            return -np.inf, np.inf, False
        difference = ratio - estimate
        with np.errstate(divide="ignore", invalid="ignore"):
            # A replicate of equal values has no spread: its t is ±inf, or 0 where it equals the estimate.
            t[start:start + size] = np.where(replicate_error > 0, difference / replicate_error,
                                             np.where(difference == 0, 0.0, np.sign(difference) * np.inf))
    levels = [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]
    with np.errstate(invalid="ignore"):
        low_t, high_t = np.quantile(t, levels)
    if np.isnan(low_t) or np.isnan(high_t):
        # Interpolated between an infinite t and another (replicates of equal values, e.g. zeros): the quantiles
        # themselves, without interpolation.
        low_t, high_t = np.quantile(t, levels, method="inverted_cdf")
    return estimate - high_t * error, estimate - low_t * error, bool(np.isfinite(low_t) and np.isfinite(high_t))


def _ratio_and_error(new, old):
    """Per row: the ratio of the means and its delta-method standard error."""
    mean_new, mean_old = new.mean(axis=-1), old.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mean_new / mean_old
        error = np.sqrt(new.var(axis=-1, ddof=1) / new.shape[-1]
                        + ratio**2 * old.var(axis=-1, ddof=1) / old.shape[-1]) / np.abs(mean_old)
    return ratio, error


def _ratio_of_means(new, old, axis=-1):
    """The bootstrap statistic: ratio of the sample means along `axis` (vectorized for scipy)."""
    return np.mean(new, axis=axis) / np.mean(old, axis=axis)


def _rrr_interval(new, old, confidence, n_resamples, rng):
    """(low, high, bounded) of the percentile interval from resampling at every level (K&J §7.3.1)."""
    replicate_new = _resample_means(new, n_resamples, rng)
    replicate_old = _resample_means(old, n_resamples, rng)
    bounded = bool(np.all(replicate_old != 0.0))
    if not bounded:
        return -np.inf, np.inf, False
    ratios = replicate_new / replicate_old
    low, high = np.quantile(ratios, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return low, high, True


def _top_level_means(data):
    """The means of the top-level units (the values themselves for 1-D data)."""
    return data.reshape(data.shape[0], -1).mean(axis=1)


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
