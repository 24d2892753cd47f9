"""A bisection's session: each round reads the last good commit (the reference), a candidate and the first bad
commit (the moved end), in that order, or the candidate and the one end the level test asks for, and is decided by
which level the candidate is at (:func:`results.stats.bracketed_level_test` on each round's reading of one metric);
where asked, stopped as *not reproduced* once the last good and the first bad commit are equivalent
(:func:`results.stats.sequential_comparison`, tuned to the alert's effect). The runner's session loop and
``benchmarks/bisection.py`` decide through :func:`decide_level`, the one place that does; :func:`follow_level`
tells the loop which commit it reads next."""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from results.stats import UNDECIDED, bracketed_level_test, sequential_comparison

from .rounds import RoundRecord

__all__ = ["CANDIDATE", "MOVED_END", "NOT_REPRODUCED", "REFERENCE", "LevelCheck", "LevelDecision", "LevelProgress",
           "decide_level", "follow_level"]

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
    relative change over the reference with its anytime-valid interval at the check's level (over the reference's
    earlier readings too where the session read it fewer than twice; None before two rounds, or unbounded); and
    which ends each round reads as the rounds before it ask ((reference, moved end),
    one row a round and one for the next round: :attr:`results.stats.LevelTest.planned_reads`)."""

    decision: str
    rounds: int
    change: float | None = None
    low: float | None = None
    high: float | None = None
    planned_reads: np.ndarray = field(default_factory=lambda: np.ones((1, 2), dtype=bool), repr=False,
                                      compare=False)

    def stored(self) -> dict:
        """What a session's outcome keeps of the decision."""
        return {"decision": self.decision, "rounds": self.rounds, "change": self.change, "low": self.low,
                "high": self.high}


@dataclass(frozen=True)
class LevelProgress:
    """Where a bisection's session stands after the readings so far: the decision on its rounds, whether the
    readings end a round (a session stops only there), the commit it reads next (a workload label), and what the
    next reading's work amount is planned from: each complete round as its shortest reading.

    Every reading of a round does the same work, planned from the rounds before it: a candidate at a commit's level
    then reads like that commit in each round, whichever commits the earlier rounds read (planned per commit, the
    candidate, read every round, would run ahead of the ends in the plan's schedule and read at other amounts). A
    round's shortest reading says whether the round was too short (a symmetric choice: no commit's own readings
    steer the plan)."""

    decision: LevelDecision
    round_complete: bool
    next_workload: str
    planning: tuple[RoundRecord, ...] = ()


def follow_level(records: Sequence[RoundRecord], check: LevelCheck) -> LevelProgress:
    """A bisection session's decision from its readings in the order they ran (:func:`decide_level` on its
    rounds), whether they end a round, and the workload read next.

    A round is the reference's reading (where the round reads it), the candidate's, then the moved end's (where
    it reads it): the readings split into rounds by that order alone, so stored rounds replay to the same
    decision. A round with a reading too short to analyse counts that reading as not read, and a round whose
    candidate or both ends are so is left out of the decision."""
    rounds: list[dict[str, RoundRecord]] = []
    for record in records:
        label = record.workload
        current = rounds[-1] if rounds else None
        if current is None or label == REFERENCE and current or label == CANDIDATE and (
                CANDIDATE in current or MOVED_END in current) or label == MOVED_END and MOVED_END in current:
            rounds.append({})
        rounds[-1][label] = record

    def reading(read: dict[str, RoundRecord], label: str) -> float:
        record = read.get(label)
        return record.outcome.readings[check.metric] if record is not None and record.analysed else np.nan

    arms = np.array([[reading(read, label) for label in (REFERENCE, CANDIDATE, MOVED_END)] for read in rounds]
                    ).reshape(-1, 3)
    usable = ~np.isnan(arms[:, 1]) & ~(np.isnan(arms[:, 0]) & np.isnan(arms[:, 2]))
    decision = decide_level(*arms[usable].T, check)
    last = rounds[-1] if rounds else {}
    # The last round's plan: its row where it is among the rounds decided on, the next round's otherwise.
    plan = decision.planned_reads[-2] if rounds and usable[-1] else decision.planned_reads[-1]
    complete = not last or CANDIDATE in last and (MOVED_END in last or not plan[1])
    planning = tuple(min(read.values(), key=lambda record: record.outcome.duration)
                     for read in (rounds if complete else rounds[:-1]))
    if complete:
        following = decision.planned_reads[-1]
        return LevelProgress(decision, True, REFERENCE if following[0] else CANDIDATE, planning)
    return LevelProgress(decision, False, MOVED_END if CANDIDATE in last else CANDIDATE, planning)


