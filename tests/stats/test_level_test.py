"""The bisection's level test (two adaptive SPRTs), against scipy's normal densities round by round and against
simulations with a known truth: its two errors stay within α, with and without earlier readings, and whatever the
effect's estimate."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from results.stats import AT_LEVEL, MOVED, UNDECIDED, bracketed_level_test

ROUNDS = 600


def test_each_round_adds_the_log_ratio_of_two_normal_densities():
    rng = np.random.default_rng(3)
    earlier_reference, earlier_moved = 100 + 2 * rng.standard_normal(40), 105 + 2 * rng.standard_normal(40)
    reference, candidate, moved = (level + 2 * rng.standard_normal(6) for level in (100, 100, 105))
    found = bracketed_level_test(reference, candidate, moved, alpha=1e-9, earlier=(earlier_reference, earlier_moved))
    expected_moved = expected_level = 0.0
    for i in range(6):
        ends = [np.r_[earlier_reference, reference[:i]], np.r_[earlier_moved, moved[:i]]]
        shift = max(ends[1].mean() - ends[0].mean(), 0.0)
        parts = [*ends, candidate[:i]]
        df = sum(part.size - 1 for part in parts if part.size >= 2)
        squares = sum(((part - part.mean()) ** 2).sum() for part in parts if part.size >= 2)
        spread = np.sqrt(2 * squares / df * df / (df - 2))
        d, e = candidate[i] - reference[i], candidate[i] - moved[i]
        norm = scipy_stats.norm
        expected_moved += norm.logpdf(d, shift, spread) - norm.logpdf(d, 0, spread)
        expected_level += norm.logpdf(e, -shift, spread) - norm.logpdf(e, 0, spread)
    assert found.decision == UNDECIDED and found.rounds == 6
    assert found.log_ratio_moved == pytest.approx(expected_moved, rel=1e-9)
    assert found.log_ratio_at_level == pytest.approx(expected_level, rel=1e-9)


def _decisions(candidate_level, *, sessions, alpha, effect=0.05, noise=0.05, earlier_effect=None, seed=0):
    """Sessions of three commits at levels 1, `candidate_level` and 1 + `effect`: each one's decision."""
    rng = np.random.default_rng(seed)
    decisions = []
    for _ in range(sessions):
        arms = np.array([1.0, candidate_level, 1.0 + effect])[:, None] * (1 + noise * rng.standard_normal((3, ROUNDS)))
        earlier = None
        if earlier_effect is not None:
            earlier = (1 + noise * rng.standard_normal(60),
                       (1 + earlier_effect) * (1 + noise * rng.standard_normal(60)))
        decisions.append(bracketed_level_test(*arms, alpha=alpha, earlier=earlier).decision)
    return np.array(decisions)


def _within(errors: int, sessions: int, alpha: float) -> bool:
    """One-sided binomial check that an error count is consistent with a rate of at most alpha."""
    return scipy_stats.binom.sf(errors - 1, sessions, alpha) > 0.001


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


def test_ends_at_one_level_decide_nothing():
    decisions = _decisions(1.0, sessions=400, alpha=0.01, effect=0.0, seed=5)
    assert (decisions == UNDECIDED).mean() > 0.95


def test_a_move_downwards_is_decided_with_direction_minus_one():
    rng = np.random.default_rng(6)
    arms = np.array([1.0, 0.95, 0.95])[:, None] * (1 + 0.02 * rng.standard_normal((3, 200)))
    assert bracketed_level_test(*arms, direction=-1).decision == MOVED
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
    (([1.0, np.nan], [1.0, 1.0], [1.0, 1.0]), "`reference` must be one finite reading"),
    (([[1.0]], [[1.0]], [[1.0]]), "1-d array"),
])
def test_invalid_readings_are_named(arms, message):
    with pytest.raises(ValueError, match=message):
        bracketed_level_test(*arms)
