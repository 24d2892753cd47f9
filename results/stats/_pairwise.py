"""Two results compared from their stored summaries: Welch's test, Fieller's ratio, the verdict (spec §5–§7),
with the run-to-run variance component carried in where the two results are two runs (spec §8)."""

from dataclasses import dataclass

import numpy as np

from ._base import as_array, as_confidence, scalar_or_array
from ._compare import welch_test
from ._distributions import t_survival
from ._ratio import RatioTest, ratio_fieller_from_stats
from ._verdict import verdict

__all__ = ["PairwiseComparison", "compare_summaries"]


@dataclass(frozen=True)
class PairwiseComparison(RatioTest):
    """Candidate against baseline, each summarised as (mean, subsession variance, subsessions).

    The ratio is ``candidate mean / baseline mean``, its limits Fieller's (:class:`RatioTest`); the statistic is
    Welch's t.

    Attributes
    ----------
    df : float or ndarray
        The degrees of freedom of Welch's t (:func:`welch_test`: Welch–Satterthwaite's, or Hsu's where a side has
        fewer than 5 units), which Fieller's h uses too; with a run-to-run component, the t of the difference
        over its standard error with both runs' component in, and Satterthwaite's degrees of freedom of that sum.
    conservative : bool or ndarray of bool
        Where Hsu's ν was used.
    verdict : Verdict or ndarray of Verdict
        §7, from the ratio interval, the threshold and the direction.
    """

    df: float
    conservative: bool
    verdict: object


def compare_summaries(mean, variance, n, baseline_mean, baseline_variance, baseline_n, *, threshold=0.02,
                      direction="lower_is_better", confidence=0.95, run_variance=None, run_df=None):
    """Compare a candidate with a baseline from stored summaries; everything broadcasts.

    Welch's test (spec §5) on the subsession statistics, Fieller's interval for the ratio of
    means (spec §6, one-level data: the subsessions are the top level; h takes the test's ν, spec §5) and
    the verdict of that interval against the practical-significance band (spec §7).

    Two runs (a pull request's head and its base) differ by more than their subsessions show: each run
    draws its own level (build, machine state, load). With ``σ_b²``, that run-to-run variance component,
    estimated elsewhere with ``run_df`` degrees of freedom (the series' nightly history:
    :func:`compare_with_history`'s ``between_variance``, ``K − 1``), each mean's variance is
    ``σ_b² + s²/n`` (Kalibera & Jones §8.4.2, a random level left out makes intervals too narrow); the
    t-test and Fieller's interval use them, with Satterthwaite's degrees of freedom of the sum of the
    within-run part (Welch's or Hsu's ν) and the ``2σ_b²`` part (``run_df``).

    Parameters
    ----------
    mean, variance, n : array_like
        The candidate's mean, subsession variance (ddof=1) and number of subsessions (>= 2).
    baseline_mean, baseline_variance, baseline_n : array_like
        The same for the baseline.
    threshold : array_like, optional
        θ >= 0 (per series, broadcasting).
    direction : {"lower_is_better", "higher_is_better"} or array_like of them, optional
    confidence : float or array_like, optional
        An array gives each series its own level.
    run_variance : array_like, optional
        ``σ_b² >= 0``, the run-to-run variance component of each series (in squared units of the mean);
        None: the two sides are compared on their subsessions alone.
    run_df : array_like, optional
        The degrees of freedom of `run_variance`'s estimate (``> 0``); required with it.

    Returns
    -------
    PairwiseComparison

    References
    ----------
    Kalibera, T., & Jones, R. (2013). Rigorous benchmarking in reasonable time, §6 and §8.4.2.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    *Biometrics Bulletin* 2(6), 110–114.
    """
    confidence = as_confidence(confidence)
    welch = welch_test(mean, variance, n, baseline_mean, baseline_variance, baseline_n)
    if run_variance is None:
        ratio = ratio_fieller_from_stats(mean, variance, n, baseline_mean, baseline_variance, baseline_n,
                                         confidence=confidence, df=welch.df)
        statistic, pvalue, df = welch.statistic, welch.pvalue, welch.df
    else:
        if run_df is None:
            raise ValueError("`run_df` is required with `run_variance`: the degrees of freedom of its estimate.")
        run_variance = as_array(run_variance, "run_variance", minimum=0.0)
        run_df = as_array(run_df, "run_df", minimum=0.0, inclusive=False)
        mean, n, baseline_mean, baseline_n = (np.asarray(value, dtype=float)
                                              for value in (mean, n, baseline_mean, baseline_n))
        error = run_variance + np.asarray(variance, dtype=float) / n
        baseline_error = run_variance + np.asarray(baseline_variance, dtype=float) / baseline_n
        within = error + baseline_error - 2.0 * run_variance
        total = error + baseline_error
        # Satterthwaite: the within-run part keeps the test's ν (Welch's or Hsu's), the run part its own.
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(total > 0, total**2 / (within**2 / welch.df + (2.0 * run_variance) ** 2 / run_df),
                          welch.df)
            difference = mean - baseline_mean
            statistic = np.where(total > 0, difference / np.sqrt(total),
                                 np.where(difference == 0, 0.0, np.sign(difference) * np.inf))
        pvalue = 2.0 * t_survival(np.abs(statistic), df)
        # Fieller takes unit variances and counts; any count works when the df is given (see
        # compare_with_history), so each mean's variance is passed as (error × m) / m with m >= 2.
        units, baseline_units = np.maximum(n, 2.0), np.maximum(baseline_n, 2.0)
        ratio = ratio_fieller_from_stats(mean, error * units, units, baseline_mean, baseline_error * baseline_units,
                                         baseline_units, confidence=confidence, df=df)
        statistic, pvalue, df = (scalar_or_array(value) for value in (statistic, pvalue, df))
    return PairwiseComparison(
        ratio=ratio.ratio, low=ratio.low, high=ratio.high, bounded=ratio.bounded,
        statistic=statistic, pvalue=pvalue, df=df, conservative=welch.conservative,
        verdict=verdict(ratio.low, ratio.high, threshold=threshold, direction=direction),
        confidence_level=confidence,
    )
