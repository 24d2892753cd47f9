"""The bisection's plan: which commit is measured next and what the finished sessions name (no database, no
sessions: each step's decision is given)."""

import math

import pytest

from results.stats import AT_LEVEL, MOVED, UNDECIDED
from runner.bisection.plan import (
    MIDDLE,
    NOT_REPRODUCED,
    SPARE_DECISIONS,
    VERIFY,
    Measure,
    Outcome,
    Step,
    decision_alpha,
    next_step,
)



def run(commits, culprit, *, failed=(), verify=MOVED, first=None):
    """Drive the plan with sessions that decide right (a commit at or after the culprit has moved)."""
    steps = []
    while True:
        planned = next_step(commits=commits, steps=steps, failed=failed, alpha=0.05)
        if isinstance(planned, Outcome):
            return planned, steps
        assert planned.candidate not in failed and planned.moved == commits - 1
        if planned.role == VERIFY:
            decision = verify
        elif first is not None and not steps:
            decision = first
        else:
            decision = MOVED if planned.candidate >= culprit else AT_LEVEL
        steps.append(Step(planned.role, planned.reference, planned.candidate, planned.moved, decision,
                          change=0.05, low=0.03, high=0.07, rounds=20))


@pytest.mark.parametrize("commits", [2, 3, 9, 33, 257])
def test_every_culprit_is_named_in_log2_halvings_and_one_verification(commits):
    for culprit in range(1, commits):
        outcome, steps = run(commits, culprit)
        assert outcome.culprit == culprit and outcome.reason == ""
        assert (outcome.change, outcome.low, outcome.high) == (0.05, 0.03, 0.07)
        halvings = [step for step in steps if step.role == MIDDLE]
        assert len(halvings) <= math.ceil(math.log2(commits - 1))
        assert steps[-1].role == VERIFY and (steps[-1].reference, steps[-1].candidate) == (culprit - 1, culprit)


def test_the_first_session_checks_the_ends_and_every_decision_shares_the_budget():
    first = next_step(commits=33, steps=[], alpha=0.05)
    assert first == Measure(MIDDLE, 0, 16, 32, 0.05 / (5 + 1 + SPARE_DECISIONS + 2), check_ends=True)
    second = next_step(commits=33, steps=[Step(MIDDLE, 0, 16, 32, MOVED)], alpha=0.05)
    assert (second.candidate, second.check_ends) == (8, False)


def test_a_regression_that_does_not_reproduce_names_nothing():
    outcome, _ = run(33, 5, first=NOT_REPRODUCED)
    assert outcome.culprit is None and (outcome.last_good, outcome.first_bad) == (0, 32)
    assert "does not reproduce" in outcome.reason


def test_an_undecided_session_leaves_the_range_it_had():
    steps = [Step(MIDDLE, 0, 16, 32, MOVED), Step(MIDDLE, 0, 8, 32, UNDECIDED)]
    outcome = next_step(commits=33, steps=steps, alpha=0.05)
    assert outcome.culprit is None and (outcome.last_good, outcome.first_bad) == (0, 16)
    assert "too noisy" in outcome.reason


@pytest.mark.parametrize("decision, reason", [(AT_LEVEL, "at its parent's level"), (NOT_REPRODUCED, "parent")])
def test_a_culprit_that_fails_its_verification_is_not_named(decision, reason):
    outcome, steps = run(33, 7, verify=decision)
    assert outcome.culprit is None and (outcome.last_good, outcome.first_bad) == (6, 7)
    assert reason in outcome.reason and steps[-1].role == VERIFY


def test_commits_that_failed_to_build_are_stepped_over():
    outcome, steps = run(33, 20, failed={16, 17, 10})
    assert outcome.culprit == 20
    assert not {step.candidate for step in steps} & {16, 17, 10}


def test_a_culprit_whose_parent_failed_to_build_is_a_range():
    outcome, _ = run(33, 20, failed={19})
    assert outcome.culprit is None and (outcome.last_good, outcome.first_bad) == (18, 20)
    assert "19–19 failed to build" in outcome.reason


def test_the_halving_stops_when_its_decisions_are_spent(monkeypatch):
    # Build failures push this halving off centre: 5 halvings of 16 candidates, one more than log2. Without the
    # spare decision the budget does not cover the fifth, and the plan stops before it.
    failed = {2, 4, 5, 9, 12}
    outcome, steps = run(17, 16, failed=failed)
    assert outcome.culprit == 16 and [step.candidate for step in steps] == [8, 11, 13, 14, 15, 16]
    monkeypatch.setattr("runner.bisection.plan.SPARE_DECISIONS", 0)
    outcome, steps = run(17, 16, failed=failed)
    assert outcome.culprit is None and "spent" in outcome.reason and (outcome.last_good, outcome.first_bad) == (14, 16)
    assert len(steps) == 4


def test_steps_that_are_not_the_plans_are_refused():
    steps = [Step(MIDDLE, 0, 5, 32, MOVED)]
    with pytest.raises(ValueError, match="step 0 .middle of commit 5. is not the one the plan asked for"):
        next_step(commits=33, steps=steps, alpha=0.05)


def test_a_single_commit_range_that_does_not_reproduce_says_so():
    outcome = next_step(commits=2, steps=[Step(VERIFY, 0, 1, 1, NOT_REPRODUCED)], alpha=0.05)
    assert outcome.culprit is None and "does not reproduce" in outcome.reason


def test_build_failures_cost_at_most_one_halving_more_than_log2():
    # Every pattern of failures on 17 commits with the culprit at each buildable commit whose parent built.
    commits = 17
    for pattern in range(0, 2 ** 15, 7):
        failed = {index + 1 for index in range(15) if pattern >> index & 1}
        for culprit in range(1, commits):
            if culprit in failed or culprit - 1 in failed:
                continue
            outcome, steps = run(commits, culprit, failed=failed)
            assert outcome.culprit == culprit, (failed, culprit, outcome)
            assert sum(step.role == MIDDLE for step in steps) <= math.ceil(math.log2(commits - 1)) + 1


@pytest.mark.parametrize("commits, alpha, message", [
    (1, 0.05, "`commits` must be a whole number of at least 2"),
    (2.5, 0.05, "`commits` must be a whole number"),
    (10, 1.0, "`alpha` must be strictly between 0 and 1"),
])
def test_invalid_parameters_are_named(commits, alpha, message):
    with pytest.raises(ValueError, match=message):
        decision_alpha(commits, alpha)
