"""A bisection's session: three commits read in turn each round (the last good, a candidate, the first bad) and
decided by which level the candidate is at (:func:`results.stats.bracketed_level_test` on each round's reading of
one metric); where asked, stopped as *not reproduced* once the last good and the first bad commit are equivalent
(:func:`results.stats.sequential_comparison`, tuned to the alert's effect). The runner's session loop and
``benchmarks/bisection.py`` decide through :func:`decide_level`, the one place that does."""

import math
from dataclasses import dataclass

import numpy as np

from results.stats import UNDECIDED, bracketed_level_test, sequential_comparison

__all__ = ["CANDIDATE", "MOVED_END", "NOT_REPRODUCED", "REFERENCE", "LevelCheck", "LevelDecision", "decide_level"]

REFERENCE, CANDIDATE, MOVED_END = "reference", "candidate", "moved"
"""The labels of a bisection session's three workloads, in the order each round reads them."""

NOT_REPRODUCED = "not reproduced"
"""The decision where the last good and the first bad commit read as one level (equivalent)."""


@dataclass(frozen=True)
class LevelCheck:
    """What a bisection session decides and at which level.

    Attributes
    ----------
    metric : str
        The metric whose round readings are compared.
    alpha : float
        Each decision's error probability (its share of the bisection's budget).
    direction : {1, -1}
        +1 where the first bad commit reads higher (a time), -1 where lower (a throughput).
    expected : float
        The alert's relative change, > 0 (above 1 for a run more than twice as slow): the ends are equivalent once
        their interval lies within half of it.
    earlier : tuple of (tuple of float, tuple of float)
        Readings of the reference and of the first bad commit from earlier sessions of the bisection.
    check_ends : bool
        Stop as :data:`NOT_REPRODUCED` where the reference and the first bad commit are equivalent.
    """

    metric: str
    alpha: float
    direction: int
    expected: float
    earlier: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    check_ends: bool = False

    def __post_init__(self):
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"`alpha` must be in (0, 1); got {self.alpha!r}.")
        if self.direction not in (1, -1):
            raise ValueError(f"`direction` must be 1 or -1; got {self.direction!r}.")
        if not (0.0 < self.expected and math.isfinite(self.expected)):
            raise ValueError(f"`expected` must be a positive relative change; got {self.expected!r}.")


@dataclass(frozen=True)
class LevelDecision:
    """A bisection session's decision after the rounds read: :data:`results.stats.MOVED`,
    :data:`results.stats.AT_LEVEL`, :data:`NOT_REPRODUCED` or ``UNDECIDED``, at round `rounds`; the candidate's
    relative change over the reference with its anytime-valid interval at the check's level (None before two
    rounds, or unbounded)."""

    decision: str
    rounds: int
    change: float | None = None
    low: float | None = None
    high: float | None = None


def decide_level(reference, candidate, moved, check: LevelCheck) -> LevelDecision:
    """The decision of a bisection session from its three commits' readings, one of each a round (the rounds a
    commit read beyond the others' are not used yet)."""
    rounds = min(len(reference), len(candidate), len(moved))
    if rounds < 2:
        return LevelDecision(UNDECIDED, rounds)
    reference, candidate, moved = (np.asarray(values, dtype=float)[:rounds] for values in (reference, candidate,
                                                                                            moved))
    earlier = check.earlier if all(check.earlier) else None
    found = bracketed_level_test(reference, candidate, moved, alpha=check.alpha, direction=check.direction,
                                 earlier=earlier)
    decision, at = found.decision, found.rounds
    if check.check_ends:
        ends = _after_each_round(reference, moved, check)
        equivalent = np.flatnonzero(ends.equivalent)
        if equivalent.size and (decision == UNDECIDED or equivalent[0] + 2 < at):
            decision, at = NOT_REPRODUCED, int(equivalent[0]) + 2
    if decision == UNDECIDED:
        at = rounds
    change = _after_each_round(reference[:at], candidate[:at], check, last_only=True)
    bounded = bool(np.asarray(change.ratio_bounded).reshape(-1)[-1])
    return LevelDecision(
        str(decision), at, float(np.asarray(change.ratio).reshape(-1)[-1]) - 1.0,
        float(np.asarray(change.ratio_low).reshape(-1)[-1]) - 1.0 if bounded else None,
        float(np.asarray(change.ratio_high).reshape(-1)[-1]) - 1.0 if bounded else None)


def _after_each_round(first: np.ndarray, second: np.ndarray, check: LevelCheck, *, last_only: bool = False):
    """The anytime-valid comparison of `second` against `first` after each round from the second (or the last)."""
    counts = np.arange(1, first.size + 1)
    sides = []
    for values in (first, second):
        centred = values - values[0]  # sums about the first reading: a large level cancels no small spread
        means = np.cumsum(centred) / counts
        variances = np.maximum(np.cumsum(centred**2) - counts * means**2, 0.0) / np.maximum(counts - 1, 1)
        sides.append((means + values[0], variances))
    looks = slice(first.size - 1, None) if last_only else slice(1, None)
    (mean_a, var_a), (mean_b, var_b) = sides
    return sequential_comparison(mean_a[looks], var_a[looks], counts[looks], mean_b[looks], var_b[looks],
                                 counts[looks], alpha=check.alpha, mixture_scale=check.expected,
                                 threshold=check.expected / 2)
