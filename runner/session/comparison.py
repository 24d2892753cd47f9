"""The A/B comparison of a session (Pilot §III-F; spec §5): per metric, the workloads ranked by their means and
every adjacent pair decided by the session's rule (anytime-valid, or Pilot's), and how much more the anytime
rule needs to decide a pair still undecided."""

import itertools
import math
from dataclasses import dataclass

from results.stats import (
    DIFFERENT,
    EQUIVALENT,
    UNDECIDED,
    Direction,
    compare_summaries,
    sequential_comparison,
    sequential_half_width,
)

from .targets import ComparisonRule, check_metrics


@dataclass(frozen=True)
class PairComparison:
    """Two adjacent workloads in the ranking of one metric (Pilot §III-F; spec §5).

    Attributes
    ----------
    metric : str
    first, second : str
        Workloads in the order of their means in the metric's direction (lower first for lower-is-better).
        The order claims nothing: only ``decision == "different"`` says that `first` is better.
    first_mean, second_mean : float
    ratio, ratio_low, ratio_high : float or None
        ``second_mean / first_mean`` and its interval: the anytime rule's confidence sequence (valid
        whenever the session stopped), or Fieller's at the session's confidence with Welch's ν under the
        pilot rule; None where unbounded.
    pvalue : float
        The rule's evidence of a difference: the anytime-valid p-value, or (pilot) Welch's p at this look.
    overlap : bool
        Whether the two CIs overlap.
    decision : {"different", "equivalent", "undecided"}
        Different: the workloads differ (the ratio's interval excludes 1). Equivalent (anytime rule only):
        the ratio's interval lies within ``1 ± threshold``, no difference that matters. Undecided: neither
        yet; never "equal".
    rule : {"anytime", "pilot"}
    """

    metric: str
    first: str
    second: str
    first_mean: float
    second_mean: float
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    pvalue: float
    overlap: bool
    decision: str
    rule: str

    @property
    def resolved(self):
        """A decision was reached (a difference, or none that matters)."""
        return self.decision != UNDECIDED


def compare(estimates, metrics, targets):
    """Rank workloads per metric and decide every adjacent pair (Pilot §III-F; spec §5).

    Workloads are ordered by mean in the metric's direction. Under ``targets.comparison_rule``
    ``"anytime"`` a pair is decided by :func:`results.stats.sequential_comparison` at level
    ``targets.alpha`` (different, or equivalent within ``targets.threshold``), a decision that holds
    however many rounds were looked at; under ``"pilot"``, as Pilot does, when its CIs do not overlap or
    Welch's p < ``targets.alpha``. Metrics where some workload has no valid CI yet give no pairs (rule 1
    not met).

    Parameters
    ----------
    estimates : dict of str to dict of str to MetricEstimate
        As returned by :func:`analyse`.
    metrics : sequence of MetricSpec
    targets : SessionTargets

    Returns
    -------
    list of PairComparison
    """
    pairs = []
    for spec in check_metrics(metrics):
        column = {name: per_metric[spec.name] for name, per_metric in estimates.items()}
        if len(column) < 2 or not all(estimate.valid for estimate in column.values()):
            continue
        sign = 1.0 if spec.direction is Direction.LOWER_IS_BETTER else -1.0
        ranked = sorted(column, key=lambda name: sign * column[name].mean)
        for first, second in itertools.pairwise(ranked):
            a, b = column[first], column[second]
            overlap = a.ci_low <= b.ci_high and b.ci_low <= a.ci_high
            if targets.comparison_rule is ComparisonRule.PILOT:
                # The comparison every other page shows: Welch's test and Fieller's interval with the test's ν.
                pilot = compare_summaries(b.mean, b.variance, b.n, a.mean, a.variance, a.n,
                                          confidence=targets.confidence, direction=spec.direction)
                pvalue, bounded = float(pilot.pvalue), bool(pilot.bounded)
                limits = (pilot.low, pilot.high)
                decision = DIFFERENT if not overlap or pvalue < targets.alpha else UNDECIDED
            else:
                sequential = sequential_comparison(a.mean, a.variance, a.n, b.mean, b.variance, b.n,
                                                   alpha=targets.alpha, mixture_scale=targets.mixture_scale,
                                                   threshold=targets.threshold)
                pvalue, bounded = float(sequential.pvalue), bool(sequential.ratio_bounded)
                limits = (sequential.ratio_low, sequential.ratio_high)
                decision = DIFFERENT if sequential.different else EQUIVALENT if sequential.equivalent \
                    else UNDECIDED
            pairs.append(PairComparison(
                metric=spec.name, first=first, second=second, first_mean=a.mean, second_mean=b.mean,
                ratio=b.mean / a.mean if a.mean else None,
                ratio_low=float(limits[0]) if bounded else None, ratio_high=float(limits[1]) if bounded else None,
                pvalue=pvalue, overlap=overlap, decision=decision, rule=str(targets.comparison_rule),
            ))
    return pairs


def _growth_to_decide(a, b, targets):
    """How many times the samples so far both workloads need before the anytime rule's confidence sequence
    is narrow enough to decide a difference of θ (``targets.threshold``) either way: its half-width at
    most θ·|mean| (the sequence's own τ is ``targets.mixture_scale``). None when the variance is unknown or
    zero. A fixed point, since the sequence's critical value grows slowly (as sqrt(log)) as the variance of
    the difference shrinks."""
    variance = a.variance / a.n + b.variance / b.n
    middle = abs(a.mean + b.mean) / 2.0
    scale, tau = targets.threshold * middle, targets.mixture_scale * middle
    if not variance > 0.0 or not scale > 0.0:
        return None
    growth = 1.0
    for _ in range(20):
        critical = float(sequential_half_width(variance / growth, tau**2, alpha=targets.alpha))
        updated = max(1.0, (critical * math.sqrt(variance) / scale) ** 2)
        if abs(updated - growth) <= 1e-3 * growth:
            break
        growth = updated
    return updated
