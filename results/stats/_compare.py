"""Comparing two results by Welch's unequal-variance t-test (spec §5; Pilot §III-F).

Both sides are summarized by their subsession statistics (mean, variance, n),
exactly what a stored result keeps, so history can be compared without raw data.
"""

from dataclasses import dataclass

import numpy as np

from ._base import (
    ConfidenceInterval,
    StatisticsError,
    as_array,
    as_counts,
    check_confidence,
    check_positive_int,
    scalar_or_array,
)
from ._distributions import normal_quantile, t_quantile, t_survival

__all__ = ["SMALL_SIDE", "WelchResult", "welch_degrees_of_freedom", "welch_required_subsessions", "welch_test"]

SMALL_SIDE = 5
"""A side with fewer units than this makes Welch's test liberal (spec §5, revised): at α = 0.05 it rejects
equal means in 10.0% of 2-vs-10-unit tests and 7.6% of 3-vs-30; from 4–5 units, 4.9–5.5%. There the
conservative ν = min(n_A, n_B) − 1 of Hsu (Banerjee) is used instead."""


@dataclass(frozen=True)
class WelchResult:
    """Result of :func:`welch_test`.

    Attributes
    ----------
    statistic : float or ndarray
        ``t = (mean_a - mean_b) / sqrt(variance_a/n_a + variance_b/n_b)``.
    pvalue : float or ndarray
        Two-sided p-value, ``2 * T_df(-|t|)``.
    df : float or ndarray
        Degrees of freedom of the test: Welch–Satterthwaite's (not floored), or Hsu's
        ``min(n_a, n_b) − 1`` where `conservative`.
    conservative : bool or ndarray of bool
        True where a side has fewer than :data:`SMALL_SIDE` units and Hsu's ν was used.
    difference : float or ndarray
        ``mean_a - mean_b``.
    standard_error : float or ndarray
        ``sqrt(variance_a/n_a + variance_b/n_b)``.
    """

    statistic: float
    pvalue: float
    df: float
    conservative: bool
    difference: float
    standard_error: float

    def confidence_interval(self, confidence=0.95):
        """CI of the difference ``mean_a - mean_b``: ``d ∓ t_{(1+c)/2, df} * se``.

        This is Pilot's ``pilot_p_eq`` interval. Where both variances are zero
        the interval collapses to the difference itself.
        """
        confidence = check_confidence(confidence)
        half_width = t_quantile((1.0 + confidence) / 2.0, self.df) * self.standard_error
        return ConfidenceInterval(
            scalar_or_array(self.difference - half_width),
            scalar_or_array(self.difference + half_width),
        )


def two_summaries(mean_a, variance_a, n_a, mean_b, variance_b, n_b):
    """Two sides' (mean, variance >= 0, count >= 2) validated, each message naming its parameter, and broadcast."""
    return np.broadcast_arrays(
        as_array(mean_a, "mean_a"), as_array(variance_a, "variance_a", minimum=0.0), as_counts(n_a, "n_a"),
        as_array(mean_b, "mean_b"), as_array(variance_b, "variance_b", minimum=0.0), as_counts(n_b, "n_b"))


