"""Autocorrelation, subsession analysis and the CI of one mean (spec §2, §3; Pilot §III).

Pilot (Li et al., "Pilot: a framework that understands how to do performance
benchmarks the right way") merges q adjacent samples into one *subsession* until
the lag-1 autocorrelation of the subsession means is negligible, then treats the
subsession means as independent samples.
"""

from dataclasses import dataclass, field

import numpy as np

from ._base import (
    ConfidenceInterval,
    NotEnoughSamples,
    as_array,
    as_confidence,
    as_counts,
    as_sample,
    check_confidence,
    check_positive_int,
    scalar_or_array,
)
from ._distributions import normal_quantile, t_quantile

__all__ = [
    "MAX_AUTOCORRELATION",
    "MIN_SUBSESSIONS",
    "MeanInterval",
    "SubsessionResult",
    "autocorrelation",
    "autocorrelation_by_size",
    "mean_interval",
    "required_subsessions",
    "subsessions",
]

MAX_AUTOCORRELATION = 0.1
"""Largest lag-1 autocorrelation of subsession means taken as independent (spec §2's default)."""

MIN_SUBSESSIONS = 10
"""Fewest subsessions a subsession size may leave (spec §2's default)."""


def autocorrelation(x, lag=1):
    """Lag-`lag` sample autocorrelation of a series (spec §2).

    ``r_k = sum_{i=1}^{n-k} (x_i - m)(x_{i+k} - m) / sum_{i=1}^{n} (x_i - m)^2``
    with ``m`` the mean of `x`.

    Parameters
    ----------
    x : array_like
        The series, in time order (1-D, finite, longer than `lag`).
    lag : int, optional
        The lag k, at least 1.

    Returns
    -------
    float
        ``r_k``. A constant series has no defined autocorrelation; it is
        reported as 0.0 (independent), as the spec requires.
    """
    lag = check_positive_int(lag, "lag")
    x = as_sample(x, "x", min_size=lag + 1)
    deviations = x - x.mean()
    denominator = np.dot(deviations, deviations)
    if denominator == 0.0:
        return 0.0
    return float(np.dot(deviations[:-lag], deviations[lag:]) / denominator)


def autocorrelation_by_size(x, *, min_subsessions=MIN_SUBSESSIONS, max_points=60, include=()):
    """Lag-1 autocorrelation r_1 of the block means for subsession sizes q = 1 … n // `min_subsessions`:
    how subsession analysis (spec §2) sees the series at every size it could choose.

    Blocks are cut as :func:`subsessions` cuts them (the oldest remainder dropped).

    Parameters
    ----------
    x : array_like
        The series, in time order (flattened; finite).
    min_subsessions : int, optional
        The fewest blocks a size may leave.
    max_points : int, optional
        At most this many sizes, spread evenly on a log scale.
    include : iterable of int, optional
        Sizes always evaluated (e.g. the one chosen), when possible.

    Returns
    -------
    sizes : list of int
    values : list of float
        Empty when the series is shorter than `min_subsessions`.
    """
    min_subsessions = check_positive_int(min_subsessions, "min_subsessions")
    max_points = check_positive_int(max_points, "max_points")
    x = np.asarray(x, dtype=float).ravel()
    if not np.isfinite(x).all():
        raise ValueError("`x` must not contain NaN or infinite values.")
    largest = x.size // min_subsessions
    if largest < 1:
        return [], []
    if largest <= max_points:
        sizes = np.arange(1, largest + 1)
    else:
        sizes = np.unique(np.round(np.geomspace(1, largest, max_points)).astype(int))
    sizes = sorted(set(sizes.tolist()) | {int(q) for q in include if 1 <= q <= largest})
    values = []
    for q in sizes:
        m = x.size // q
        means = x[x.size - m * q:].reshape(m, q).mean(axis=1)
        values.append(autocorrelation(means) if m > 1 else 0.0)
    return sizes, values


