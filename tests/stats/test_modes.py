"""align_modes: two alternating, far-apart modes put on one scale (checked against the known modes and numpy's
medians), a drifting share of slow nights no longer a shift for recent_shift, a shift of both modes still one, and
steps, odd nights and near modes left as they are."""

import numpy as np
import pytest

from results.stats import align_modes, rank_shifts, recent_shift


def drifting_modes(nights, *, seed, slow=38.0, noise=0.005):
    """Nights in a fast (1.0) or slow mode, the share of slow nights drawn anew every ten nights in [10%, 60%]."""
    rng = np.random.default_rng(seed)
    share = np.repeat(rng.uniform(0.1, 0.6, nights // 10 + 1), 10)[:nights]
    upper = rng.random(nights) < share
    return np.where(upper, slow, 1.0) * (1.0 + rng.normal(0.0, noise, nights)), upper


def test_the_upper_mode_is_put_on_the_lower_ones_scale_by_the_ratio_across_its_changes_of_mode():
    means, upper = drifting_modes(60, seed=1)

    aligned = align_modes(means)

    np.testing.assert_array_equal(aligned.upper, upper)
    changes = np.flatnonzero(upper[1:] != upper[:-1]) + 1
    ratios = [means[j - 1] / means[j] if upper[j] else means[j] / means[j - 1] for j in changes]
    factor = np.exp(np.median(np.log(ratios)))
    assert aligned.factor == pytest.approx(factor, rel=1e-12)
    assert aligned.factor == pytest.approx(1 / 38.0, rel=0.01)
    np.testing.assert_allclose(aligned.values, np.where(upper, means * factor, means), rtol=1e-12)
    # The aligned nights spread as one mode does (0.5%), not as the mixture.
    assert np.std(aligned.values) / np.mean(aligned.values) < 0.01


def test_a_drifting_share_of_slow_nights_is_a_shift_of_the_raw_nights_and_not_of_the_aligned_ones():
    raw_found = aligned_found = 0
    for seed in range(40):
        means, _ = drifting_modes(60, seed=seed)
        # As the nightly detection tests them: the history winsorized at 3.5 robust standard deviations, which
        # clips a mode of up to 10% of the nights as odd ones.
        raw_found += recent_shift(means, recent=10, clip=3.5).pvalue < 0.01
        aligned_found += recent_shift(align_modes(means).values, recent=10, clip=3.5).pvalue < 0.01
    # Raw, the mixture's mean moves with the share (4 of 40 at a 1% test: P = 0.0008 were the test calibrated);
    # aligned, about the test's 1% of series.
    assert raw_found >= 4
    assert aligned_found <= 2


def test_a_shift_of_both_modes_stays_a_shift_of_the_aligned_nights():
    means, upper = drifting_modes(60, seed=3, noise=0.003)
    means[45:] *= 1.05

    aligned = align_modes(means)

    np.testing.assert_array_equal(aligned.upper, upper)
    values = aligned.values
    assert values[45:].mean() / values[:45].mean() == pytest.approx(1.05, abs=0.005)
    (split,) = rank_shifts(values, seed=0).indices
    assert abs(split - 45) <= 2
    found = recent_shift(values, recent=20)
    assert found.start == 45 and found.pvalue < 1e-6


@pytest.mark.parametrize("odd", [0, 1])
def test_a_step_is_no_pair_of_modes_however_large(odd):
    # A 2x step at night 20 of 40, with `odd` nights at the new level before it and at the old one after it.
    means = np.where(np.arange(40) >= 20, 2.0, 1.0) * (1.0 + np.random.default_rng(4).normal(0.0, 0.003, 40))
    means[[7, 13][:odd]] *= 2.0
    means[[27, 33][:odd]] /= 2.0

    aligned = align_modes(means)

    assert aligned.factor == 1.0 and not aligned.upper.any()
    np.testing.assert_array_equal(aligned.values, means)


def test_modes_nearer_than_the_ratio_and_series_of_one_mode_are_left_as_they_are():
    rng = np.random.default_rng(5)
    near = np.where(rng.random(60) < 0.5, 1.3, 1.0) * (1.0 + rng.normal(0.0, 0.003, 60))
    flat = 1.0 + rng.normal(0.0, 0.01, 60)

    aligned = align_modes(np.stack([near, flat]))

    np.testing.assert_array_equal(aligned.factor, [1.0, 1.0])
    np.testing.assert_array_equal(aligned.values, np.stack([near, flat]))


def test_rows_are_aligned_each_as_alone_with_nights_missing_at_their_start():
    first, _ = drifting_modes(50, seed=6)
    second, _ = drifting_modes(50, seed=7, slow=3.0)
    second[:12] = np.nan
    rows = np.stack([first, second, np.full(50, np.nan)])

    aligned = align_modes(rows)

    for row in range(2):
        alone = align_modes(rows[row][~np.isnan(rows[row])])
        np.testing.assert_allclose(aligned.values[row][~np.isnan(rows[row])], alone.values)
        assert aligned.factor[row] == alone.factor
    assert np.isnan(aligned.values[1, :12]).all() and np.isnan(aligned.values[2]).all() and aligned.factor[2] == 1.0


def test_a_short_segment_is_aligned_by_the_modes_of_its_context():
    means, upper = drifting_modes(50, seed=8)

    short = align_modes(means[-5:])
    in_context = align_modes(means[-5:], context=means)

    assert short.factor == 1.0  # five nights cannot show two alternating modes
    assert in_context.factor == align_modes(means).factor
    np.testing.assert_array_equal(in_context.upper, upper[-5:])


def test_a_series_with_a_non_positive_night_is_left_as_it_is():
    means, _ = drifting_modes(40, seed=9)
    means[3] = 0.0

    assert align_modes(means).factor == 1.0


@pytest.mark.parametrize(("options", "message"), [
    ({"ratio": 1.0}, "`ratio`"),
    ({"min_switches": 0}, "`min_switches`"),
    ({"min_nights": 0}, "`min_nights`"),
    ({"min_share": 0.7}, "`min_share`"),
    ({"context": np.ones((2, 5))}, "`context`"),
])
def test_bad_parameters_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        align_modes(np.ones(10), **options)
