"""Is a commit at the good level or at the bad one? Two adaptive sequential probability ratio tests, run together.

A bisection asks this of every commit it measures. Its session reads three commits in each round: the reference
(last good), the candidate and the moved end (first bad). Whether the candidate is at the reference's level is a
simple hypothesis about ``c − r`` (mean zero), whatever the effect; whether it is at the moved level is one about
``c − m``. Each is tested against the other level by Wald's likelihood ratio with the unknown effect replaced by
its estimate from the earlier rounds (Robbins & Siegmund 1974, the adaptive SPRT): the ratio stays a martingale
under the hypothesis it tests, so by Ville's inequality it ever reaches ``1/α`` with probability at most α, however
often it is looked at and however wrong the effect's estimate (which only slows it). The first ratio to reach
``1/α`` decides. Known or precisely estimated variance makes both bounds exact; a variance estimated from few
rounds is inflated by ``ν/(ν − 2)``, a t variable's variance, so that they hold as measured (the tests).
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

    With ``d_i = c_i − r_i`` and ``e_i = c_i − m_i`` in round i, ``Δ_i`` the estimate of ``m − r`` from the
    rounds before i (and the `earlier` readings), kept on the regression's side, and ``v`` the variances of
    ``d`` and ``e`` estimated from the rounds before i:

        ``log Λ_moved = Σ (Δ_i d_i − Δ_i²/2) / v_d``  (tests ``E d = 0``: the candidate at the reference's level),
        ``log Λ_level = Σ (−Δ_i e_i − Δ_i²/2) / v_e``  (tests ``E e = 0``: the candidate at the moved level).

    The first round at which either reaches ``log(1/α)`` decides (*moved*, resp. *at level*; the larger where
    both do).

    Parameters
    ----------
    reference, candidate, moved : array_like, shape (rounds,)
        The three commits' readings, one of each a round, in the order the rounds ran.
    alpha : float, optional
        The probability of each wrong decision: *moved* for a candidate at the reference's level, *at level*
        for one at the moved level.
    direction : {1, -1}, optional
        The side of the move: +1 where the moved end reads higher (times). An estimate on the other side
        counts as no move yet.
    earlier : tuple of array_like, optional
        ``(reference_readings, moved_readings)`` from earlier sessions of the same two commits: the move and the
        spread are estimated from them from the first round on (the test stays valid: they are fixed before
        it starts).
    burn_in : int, optional
        Rounds read before the ratios start to accumulate where there are no earlier readings (the spread is
        not yet known).

    Returns
    -------
    LevelTest

    References
    ----------
    Wald, A. (1947). *Sequential Analysis*. Wiley, ch. 3. Robbins, H. & Siegmund, D. (1974). The expected sample
    size of some tests of power one. *Ann. Statist.* 2, 415–436 (the adaptive likelihood ratio, a martingale
    under the null). Ville, J. (1939). *Étude critique de la notion de collectif*, the maximal inequality.
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
    start = 0 if min(earlier_reference.size, earlier_moved.size) >= burn_in else burn_in

    # Running sums before each round (round i sees rounds < i and the earlier readings).
    mean_r, var_r, count_r = _before_each(reference, earlier_reference)
    mean_m, var_m, count_m = _before_each(moved, earlier_moved)
    _, var_c, count_c = _before_each(candidate, np.empty(0))
    shift = direction * np.maximum(direction * (mean_m - mean_r), 0.0)
    # One spread for the three commits of one benchmark on one machine, pooled (each about its own mean): the
    # candidate's few first rounds then borrow the ends' many readings.
    parts = [(var_r, count_r), (var_m, count_m), (var_c, count_c)]
    sums = sum(np.where(count >= 2, variance * (count - 1), 0.0) for variance, count in parts)
    df = sum(np.where(count >= 2, count - 1, 0) for _, count in parts)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.where(df > 0, sums / df, np.nan) * _inflation(df + 1)
    var_d = var_e = 2.0 * pooled
    with np.errstate(divide="ignore", invalid="ignore"):
        live = (np.arange(reference.size) >= start) & np.isfinite(var_d) & np.isfinite(var_e) \
            & (var_d > 0) & (var_e > 0) & np.isfinite(shift)
        step_moved = np.where(live, (shift * (candidate - reference) - shift**2 / 2) / var_d, 0.0)
        step_level = np.where(live, (-shift * (candidate - moved) - shift**2 / 2) / var_e, 0.0)
    log_moved, log_level = np.cumsum(step_moved), np.cumsum(step_level)
    bound = np.log(1.0 / alpha)
    crossed = np.flatnonzero((log_moved >= bound) | (log_level >= bound))
    at = int(crossed[0]) if crossed.size else reference.size - 1
    decision = UNDECIDED if not crossed.size else MOVED if log_moved[at] >= log_level[at] else AT_LEVEL
    seen = slice(0, at + 1)
    reference_mean = np.concatenate([earlier_reference, reference[seen]]).mean()
    return LevelTest(
        decision=decision,
        rounds=at + 1,
        log_ratio_moved=float(log_moved[at]),
        log_ratio_at_level=float(log_level[at]),
        shift=float(np.concatenate([earlier_moved, moved[seen]]).mean() / reference_mean - 1.0),
        change=float(candidate[seen].mean() / reference[seen].mean() - 1.0),
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


def _before_each(values, earlier):
    """The mean, variance (ddof 1) and count of `earlier` and the session's readings before each round."""
    cumulative = np.concatenate([[0.0], np.cumsum(values)])[:-1] + earlier.sum()
    squares = np.concatenate([[0.0], np.cumsum(values**2)])[:-1] + (earlier**2).sum()
    counts = np.arange(values.size) + earlier.size
    with np.errstate(divide="ignore", invalid="ignore"):
        means = cumulative / counts
        variances = np.maximum(squares - counts * means**2, 0.0) / (counts - 1)
    return means, np.where(counts >= 2, variances, np.nan), counts


def _inflation(counts):
    """``ν/(ν − 2)`` for ν = counts − 1 (∞ below ν = 3): a variance estimated from few readings, made large
    enough that the plug-in ratio keeps its level."""
    df = counts - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(df > 2, df / (df - 2), np.inf)
