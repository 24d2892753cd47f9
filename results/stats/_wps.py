"""The work-per-second (WPS) model of whole rounds (spec §4; Pilot §III-A b).

When a workload yields no unit readings, Pilot (Li et al., §III-A, eq. 4) fits
``t = α + w / v`` over rounds of different work amounts w: the slope 1/v is the
stable speed and the intercept α absorbs the setup, warm-up and cool-down that
every round pays once.
"""

import numbers
from dataclasses import dataclass

import numpy as np

from ._base import (
    ConfidenceInterval,
    NotEnoughSamples,
    StatisticsError,
    as_sample,
    check_confidence,
    check_positive_int,
)
from ._distributions import t_quantile
from ._subsessions import MAX_AUTOCORRELATION, MIN_SUBSESSIONS, autocorrelation

__all__ = ["WPSResult", "round_increment", "work_amounts", "wps_fit"]

# Residuals this small relative to the durations are rounding noise of an exact fit.
_EXACT_FIT = 1e-12


@dataclass(frozen=True)
class WPSResult:
    """The WPS fit ``t = α + w / v`` (see :func:`wps_fit`).

    Durations and work are in the caller's units: v is work per unit of
    duration.

    Attributes
    ----------
    v : float
        Stable speed, ``1 / slope``.
    low, high : float
        Confidence limits of v, ``1 / slope_high`` and ``1 / slope_low``;
        `high` is ``inf`` when the interval is unbounded.
    bounded : bool
        False when ``slope_low <= 0``: the data do not exclude an infinite
        speed, so v has no finite upper limit.
    alpha : float
        Time every round spends outside the stable phase (setup, warm-up,
        cool-down), per round.
    alpha_stderr : float
        Standard error of `alpha`.
    slope : float
        1/v, duration per unit of work.
    slope_stderr : float
        Standard error of the slope (OLS).
    slope_low, slope_high : float
        ``slope ∓ t_{(1+c)/2, df} · slope_stderr``.
    df : int
        Degrees of freedom, ``n - 2``.
    subsession_size : int
        q, the number of adjacent rounds merged into each fitted point.
    n : int
        Number of fitted points (subsessions); ``n * subsession_size`` rounds
        were used, the oldest remainder dropped.
    autocorrelation : float
        Lag-1 autocorrelation of the residuals at the accepted q.
    ssr : float
        Sum of squared residuals of the fit over the subsessions.
    confidence_level : float
        The confidence level c.
    """

    v: float
    low: float
    high: float
    bounded: bool
    alpha: float
    alpha_stderr: float
    slope: float
    slope_stderr: float
    slope_low: float
    slope_high: float
    df: int
    subsession_size: int
    n: int
    autocorrelation: float
    ssr: float
    confidence_level: float

    def confidence_interval(self):
        """Return ``ConfidenceInterval(low, high)`` of the speed v."""
        return ConfidenceInterval(self.low, self.high)


def wps_fit(work, duration, *, confidence=0.95, max_autocorrelation=MAX_AUTOCORRELATION,
            min_subsessions=MIN_SUBSESSIONS):
    """Fit the WPS model ``t = α + w / v`` by OLS over rounds (spec §4; Pilot eq. 4).

    Adjacent rounds are first merged into subsessions of q rounds (work and
    durations summed) for q = 1, 2, ..., dropping the oldest ``n mod q``
    rounds, until the lag-1 autocorrelation of the OLS residuals is at most
    `max_autocorrelation` with at least `min_subsessions` points (spec §2
    rule). The CI of the slope uses ``t_{(1+c)/2, m-2}``; the CI of v is its
    image under ``1/slope``.

    Parameters
    ----------
    work : array_like
        Work amount of each round, in time order (1-D, finite, > 0, not all
        equal).
    duration : array_like
        Duration of each round (1-D, finite, > 0), same length as `work`.
    confidence : float, optional
        Confidence level c in (0, 1).
    max_autocorrelation : float, optional
        ρ_max in [0, 1]; 1 accepts q = 1 whatever the correlation.
    min_subsessions : int, optional
        Fewest fitted points accepted, at least 3 (the spec's m_min).

    Returns
    -------
    WPSResult

    Raises
    ------
    NotEnoughSamples
        If fewer than `min_subsessions` rounds are given, or no subsession
        size brings the residual autocorrelation down to `max_autocorrelation`
        with `min_subsessions` points; ``needed`` says how many more rounds
        would allow the next subsession size to be tried.
    StatisticsError
        If the fitted slope is not positive: durations do not grow with work,
        so the data hold no speed.

    Notes
    -----
    Merging q rounds sums q intercepts, so the intercept of the merged fit is
    divided by q to report α per round; the slope is unchanged.

    Pilot (``pilot_wps_warmup_removal_lr_method``) differs in conventions:
    it takes durations in integer nanoseconds, chooses q from the harmonic-mean
    autocorrelation of the per-round speeds w/t, and reports the full width
    ``|1/(b - 2 se) - 1/(b + 2 se)|`` of v's interval with a fixed factor 2
    instead of a t quantile. With q = 1 its standard error equals
    `slope_stderr`.

    References
    ----------
    Y. Li et al., "Pilot: a framework that understands how to do performance
    benchmarks the right way", MASCOTS 2016, §III-A, eq. (4).
    """
    # scipy.stats is imported where it is used: it takes half a second, which most callers never need.
    from scipy import stats

    confidence = check_confidence(confidence)
    if isinstance(max_autocorrelation, bool) or not isinstance(max_autocorrelation, numbers.Real):
        raise ValueError(f"`max_autocorrelation` must be a number; got {max_autocorrelation!r}.")
    if not 0.0 <= max_autocorrelation <= 1.0:
        raise ValueError(f"`max_autocorrelation` must lie in [0, 1]; got {max_autocorrelation}.")
    min_subsessions = check_positive_int(min_subsessions, "min_subsessions", minimum=3)
    work = as_sample(work, "work")
    duration = as_sample(duration, "duration")
    if work.size != duration.size:
        raise ValueError(
            f"`work` and `duration` must have the same length; got {work.size} and {duration.size}."
        )
    if np.any(work <= 0):
        raise ValueError("`work` must be positive.")
    if np.any(duration <= 0):
        raise ValueError("`duration` must be positive.")
    rounds = work.size
    if rounds < min_subsessions:
        raise NotEnoughSamples(
            f"The WPS fit needs at least `min_subsessions` = {min_subsessions} rounds; "
            f"got {rounds}.",
            needed=min_subsessions - rounds,
        )
    if np.all(work == work[0]):
        raise ValueError("`work` must take at least two distinct values to fit a slope.")

    q = 1
    while rounds // q >= min_subsessions:
        m = rounds // q
        work_q = work[rounds - m * q :].reshape(m, q).sum(axis=1)
        duration_q = duration[rounds - m * q :].reshape(m, q).sum(axis=1)
        # Merging can make all summed work amounts equal: no slope at this q.
        if np.any(work_q != work_q[0]):
            fit = stats.linregress(work_q, duration_q)
            residuals = duration_q - (fit.intercept + fit.slope * work_q)
            r1 = 0.0
            if np.max(np.abs(residuals)) > _EXACT_FIT * np.max(duration_q):
                r1 = autocorrelation(residuals)
            if abs(r1) <= max_autocorrelation:
                return _result(fit, residuals, q, m, r1, confidence)
        q += 1
    needed = min_subsessions * q - rounds
    raise NotEnoughSamples(
        f"No subsession size up to {q - 1} brings the residuals' |r_1| down to "
        f"{max_autocorrelation} with at least {min_subsessions} points; {needed} more rounds "
        f"are needed to try subsession size {q}.",
        needed=needed,
    )


