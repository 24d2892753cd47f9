"""Tonight's result against the last K nights, with the night-to-night variation carried in (spec §8).

A nightly run is one unit of a level above the in-run levels: build, reboot and machine state
move the mean from night to night, and none of that is visible inside one run. Comparing
tonight with one previous night on within-run variance alone therefore cries wolf (Kalibera &
Jones §8.4.2: ignoring a random level makes intervals too narrow). Here the between-run
variance component is estimated from the history (K&J §6: ``T² = S_top² − S_lower²/n``) and
added to the candidate's variance, so the test is, in effect, a prediction interval for a new
night.
"""

from dataclasses import dataclass

import numpy as np

from ._base import as_array, as_confidence, as_counts, scalar_or_array
from ._distributions import t_quantile, t_survival
from ._ratio import RatioTest, ratio_fieller_from_stats
from ._verdict import verdict

__all__ = ["HistoryComparison", "compare_with_history"]


@dataclass(frozen=True)
class HistoryComparison(RatioTest):
    """A candidate against its history: the ratio of means with its Fieller interval and a t-test.

    The ratio is ``candidate mean / history mean``, its limits Fieller's (:class:`RatioTest`); the statistic is
    ``(mean − baseline) / sqrt(var_candidate + S²/K)``.

    Attributes
    ----------
    df : float or ndarray
        ``K − 1``: the between-run variance is estimated from K run means.
    verdict : Verdict or ndarray of Verdict
        §7, from the ratio interval, the threshold and the direction.
    baseline : float or ndarray
        Mean of the K run means.
    between_variance : float or ndarray
        The run-to-run variance component, ``max(S² − mean(s_j²/n_j), 0)``.
    history_variance : float or ndarray
        ``S²``, the variance (ddof=1) of the K run means.
    history_size : int or ndarray of int
        K, the results each series was compared with.
    prediction_low, prediction_high : float or ndarray
        Where one new run mean is expected if nothing changed: the prediction interval
        ``mean(ȳ_j) ± t_{(1+c)/2, K−1} · S · sqrt(1 + 1/K)`` (the history baseline band the pages draw).
    """

    df: float
    verdict: object
    baseline: float
    between_variance: float
    history_variance: float
    history_size: int
    prediction_low: float
    prediction_high: float


