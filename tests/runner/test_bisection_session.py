"""A bisection's session in Pilot's loop (no Django, a fake clock): each round reads the candidate and the ends the
level test asks for, decided by which level the candidate is at, stopped as "not reproduced" when the ends read as
one level."""

import numpy as np
import pytest

from results.stats import AT_LEVEL, MOVED, UNDECIDED, bracketed_level_test
from runner.session import MetricSpec, RoundOutcome, SessionStatus, SessionTargets, run_session
from runner.session.levels import CANDIDATE, MOVED_END, NOT_REPRODUCED, REFERENCE, LevelCheck, decide_level
from tests.runner.clock import FakeClock


TIME = MetricSpec("time", "s", "lower_is_better")


def commit(clock, level, *, noise=0.05, seed):
    """A commit's workload: one reading a round around `level`, each round a simulated 10 ms."""
    rng = np.random.default_rng(seed)

    def workload(work_amount):
        clock.now += 0.01
        return RoundOutcome(duration=0.01, readings={"time": float(level * (1 + noise * rng.standard_normal()))})

    return workload


def session(levels, *, check_ends=False, budget_rounds=3000, seed=0):
    clock = FakeClock()
    workloads = {label: commit(clock, level, seed=seed + index)
                 for index, (label, level) in enumerate(zip((REFERENCE, CANDIDATE, MOVED_END), levels))}
    targets = SessionTargets(warmup="none", work_range=(1, 2), min_round_duration=0.0, trial_rounds=1,
                             first_estimate_rounds=2, budget_rounds=budget_rounds, budget_seconds=1e9,
                             level_check=LevelCheck(metric="time", alpha=0.05 / 7, direction=1, expected=0.05,
                                                    check_ends=check_ends))
    return run_session(workloads, [TIME], targets, clock=clock)


@pytest.mark.parametrize("candidate, decided", [(1.0, AT_LEVEL), (1.05, MOVED)])
def test_the_session_ends_when_the_candidates_level_is_decided(candidate, decided):
    outcome = session((1.0, candidate, 1.05))
    assert outcome.status == SessionStatus.RESOLVED and outcome.level.decision == decided
    # The first rounds read all three commits; later ones the candidate and the end the test asked for, and the
    # session stopped with the round that decided.
    labels = [record.workload for record in outcome.rounds]
    assert labels[:3] == [REFERENCE, CANDIDATE, MOVED_END]
    assert labels.count(CANDIDATE) == outcome.level.rounds and labels[-1] != REFERENCE
    assert len(labels) < 2.5 * outcome.level.rounds
    # Split at each candidate (an end read before it is the reference, after it the moved end): the level test on
    # those rounds asks, for every round, for the ends it read.
    rounds, position = [], 0
    for record in outcome.rounds:
        if record.workload == CANDIDATE:
            rounds.append({CANDIDATE: record.outcome.readings["time"]})
        elif record.workload == MOVED_END:
            rounds[-1][MOVED_END] = record.outcome.readings["time"]
    references = [record.outcome.readings["time"] for record in outcome.rounds if record.workload == REFERENCE]
    for index, record in enumerate(outcome.rounds):
        if record.workload == REFERENCE:
            rounds[sum(label == CANDIDATE for label in labels[:index])][REFERENCE] = references[position]
            position += 1
    arms = [[read.get(label, np.nan) for read in rounds] for label in (REFERENCE, CANDIDATE, MOVED_END)]
    found = bracketed_level_test(*arms, alpha=0.05 / 7)
    assert found.decision == decided and found.rounds == outcome.level.rounds
    assert found.planned_reads[:-1].tolist() == [[REFERENCE in read, MOVED_END in read] for read in rounds]
    assert outcome.level.low < outcome.level.change < outcome.level.high
    assert abs(outcome.level.change - (candidate - 1.0)) < 0.05


def test_ends_at_one_level_stop_as_not_reproduced():
    outcome = session((1.0, 1.0, 1.0), check_ends=True)
    assert outcome.status == SessionStatus.RESOLVED and outcome.level.decision == NOT_REPRODUCED


def test_a_session_out_of_rounds_is_unresolved_and_undecided():
    outcome = session((1.0, 1.0, 1.0), budget_rounds=60)
    assert outcome.status == SessionStatus.UNRESOLVED and outcome.level.decision == UNDECIDED


def test_the_decision_is_the_level_tests_on_the_rounds_read():
    rng = np.random.default_rng(4)
    reference, candidate, moved = (level * (1 + 0.02 * rng.standard_normal(40)) for level in (1.0, 1.05, 1.05))
    moved[10::2] = np.nan  # rounds that read the reference alone
    check = LevelCheck(metric="time", alpha=0.01, direction=1, expected=0.05)
    decided = decide_level(reference, candidate, moved, check)
    found = bracketed_level_test(reference, candidate, moved, alpha=0.01)
    assert decided.decision == found.decision == MOVED and decided.rounds == found.rounds
    assert decide_level(reference[:1], candidate[:1], moved[:1], check) == type(decided)(UNDECIDED, 1)


