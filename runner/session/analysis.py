"""The analysis of the rounds measured so far (spec §2–§5): each round's warm-up removed, the readings
merged into subsessions, each metric's interval, the A/B comparisons and the progress toward the targets.

Everything here is a function of the rounds, so a resumed session and a page replaying stored rounds reach
the decisions an uninterrupted session reached."""

import functools
import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from results.stats import (
    DIFFERENT,
    EQUIVALENT,
    UNDECIDED,
    Direction,
    compare_summaries,
    NotEnoughSamples,
    StatisticsError,
    mean_interval,
    required_subsessions,
    sequential_comparison,
    sequential_half_width,
    stable_phase,
    summarize_samples,
    welch_required_subsessions,
    wps_fit,
)

from .targets import ComparisonRule, MetricSpec, WarmupMethod, check_metrics

NO_UNIT_READINGS = "No unit readings: warm-up could not be removed by EDM."


MSER_BATCH_SIZE = 5  # MSER-5 (White, Cobb & Spratt 2000)
WARMUP_GUARD = MSER_BATCH_SIZE  # readings dropped past a warm-up found in a round (round_stable_phase)
MIN_VALID_SAMPLES = 11  # the fewest for which the variance of the mean (spec §2a) can be estimated
MIN_BATCHED_DF = 15
"""Degrees of freedom of batch means a session needs before it may stop on autocorrelated readings: at 11 (a
first round of 61 readings) AR(1) ρ = 0.7 sessions covered 0.913; at 15, 0.936 for 1.36× the oracle*
(benchmarks/time_to_decision.py, 1,000 sessions). An upper bound of the variance (0.914 at 1.44×) or a
minimum effective sample size (0.919 at 1.41×) did not close it."""


@dataclass(frozen=True)
class MetricEstimate:
    """The state of one metric of one workload after a round (spec §2, §3, §4).

    Attributes
    ----------
    metric : str
    mean : float or None
        Mean of the subsession means (WPS: the stable per-unit value); None before any sample.
    subsession_size : int
        Pilot's q, the diagnostic the pages show (1 where no size qualified; WPS: rounds merged into one
        regression point).
    variance : float
        ``n`` times the variance of the mean (spec §2a; WPS: ``n`` times the squared standard error), so
        ``variance / n`` is the variance of the mean as for every stored result.
    n : int
        The count whose ``n − 1`` is the degrees of freedom of the interval (WPS: regression points).
    sample_count : int
        Samples analysed: stable unit readings, round readings, or rounds for WPS.
    ci_low, ci_high : float or None
        The CI, None while it cannot be computed (or, WPS, is unbounded).
    autocorrelation : float or None
        Pilot's r₁ of the subsession means at q.
    warmup_removed : int
        Samples dropped as non-stable (unit readings outside the stable phase; WPS: rounds below
        α·v).
    converged : bool
        Full width ≤ ``target_width · |mean|``: the stop rule of a session.
    stable_phase : bool
        False when some round had no dominant stable phase (its unit readings are not used).
    message : str
        Why the estimate is not valid, or what was flagged; empty when nothing to say.
    target_half_width : float or None
        ``target_width · |mean| / 2``; None before any sample.
    confidence : float
        Level of the CI.
    shortfall : int or None
        While the CI cannot be computed: the further samples the variance of the mean needs (None for WPS).
    method : str
        ``"samples"`` or ``"wps"`` (regression).
    variance_method : str
        How the variance of the mean was estimated (a key of :data:`results.stats.VARIANCE_METHODS`).
    """

    metric: str
    mean: float | None
    subsession_size: int
    variance: float
    n: int
    sample_count: int
    ci_low: float | None
    ci_high: float | None
    autocorrelation: float | None
    warmup_removed: int
    converged: bool
    stable_phase: bool
    message: str
    target_half_width: float | None = None
    confidence: float = 0.95
    shortfall: int | None = None
    method: str = "samples"
    variance_method: str = "readings"

    @property
    def valid(self):
        """True when the CI could be computed."""
        return self.ci_low is not None

    @functools.cached_property
    def needed_samples(self):
        """Further samples needed to reach the target width (spec §3); 0 when converged, None if unknown.

        The §3 count of units at the target width, each worth ``sample_count / n`` samples, beyond those
        measured (at least one while not converged); the shortfall while the CI cannot be computed. WPS
        counts rounds, assuming the width shrinks as ``1/sqrt(rounds)``. Computed on first use: it
        iterates t quantiles, which a loop that only needs `converged` should not pay for after every round.
        """
        if self.converged:
            return 0
        if not self.valid:
            return self.shortfall
        if not self.target_half_width or not math.isfinite(self.ci_high - self.ci_low):
            return None
        if self.method == "wps":
            ratio = (self.ci_high - self.ci_low) / (2.0 * self.target_half_width)
            return max(math.ceil(self.sample_count * (ratio * ratio - 1.0)), self.subsession_size)
        # Units of the variance of the mean (n of them) needed at the target, each worth sample_count / n samples.
        m = int(required_subsessions(self.variance, self.target_half_width, confidence=self.confidence))
        return max(math.ceil((m - self.n) * self.sample_count / self.n), 1)

    @property
    def relative_width(self):
        """Full CI width over |mean|, None when unknown."""
        if not self.valid or not self.mean:
            return None
        return (self.ci_high - self.ci_low) / abs(self.mean)


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