@dataclass(frozen=True)
class MeanInterval:
    """Confidence interval of a mean: ``mean ± half_width`` (spec §3).

    Attributes
    ----------
    mean : float or ndarray
        The point estimate.
    half_width : float or ndarray
        ``t_{(1+c)/2, n-1} * sqrt(variance / n)``.
    low, high : float or ndarray
        ``mean - half_width`` and ``mean + half_width``.
    df : float or ndarray
        Degrees of freedom of the t quantile, ``n - 1``.
    confidence_level : float or ndarray
        The confidence level c.
    """

    mean: float
    half_width: float
    low: float
    high: float
    df: float
    confidence_level: float

    def confidence_interval(self):
        """Return ``ConfidenceInterval(low, high)``."""
        return ConfidenceInterval(self.low, self.high)


def mean_interval(mean, variance, n, *, confidence=0.95):
    """Confidence interval of a mean from subsession statistics (spec §3, §6).

    ``mean ± t_{(1+c)/2, n-1} * sqrt(variance / n)``. The inputs are the stored
    summary of a result: the mean, the variance (ddof=1) of the n independent
    units behind it (subsession means, or the top-level unit means of a
    hierarchical experiment, Kalibera & Jones §6.2) and their number n. All
    three broadcast, so many series are handled in one call.

    Parameters
    ----------
    mean : array_like
        Mean(s).
    variance : array_like
        Unbiased variance(s) of the independent units, ``>= 0``.
    n : array_like of int
        Number(s) of independent units, ``>= 2``.
    confidence : float or array_like, optional
        Confidence level c in (0, 1); an array gives each series its own level.

    Returns
    -------
    MeanInterval

    See Also
    --------
    subsessions : derives (mean, variance, n) from raw samples; its result's
        ``confidence_interval()`` calls this function.
    """
    confidence = as_confidence(confidence)
    mean = as_array(mean, "mean")
    variance = as_array(variance, "variance", minimum=0.0)
    n = as_counts(n, "n")
    mean, variance, n, _ = np.broadcast_arrays(mean, variance, n, confidence)
    df = n - 1
    half_width = t_quantile((1.0 + confidence) / 2.0, df) * np.sqrt(variance / n)
    return MeanInterval(
        mean=scalar_or_array(mean),
        half_width=scalar_or_array(half_width),
        low=scalar_or_array(mean - half_width),
        high=scalar_or_array(mean + half_width),
        df=scalar_or_array(df.astype(np.float64)),
        confidence_level=confidence,
    )


@dataclass(frozen=True)
class SubsessionResult:
    """The outcome of subsession analysis (spec §2).

    Attributes
    ----------
    subsession_size : int
        q, the number of adjacent samples merged into one subsession.
    n : int
        m, the number of subsessions.
    mean : float
        Mean of the subsession means.
    variance : float
        Variance (ddof=1) of the subsession means.
    autocorrelation : float
        Lag-1 autocorrelation of the subsession means (the r_1 achieved).
    means : ndarray
        The subsession means, oldest first.
    """

    subsession_size: int
    n: int
    mean: float
    variance: float
    autocorrelation: float
    means: np.ndarray = field(repr=False, compare=False)

    def confidence_interval(self, confidence=0.95):
        """CI of the mean from the subsession statistics; see :func:`mean_interval`."""
        return mean_interval(self.mean, self.variance, self.n, confidence=confidence)