def welch_degrees_of_freedom(variance_a, n_a, variance_b, n_b, *, small_side=SMALL_SIDE):
    """The degrees of freedom of Welch's test and of a ratio interval beside it (spec §5).

    Welch–Satterthwaite's ``(s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)²/(n_a−1) + (s_b²/n_b)²/(n_b−1))``; where
    a side has fewer than `small_side` units, Hsu's conservative ``min(n_a, n_b) − 1`` (Banerjee's bound
    holds its level for every variance ratio). Where both variances are zero, ``n_a + n_b − 2``.

    Parameters
    ----------
    variance_a, n_a, variance_b, n_b : array_like
        Unit variances (``>= 0``) and numbers of units (``>= 2``) of the two sides.
    small_side : int, optional
        Sides with fewer units than this get Hsu's ν; 2 keeps Welch–Satterthwaite's everywhere.

    Returns
    -------
    df : float or ndarray
    conservative : bool or ndarray of bool
        Where Hsu's ν was used.
    """
    variance_a = as_array(variance_a, "variance_a", minimum=0.0)
    n_a = as_counts(n_a, "n_a")
    variance_b = as_array(variance_b, "variance_b", minimum=0.0)
    n_b = as_counts(n_b, "n_b")
    small_side = check_positive_int(small_side, "small_side", minimum=2)
    variance_a, n_a, variance_b, n_b = np.broadcast_arrays(variance_a, n_a, variance_b, n_b)
    error_a, error_b = variance_a / n_a, variance_b / n_b
    degenerate = (error_a + error_b) == 0.0
    safe_a = np.where(degenerate, 1.0, error_a)
    satterthwaite = (safe_a + error_b) ** 2 / (safe_a**2 / (n_a - 1) + error_b**2 / (n_b - 1))
    conservative = (np.minimum(n_a, n_b) < small_side) & ~degenerate
    df = np.where(degenerate, n_a + n_b - 2.0,
                  np.where(conservative, np.minimum(n_a, n_b) - 1.0, satterthwaite))
    return scalar_or_array(df), scalar_or_array(conservative)


def welch_test(mean_a, variance_a, n_a, mean_b, variance_b, n_b, *, small_side=SMALL_SIDE):
    """Welch's two-sided t-test from subsession statistics (spec §5).

    The statistic is ``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``'s with
    ``std = sqrt(variance)``; so is the p-value, except where a side has fewer than
    `small_side` units: there Welch's test is liberal (twice its level for 2 vs 10 units)
    and the p-value takes Hsu's conservative ``ν = min(n_a, n_b) − 1``
    (:func:`welch_degrees_of_freedom`). All arguments broadcast, so thousands of
    series are tested in one call.

    Parameters
    ----------
    mean_a, variance_a, n_a : array_like
        Mean, unbiased variance (``>= 0``) and number of subsessions
        (``>= 2``) of side A.
    mean_b, variance_b, n_b : array_like
        The same for side B.
    small_side : int, optional
        See :func:`welch_degrees_of_freedom`; 2 gives Welch–Satterthwaite's ν everywhere (scipy's test).

    Returns
    -------
    WelchResult

    Notes
    -----
    Degenerate cases, handled without warnings:

    * Zero variance on one side only: an ordinary Welch test; the df reduce
      to ``n - 1`` of the side that varies.
    * Zero variance on both sides, different means: the difference is certain,
      ``statistic = ±inf``, ``pvalue = 0`` (as scipy).
    * Zero variance on both sides, equal means: no evidence of a difference,
      ``statistic = 0``, ``pvalue = 1`` (scipy returns NaN here).

    In both all-zero cases the Welch–Satterthwaite df are 0/0; ``df`` is then
    reported as ``n_a + n_b - 2``, which does not affect the p-value.
    """
    mean_a, variance_a, n_a, mean_b, variance_b, n_b = two_summaries(mean_a, variance_a, n_a, mean_b, variance_b, n_b)

    error_a = variance_a / n_a
    error_b = variance_b / n_b
    degenerate = (error_a + error_b) == 0.0
    # A harmless variance where both are zero; those entries are overwritten below.
    safe_a = np.where(degenerate, 1.0, variance_a)
    welch_statistic, welch_pvalue = _ttest_from_stats(mean_a, np.sqrt(safe_a), n_a, mean_b, np.sqrt(variance_b), n_b)
    df, conservative = welch_degrees_of_freedom(variance_a, n_a, variance_b, n_b, small_side=small_side)
    difference = mean_a - mean_b
    statistic = np.where(degenerate, np.copysign(np.inf, difference), welch_statistic)
    statistic = np.where(degenerate & (difference == 0.0), 0.0, statistic)
    pvalue = np.where(conservative, 2.0 * t_survival(np.abs(statistic), df), welch_pvalue)
    pvalue = np.where(degenerate, np.where(difference == 0.0, 1.0, 0.0), pvalue)
    return WelchResult(
        statistic=scalar_or_array(statistic),
        pvalue=scalar_or_array(pvalue),
        df=df,
        conservative=conservative,
        difference=scalar_or_array(difference),
        standard_error=scalar_or_array(np.sqrt(error_a + error_b)),
    )