@dataclass(frozen=True)
class MetricProgress:
    """CI width against the target for one metric of one workload."""

    workload: str
    metric: str
    relative_width: float | None
    target_width: float
    converged: bool


@dataclass(frozen=True)
class Progress:
    """What a progress bar shows after a round.

    Attributes
    ----------
    rounds_done : int
    elapsed : float
        Session seconds so far.
    estimated_remaining : float or None
        Seconds still needed by the §3/§5 rules at the current estimates; None when unknown.
    metrics : tuple of MetricProgress
    comparisons : tuple of PairComparison
    """

    rounds_done: int
    elapsed: float
    estimated_remaining: float | None
    metrics: tuple
    comparisons: tuple = ()


def analyse(rounds, metrics, targets):
    """Estimate every metric of every workload from the rounds so far (spec §2–§4).

    Per workload, the analysed rounds' samples are collected in time order: with
    ``warmup="edm"``, the stable phase of each round's unit readings (rounds without a dominant
    stable phase are flagged and left out); with ``warmup="none"``, all unit readings; without
    unit readings, one reading per round. Subsession analysis (§2) then gives the CI (§3). With
    ``warmup="wps"`` the estimate is the WPS regression over rounds (§4).

    Parameters
    ----------
    rounds : sequence of RoundRecord
    metrics : sequence of MetricSpec
    targets : SessionTargets

    Returns
    -------
    dict of str to dict of str to MetricEstimate
        ``estimates[workload][metric]``, workloads in order of first appearance.
    """
    return Analyser(check_metrics(metrics), targets).estimates(rounds)


def analysed_samples(rounds, metric, workload, targets, *, phases=None):
    """The samples behind :func:`analyse`'s estimate of one metric of one workload.

    The stable unit readings (or one reading per round) in time order, as subsession analysis
    sees them; None with ``warmup="wps"``, whose estimate is a regression over rounds. ``phases``, the
    rounds' stable phases the session found (``SessionOutcome.phases``), are taken as they are: EDM runs
    only for a round they lack (finding them again for 158 rounds took 18 s after a 30 s budget).
    """
    if targets.warmup is WarmupMethod.WPS:
        return None
    spec = MetricSpec(metric, "")
    mine = [record for record in rounds if record.workload == workload]
    analyser = Analyser((spec,), targets)
    analyser.phases.update(phases or {})
    return analyser.samples(mine, spec)[0]


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


def progress(rounds, metrics, targets, *, elapsed=None):
    """Progress after the given stored rounds (what :func:`run_session` passes to ``on_round``).

    Parameters
    ----------
    rounds : sequence of RoundRecord
    metrics : sequence of MetricSpec
    targets : SessionTargets
    elapsed : float, optional
        Session seconds so far; the sum of the round durations when omitted.

    Returns
    -------
    Progress
    """
    rounds = list(rounds)
    comparing = len({record.workload for record in rounds}) > 1
    state = Analyser(check_metrics(metrics), targets).state(rounds, comparing=comparing)
    if elapsed is None:
        elapsed = sum(record.outcome.duration for record in rounds)
    return state.progress(len(rounds), elapsed)