def _result(fit, residuals, q, m, r1, confidence):
    if fit.slope <= 0:
        raise StatisticsError(
            f"The fitted slope {fit.slope:.6g} is not positive: durations do not grow with work, "
            "so the rounds hold no speed."
        )
    df = m - 2
    half_width = t_quantile((1.0 + confidence) / 2.0, df) * fit.stderr
    slope_low, slope_high = fit.slope - half_width, fit.slope + half_width
    bounded = bool(slope_low > 0)
    return WPSResult(
        v=1.0 / fit.slope,
        low=1.0 / slope_high,
        high=1.0 / slope_low if bounded else np.inf,
        bounded=bounded,
        alpha=fit.intercept / q,
        alpha_stderr=fit.intercept_stderr / q,
        slope=float(fit.slope),
        slope_stderr=float(fit.stderr),
        slope_low=float(slope_low),
        slope_high=float(slope_high),
        df=df,
        subsession_size=q,
        n=m,
        autocorrelation=r1,
        ssr=float(residuals @ residuals),
        confidence_level=confidence,
    )


def work_amounts(a, b, count):
    """The first `count` work amounts of Pilot's breadth-first midpoint sequence (spec §4).

    On the valid range (a, b): ``a + (b-a)/2``, then ``/4, 3/4``, then
    ``/8, 3/8, 5/8, 7/8``, ... — all distinct, each level halving the gaps
    of the previous ones (Pilot §III-A, Fig. 3).

    Parameters
    ----------
    a, b : float
        The valid range of work amounts, ``0 <= a < b``.
    count : int
        How many amounts to return, ``>= 0``.

    Returns
    -------
    ndarray
        Float work amounts in round order; round them if work is counted in
        whole units.
    """
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
            raise ValueError(f"`{name}` must be a finite number; got {value!r}.")
    if a < 0:
        raise ValueError(f"`a` must be at least 0; got {a}.")
    if not a < b:
        raise ValueError(f"`a` must be less than `b`; got a={a}, b={b}.")
    count = check_positive_int(count, "count", minimum=0)
    round_number = np.arange(1, count + 1)
    # Round i sits at level floor(log2 i): the odd multiples of 1/2^(level+1), in ascending order.
    level = np.frexp(round_number.astype(float))[1] - 1
    numerator = 2 * (round_number - 2**level) + 1
    return a + (b - a) * numerator / 2.0 ** (level + 1)


def round_increment(first_duration, rounds, *, target_time=60.0):
    """Per-round growth k of the quick first estimate (Pilot eq. 5, spec §4).

    With a first round of duration s and n rounds each k longer than the
    previous, the n rounds take ``n s + k n (n-1) / 2``; equating this to the
    target T gives ``k = (2T - 2sn) / (n² - n)``.

    Parameters
    ----------
    first_duration : float
        s, duration of the first round, ``> 0``.
    rounds : int
        n, the number of rounds planned for the first estimate, ``>= 2``.
    target_time : float, optional
        T, the time for the first estimate (Pilot's default: 60 s), ``> 0``.

    Returns
    -------
    float
        k, in the unit of the durations. It is not positive when n rounds of
        length s already take T or longer; Pilot then grows rounds by its
        minimum step (1 s) instead.
    """
    for name, value in (("first_duration", first_duration), ("target_time", target_time)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
            raise ValueError(f"`{name}` must be a finite number; got {value!r}.")
        if value <= 0:
            raise ValueError(f"`{name}` must be positive; got {value}.")
    rounds = check_positive_int(rounds, "rounds", minimum=2)
    return (2.0 * target_time - 2.0 * first_duration * rounds) / (rounds**2 - rounds)
