"""Is a commit at the good level or at the bad one? Two sequential tests, run together, exact for any noise.

A bisection asks this of every commit it measures. Its session reads the candidate every round and, beside it, the
reference (last good), the moved end (first bad) or both. A candidate at the reference's level reads like the
reference, so in a round that reads both ``d = c − r`` is as likely to be positive as negative (symmetric about
zero, whatever the noise's distribution and spread); a candidate at the moved level makes ``e = c − m`` symmetric
likewise. For a symmetric ``d`` and any odd ``g`` with ``|g| < 1``, ``E[1 + g(d)] = 1``; with ``g = tanh(λ·)``
and λ fixed before the round is read, the product of ``1 + tanh(λd)`` over the rounds is a nonnegative martingale,
and by Ville's inequality it ever reaches ``1/α`` with probability at most α, however often it is looked at. A round
that does not read the reference multiplies that product by one, so which end a round reads may depend on the rounds
before it. Each test bets in the direction of the other level, sized from the rounds before (the move and the spread
estimated so far, with the ends' earlier readings): the estimates set its speed, never its level. The first test to
reach ``1/α`` decides. Each round reads the end of the test that leads: that test's evidence is what a decision
needs, and the other end's reading would only feed the test that lags.
"""

from dataclasses import dataclass, field

import numpy as np

from ._base import check_confidence
from ._sequential import UNDECIDED

__all__ = ["AT_LEVEL", "MOVED", "LevelTest", "bracketed_level_test"]

AT_LEVEL, MOVED = "at level", "moved"
"""What :func:`bracketed_level_test` decides: the candidate is at the reference's level; it is at the moved
level. (And :data:`results.stats.UNDECIDED`: neither yet.)"""

BET_DAMPING = 0.5
"""κ in the bet ``λ = Δ / (v + κΔ²)``. At κ = 0 (λ = Δ/v, the slope of the normal likelihood ratio, which
maximises the expected gain where Δ and v are known) bets on a spread estimated from the first rounds overshoot: a
simulated 32-commit bisection (5% regression, 5% noise) named no culprit in 17% of 300 tries against 1–2% at κ = ½
or 1; κ = ½ took the fewest readings (benchmarks/bisection.py)."""

PRIOR_DEGREES = 10
"""The ends' earlier spread counts as this many degrees of freedom beside a session's own pairs in the spread a
bet is sized with (the candidate's noise may differ from the ends', so its own pairs soon outweigh it). Bets on
the first pairs' spread alone, which is often far off, slowed the same simulated bisections: a median of 2,640
readings against 2,280 with 5 or 20 such degrees at a 2% regression and 5% noise (benchmarks/bisection.py)."""


@dataclass(frozen=True)
class LevelTest:
    """Result of :func:`bracketed_level_test`.

    Attributes
    ----------
    decision : str
        :data:`MOVED`, :data:`AT_LEVEL` or :data:`results.stats.UNDECIDED`.
    rounds : int
        The round at which the decision was reached (1-based), or the rounds read when undecided.
    log_ratio_moved, log_ratio_at_level : float
        At that round: log of the ratio that tests "at the reference's level" (it decides *moved*) and of the
        ratio that tests "at the moved level" (it decides *at level*).
    shift : float
        The moved end over the reference, relative (``m̄/r̄ − 1``), from the readings up to that round and the
        earlier ones given.
    change : float
        The candidate over the reference, relative, in the session's rounds up to that round.
    alpha : float
    planned_reads : ndarray of bool, shape (rounds given + 1, 2)
        Row i: whether round i (0-based) reads the reference and whether it reads the moved end, as the rounds
        before it ask; the last row is the next round's. Rounds read as planned are what the test's speed
        assumes (its level holds for any reads).
    """

    decision: str
    rounds: int
    log_ratio_moved: float
    log_ratio_at_level: float
    shift: float
    change: float
    alpha: float
    planned_reads: np.ndarray = field(repr=False)