def decide_level(reference, candidate, moved, check: LevelCheck) -> LevelDecision:
    """The decision of a bisection session from its rounds: one reading of the candidate a round and one of each
    end it read (NaN where a round did not read that end), in the order the rounds ran."""
    reference, candidate, moved = (np.asarray(values, dtype=float).reshape(-1) for values in (reference, candidate,
                                                                                                moved))
    rounds = candidate.size
    if not rounds:
        return LevelDecision(UNDECIDED, 0)
    earlier = check.earlier if all(check.earlier) else None
    found = bracketed_level_test(reference, candidate, moved, alpha=check.alpha, direction=check.direction,
                                 earlier=earlier)
    planned = found.planned_reads
    if rounds < 2:
        return LevelDecision(UNDECIDED, rounds, planned_reads=planned)
    decision, at = found.decision, found.rounds
    if check.check_ends:
        looks, ends = _ends_after_each_round(reference, moved, check)
        equivalent = (looks[np.asarray(ends.equivalent, dtype=bool).reshape(-1)] + 1 if ends is not None
                      else np.empty(0, dtype=int))
        if equivalent.size and (decision == UNDECIDED or equivalent[0] < at):
            decision, at = NOT_REPRODUCED, int(equivalent[0])
    if decision == UNDECIDED:
        at = rounds
    own = reference[:at][~np.isnan(reference[:at])]
    # A session whose candidate sits at the reference's level reads the reference seldom: its change is then over
    # the reference's readings of the earlier sessions too.
    base = own if own.size >= 2 else np.concatenate([np.asarray(check.earlier[0], dtype=float), own])
    change = _change_over(base, candidate[:at], check)
    if change is None:
        return LevelDecision(str(decision), at, planned_reads=planned)
    bounded = bool(change.ratio_bounded)
    return LevelDecision(str(decision), at, float(change.ratio) - 1.0,
                         float(change.ratio_low) - 1.0 if bounded else None,
                         float(change.ratio_high) - 1.0 if bounded else None, planned_reads=planned)


def _change_over(reference: np.ndarray, candidate: np.ndarray, check: LevelCheck):
    """The anytime-valid comparison of all the `candidate`'s readings against all the `reference`'s (at least two
    each; None otherwise)."""
    if min(reference.size, candidate.size) < 2:
        return None
    return sequential_comparison(reference.mean(), reference.var(ddof=1), reference.size, candidate.mean(),
                                 candidate.var(ddof=1), candidate.size, alpha=check.alpha,
                                 mixture_scale=check.expected, threshold=check.expected / 2)


def _ends_after_each_round(first: np.ndarray, second: np.ndarray, check: LevelCheck):
    """The anytime-valid comparison of `second` against `first` (NaN: not read that round) after each round at which
    each side has two readings, with those rounds' indexes; None where there is none."""
    sides = []
    for values in (first, second):
        read = ~np.isnan(values)
        counts = np.cumsum(read)
        origin = values[read][0] if read.any() else 0.0
        centred = np.where(read, values - origin, 0.0)  # sums about the first reading: no small spread cancelled
        with np.errstate(divide="ignore", invalid="ignore"):
            means = np.cumsum(centred) / counts
            variances = np.maximum(np.cumsum(centred**2) - counts * means**2, 0.0) / np.maximum(counts - 1, 1)
        sides.append((means + origin, variances, counts))
    (mean_a, var_a, count_a), (mean_b, var_b, count_b) = sides
    looks = np.flatnonzero((count_a >= 2) & (count_b >= 2))
    if not looks.size:
        return looks, None
    return looks, sequential_comparison(mean_a[looks], var_a[looks], count_a[looks], mean_b[looks], var_b[looks],
                                        count_b[looks], alpha=check.alpha, mixture_scale=check.expected,
                                        threshold=check.expected / 2)