def round_stable_phase(units, targets):
    """The stable phase of one round's unit readings (spec §4): EDM with the session's minimum
    segment and BreakoutDetection's default penalty, each change point confirmed on its two
    segments alone, then MSER-5 inside the dominant segment for a warm-up too weak for EDM's
    penalty. The session and the run page both call this.

    Unconfirmed change points: EDM's statistic favours segments of equal length, so a warm-up of
    the first 20% drew a second change point near 40% (``results.stats.stable_phase``, Notes). A
    round then lost twice its warm-up, and rounds of 100–120 readings had no dominant phase at all
    (66–97% of them under 10% noise) and were left out; confirmed, under 1% are, and a round keeps
    75–78% of its readings instead of 55–60%. In ``benchmarks/time_to_decision.py`` the noisy
    warm-up row went from 1.51× to 1.37× the oracle*.

    EDM alone missed the warm-up (+50% for the first 20%, 30% noise) in 11–24% of 250–400-unit
    rounds, and those rounds' warm-ups were averaged in: the session's coverage was 0.69 in
    ``benchmarks/time_to_decision.py``. Measured and not chosen: Pilot's penalty (``percent=0.25`` on
    the raw scale) raised it to 0.90 but splits stationary readings on noise, and the longest of
    those segments is biased (0.5% low at a 1% target width in ``tests/runner/test_session.py``).
    MSER truncates only a start that widens the interval of the rest, so a stationary round loses a
    few readings and keeps an unbiased mean.

    Guard batch: where a warm-up is found (the phase starts after reading 0), one more batch of
    :data:`WARMUP_GUARD` readings is dropped past it (`start` and `truncated` include it). MSER-5 ends a transient
    only on a batch boundary and keeps a batch that straddles its end, and EDM's change point is an estimate:
    warm-up readings left in bias the mean (White 1997), a stable batch dropped costs only variance. In rounds of
    61–74 readings with a 12–14-reading warm-up in 30% noise, MSER-5 stopped short of it in 40% of rounds.
    ``benchmarks/time_to_decision.py``'s warm-up row (30% noise) went from 0.922 and 0.930 to 0.935 and 0.948
    coverage over two blocks of 3,000 seeds, at 1.43× the oracle* (1.35× before). A common cut for all rounds
    (Kalibera & Jones), from their readings averaged by position, did worse (0.931–0.939): two or three rounds
    make a profile hardly less noisy than one round.
    """
    phase = stable_phase(units, min_size=targets.edm_min_size, mser_batch_size=MSER_BATCH_SIZE, confirm=True)
    if not phase.dominant or phase.start == 0:
        return phase
    # The dominant segment holds more than half the round and MSER keeps more than half of it, so the guard
    # always leaves readings.
    return replace(phase, start=phase.start + WARMUP_GUARD, truncated=phase.truncated + WARMUP_GUARD)