def compare_with_history(mean, variance, n, history_mean, history_variance, history_n, *, threshold=0.02,
                         direction="lower_is_better", confidence=0.95):
    """Compare a result with the same series' last K results, run-to-run variation included.

    Each result is the stored summary (mean, subsession variance, number of subsessions). With
    ``ȳ_j`` the K history means, ``w_j = s_j²/n_j`` their within-run variances of the mean,
    ``S²`` the variance of the ``ȳ_j`` and ``σ_b² = max(S² − mean(w_j), 0)`` the between-run
    component (Kalibera & Jones §6, unbiased component of the top level):

    * the baseline is ``mean(ȳ_j)`` with variance ``S²/K``;
    * the candidate is one draw of the run level, with variance ``σ_b² + s²/n``;
    * the ratio's interval is Fieller's (:func:`ratio_fieller_from_stats`) on those two
      variances, and the t-test uses their sum, both with ``K − 1`` degrees of freedom;
    * the verdict is that interval's against the practical-significance band (spec §7).

    When the K nights vary only as much as their own intervals say, ``σ_b² = 0`` and this is
    a plain comparison with the mean of the history.

    Parameters
    ----------
    mean, variance, n : array_like, shape (...)
        The candidate's mean, subsession variance (ddof=1, ``>= 0``) and subsessions (``>= 1``).
    history_mean, history_variance, history_n : array_like, shape (..., K)
        The same for the history results, along the last axis. Series with fewer than K results
        are padded with NaN at the same places of all three (the one documented use of NaN here);
        every series needs at least 2 results.
    threshold : array_like, optional
        θ >= 0, per series (broadcasting).
    direction : {"lower_is_better", "higher_is_better"} or array_like of them, optional
    confidence : float or array_like, optional
        Confidence level of the ratio interval and of the prediction band; an array gives each
        series its own.

    Returns
    -------
    HistoryComparison
    """
    confidence = as_confidence(confidence)
    mean = as_array(mean, "mean")
    variance = as_array(variance, "variance", minimum=0.0)
    n = as_counts(n, "n", minimum=1)
    history_mean, history_variance, history_n, size = _history(history_mean, history_variance, history_n)
    try:
        np.broadcast_shapes(mean.shape, variance.shape, n.shape, history_mean.shape[:-1])
    except ValueError:
        raise ValueError(f"The candidate's shape {mean.shape} does not match the history's "
                         f"{history_mean.shape[:-1]} (K along the last axis).") from None

    baseline = np.nanmean(history_mean, axis=-1)
    spread = np.nanvar(history_mean, axis=-1, ddof=1)
    within = np.nanmean(history_variance / history_n, axis=-1)
    between = np.maximum(spread - within, 0.0)
    candidate_error = between + variance / n
    df = size - 1.0

    standard_error = np.sqrt(candidate_error + spread / size)
    difference = mean - baseline
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(standard_error > 0, difference / standard_error,
                             np.where(difference == 0, 0.0, np.sign(difference) * np.inf))
    pvalue = 2.0 * t_survival(np.abs(statistic), df)

    # Fieller takes unit variances and counts; any count works when the df is given, so the
    # candidate's variance of the mean is passed as (error × m) / m with m >= 2.
    units = np.maximum(n, 2.0)
    ratio = ratio_fieller_from_stats(mean, candidate_error * units, units, baseline, spread, size,
                                     confidence=confidence, df=df)
    half_prediction = t_quantile((1.0 + confidence) / 2.0, df) * np.sqrt(spread * (1.0 + 1.0 / size))
    return HistoryComparison(
        ratio=ratio.ratio, low=ratio.low, high=ratio.high, bounded=ratio.bounded,
        statistic=scalar_or_array(statistic), pvalue=scalar_or_array(pvalue), df=scalar_or_array(df),
        verdict=verdict(ratio.low, ratio.high, threshold=threshold, direction=direction),
        baseline=scalar_or_array(baseline), between_variance=scalar_or_array(between),
        history_variance=scalar_or_array(spread), history_size=scalar_or_array(size.astype(int)),
        prediction_low=scalar_or_array(baseline - half_prediction),
        prediction_high=scalar_or_array(baseline + half_prediction), confidence_level=confidence,
    )


def _history(history_mean, history_variance, history_n):
    """The three history arrays, validated (NaN only as the same padding in all three), and K per series."""
    arrays = []
    for value, name in ((history_mean, "history_mean"), (history_variance, "history_variance"),
                        (history_n, "history_n")):
        try:
            array = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"`{name}` must be numbers.") from None
        arrays.append(array)
    history_mean, history_variance, history_n = arrays
    if not history_mean.shape == history_variance.shape == history_n.shape:
        raise ValueError("`history_mean`, `history_variance` and `history_n` must have the same shape; got "
                         f"{history_mean.shape}, {history_variance.shape} and {history_n.shape}.")
    missing = np.isnan(history_mean)
    if not (np.array_equal(missing, np.isnan(history_variance)) and np.array_equal(missing, np.isnan(history_n))):
        raise ValueError("`history_mean`, `history_variance` and `history_n` must be NaN (missing) at the same "
                         "places.")
    present = ~missing
    for array, name, minimum in ((history_mean, "history_mean", None), (history_variance, "history_variance", 0.0),
                                 (history_n, "history_n", 1.0)):
        values = array[present]
        if not np.isfinite(values).all():
            raise ValueError(f"`{name}` must not hold infinite values.")
        if minimum is not None and (values < minimum).any():
            raise ValueError(f"`{name}` must be at least {minimum:g}; got {values[values < minimum][0]:g}.")
    if not np.array_equal(history_n[present], np.round(history_n[present])):
        raise ValueError("`history_n` must hold whole numbers.")
    size = present.sum(axis=-1).astype(float)
    if (size < 2).any():
        raise ValueError(f"`history_mean` needs at least 2 results per series along its last axis; got "
                         f"{int(size.min())}.")
    return history_mean, history_variance, history_n, size