def _ttest_from_stats(mean_a, std_a, n_a, mean_b, std_b, n_b):
    """``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``'s statistic and p-value, by its own arithmetic
    (scipy 1.17: ``_unequal_var_ttest_denom``, ``_ttest_ind_from_stats``) on the t distribution it calls, so
    the numbers are its own (tests/stats/test_distributions.py) without importing scipy.stats."""
    error_a, error_b = std_a**2 / n_a, std_b**2 / n_b
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (error_a + error_b) ** 2 / (error_a**2 / (n_a - 1) + error_b**2 / (n_b - 1))
        statistic = np.divide(mean_a - mean_b, np.sqrt(error_a + error_b))
    df = np.where(np.isnan(df), 1.0, df)
    return statistic, 2 * t_survival(np.abs(statistic), df)


def welch_required_subsessions(mean_a, variance_a, mean_b, variance_b, *, alpha=0.05):
    """Subsessions per side needed to resolve the observed difference (spec §5).

    The smallest m ≥ 2 with ``δ / sqrt((s_A² + s_B²)/m) >= t_{1-α/2, ν(m)}``,
    where ``δ = |mean_a - mean_b|`` and ``ν(m) = (m-1)(s_A²+s_B²)² / (s_A⁴+s_B⁴)``
    is the Welch–Satterthwaite df with m subsessions on both sides (Hsu's ``m − 1``
    below :data:`SMALL_SIDE`, as :func:`welch_test` would use).

    Parameters
    ----------
    mean_a, variance_a, mean_b, variance_b : float
        Means and subsession variances (``>= 0``) of the two sides.
    alpha : float, optional
        Significance level in (0, 1).

    Returns
    -------
    int

    Raises
    ------
    StatisticsError
        If the means are equal: no number of subsessions resolves a zero
        difference.

    Notes
    -----
    Pilot (``pilot_optimal_sample_size_for_eq_test``) keeps the baseline's n
    fixed, evaluates t at the current Welch df and returns the *truncated*
    ``v_new / ((δ/t)² - v_base/n_base)`` for the new side only.
    """
    alpha = check_confidence(alpha, "alpha")
    values = {}
    for name, value, minimum in (
        ("mean_a", mean_a, None),
        ("variance_a", variance_a, 0.0),
        ("mean_b", mean_b, None),
        ("variance_b", variance_b, 0.0),
    ):
        array = as_array(value, name, minimum=minimum)
        if array.ndim != 0:
            raise ValueError(f"`{name}` must be a single number.")
        values[name] = float(array)
    difference = abs(values["mean_a"] - values["mean_b"])
    if difference == 0.0:
        raise StatisticsError("`mean_a` equals `mean_b`: there is no difference to resolve.")
    total = values["variance_a"] + values["variance_b"]
    if total == 0.0:
        return 2
    squares = values["variance_a"] ** 2 + values["variance_b"] ** 2
    level = 1.0 - alpha / 2.0
    # t > z for every df, so the normal-theory count is a lower bound to start from.
    m = max(2, int(np.ceil(total * (normal_quantile(level) / difference) ** 2)))
    def df(m):
        return m - 1.0 if m < SMALL_SIDE else (m - 1) * total**2 / squares

    while difference / np.sqrt(total / m) < t_quantile(level, df(m)):
        m += 1
    return m