def bracketed_level_test(reference, candidate, moved, *, alpha=0.01, direction=1, earlier=None, burn_in=5):
    """Decide whether `candidate` is at the level of `reference` or at that of `moved`, from interleaved rounds.

    With ``d_i = c_i − r_i`` (rounds that read the reference), ``e_i = c_i − m_i`` (rounds that read the moved
    end), ``Δ_i`` the estimate of ``m − r`` from the readings before round i (and the `earlier` ones), kept on the
    regression's side, ``v`` the variance of ``d`` (``e``) before round i (pooled with the ends' earlier variances,
    summed, as :data:`PRIOR_DEGREES` degrees of freedom), and ``κ`` = :data:`BET_DAMPING`:

        ``log Λ_moved = Σ log(1 + tanh(λ_i d_i))`` with ``λ_i = Δ_i / (v_d + κΔ_i²)`` (tests "at the reference's
        level": ``d`` symmetric about zero),
        ``log Λ_level = Σ log(1 − tanh(μ_i e_i))`` with ``μ_i = Δ_i / (v_e + κΔ_i²)`` (tests "at the moved level").

    ``1 + tanh(λd)`` with ``λ = Δ/v`` is the likelihood ratio of a normal ``d`` at mean Δ against the symmetric
    mixture of means ±Δ: it gains nearly Wald's ``Δ²/2v`` a round where the move is small beside the spread (0.20
    against 0.25 where ``Δ²/v = ½``; the bound ``λd − λ²d²/2`` of de la Peña gains 0.17), and a wrong-signed
    outlier costs at most ``2|λd|``. The first round at which either ratio reaches ``log(1/α)`` decides (*moved*,
    resp. *at level*; the larger where both do). Round i reads the reference where ``Λ_moved`` leads after the rounds
    before it, the moved end where ``Λ_level`` leads, and both on a tie and where it places no bet (before the bets
    begin, and while no move towards `direction` is estimated) (:attr:`LevelTest.planned_reads`).

    Parameters
    ----------
    reference, candidate, moved : array_like, shape (rounds,)
        The three commits' readings, one a round, in the order the rounds ran; NaN in `reference` or `moved`
        where a round did not read that end (every round reads the candidate and at least one end).
    alpha : float, optional
        The probability of each wrong decision: *moved* for a candidate at the reference's level, *at level*
        for one at the moved level. Exact for any noise symmetric in the two commits compared (the same code
        read in the same rounds), by the martingale above, whichever ends the rounds read.
    direction : {1, -1}, optional
        The side of the move: +1 where the moved end reads higher (times). An estimate on the other side
        counts as no move yet (no bet).
    earlier : tuple of array_like, optional
        ``(reference_readings, moved_readings)`` from earlier sessions of the same two commits: the move and the
        spread are estimated from them from the first round on.
    burn_in : int, optional
        Rounds read before the first bet where there are no earlier readings (the move is not yet known).

    Returns
    -------
    LevelTest

    References
    ----------
    Ville, J. (1939). *Étude critique de la notion de collectif*. Wald, A. (1947). *Sequential Analysis*. Wiley,
    ch. 3. de la Peña, V. H. (1999). A general class of exponential inequalities for martingales and ratios. *Ann.
    Probab.* 27, 537–564 (bets on symmetric increments). Ramdas, A., Grünwald, P., Vovk, V. & Shafer, G. (2023).
    Game-theoretic statistics and safe anytime-valid inference. *Statist. Sci.* 38, 576–601.
    """
    alpha = check_confidence(alpha, "alpha")
    if direction not in (1, -1):
        raise ValueError(f"`direction` must be 1 or -1; got {direction!r}.")
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)) or burn_in < 2:
        raise ValueError(f"`burn_in` must be a whole number of at least 2; got {burn_in!r}.")
    candidate = _readings(candidate, "candidate")
    reference, moved = (_readings(values, name, unread=True) for values, name in (
        (reference, "reference"), (moved, "moved")))
    if not reference.size == candidate.size == moved.size:
        raise ValueError("`reference`, `candidate` and `moved` must hold one reading each a round (equal lengths).")
    if reference.size == 0:
        raise ValueError("`reference`, `candidate` and `moved` must hold at least one round.")
    read_reference, read_moved = ~np.isnan(reference), ~np.isnan(moved)
    if not (read_reference | read_moved).all():
        raise ValueError("Every round must read `reference` or `moved` (both NaN in one round).")
    if earlier is None:
        earlier_reference, earlier_moved = np.empty(0), np.empty(0)
    else:
        try:
            earlier_reference, earlier_moved = (_readings(values, "earlier") for values in earlier)
        except (TypeError, ValueError):
            raise ValueError("`earlier` must be (reference readings, moved readings).") from None
    start = 0 if min(earlier_reference.size, earlier_moved.size) >= 2 else burn_in

    # What round i bets with is computed from the rounds before it and the earlier readings only.
    # (One entry more than the rounds: the next round's.)
    mean_r, count_r = _mean_before_each(np.append(reference, np.nan), earlier_reference)
    mean_m, count_m = _mean_before_each(np.append(moved, np.nan), earlier_moved)
    with np.errstate(invalid="ignore"):
        ahead = np.nan_to_num(direction * np.maximum(direction * (mean_m - mean_r), 0.0))
    betting = (np.arange(reference.size + 1) >= start) & (count_r > 0) & (count_m > 0) & (direction * ahead > 0)
    shift, live = ahead[:-1], betting[:-1]
    # The ends' earlier readings' spread, lent to the session's own (two commits' variances add).
    fallback = (np.var(earlier_reference, ddof=1) + np.var(earlier_moved, ddof=1)
                if min(earlier_reference.size, earlier_moved.size) >= 2 else np.nan)
    below = candidate - reference  # mean zero, and symmetric, for a candidate at the reference's level
    above = candidate - moved  # likewise for a candidate at the moved level
    with np.errstate(divide="ignore", invalid="ignore"):
        bet_moved = shift / (_variance_before_each(below, fallback) + BET_DAMPING * shift**2)
        bet_level = shift / (_variance_before_each(above, fallback) + BET_DAMPING * shift**2)
    bet_moved = np.where(live & read_reference & np.isfinite(bet_moved), bet_moved, 0.0)
    bet_level = np.where(live & read_moved & np.isfinite(bet_level), bet_level, 0.0)
    log_moved = np.cumsum(_log_one_plus_tanh(bet_moved * np.nan_to_num(below)))
    log_level = np.cumsum(_log_one_plus_tanh(-bet_level * np.nan_to_num(above)))
    bound = np.log(1.0 / alpha)
    crossed = np.flatnonzero((log_moved >= bound) | (log_level >= bound))
    at = int(crossed[0]) if crossed.size else reference.size - 1
    decision = UNDECIDED if not crossed.size else MOVED if log_moved[at] >= log_level[at] else AT_LEVEL
    seen = slice(0, at + 1)
    reference_seen = np.concatenate([earlier_reference, reference[seen][read_reference[seen]]])
    moved_seen = np.concatenate([earlier_moved, moved[seen][read_moved[seen]]])
    # The candidate against the reference in the rounds that read both (every round before the bets begin).
    paired = read_reference[seen]
    with np.errstate(divide="ignore", invalid="ignore"):
        shift_seen = _mean(moved_seen) / _mean(reference_seen) - 1.0
        change_seen = _mean(candidate[seen][paired]) / _mean(reference[seen][paired]) - 1.0
    # Round i reads the end of the test that leads; both ends where neither leads or no bet is placed (the ends
    # must show where they are).
    lead = np.sign(np.concatenate([[0.0], log_moved - log_level]))
    planned = np.column_stack([~betting | (lead >= 0), ~betting | (lead <= 0)])
    return LevelTest(
        decision=decision,
        rounds=at + 1,
        log_ratio_moved=float(log_moved[at]),
        log_ratio_at_level=float(log_level[at]),
        shift=float(shift_seen),
        change=float(change_seen),
        alpha=alpha,
        planned_reads=planned,
    )


