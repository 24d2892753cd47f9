"""Which commit a bisection measures next, and what its finished sessions name: a pure function of the steps so far.

A confirmed regression lies between the last good night's commit and the first bad night's. The range is the
commits between them on the trusted branch, oldest first: index 0 is the last good commit, the last index the
first bad one, and every index after 0 may be the culprit. A bisection is a sequence of interleaved sessions of
three commits each, a reference at the good level, a candidate, and the first bad commit (the moved end), each
decided by :func:`results.stats.bracketed_level_test`:

1. *middle*: the commit nearest the middle of the range left (that did not fail to build) against the last good
   commit and the first bad one: at the good level, the culprit is later; at the moved level, it is this commit
   or earlier. The first session also checks that the ends still differ (where they are equivalent, by the
   session's anytime-valid comparison, the regression does not reproduce on this machine).
2. *verify*: the commit the halving named against its parent and the first bad commit: it must have moved, and
   its parent must not be at the bad level already.

Every test a bisection makes gets the same share of the error budget α: the halving's ⌈log₂ candidates⌉ level
decisions, the verification's, SPARE_DECISIONS more for halvings that build failures push off centre, and the two
checks of the ends (:func:`decision_alpha`). So a bisection names the right culprit with probability at least
1 − α when its sessions decide; and it names a wrong one only if its verification errs (a commit and its parent
at one level, decided moved): with probability at most one share. Because the plan is a function of the finished
steps (each checked to be the one the plan asked for), a bisection whose worker died resumes by calling it again
with the steps stored so far.
"""

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from results.stats import AT_LEVEL, MOVED

from ..session.levels import NOT_REPRODUCED

__all__ = ["MIDDLE", "NOT_REPRODUCED", "VERIFY", "Measure", "Outcome", "Step", "decision_alpha", "next_step"]

MIDDLE, VERIFY = "middle", "verify"
"""The two kinds of session of a bisection (the module's docstring)."""

SPARE_DECISIONS = 1
"""Decisions beyond the halving's ⌈log₂ candidates⌉ and the verification that the budget is shared with: commits
that fail to build push the middle off centre, and the halving may need a step more."""
ENDS_CHECKS = 2
"""Tests of the ends that share the budget: the first session's (do the ends still differ?) and the verification's
(is the named commit's parent not at the bad level already?)."""


@dataclass(frozen=True)
class Step:
    """A finished session: commit `candidate` against commits `reference` (good level) and `moved` (bad level),
    indexes into the range.

    ``decision`` is :data:`results.stats.MOVED`, :data:`results.stats.AT_LEVEL`, :data:`NOT_REPRODUCED` or
    ``UNDECIDED`` (its budget ran out). ``change``, ``low`` and ``high`` are the candidate's relative change over
    the reference and its interval (None where the session had none); ``rounds`` and ``seconds`` what it took."""

    role: str
    reference: int
    candidate: int
    moved: int
    decision: str
    change: float | None = None
    low: float | None = None
    high: float | None = None
    rounds: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Measure:
    """The next session: `candidate` between `reference` and `moved`, decided at `alpha`; ``check_ends`` asks it
    to stop as *not reproduced* where the reference and the moved end are equivalent."""

    role: str
    reference: int
    candidate: int
    moved: int
    alpha: float
    check_ends: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a bisection found: the culprit's index with its change over its parent (from the verify session), or
    None with the range left (``last_good`` … ``first_bad``) and why it is not isolated."""

    culprit: int | None
    last_good: int
    first_bad: int
    change: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str = ""


def decision_alpha(commits: int, alpha: float) -> float:
    """Each test's share of the error budget `alpha` in a range of `commits` (both ends included)."""
    if isinstance(commits, bool) or not isinstance(commits, int) or commits < 2:
        raise ValueError(f"`commits` must be a whole number of at least 2 (the last good and the first bad); "
                         f"got {commits!r}.")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"`alpha` must be strictly between 0 and 1; got {alpha!r}.")
    return alpha / (_halvings(commits) + 1 + SPARE_DECISIONS + ENDS_CHECKS)


def next_step(*, commits: int, steps: Sequence[Step], failed: Collection[int] = (), alpha: float) -> Measure | Outcome:
    """The next session of a bisection, or its outcome, from the steps finished so far.

    Parameters
    ----------
    commits : int
        The range's length, both ends included (at least 2).
    steps : sequence of Step
        The finished sessions, in the order they ran.
    failed : collection of int
        Indexes of commits that failed to build (never chosen again; no step of theirs).
    alpha : float
        The probability that the named culprit is wrong.
    """
    share = decision_alpha(commits, alpha)
    last = commits - 1
    good, bad = 0, last
    for position, step in enumerate(steps):
        asked = _planned(good, bad, last, failed, share, first=position == 0)
        if not isinstance(asked, Measure) or (step.role, step.reference, step.candidate, step.moved) != (
                asked.role, asked.reference, asked.candidate, asked.moved):
            raise ValueError(f"step {position} ({step.role} of commit {step.candidate}) is not the one the plan asked "
                             f"for: the steps belong to another range or another order")
        if step.decision == NOT_REPRODUCED:
            if step.role == VERIFY and position > 0:
                return Outcome(None, good, bad, step.change, step.low, step.high, reason=(
                    f"commit {step.reference}, the parent of the commit the halving named, is at the bad level: the "
                    f"range holds several changes, or a step was decided wrongly"))
            return Outcome(None, 0, last, reason="the regression does not reproduce between the ends on this machine")
        if step.decision not in (AT_LEVEL, MOVED):
            return Outcome(None, good, bad, reason=f"the {step.role} session of commit {step.candidate} decided "
                                                   f"nothing within its budget: too noisy for this effect")
        if step.role == VERIFY:
            if step.decision == MOVED:
                return Outcome(bad, good, bad, step.change, step.low, step.high)
            return Outcome(None, good, bad, step.change, step.low, step.high, reason=(
                "the commit the halving named is at its parent's level: the range holds several changes, or a "
                "step was decided wrongly"))
        if step.decision == MOVED:
            bad = step.candidate
        else:
            good = step.candidate
    if len(steps) >= _halvings(commits) + SPARE_DECISIONS and _middle(good, bad, failed) is not None:
        return Outcome(None, good, bad, reason="the error budget's decisions are spent (build failures kept the "
                                               "halving off centre)")
    return _planned(good, bad, last, failed, share, first=not steps)


def _planned(good: int, bad: int, last: int, failed: Collection[int], share: float, *, first: bool
             ) -> Measure | Outcome:
    """The session the plan asks for with the range narrowed to `good` … `bad`."""
    middle = _middle(good, bad, failed)
    if middle is not None:
        return Measure(MIDDLE, 0, middle, last, share, check_ends=first)
    if bad - good > 1:
        return Outcome(None, good, bad, reason=f"commits {good + 1}–{bad - 1} failed to build: the culprit is one "
                                               f"of them or commit {bad}")
    return Measure(VERIFY, good, bad, last, share, check_ends=True)


def _halvings(commits: int) -> int:
    return max(1, math.ceil(math.log2(commits - 1)))


def _middle(good: int, bad: int, failed: Collection[int]) -> int | None:
    """The commit strictly between `good` and `bad` nearest their middle that did not fail to build (the earlier
    of two as near); None where there is none."""
    candidates = [index for index in range(good + 1, bad) if index not in failed]
    if not candidates:
        return None
    centre = (good + bad) / 2
    return min(candidates, key=lambda index: (abs(index - centre), index))
