"""The analysis of the rounds measured so far (spec §2–§5): each round's warm-up removed, the readings
merged into subsessions, each metric's interval, the A/B comparisons and the progress toward the targets.

Everything here is a function of the rounds, so a resumed session and a page replaying stored rounds reach
the decisions an uninterrupted session reached.

:class:`Analyser` estimates every metric from the rounds (an estimate is :class:`.estimates.MetricEstimate`);
its state after a round is what the loop decides from: the estimates, the pairs :func:`.comparison.compare`
decided, whether the session is done, and what is still needed (:class:`Progress`). :func:`analyse`,
:func:`analysed_samples` and :func:`progress` replay stored rounds through the same :class:`Analyser`."""

import functools
import math
from dataclasses import dataclass

import numpy as np

from results.stats import (
    UNDECIDED,
    Direction,
    NotEnoughSamples,
    StatisticsError,
    mean_interval,
    summarize_samples,
    welch_required_subsessions,
    wps_fit,
)

from .comparison import _growth_to_decide, compare
from .estimates import MetricEstimate, round_stable_phase
from .levels import follow_level
from .targets import ComparisonRule, MetricSpec, WarmupMethod, check_metrics

NO_UNIT_READINGS = "No unit readings: warm-up could not be removed by EDM."

MIN_VALID_SAMPLES = 11  # the fewest for which the variance of the mean (spec §2a) can be estimated
MIN_BATCHED_DF = 15
"""Degrees of freedom of batch means a session needs before it may stop on autocorrelated readings: at 11 (a
first round of 61 readings) AR(1) ρ = 0.7 sessions covered 0.913; at 15, 0.936 for 1.36× the oracle*
(benchmarks/time_to_decision.py, 1,000 sessions). An upper bound of the variance (0.914 at 1.44×) or a
minimum effective sample size (0.919 at 1.41×) did not close it."""


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
        check = self.targets.level_check
        self.rounds_read = len(rounds)
        self.level_progress = None
        if check is not None:
            # A bisection's session ends when its candidate's level is decided; the level test says which commits
            # each round reads.
            self.level_progress = follow_level(rounds, check)
            self.done = self.level.decision != UNDECIDED
        elif comparing:
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

    @property
    def level(self):
        """A bisection's session: the decision on its rounds so far (:class:`.levels.LevelDecision`); else None."""
        return None if self.level_progress is None else self.level_progress.decision

    def next_reading(self, names):
        """Whether the readings so far end a cycle (a session stops only there), and the workload read next: the
        workloads in turn, or in a bisection's session the commits its level test asks for."""
        if self.level_progress is not None:
            return self.level_progress.round_complete, self.level_progress.next_workload
        return self.rounds_read % len(names) == 0, names[self.rounds_read % len(names)]

    def work_plan(self, name):
        """What the next reading of `name` is planned from (:func:`.plan.work_amount_plan`): its rounds, the floor
        and the cap. A bisection's session plans each round's one work amount from its complete rounds
        (:class:`.levels.LevelProgress`), with neither floor nor cap: its stop rule is the level test, not a width."""
        if self.level_progress is not None:
            return self.level_progress.planning, None, None
        return self.by_workload.get(name, []), self.floor(name), self.cap(name)

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


def _group(rounds):
    grouped = {}
    for record in rounds:
        grouped.setdefault(record.workload, []).append(record)
    return grouped
