"""Two results compared from their stored summaries: Welch's test, Fieller's ratio, the verdict (spec §5–§7)."""

from dataclasses import dataclass

from ._base import ConfidenceInterval, as_confidence
from ._compare import welch_test
from ._ratio import ratio_fieller_from_stats
from ._verdict import verdict

__all__ = ["PairwiseComparison", "compare_summaries"]


@dataclass(frozen=True)
class PairwiseComparison:
    """Candidate against baseline, each summarised as (mean, subsession variance, subsessions).

    Attributes
    ----------
    ratio, low, high : float or ndarray
        ``candidate mean / baseline mean`` and its Fieller limits (±inf where unbounded).
    bounded : bool or ndarray of bool
    statistic, pvalue, df : float or ndarray
        Welch's t, two-sided p and its degrees of freedom (:func:`welch_test`: Welch–Satterthwaite's, or
        Hsu's where a side has fewer than 5 units), which Fieller's h uses too.
    conservative : bool or ndarray of bool
        Where Hsu's ν was used.
    verdict : Verdict or ndarray of Verdict
        §7, from the ratio interval, the threshold and the direction.
    confidence_level : float or ndarray
    """

    ratio: float
    low: float
    high: float
    bounded: bool
    statistic: float
    pvalue: float
    df: float
    conservative: bool
    verdict: object
    confidence_level: float

    def confidence_interval(self):
        """Return ``ConfidenceInterval(low, high)`` of the ratio."""
        return ConfidenceInterval(self.low, self.high)


def compare_summaries(mean, variance, n, baseline_mean, baseline_variance, baseline_n, *, threshold=0.02,
                      direction="lower_is_better", confidence=0.95):
    """Compare a candidate with a baseline from stored summaries; everything broadcasts.

    Welch's test (spec §5) on the subsession statistics, Fieller's interval for the ratio of
    means (spec §6, one-level data: the subsessions are the top level; h takes the test's ν, spec §5) and
    the verdict of that interval against the practical-significance band (spec §7).

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

    Returns
    -------
    PairwiseComparison
    """
    confidence = as_confidence(confidence)
    welch = welch_test(mean, variance, n, baseline_mean, baseline_variance, baseline_n)
    ratio = ratio_fieller_from_stats(mean, variance, n, baseline_mean, baseline_variance, baseline_n,
                                     confidence=confidence, df=welch.df)
    return PairwiseComparison(
        ratio=ratio.ratio, low=ratio.low, high=ratio.high, bounded=ratio.bounded,
        statistic=welch.statistic, pvalue=welch.pvalue, df=welch.df, conservative=welch.conservative,
        verdict=verdict(ratio.low, ratio.high, threshold=threshold, direction=direction),
        confidence_level=confidence,
    )