def subsessions(x, *, max_autocorrelation=MAX_AUTOCORRELATION, min_subsessions=MIN_SUBSESSIONS):
    """Merge adjacent samples into subsessions until they are uncorrelated (spec §2).

    For q = 1, 2, 3, ... the series is cut into m = ⌊n/q⌋ consecutive,
    non-overlapping blocks; the first q whose block means have
    ``|r_1| <= max_autocorrelation`` while ``m >= min_subsessions`` is accepted.
    The ``n - m*q`` *oldest* samples are dropped (the remainder nearest the
    warm-up).

    Parameters
    ----------
    x : array_like
        Samples in time order (1-D, finite).
    max_autocorrelation : float, optional
        ρ_max, the largest accepted |r_1|, in [0, 1).
    min_subsessions : int, optional
        m_min, the fewest subsessions that make r_1 and the CI meaningful
        (at least 3).

    Returns
    -------
    SubsessionResult

    Raises
    ------
    NotEnoughSamples
        If no q qualifies. The error's ``needed`` is the number of further
        samples that would let the next untried subsession size reach
        `min_subsessions` blocks; there is never a silent fall-back to q = 1.

    Notes
    -----
    Pilot's own implementation (``pilot_optimal_subsession_size``) searches
    q ≤ n/3, i.e. ``min_subsessions=3``, and centres the block statistics on the
    mean of all n raw samples rather than on the mean of the block means; the
    two centres coincide whenever q divides n. Pilot drops the newest
    remainder; here the oldest is dropped, as the spec requires.
    """
    max_autocorrelation = as_array(max_autocorrelation, "max_autocorrelation", minimum=0.0)
    if max_autocorrelation.ndim != 0 or max_autocorrelation >= 1.0:
        raise ValueError("`max_autocorrelation` must be a number in [0, 1).")
    min_subsessions = check_positive_int(min_subsessions, "min_subsessions", minimum=3)
    x = as_sample(x, "x")
    size = x.size
    q = 1
    while size // q >= min_subsessions:
        m = size // q
        means = x[size - m * q:].reshape(m, q).mean(axis=1)
        r1 = autocorrelation(means)
        if abs(r1) <= max_autocorrelation:
            return SubsessionResult(
                subsession_size=q,
                n=m,
                mean=float(means.mean()),
                variance=float(means.var(ddof=1)),
                autocorrelation=r1,
                means=means,
            )
        q += 1
    needed = min_subsessions * q - size
    raise NotEnoughSamples(
        f"No subsession size up to {q - 1} brings |r_1| down to {float(max_autocorrelation)} "
        f"with at least {min_subsessions} subsessions; {needed} more samples are needed to try "
        f"subsession size {q}.",
        needed=needed,
    )


def required_subsessions(variance, half_width, *, confidence=0.95):
    """Smallest number of subsessions m whose CI half-width is at most `half_width` (spec §3).

    m is the smallest integer ≥ 2 with ``t_{(1+c)/2, m-1} * s_q / sqrt(m) <= E``;
    the t quantile depends on m, so the rule is iterated. Required raw samples
    are ``m * q``. Pilot's desired "CI width" is the *full* width: pass half of it.

    Parameters
    ----------
    variance : array_like
        Subsession variance(s) s_q², ``>= 0``.
    half_width : array_like
        Desired half-width(s) E, ``> 0``.
    confidence : float, optional
        Confidence level c in (0, 1).

    Returns
    -------
    int or ndarray of int

    Notes
    -----
    Pilot (``pilot_optimal_sample_size``) instead evaluates t at the *current*
    number of subsessions and returns ``ceil(s_q² (t / E)²)``: 34 subsessions
    for its 48-sample response-time example where this iterated rule gives 29.
    This function returns the §3 (iterated) value.
    """
    confidence = check_confidence(confidence)
    variance = as_array(variance, "variance", minimum=0.0)
    half_width = as_array(half_width, "half_width", minimum=0.0, inclusive=False)
    variance, half_width = np.broadcast_arrays(variance, half_width)
    level = (1.0 + confidence) / 2.0
    # t > z for every df, so the normal-theory count is a lower bound to start from.
    z = normal_quantile(level)
    m = np.maximum(2, np.ceil(variance * (z / half_width) ** 2)).astype(np.int64)
    short = t_quantile(level, m - 1) * np.sqrt(variance / m) > half_width
    while np.any(short):
        m = m + short
        short = t_quantile(level, m - 1) * np.sqrt(variance / m) > half_width
    return scalar_or_array(m)