class _State:
    """What the loop decides from, after some rounds: estimates, comparisons, what is still needed.

    The estimates and the stop rule are computed at once; the §3/§5 sample counts (which iterate
    t quantiles) only when progress, a work-amount cap or the budget report asks for them.
    """

    def __init__(self, analyser, rounds, *, comparing):
        self.analyser = analyser
        self.targets = analyser.targets
        self.metrics = analyser.metrics
        self.by_workload = _group(rounds)
        self.comparing = comparing
        self.estimates = {
            name: {spec.name: analyser.estimate(mine, spec) for spec in self.metrics}
            for name, mine in self.by_workload.items()
        }
        self.comparisons = tuple(compare(self.estimates, self.metrics, self.targets)) if comparing else ()
        everything = [estimate for per_metric in self.estimates.values() for estimate in per_metric.values()]
        converged = bool(everything) and all(estimate.converged for estimate in everything)
        if comparing:
            expected = len(self.metrics) * (len(self.estimates) - 1)
            self.done = (
                all(estimate.valid for estimate in everything)
                and len(self.comparisons) == expected
                and all(pair.resolved for pair in self.comparisons)
                and (converged or not self.targets.require_width_in_comparison)
            )
        else:
            self.done = converged

    @functools.cached_property
    def needed(self):
        """Further samples per workload: the §3 width rule and, comparing, the §5 Welch rule."""
        targets = self.targets
        needed = {}
        for name, per_metric in self.estimates.items():
            counts = [
                estimate.needed_samples
                for estimate in per_metric.values()
                if not estimate.valid or not self.comparing or targets.require_width_in_comparison
            ]
            needed[name] = None if None in counts else max(counts, default=0)
        for pair in self.comparisons:
            if pair.resolved:
                continue
            a = self.estimates[pair.first][pair.metric]
            b = self.estimates[pair.second][pair.metric]
            if targets.comparison_rule is ComparisonRule.ANYTIME:
                growth = _growth_to_decide(a, b, targets)
                extra = {name: None if growth is None else
                         max(math.ceil((growth - 1.0) * estimate.sample_count), estimate.subsession_size)
                         for name, estimate in ((pair.first, a), (pair.second, b))}
            else:
                try:
                    m = welch_required_subsessions(a.mean, a.variance, b.mean, b.variance, alpha=targets.alpha)
                except StatisticsError:
                    # Equal means: no number of samples is known to resolve them.
                    needed[pair.first] = needed[pair.second] = None
                    continue
                # Still unresolved at m subsessions means at least one more subsession.
                extra = {name: max(m * estimate.subsession_size - estimate.sample_count, estimate.subsession_size)
                         for name, estimate in ((pair.first, a), (pair.second, b))}
            for name, more in extra.items():
                needed[name] = None if needed[name] is None or more is None else max(needed[name], more)
        return needed

    @functools.cached_property
    def remaining_seconds(self):
        """Needed samples × seconds per sample (all of a workload's round time over its samples)."""
        if self.done:
            return 0.0
        total = 0.0
        for name, samples in self.needed.items():
            count = max(estimate.sample_count for estimate in self.estimates[name].values())
            if samples is None or count == 0:
                return None
            total += samples * sum(record.outcome.duration for record in self.by_workload[name]) / count
        return total

    def floor(self, name):
        """WPS: the work amount α·v of the latest fit, below which rounds are not analysed."""
        if self.targets.warmup is not WarmupMethod.WPS or name not in self.by_workload:
            return None
        return self.analyser.wps_floor(self.by_workload[name])

    def cap(self, name):
        """Work units expected to yield the unit readings still needed; None without unit readings."""
        rounds = [record for record in self.by_workload.get(name, ()) if record.analysed]
        if self.targets.warmup is WarmupMethod.WPS or not rounds:
            return None
        with_units = [spec.name for spec in self.metrics
                      if all(record.outcome.unit_readings.get(spec.name) for record in rounds)]
        if not with_units:
            return None
        samples = self.needed[name]
        units = sum(record.work_amount for record in rounds)
        rates = [self.estimates[name][metric].sample_count / units for metric in with_units]
        if samples is None or min(rates) == 0.0:
            return None
        return max(samples, 1) / min(rates)

    def progress(self, rounds_done, elapsed):
        widths = tuple(
            MetricProgress(
                workload=name,
                metric=metric,
                relative_width=estimate.relative_width,
                target_width=self.targets.target_width,
                converged=estimate.converged,
            )
            for name, per_metric in self.estimates.items()
            for metric, estimate in per_metric.items()
        )
        return Progress(
            rounds_done=rounds_done,
            elapsed=elapsed,
            estimated_remaining=self.remaining_seconds,
            metrics=widths,
            comparisons=self.comparisons,
        )


