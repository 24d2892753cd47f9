"""One metric's estimate after a round (spec §2–§4), and the stable phase of a round's unit readings, the
part of the round that subsession analysis keeps.

:class:`MetricEstimate` is what :class:`.analysis.Analyser` makes of every metric of every workload;
:func:`round_stable_phase` removes one round's warm-up (EDM, then MSER-5) for the session and the run page alike."""

import functools
import math
from dataclasses import dataclass, replace

from results.stats import required_subsessions, stable_phase

MSER_BATCH_SIZE = 5  # MSER-5 (White, Cobb & Spratt 2000)
WARMUP_GUARD = MSER_BATCH_SIZE  # readings dropped past a warm-up found in a round (round_stable_phase)


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
