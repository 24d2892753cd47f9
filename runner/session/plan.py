"""How much work each round does (Pilot §III-F): rounds grow until a round's readings are enough for its
analysis, and with WPS the work amounts spread over the range the linear model needs."""

import math

import numpy as np

from results.stats import round_increment, work_amounts

from .targets import WarmupMethod


def work_amount_plan(rounds, targets, *, floor=None, cap=None):
    """The next work amount of one workload, from its rounds so far (Pilot §III-A, §III-E; spec §4).

    1. After a round shorter than ``min_round_duration`` (stored, not analysed), the work amount
       doubles and the lower end a of the valid range is raised to it. With EDM warm-up removal, a
       round with at most ``2 · edm_min_size`` unit readings is too short in the same way, and
       the work amount grows in proportion to the readings missing.
    2. The first ``trial_rounds`` long-enough rounds run at a, to learn the seconds per work unit.
    3. Up to ``first_estimate_rounds`` rounds then grow by k seconds each, k from Pilot eq. 5
       with the trial duration s and T = ``first_estimate_seconds``, for a quick first estimate.
    4. Then the breadth-first midpoints of (a, b): a + (b−a)/2, a + (b−a)/4, a + 3(b−a)/4, …

    Parameters
    ----------
    rounds : sequence of RoundRecord
        This workload's rounds, in order.
    targets : SessionTargets
    floor : float, optional
        Raise a to this (WPS: α·v of the latest fit).
    cap : float, optional
        Largest useful work amount: the work units expected to supply the samples still needed
        (§3 drives the session), so the last round does not overshoot.

    Returns
    -------
    float
    """
    low, high = targets.work_range
    long_rounds = []
    for record in rounds:
        growth = growth_needed(record.outcome, targets)
        if growth > 1.0:
            low = max(low, min(growth * record.work_amount, high))
        else:
            long_rounds.append(record)
    if floor is not None:
        low = min(max(low, floor), high)
    if rounds and growth_needed(rounds[-1].outcome, targets) > 1.0:
        return _whole(low, targets)
    done = len(long_rounds)
    if done < targets.trial_rounds:
        return _whole(low, targets)
    if done < targets.first_estimate_rounds:
        trials = long_rounds[: targets.trial_rounds]
        seconds = float(np.mean([record.outcome.duration for record in trials]))
        units = float(np.mean([record.work_amount for record in trials]))
        step = _round_increment(seconds, targets.first_estimate_rounds, targets.first_estimate_seconds)
        amount = units * (seconds + done * step) / seconds
    else:
        amount = _midpoint(low, high, done - targets.first_estimate_rounds + 1)
    if cap is not None:
        amount = min(amount, cap)
    return _whole(min(max(amount, low), high), targets)


def growth_needed(outcome, targets):
    """By how much a round's work amount must grow before such a round can be analysed; 1.0 when
    it can. Too short a round doubles (Pilot §III-A). Under EDM a round needs more unit readings
    than two segments of ``edm_min_size``: with fewer its warm-up would be averaged in unseen, and
    with exactly two segments' worth a split leaves no segment holding more than half."""
    growth = 2.0 if outcome.duration < targets.min_round_duration else 1.0
    if targets.warmup is WarmupMethod.EDM:
        counts = [len(units) for units in outcome.unit_readings.values() if len(units)]
        smallest = 2 * targets.edm_min_size + 1
        if counts and min(counts) < smallest:
            growth = max(growth, smallest / min(counts))
    return growth


def _whole(amount, targets):
    if targets.whole_units:
        return float(math.ceil(amount - 1e-9))
    return float(amount)


def _round_increment(first_duration, rounds, target_seconds):
    """k of Pilot eq. 5, never negative: when n rounds of length s already take T, rounds stay at s."""
    if target_seconds <= 0.0 or first_duration <= 0.0:
        return 0.0
    return max(0.0, round_increment(first_duration, rounds, target_time=target_seconds))


def _midpoint(low, high, position):
    """The `position`-th (1-based) breadth-first midpoint of (low, high) (spec §4); once short rounds
    have raised the floor to the top of the range, every round takes the largest work amount."""
    if low >= high:
        return float(high)
    return float(work_amounts(low, high, position)[-1])
