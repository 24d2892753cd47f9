"""Is a commit at the good level or at the bad one? Two sequential tests, run together, exact for any noise.

A bisection asks this of every commit it measures. Its session reads three commits in each round: the reference
(last good), the candidate and the moved end (first bad). A candidate at the reference's level reads like the
reference, so in each round ``d = c − r`` is as likely to be positive as negative (symmetric about zero, whatever the
noise's distribution and spread); a candidate at the moved level makes ``e = c − m`` symmetric likewise. For a
symmetric ``d``, ``exp(λd − λ²d²/2)`` has expectation at most one for any λ fixed before it is read (de la Peña
1999), so the product over the rounds is a nonnegative supermartingale, and by Ville's inequality it ever reaches
``1/α`` with probability at most α, however often it is looked at. Each test bets λ in the direction of the other
level, sized from the rounds before (the move and the spread estimated so far, and the ends' earlier readings):
the estimates set its speed, never its level. The first test to reach ``1/α`` decides.
"""

from dataclasses import dataclass

import numpy as np

from ._base import check_confidence
from ._sequential import UNDECIDED

__all__ = ["AT_LEVEL", "MOVED", "LevelTest", "bracketed_level_test"]

AT_LEVEL, MOVED = "at level", "moved"
"""What :func:`bracketed_level_test` decides: the candidate is at the reference's level; it is at the moved
level. (And :data:`results.stats.UNDECIDED`: neither yet.)"""


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
    """

    decision: str
    rounds: int
    log_ratio_moved: float
    log_ratio_at_level: float
    shift: float
    change: float
    alpha: float


def bracketed_level_test(reference, candidate, moved, *, alpha=0.01, direction=1, earlier=None, burn_in=5):
    """Decide whether `candidate` is at the level of `reference` or at that of `moved`, from interleaved rounds.

    With ``d_i = c_i − r_i``, ``e_i = c_i − m_i``, ``Δ_i`` the estimate of ``m − r`` from the rounds before i (and
    the `earlier` readings), kept on the regression's side, and ``v`` the variance of ``d`` (``e``) before round i:

        ``log Λ_moved = Σ (λ_i d_i − λ_i² d_i²/2)`` with ``λ_i = Δ_i / (v_d + Δ_i²)`` (tests "at the reference's
        level": ``d`` symmetric about zero),
        ``log Λ_level = Σ (−μ_i e_i − μ_i² e_i²/2)`` with ``μ_i = Δ_i / (v_e + Δ_i²)`` (tests "at the moved level").

    λ maximises the expected gain ``λΔ − λ²(v + Δ²)/2`` of a round under the other level: ``Δ²/(2(v + Δ²))``,
    Wald's ``Δ²/2v`` where the move is small beside the spread. The first round at which either ratio reaches
    ``log(1/α)`` decides (*moved*, resp. *at level*; the larger where both do).

    Parameters
    ----------
    reference, candidate, moved : array_like, shape (rounds,)
        The three commits' readings, one of each a round, in the order the rounds ran.
    alpha : float, optional
        The probability of each wrong decision: *moved* for a candidate at the reference's level, *at level*
        for one at the moved level. Exact for any noise symmetric in the two commits compared (the same code
        read in the same rounds), by the supermartingale above.
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
    de la Peña, V. H. (1999). A general class of exponential inequalities for martingales and ratios. *Ann.
    Probab.* 27, 537–564 (the bound for symmetric increments). Howard, S. R., Ramdas, A., McAuliffe, J. &
    Sekhon, J. (2020). Time-uniform Chernoff bounds via nonnegative supermartingales. *Probab. Surveys* 17,
    257–317. Wald, A. (1947). *Sequential Analysis*. Wiley, ch. 3. Ville, J. (1939). *Étude critique de la notion
    de collectif*.
    """
    alpha = check_confidence(alpha, "alpha")
    if direction not in (1, -1):
        raise ValueError(f"`direction` must be 1 or -1; got {direction!r}.")
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)) or burn_in < 2:
        raise ValueError(f"`burn_in` must be a whole number of at least 2; got {burn_in!r}.")
    reference, candidate, moved = (_readings(values, name) for values, name in (
        (reference, "reference"), (candidate, "candidate"), (moved, "moved")))
    if not reference.size == candidate.size == moved.size:
        raise ValueError("`reference`, `candidate` and `moved` must hold one reading each a round (equal lengths).")
    if reference.size == 0:
        raise ValueError("`reference`, `candidate` and `moved` must hold at least one round.")
    if earlier is None:
        earlier_reference, earlier_moved = np.empty(0), np.empty(0)
    else:
        try:
            earlier_reference, earlier_moved = (_readings(values, "earlier") for values in earlier)
        except (TypeError, ValueError):
            raise ValueError("`earlier` must be (reference readings, moved readings).") from None
    start = 0 if min(earlier_reference.size, earlier_moved.size) >= 2 else burn_in

    # What round i bets with is computed from the rounds before it and the earlier readings only.
    mean_r, count_r = _mean_before_each(reference, earlier_reference)
    mean_m, count_m = _mean_before_each(moved, earlier_moved)
    shift = direction * np.maximum(direction * (mean_m - mean_r), 0.0)
    # Before the session has spread of its own: the ends' earlier readings (two commits' variances add).
    fallback = (np.var(earlier_reference, ddof=1) + np.var(earlier_moved, ddof=1)
                if min(earlier_reference.size, earlier_moved.size) >= 2 else np.nan)
    below = candidate - reference  # mean zero, and symmetric, for a candidate at the reference's level
    above = candidate - moved  # likewise for a candidate at the moved level
    with np.errstate(divide="ignore", invalid="ignore"):
        bet_moved = shift / (_variance_before_each(below, fallback) + shift**2)
        bet_level = shift / (_variance_before_each(above, fallback) + shift**2)
    live = (np.arange(reference.size) >= start) & (count_r > 0) & (count_m > 0)
    bet_moved = np.where(live & np.isfinite(bet_moved), bet_moved, 0.0)
    bet_level = np.where(live & np.isfinite(bet_level), bet_level, 0.0)
    step_moved = bet_moved * below - (bet_moved * below) ** 2 / 2
    step_level = -bet_level * above - (bet_level * above) ** 2 / 2
    log_moved, log_level = np.cumsum(step_moved), np.cumsum(step_level)
    bound = np.log(1.0 / alpha)
    crossed = np.flatnonzero((log_moved >= bound) | (log_level >= bound))
    at = int(crossed[0]) if crossed.size else reference.size - 1
    decision = UNDECIDED if not crossed.size else MOVED if log_moved[at] >= log_level[at] else AT_LEVEL
    seen = slice(0, at + 1)
    reference_mean = np.concatenate([earlier_reference, reference[seen]]).mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        shift_seen = np.concatenate([earlier_moved, moved[seen]]).mean() / reference_mean - 1.0
        change_seen = candidate[seen].mean() / reference[seen].mean() - 1.0
    return LevelTest(
        decision=decision,
        rounds=at + 1,
        log_ratio_moved=float(log_moved[at]),
        log_ratio_at_level=float(log_level[at]),
        shift=float(shift_seen),
        change=float(change_seen),
        alpha=alpha,
    )


def _readings(values, name):
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be numbers.") from None
    if array.ndim != 1 or not np.isfinite(array).all():
        raise ValueError(f"`{name}` must be one finite reading a round (a 1-d array).")
    return array


def _mean_before_each(values, earlier):
    """The mean and count of `earlier` and the session's readings before each round (NaN before any)."""
    sums = np.concatenate([[0.0], np.cumsum(values)])[:-1] + earlier.sum()
    counts = np.arange(values.size) + earlier.size
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums / counts, counts


def _variance_before_each(values, fallback):
    """The variance (ddof 1) of the session's `values` before each round, `fallback` before two; sums taken about
    the first value, so a large level does not cancel a small spread away."""
    centred = values - values[0]
    counts = np.arange(values.size)
    sums = np.concatenate([[0.0], np.cumsum(centred)])[:-1]
    squares = np.concatenate([[0.0], np.cumsum(centred**2)])[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        variances = np.maximum(squares - sums**2 / counts, 0.0) / (counts - 1)
    return np.where(counts >= 2, variances, fallback)
