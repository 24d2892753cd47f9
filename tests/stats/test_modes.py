"""align_modes: two alternating, far-apart modes put on one scale (checked against the known modes and numpy's
medians), a drifting share of slow nights no shift of the aligned nights for recent_shift, a shift of both modes
one, and the regressions a review of a first alignment found hidden (a mode moved past the gap's midpoint, a late
run of slow nights, a step with odd nights on either side) read as regressions."""

import numpy as np
import pytest

from results.stats import align_modes, recent_shift


def drifting_modes(nights, *, seed, slow=38.0, noise=0.005, low=0.15, high=0.6):
    """Nights in a fast (1.0) or slow mode, the share of slow nights drawn anew every ten nights in [low, high]."""
    rng = np.random.default_rng(seed)
    share = np.repeat(rng.uniform(low, high, nights // 10 + 1), 10)[:nights]
    upper = rng.random(nights) < share
    return np.where(upper, slow, 1.0) * (1.0 + rng.normal(0.0, noise, nights)), upper


def shifted(means, tested=10):
    """recent_shift's p-value on the nights as the nightly detection reads them (winsorized history)."""
    return float(recent_shift(means, history=30, recent=tested, min_history=10, clip=3.5).pvalue)


def test_the_upper_mode_is_put_on_the_lower_ones_scale_by_the_ratio_of_the_modes_medians():
    means, upper = drifting_modes(60, seed=1)

    aligned = align_modes(means, tested=10)

    logs = np.log(means[:50])
    factor = np.exp(np.median(logs[~upper[:50]]) - np.median(logs[upper[:50]]))
    assert aligned.aligned and aligned.factor == pytest.approx(factor, rel=1e-12)
    assert aligned.factor == pytest.approx(1 / 38.0, rel=0.01)
    np.testing.assert_allclose(aligned.values, np.where(upper, means * factor, means), rtol=1e-12)
    # The aligned nights spread as one mode does (0.5%), not as the mixture.
    assert np.std(aligned.values) / np.mean(aligned.values) < 0.01


def test_a_drifting_share_of_slow_nights_is_no_shift_of_the_aligned_nights():
    recognised = found = long_runs = 0
    for seed in range(60):
        means, upper = drifting_modes(50, seed=seed)
        aligned = align_modes(means, tested=10)
        if not aligned.aligned:
            continue
        if (aligned.values[-10:][upper[-10:]] > 2.0).any():
            # A run of slow nights more than twice the longest before it: the nights tested as measured, a
            # regression (the fast path gone) by design.
            long_runs += 1
            assert shifted(aligned.values) < 1e-6
            continue
        recognised += 1
        found += shifted(aligned.values) < 0.01
    # The aligned nights are one mode's noise: shifts at about the test's level (one of these seeds has three
    # nights of +2.4 standard deviations in a row).
    assert recognised >= 50 and long_runs <= 3 and found <= 1, (recognised, long_runs, found)


def test_a_shift_of_both_modes_is_a_shift_of_the_aligned_nights_at_its_size():
    means, _ = drifting_modes(50, seed=4)
    means[45:] *= 1.05

    aligned = align_modes(means, tested=10).values

    assert aligned[45:].mean() / aligned[15:45].mean() == pytest.approx(1.05, abs=0.005)
    assert shifted(aligned) < 1e-6


@pytest.mark.parametrize(("fast", "slow"), [(2.0, 3.0), (7.0, 38.0)])
def test_a_fast_mode_moved_past_the_middle_of_the_gap_reads_as_slower_never_as_the_slow_mode_made_fast(fast, slow):
    means, upper = drifting_modes(50, seed=5, slow=slow)
    means[45:] = np.where(upper[45:], means[45:], fast)

    aligned = align_modes(means, tested=10).values

    # Fast nights that moved are compared as measured, the slow ones as before: the newest nights read slower.
    np.testing.assert_allclose(aligned[45:][~upper[45:]], fast)
    assert aligned[45:].mean() > 1.5 * aligned[:40].mean()


def test_a_late_run_of_slow_nights_longer_than_twice_the_longest_before_it_is_a_regression_of_its_full_size():
    means, upper = drifting_modes(60, seed=6, slow=3.0)
    runs = np.diff(np.flatnonzero(np.diff(np.r_[0, upper[:50].astype(int), 0])))[::2]  # lengths of slow runs
    cap = 2 * runs.max()
    means[50:] = 3.0

    allowed = align_modes(means[:50 + cap], tested=10)
    ended = align_modes(means[:51 + cap], tested=10)

    # Up to the cap the slow nights are on the fast scale; one night more and the tested nights are as measured,
    # against the history on the fast scale: three times the level.
    assert allowed.values[-1] == pytest.approx(1.0, abs=0.02)
    np.testing.assert_array_equal(ended.values[-10:], means[51 + cap - 10:51 + cap])
    assert ended.values[50:].mean() / ended.values[:40].mean() == pytest.approx(3.0, rel=0.03)
    assert shifted(ended.values) < 1e-6
    # The scan of a whole history: a run of slow nights outlasting twice every other is no alternation either.
    assert not align_modes(np.r_[means[:50], np.full(40, 3.0)]).aligned


def test_a_step_with_odd_nights_of_the_other_level_on_either_side_is_no_alternation():
    rng = np.random.default_rng(7)
    means = np.r_[np.ones(30), np.full(30, 2.0)] * (1.0 + rng.normal(0.0, 0.003, 60))
    means[[3, 9, 15, 21]] *= 2.0
    means[[36, 42, 48, 54]] /= 2.0

    # Scanned whole, and night by night as the step's nights arrive (tested: those since the step).
    assert not align_modes(means).aligned
    assert not any(align_modes(means[:night], tested=min(10, night - 30)).aligned for night in range(31, 41))


@pytest.mark.parametrize("means", [
    np.r_[np.ones(20), np.full(20, 1.3)],  # two levels nearer than MODE_RATIO
    np.tile([1.0, 1.0, 1.0, 2.0], 10) * np.r_[np.ones(20), np.full(20, 1.2)],  # modes that are not separated
])
def test_near_or_unseparated_modes_are_left_as_they_are(means):
    means = means * (1.0 + np.random.default_rng(8).normal(0.0, 0.05, means.size))
    assert not align_modes(means, tested=5).aligned


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="`tested`"):
        align_modes(np.ones(10), tested=10)
    with pytest.raises(ValueError, match="`modes_from`"):
        align_modes(np.ones(10), tested=3, modes_from=7)
    with pytest.raises(ValueError, match="`means`"):
        align_modes(1.0)


def test_a_fast_mode_slowed_to_near_the_slow_one_is_a_regression_once_its_run_outlasts_the_slow_ones():
    # A review's case: 1x/3x nights, the fast path 2.6x slower from night 40. Within a quarter of the gap of the
    # slow mode, those nights read as slow nights, faster than they are (documented); once the run of "slow"
    # nights outlasts twice the longest before it, the nights tested are as measured: a regression.
    rng = np.random.default_rng(0)
    upper = np.tile([0, 0, 1, 0, 1, 1, 0, 1, 0, 0], 6).astype(bool)
    means = np.where(upper, 3.0, 1.0) * (1.0 + rng.normal(0.0, 0.005, 60))
    means[40:] = np.where(upper[40:], 3.0, 2.6) * (1.0 + rng.normal(0.0, 0.005, 20))

    late = align_modes(means[:46], tested=6).values  # a run of 6 "slow" nights against a longest of 2

    assert late[40:].mean() / late[:40].mean() > 2.5 and shifted(late, tested=6) < 1e-6


def test_a_slow_mode_noisier_than_the_fast_one_is_left_as_measured():
    # Aligned, its nights would keep their 10% spread among nights of 1% and be winsorized into shifts.
    rng = np.random.default_rng(9)
    upper = rng.random(60) < 0.4
    means = np.where(upper, 38.0 * (1.0 + rng.normal(0.0, 0.10, 60)), 1.0 + rng.normal(0.0, 0.01, 60))

    assert not align_modes(means, tested=10).aligned


def test_a_run_after_a_night_in_neither_mode_counts_from_its_first_night():
    # A review's case: a half-slow night just before five slow ones must not shorten their run.
    rng = np.random.default_rng(0)
    upper = np.tile([0, 0, 1, 0, 1, 1, 0, 1, 0, 0], 4).astype(bool)[:35]
    before = np.where(upper, 3.0, 1.0) * (1.0 + rng.normal(0.0, 0.005, 35))
    means = np.r_[before[:-1], 1.7, np.full(5, 3.0)]

    aligned = align_modes(means, tested=5)

    np.testing.assert_array_equal(aligned.values[-5:], 3.0)  # the tested nights as measured: a regression


def test_a_slow_run_as_long_as_the_one_just_before_the_nights_tested_keeps_them_aligned():
    # A review's case: slow runs of one night, then three just before the nights tested, then three again among
    # them, ending before tonight: a run seen before, and over (only a slow run reaching tonight is the fast path
    # gone).
    before = np.array(list("FFSFFSFFFSFFSFFSFFFSFFSFFSFFSFFSSS")) == "S"
    tested = np.array(list("FFSSSFFFFF")) == "S"
    upper = np.r_[before, tested]
    means = np.where(upper, 3.0, 1.0) * (1.0 + np.random.default_rng(0).normal(0.0, 0.005, upper.size))

    aligned = align_modes(means, tested=10)

    assert aligned.aligned and aligned.found
    np.testing.assert_allclose(aligned.values[-10:], 1.0, rtol=0.02)
    assert shifted(aligned.values) > 0.01  # no alert (the series level)


def test_modes_found_but_not_alternating_over_each_half_are_reported_found_and_left_as_measured():
    # 24 nights alternating 1x/3x: two modes, too few for each half of a scanned history to alternate on its own.
    upper = np.tile([0, 0, 1, 0, 1, 1, 0, 1, 0, 0], 3).astype(bool)[:24]
    means = np.where(upper, 3.0, 1.0) * (1.0 + np.random.default_rng(1).normal(0.0, 0.005, 24))

    aligned = align_modes(means)

    assert aligned.found and not aligned.aligned
    np.testing.assert_array_equal(aligned.values, means)


@pytest.mark.parametrize(("moved", "aligned"), [(1.0, True), (1.4, False)])
def test_a_short_segment_reads_the_modes_of_the_one_before_only_where_its_nights_fit_them(moved, aligned):
    # 40 nights alternating 1x/3x, then a segment of 14 nights (its first 4 too few to show modes): as they were,
    # or both modes 40% slower (a change: its nights out of the earlier modes' reach, compared as measured).
    means, _ = drifting_modes(54, seed=11, slow=3.0)
    means[40:] *= moved

    found = align_modes(means, tested=10, modes_from=40, earlier_from=0)

    assert bool(found.aligned) is aligned and not align_modes(means, tested=10, modes_from=40).aligned
    if not aligned:
        np.testing.assert_array_equal(found.values, means)


@pytest.mark.parametrize("segment", ["2x then slow", "fast then 2x"])
def test_a_segment_begun_by_one_mode_moving_reads_the_unchanged_mode_beside_the_moved_one(segment):
    # 40 nights alternating 1x/3x, then a segment of 10 nights (too few to show modes of their own). Begun by the
    # fast nights at 2x (the change that began it), its slow nights at 3x are the slow mode unchanged: put on the
    # 2x scale, not read as a +50% change of their own. Begun by fast nights as they were, its 2x nights may be
    # their regression: as measured.
    means, _ = drifting_modes(40, seed=11, slow=3.0)
    nights = {"2x then slow": [2, 2, 2, 2, 3, 2, 2, 3, 2, 3], "fast then 2x": [1, 1, 1, 2, 2, 2, 2, 2, 2, 1]}[segment]
    noise = 1.0 + np.random.default_rng(3).normal(0.0, 0.003, 10)
    means = np.r_[means, np.array(nights, dtype=float) * noise]

    found = align_modes(means, tested=3, modes_from=40, earlier_from=0)

    if segment == "2x then slow":
        assert found.aligned and float(found.factor) == pytest.approx(2 / 3, rel=0.01)
        np.testing.assert_allclose(found.values[40:], 2.0, rtol=0.02)
    else:
        assert not found.aligned
        np.testing.assert_array_equal(found.values, means)


@pytest.mark.parametrize(("segment", "tested"), [
    ([2, 1, 1, 1, 1, 1, 1, 2, 2], 2),  # an odd first night, then the fast mode regressing to 2x
    ([2, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2], 5),  # an odd first night, then a new 2x path now and then
    ([4.5, 3, 3, 3, 3, 3, 4.5, 4.5], 2),  # the slow mode moved (every night slow), then regressing to 4.5x
])
def test_a_segment_read_with_a_moved_mode_never_scales_nights_at_the_moved_level(segment, tested):
    # A review's cases: read as "one mode moved" from the segment's first night, each of these scaled its tested
    # nights at the new level onto a mode's and hid their regression. Only the upper mode's nights are ever put on
    # a moved lower level's scale.
    means, _ = drifting_modes(40, seed=11, slow=3.0)
    means = np.r_[means, np.array(segment, dtype=float)]

    found = align_modes(means, tested=tested, modes_from=40, earlier_from=0)

    np.testing.assert_array_equal(found.values[-tested:], means[-tested:])


def test_earlier_from_must_come_before_modes_from():
    with pytest.raises(ValueError, match="`earlier_from`"):
        align_modes(np.ones(20), tested=5, modes_from=3, earlier_from=4)