class Analyser:
    """Estimates from rounds, remembering each round's stable phase (it never changes)."""

    def __init__(self, metrics, targets):
        self.metrics = metrics
        self.targets = targets
        self.phases = {}
        self.fits = {}

    def estimates(self, rounds):
        return self.state(rounds, comparing=False).estimates

    def state(self, rounds, *, comparing):
        return _State(self, rounds, comparing=comparing)

    def wps(self, rounds):
        """The WPS fit over analysed rounds at or above α·v of a first fit (Pilot §III-A).

        Returns ``(fit, excluded, error)``; `fit` is None while the fit is not possible and
        `error` then says why.
        """
        rounds = [record for record in rounds if record.analysed]
        fit, error = self.fit(rounds)
        if fit is None:
            return None, 0, error
        floor = fit.alpha * fit.v
        kept = [record for record in rounds if record.work_amount >= floor]
        if len(kept) == len(rounds):
            return fit, 0, None
        refit, error = self.fit(kept)
        return refit, len(rounds) - len(kept), error

    def fit(self, rounds):
        key = tuple(record.index for record in rounds)
        if key not in self.fits:
            work = [record.work_amount for record in rounds]
            try:
                if len(set(work)) < 2:
                    raise NotEnoughSamples("WPS needs rounds of different work amounts.",
                                           needed=max(1, self.targets.min_subsessions - len(work)))
                self.fits[key] = (wps_fit(work, [record.outcome.duration for record in rounds],
                                          confidence=self.targets.confidence,
                                          max_autocorrelation=self.targets.max_autocorrelation,
                                          min_subsessions=self.targets.min_subsessions), None)
            except StatisticsError as error:
                self.fits[key] = (None, error)
        return self.fits[key]

    def wps_floor(self, rounds):
        """α·v of the fit on all analysed rounds: the work the non-stable phases take."""
        fit, _ = self.fit([record for record in rounds if record.analysed])
        if fit is None or fit.alpha <= 0.0:
            return None
        return fit.alpha * fit.v

    def wps_estimate(self, rounds, spec):
        """The WPS fit as an estimate: seconds per unit (lower is better) or units per second."""
        targets = self.targets
        fit, excluded, error = self.wps(rounds)
        count = sum(record.analysed for record in rounds) - excluded
        base = {"metric": spec.name, "sample_count": count, "warmup_removed": excluded, "stable_phase": True,
                "confidence": targets.confidence, "method": "wps"}
        if fit is None:
            return MetricEstimate(
                mean=None, subsession_size=1, variance=0.0, n=count, ci_low=None, ci_high=None,
                autocorrelation=None, converged=False, message=str(error), target_half_width=None,
                shortfall=getattr(error, "needed", None), **base,
            )
        if spec.direction is Direction.HIGHER_IS_BETTER and not fit.bounded:
            return MetricEstimate(
                mean=float(fit.v), subsession_size=fit.subsession_size, variance=0.0, n=fit.n, ci_low=None,
                ci_high=None, autocorrelation=fit.autocorrelation, converged=False,
                message="The CI of v is unbounded: the slope is not significantly positive.",
                target_half_width=targets.target_width * fit.v / 2.0, shortfall=fit.subsession_size, **base,
            )
        if spec.direction is Direction.LOWER_IS_BETTER:
            mean, low, high, stderr = fit.slope, fit.slope_low, fit.slope_high, fit.slope_stderr
        else:
            # Delta method for the variance of 1/slope; the CI itself is the exact image [1/β_hi, 1/β_lo].
            mean, low, high, stderr = fit.v, fit.low, fit.high, fit.slope_stderr / fit.slope**2
        half_width = targets.target_width * abs(mean) / 2.0
        return MetricEstimate(
            mean=float(mean), subsession_size=fit.subsession_size, variance=float(stderr**2 * fit.n), n=fit.n,
            ci_low=float(low), ci_high=float(high), autocorrelation=fit.autocorrelation,
            converged=bool(high - low <= 2.0 * half_width), message="", target_half_width=half_width, **base,
        )

    def estimate(self, rounds, spec):
        if self.targets.warmup is WarmupMethod.WPS:
            return self.wps_estimate(rounds, spec)
        samples, removed, unstable, flagged = self.samples(rounds, spec)
        message = ""
        if unstable:
            message = (f"No dominant stable phase in {unstable} of {len(rounds)} rounds; their unit readings are "
                       "left out.")
        if flagged:
            message = " ".join(filter(None, (message, NO_UNIT_READINGS)))
        return self.from_samples(spec, samples, removed=removed, stable=not unstable, message=message)

    def samples(self, rounds, spec):
        targets = self.targets
        chunks = []
        removed = unstable = 0
        flagged = False
        for record in rounds:
            if not record.analysed:
                continue
            units = record.outcome.unit_readings.get(spec.name)
            if units is None or len(units) == 0:
                chunks.append(np.array([record.outcome.readings[spec.name]], dtype=float))
                flagged = flagged or targets.warmup is WarmupMethod.EDM
                continue
            units = np.asarray(units, dtype=float)
            if targets.warmup is WarmupMethod.NONE or units.size < targets.edm_min_size:
                # Fewer unit readings than one EDM segment cannot hold a change point.
                chunks.append(units)
                continue
            key = (record.index, record.workload, spec.name)
            if key not in self.phases:
                self.phases[key] = round_stable_phase(units, targets)
            phase = self.phases[key]
            if phase.dominant:
                chunks.append(units[phase.segment])
                removed += units.size - (phase.stop - phase.start)
            else:
                unstable += 1
                removed += units.size
        samples = np.concatenate(chunks) if chunks else np.empty(0)
        return samples, removed, unstable, flagged

    def from_samples(self, spec, samples, *, removed, stable, message):
        """The estimate of one metric from its samples, as a result stores it (:func:`results.stats.summarize_samples`:
        the variance of the mean of spec §2a, Pilot's subsession size and r₁ beside it)."""
        targets = self.targets
        count = int(samples.size)
        base = {"metric": spec.name, "sample_count": count, "warmup_removed": removed, "stable_phase": stable,
                "confidence": targets.confidence}
        if not count:
            return MetricEstimate(
                mean=None, subsession_size=1, variance=0.0, n=0, ci_low=None, ci_high=None, autocorrelation=None,
                converged=False, message=" ".join(filter(None, (message, "No samples yet."))), target_half_width=None,
                shortfall=MIN_VALID_SAMPLES, **base,
            )
        summary = summarize_samples(samples, max_autocorrelation=targets.max_autocorrelation,
                                    min_subsessions=targets.min_subsessions)
        diagnostic = {"subsession_size": summary.subsession_size,
                      "autocorrelation": None if math.isnan(summary.autocorrelation) else summary.autocorrelation}
        if not summary.independent:
            needed = max(MIN_VALID_SAMPLES - count, 1)
            why = f"{count} samples: {needed} more are needed for the variance of the mean (spec §2a)."
            return MetricEstimate(
                mean=summary.mean, variance=0.0, n=count, ci_low=None, ci_high=None, converged=False,
                message=" ".join(filter(None, (message, why))),
                target_half_width=targets.target_width * abs(summary.mean) / 2.0, shortfall=needed,
                **diagnostic, **base,
            )
        mean, variance, units = summary.mean, summary.variance, summary.n
        interval = mean_interval(mean, variance, units, confidence=targets.confidence)
        half_width = targets.target_width * abs(mean) / 2.0
        if half_width == 0.0:
            message = " ".join(filter(None, (message, "The mean is zero: a relative width cannot be reached.")))
        # Readings Pilot's diagnostic finds autocorrelated (q > 1) get their variance of the mean from batch means,
        # whose few degrees of freedom at a first look let a session stop on a low estimate by chance.
        settled = summary.subsession_size == 1 or units - 1 >= MIN_BATCHED_DF
        return MetricEstimate(
            mean=mean, variance=variance, n=int(units), ci_low=float(interval.low), ci_high=float(interval.high),
            converged=bool(settled and interval.high - interval.low <= 2.0 * half_width), message=message,
            target_half_width=half_width, variance_method=summary.variance_method, **diagnostic, **base,
        )


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


def _group(rounds):
    grouped = {}
    for record in rounds:
        grouped.setdefault(record.workload, []).append(record)
    return grouped