def _mean(values):
    return values.mean() if values.size else np.nan


def _log_one_plus_tanh(values):
    """``log(1 + tanh(x))`` = ``log 2 − log(1 + exp(−2x))``, finite however negative x is."""
    return np.log(2.0) - np.logaddexp(0.0, -2.0 * values)


def _readings(values, name, *, unread=False):
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numbers.") from None
    finite = ~np.isinf(array) if unread else np.isfinite(array)
    if array.ndim != 1 or not finite.all():
        what = "finite or NaN (not read)" if unread else "finite"
        raise ValueError(f"`{name}` must be one {what} reading a round (a 1-d array).")
    return array


def _mean_before_each(values, earlier):
    """The mean and count of `earlier` and the session's readings (NaN: not read) before each round (NaN before
    any)."""
    read = ~np.isnan(values)
    sums = np.concatenate([[0.0], np.cumsum(np.where(read, values, 0.0))])[:-1] + earlier.sum()
    counts = np.concatenate([[0], np.cumsum(read)])[:-1] + earlier.size
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums / counts, counts


def _variance_before_each(values, fallback):
    """The variance (ddof 1) of the session's `values` (NaN: not read) before each round, pooled with `fallback`
    as :data:`PRIOR_DEGREES` degrees of freedom where it is known; sums taken about the first value read, so a
    large level does not cancel a small spread away."""
    read = ~np.isnan(values)
    origin = values[read][0] if read.any() else 0.0
    centred = np.where(read, values - origin, 0.0)
    counts = np.concatenate([[0], np.cumsum(read)])[:-1]
    sums = np.concatenate([[0.0], np.cumsum(centred)])[:-1]
    squares = np.concatenate([[0.0], np.cumsum(centred**2)])[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        variances = np.where(counts >= 2, np.maximum(squares - sums**2 / counts, 0.0) / (counts - 1), np.nan)
    if not np.isfinite(fallback):
        return variances
    own = np.maximum(counts - 1, 0)
    return (own * np.nan_to_num(variances) + PRIOR_DEGREES * fallback) / (own + PRIOR_DEGREES)