@pytest.mark.parametrize("options, message", [({"alpha": 0.0}, "`alpha`"), ({"direction": 0}, "`direction`"),
                                              ({"expected": 0.0}, "`expected`")])
def test_a_check_names_its_bad_parameter(options, message):
    with pytest.raises(ValueError, match=message):
        LevelCheck(**{"metric": "time", "alpha": 0.01, "direction": 1, "expected": 0.05, **options})


def test_a_regression_more_than_twice_as_slow_is_a_check_of_its_own():
    # A run three times as slow is a relative change of 2: still a level to test for.
    check = LevelCheck(metric="time", alpha=0.01, direction=1, expected=2.0)
    rng = np.random.default_rng(5)
    reference, candidate, moved = (level * (1 + 0.02 * rng.standard_normal(30)) for level in (1.0, 3.0, 3.0))
    assert decide_level(reference, candidate, moved, check).decision == MOVED


@pytest.mark.parametrize("cut", [2, 4, 16, 17, 18])
def test_a_resumed_session_reads_what_the_uninterrupted_one_read_next(cut):
    # The reads each round asks for are a function of the rounds stored, so a worker that died mid-round resumes
    # with the commit the session would have read, whichever it is.
    whole = session((1.0, 1.0, 1.05), seed=3)
    clock = FakeClock()
    workloads = {label: commit(clock, level, seed=10 + index)
                 for index, (label, level) in enumerate(zip((REFERENCE, CANDIDATE, MOVED_END), (1.0, 1.0, 1.05)))}
    seen = []
    targets = SessionTargets(warmup="none", work_range=(1, 2), min_round_duration=0.0, trial_rounds=1,
                             first_estimate_rounds=2, budget_rounds=cut + 1, budget_seconds=1e9,
                             level_check=LevelCheck(metric="time", alpha=0.05 / 7, direction=1, expected=0.05))
    resumed = run_session(workloads, [TIME], targets, previous_rounds=whole.rounds[:cut], clock=clock,
                          on_round=lambda record, progress: seen.append(record.workload))
    assert len(whole.rounds) > cut + 1
    assert seen == [whole.rounds[cut].workload] and len(resumed.rounds) == cut + 1


def test_every_reading_of_a_round_does_the_same_work():
    # Readings that depend on the work done (a wall time with a start-up cost): a candidate read every round must
    # not run ahead of the ends in the plan's schedule, or it would be compared at other work amounts.
    clock = FakeClock()
    rng = np.random.default_rng(12)

    def timed(level):
        def workload(work_amount):
            seconds = 0.02 + 0.001 * work_amount * level * (1 + 0.05 * rng.standard_normal())
            clock.now += seconds
            return RoundOutcome(duration=seconds, readings={"time": seconds})
        return workload

    targets = SessionTargets(warmup="none", work_range=(10, 200), min_round_duration=0.0, budget_rounds=3000,
                             budget_seconds=1e9, level_check=LevelCheck(metric="time", alpha=0.05 / 7, direction=1,
                                                                        expected=0.05))
    outcome = run_session({label: timed(level) for label, level in zip((REFERENCE, CANDIDATE, MOVED_END),
                                                                       (1.0, 1.0, 1.05))}, [TIME], targets,
                          clock=clock)
    amounts = {record.work_amount for record in outcome.rounds}
    assert outcome.level.decision == AT_LEVEL and len(amounts) > 3  # the schedule moved
    rounds: list[list] = []
    for record in outcome.rounds:
        if record.workload == REFERENCE or record.workload == CANDIDATE and (
                not rounds or CANDIDATE in {read.workload for read in rounds[-1]}):
            rounds.append([])
        rounds[-1].append(record)
    assert all(len({read.work_amount for read in read_together}) == 1 for read_together in rounds)


def test_a_candidate_that_seldom_needs_the_reference_reports_its_change_over_the_earlier_readings_too():
    rng = np.random.default_rng(13)
    earlier = tuple(1.0 + 0.02 * rng.standard_normal(30)), tuple(1.05 + 0.02 * rng.standard_normal(30))
    candidate = 1.0 + 0.02 * rng.standard_normal(20)
    reference = np.full(20, np.nan)
    reference[0] = 1.0
    moved = 1.05 + 0.02 * rng.standard_normal(20)
    moved[0] = np.nan
    decided = decide_level(reference, candidate, moved, LevelCheck(metric="time", alpha=0.01, direction=1,
                                                                   expected=0.05, earlier=earlier))
    assert decided.change is not None and abs(decided.change) < 0.02 and decided.low < decided.change < decided.high
