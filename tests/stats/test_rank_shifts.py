"""rank_shifts: calibrated on seeded series without a shift, placing known steps, indifferent to the noise's
shape; its statistic checked against scipy's Mann–Whitney test."""

import numpy as np
import pytest
from scipy import stats

from results.stats import rank_shifts


def test_series_without_a_shift_get_one_at_about_the_tests_level():
    rng = np.random.default_rng(1)
    found = [bool(rank_shifts(rng.normal(0.0, 1.0, 100), seed=i).indices) for i in range(400)]
    # α = 1% for the first split; binomial standard error 0.5%
    assert np.mean(found) < 0.03


@pytest.mark.parametrize("noise", ["bimodal", "student-t(2)"])
def test_flat_series_with_two_modes_or_heavy_tails_have_none(noise):
    rng = np.random.default_rng(2)
    found = 0
    for i in range(200):
        if noise == "bimodal":  # every night in one of two levels 4% apart
            means = 1.0 + 0.04 * rng.integers(0, 2, 120) + rng.normal(0.0, 0.003, 120)
        else:
            means = 1.0 + 0.01 * rng.standard_t(2, 120)
        found += bool(rank_shifts(means, seed=i).indices)
    assert found <= 6


def test_a_step_is_placed_within_one_night_in_most_series():
    rng = np.random.default_rng(3)
    placed = 0
    for i in range(200):
        means = rng.normal(0.0, 1.0, 80)
        means[40:] += 3.0
        found = rank_shifts(means, seed=i).indices
        placed += len(found) == 1 and abs(found[0] - 40) <= 1
    assert placed >= 180


def test_two_steps_are_both_found_and_segments_keep_their_minimum():
    rng = np.random.default_rng(4)
    means = np.r_[np.zeros(30), np.full(30, 4.0), np.full(30, 1.0)] + rng.normal(0.0, 1.0, 90)
    found = rank_shifts(means, min_segment=5)
    assert len(found.indices) == 2 and abs(found.indices[0] - 30) <= 1 and abs(found.indices[1] - 60) <= 1
    assert all(p < 0.01 for p in found.pvalues)
    assert min(np.diff((0, *found.indices, 90))) >= 5


def test_the_statistic_is_the_standardized_mann_whitney_u_of_the_split():
    rng = np.random.default_rng(5)
    means = np.r_[rng.normal(0.0, 1.0, 20), rng.normal(2.0, 1.0, 20)]
    found = rank_shifts(means, min_segment=5)
    split = found.indices[0]
    u = stats.mannwhitneyu(means[:split], means[split:], method="asymptotic", use_continuity=False)
    m, n = split, means.size - split
    z = (u.statistic - m * n / 2) / np.sqrt(m * n * (m + n + 1) / 12)
    assert found.statistics[0] == pytest.approx(abs(z), rel=1e-9)


def test_the_same_seed_gives_the_same_answer_and_constant_or_short_series_have_none():
    means = np.random.default_rng(6).normal(0.0, 1.0, 60) + np.r_[np.zeros(30), np.full(30, 1.5)]
    assert rank_shifts(means, seed=3) == rank_shifts(means, seed=3)
    assert rank_shifts(np.full(50, 2.0)).indices == ()
    assert rank_shifts(np.r_[np.zeros(5), np.ones(4)]).indices == ()


@pytest.mark.parametrize(("arguments", "message"), [
    ({"means": [[1.0, 2.0]]}, "`means`"), ({"means": [1.0, np.inf]}, "`means`"),
    ({"means": [1.0], "min_segment": 0}, "`min_segment`"), ({"means": [1.0], "alpha": 1.5}, "`alpha`"),
    ({"means": [1.0], "permutations": 0}, "`permutations`"),
])
def test_bad_input_names_the_parameter(arguments, message):
    with pytest.raises(ValueError, match=message):
        rank_shifts(**arguments)
