"""The bisection's level test (two betting martingales): each round's bet worked out by hand, and simulations
with a known truth: its two errors stay within α with and without earlier readings, whatever the effect's
estimate, for a noisier candidate and for outliers, with every round reading both ends and with rounds reading the
end the test asks for; readings without spread are decided."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from results.stats import AT_LEVEL, MOVED, UNDECIDED, bracketed_level_test

ROUNDS = 600


def _by_hand(reference, candidate, moved, earlier):
    """Both log ratios, round by round as the docstring writes them (NaN: the round did not read that end)."""
    log_moved = log_level = 0.0
    below = np.subtract(candidate, reference)
    above = np.subtract(candidate, moved)
    fallback = np.var(earlier[0], ddof=1) + np.var(earlier[1], ddof=1)
    for i in range(len(candidate)):
        read_r = [value for value in reference[:i] if not np.isnan(value)]
        read_m = [value for value in moved[:i] if not np.isnan(value)]
        shift = max(np.mean(earlier[1] + read_m) - np.mean(earlier[0] + read_r), 0.0)
        pairs_below, pairs_above = below[:i][~np.isnan(below[:i])], above[:i][~np.isnan(above[:i])]
        # The earlier spread counts as 10 degrees of freedom beside the session's pairs.
        spread_below, spread_above = (
            ((pairs.size - 1) * np.var(pairs, ddof=1) + 10 * fallback) / (pairs.size - 1 + 10) if pairs.size >= 2
            else fallback for pairs in (pairs_below, pairs_above))
        if not np.isnan(below[i]):
            log_moved += np.log(1 + np.tanh(shift / (spread_below + shift**2 / 2) * below[i]))
        if not np.isnan(above[i]):
            log_level += np.log(1 - np.tanh(shift / (spread_above + shift**2 / 2) * above[i]))
    return log_moved, log_level


@pytest.mark.parametrize("reference, moved", [
    ([10.0, 10.1, 9.9, 10.05], [11.1, 10.9, 11.0, 10.95]),
    ([10.0, 10.1, np.nan, 10.05], [11.1, np.nan, 11.0, 10.95]),  # rounds that read one end
])
def test_each_round_bets_the_fraction_worked_out_by_hand(reference, moved):
    # The move and spread before each round come from the earlier readings and the rounds before it.
    earlier = ([10.0, 10.2, 9.8], [11.0, 11.2, 10.8])
    candidate = [10.1, 9.9, 10.0, 10.2]
    found = bracketed_level_test(reference, candidate, moved, alpha=1e-9, earlier=earlier)
    log_moved, log_level = _by_hand(reference, candidate, moved, earlier)
    assert found.decision == UNDECIDED and found.rounds == 4
    assert found.log_ratio_moved == pytest.approx(log_moved, rel=1e-12)
    assert found.log_ratio_at_level == pytest.approx(log_level, rel=1e-12)
    # The first round reads both ends (a tie); each later one the end of the test that leads after the rounds before.
    assert found.planned_reads[0].tolist() == [True, True]
    leads = np.sign(np.subtract(*_by_hand(reference, candidate, moved, earlier)))
    assert found.planned_reads[-1].tolist() == [leads >= 0, leads <= 0]


def _decisions(candidate_level, *, sessions, alpha, effect=0.05, noise=0.05, earlier_effect=None, seed=0,
               candidate_noise=None, outliers=0.0):
    """Sessions of three commits at levels 1, `candidate_level` and 1 + `effect`: each one's decision. The candidate's
    noise may differ (`candidate_noise`); `outliers` of the readings are 1.5 times what they would be."""
    rng = np.random.default_rng(seed)
    spread = np.array([noise, noise if candidate_noise is None else candidate_noise, noise])[:, None]
    decisions = []
    for _ in range(sessions):
        arms = np.array([1.0, candidate_level, 1.0 + effect])[:, None] * (1 + spread * rng.standard_normal((3, ROUNDS)))
        arms *= np.where(rng.random((3, ROUNDS)) < outliers, 1.5, 1.0)
        earlier = None
        if earlier_effect is not None:
            earlier = (1 + noise * rng.standard_normal(60),
                       (1 + earlier_effect) * (1 + noise * rng.standard_normal(60)))
        decisions.append(bracketed_level_test(*arms, alpha=alpha, earlier=earlier).decision)
    return np.array(decisions)


def _within(errors: int, sessions: int, alpha: float) -> bool:
    """Whether an error count is consistent with a rate of at most alpha: below the count a rate of alpha reaches
    with probability 0.001 (binomial)."""
    return errors <= scipy_stats.binom.ppf(0.999, sessions, alpha)


@pytest.mark.parametrize("earlier_effect", [None, 0.05])
@pytest.mark.parametrize("noise", [0.05, 0.10])
def test_both_errors_stay_within_alpha(noise, earlier_effect):
    alpha = 0.05 / 7  # a 32-commit bisection's share (runner.bisection.plan.decision_alpha)
    at_reference = _decisions(1.0, sessions=1500, alpha=alpha, noise=noise, earlier_effect=earlier_effect, seed=1)
    at_moved = _decisions(1.05, sessions=1500, alpha=alpha, noise=noise, earlier_effect=earlier_effect, seed=2)
    assert (at_reference != UNDECIDED).mean() > 0.95 and (at_moved != UNDECIDED).mean() > 0.95
    assert _within(int((at_reference == MOVED).sum()), 1500, alpha)
    assert _within(int((at_moved == AT_LEVEL).sum()), 1500, alpha)


@pytest.mark.parametrize("earlier_effect", [0.10, 0.02])
def test_a_wrong_estimate_of_the_effect_slows_the_test_but_keeps_its_level(earlier_effect):
    # Earlier readings of the moved end twice (or 0.4 times) as far as it is: the estimate starts wrong.
    alpha = 0.01
    at_reference = _decisions(1.0, sessions=1500, alpha=alpha, earlier_effect=earlier_effect, seed=3)
    at_moved = _decisions(1.05, sessions=1500, alpha=alpha, earlier_effect=earlier_effect, seed=4)
    assert _within(int((at_reference == MOVED).sum()), 1500, alpha)
    assert _within(int((at_moved == AT_LEVEL).sum()), 1500, alpha)


@pytest.mark.parametrize("kind, options", [
    ("a candidate three times as noisy as the ends", {"candidate_noise": 0.15}),
    ("2% of the readings half again as large", {"outliers": 0.02}),
])
def test_the_level_holds_for_noise_that_is_not_normal_or_not_equal(kind, options):
    # The errors a normal likelihood ratio with the spread plugged in made here: 3.6% and 6.4% at alpha = 0.71%.
    alpha = 0.05 / 7
    at_reference = _decisions(1.0, sessions=1500, alpha=alpha, seed=7, **options)
    at_moved = _decisions(1.05, sessions=1500, alpha=alpha, seed=8, **options)
    assert _within(int((at_reference == MOVED).sum()), 1500, alpha), kind
    assert _within(int((at_moved == AT_LEVEL).sum()), 1500, alpha), kind


def _as_asked(arms, **options):
    """The test on rounds that read the ends it asks for (:attr:`LevelTest.planned_reads`): every commit's readings
    drawn for every round and the ends not asked for left unread; each round's reads are guessed as the round before
    asked and corrected from the first round the test asks otherwise, until none does."""
    reference, candidate, moved = arms
    reads = np.ones((candidate.size, 2), dtype=bool)
    while True:
        found = bracketed_level_test(np.where(reads[:, 0], reference, np.nan), candidate,
                                     np.where(reads[:, 1], moved, np.nan), **options)
        asked = found.planned_reads[:-1]
        wrong = np.flatnonzero((asked != reads).any(axis=1))
        if not wrong.size or found.decision != UNDECIDED and found.rounds <= wrong[0]:
            return found, reads[:found.rounds]
        reads[wrong[0]:] = asked[wrong[0]]


@pytest.mark.parametrize("options", [{}, {"candidate_noise": 0.15}, {"outliers": 0.02}])
def test_both_errors_stay_within_alpha_when_rounds_read_the_end_asked_for(options):
    # Which end a round reads depends on the rounds before it; a round that skips an end bets nothing on it.
    alpha, sessions = 0.05 / 9, 1000
    rng = np.random.default_rng(9)
    for candidate_level, wrong in ((1.0, MOVED), (1.05, AT_LEVEL)):
        decisions, readings, rounds = [], [], []
        for _ in range(sessions):
            spread = np.array([0.05, options.get("candidate_noise", 0.05), 0.05])[:, None]
            arms = np.array([1.0, candidate_level, 1.05])[:, None] * (1 + spread * rng.standard_normal((3, ROUNDS)))
            arms *= np.where(rng.random((3, ROUNDS)) < options.get("outliers", 0.0), 1.5, 1.0)
            found, reads = _as_asked(arms, alpha=alpha)
            decisions.append(found.decision)
            readings.append(found.rounds + reads.sum())
            rounds.append(found.rounds)
        decisions = np.array(decisions)
        assert options or (decisions != UNDECIDED).mean() > 0.95
        assert _within(int((decisions == wrong).sum()), sessions, alpha)
        # Most rounds read the candidate and one end: two readings, not three.
        assert sum(readings) / sum(rounds) < 2.3


def test_readings_without_spread_are_decided():
    # Counts (an allocation count, a page count) read the same every round: each commit is exactly at a level.
    constant = np.ones(20)
    assert bracketed_level_test(2051 * constant, 2051 * constant, 2060 * constant).decision == AT_LEVEL
    assert bracketed_level_test(2051 * constant, 2060 * constant, 2060 * constant).decision == MOVED


def test_ends_at_one_level_decide_nothing():
    decisions = _decisions(1.0, sessions=400, alpha=0.01, effect=0.0, seed=5)
    assert (decisions == UNDECIDED).mean() > 0.95


def test_a_move_downwards_is_decided_with_direction_minus_one():
    rng = np.random.default_rng(6)
    arms = np.array([1.0, 0.95, 0.95])[:, None] * (1 + 0.02 * rng.standard_normal((3, 200)))
    assert bracketed_level_test(*arms, direction=-1).decision == MOVED
    at_reference = np.array([1.0, 1.0, 0.95])[:, None] * (1 + 0.02 * rng.standard_normal((3, 200)))
    assert bracketed_level_test(*at_reference, direction=-1).decision == AT_LEVEL
    # Looked for upwards, a move down is no move: neither level is decided for it.
    assert bracketed_level_test(*arms, direction=1).decision == UNDECIDED


@pytest.mark.parametrize("keyword, value, message", [
    ("alpha", 0.0, "`alpha` must be strictly between 0 and 1"),
    ("direction", 0, "`direction` must be 1 or -1"),
    ("burn_in", 1, "`burn_in` must be a whole number of at least 2"),
    ("earlier", ([1.0], None), "`earlier` must be"),
])
def test_invalid_parameters_are_named(keyword, value, message):
    with pytest.raises(ValueError, match=message):
        bracketed_level_test([1.0, 1.1], [1.0, 1.2], [1.1, 1.2], **{keyword: value})


@pytest.mark.parametrize("arms, message", [
    (([1.0, 2.0], [1.0], [1.0, 2.0]), "equal lengths"),
    (([], [], []), "at least one round"),
    (([1.0, np.inf], [1.0, 1.0], [1.0, 1.0]), "`reference` must be one finite or NaN"),
    (([1.0, 1.0], [1.0, np.nan], [1.0, 1.0]), "`candidate` must be one finite reading"),
    (([1.0, np.nan], [1.0, 1.0], [1.0, np.nan]), "Every round must read"),
    (([[1.0]], [[1.0]], [[1.0]]), "1-d array"),
])
def test_invalid_readings_are_named(arms, message):
    with pytest.raises(ValueError, match=message):
        bracketed_level_test(*arms)
