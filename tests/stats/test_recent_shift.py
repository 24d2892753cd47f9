"""recent_shift: calibrated on simulated A/A series, checked start by start against scipy's t-test."""

import numpy as np
import pytest
from scipy import stats

from results.stats import prior_spread as shift_prior
from results.stats import recent_shift, shift_since
from tests.expected import fieller


def test_with_no_shift_the_adjusted_p_value_is_uniform_in_its_tail():
    means = np.random.default_rng(11).normal(1.0, 0.02, (20_000, 20))
    result = recent_shift(means)
    for alpha in (0.05, 0.01, 0.005):
        rejected = float(np.mean(result.pvalue < alpha))
        # within 3.5 binomial standard errors of α (20,000 series)
        assert abs(rejected - alpha) < 3.5 * np.sqrt(alpha * (1 - alpha) / 20_000), (alpha, rejected)
    # the unadjusted p-value of the best start is far from calibrated: that is what the adjustment is for
    assert np.mean(result.unadjusted_pvalue < 0.01) > 0.04


def test_the_chosen_start_is_scipys_pooled_t_test_with_the_largest_statistic():
    rng = np.random.default_rng(12)
    for _ in range(20):
        means = rng.normal(10.0, 0.3, 16)
        means[-4:] += rng.uniform(0.0, 1.0)
        result = recent_shift(means, history=10, recent=8)
        tests = {}
        for m in range(1, 9):
            after, before = means[16 - m:], means[max(0, 16 - m - 10):16 - m]
            tests[m] = stats.ttest_ind(after, before, equal_var=True)
        best = max(tests, key=lambda m: abs(tests[m].statistic))
        assert (result.nights, result.start, result.history_size) == (best, 16 - best, min(10, 16 - best))
        assert result.statistic == pytest.approx(tests[best].statistic, rel=1e-9)
        assert result.unadjusted_pvalue == pytest.approx(tests[best].pvalue, rel=1e-9)
        after, before = means[16 - best:], means[max(0, 16 - best - 10):16 - best]
        pooled = (np.sum((after - after.mean()) ** 2) + np.sum((before - before.mean()) ** 2)) / (
            after.size + before.size - 2)
        assert (result.mean_after, result.mean_before, result.pooled_variance) == pytest.approx(
            (after.mean(), before.mean(), pooled), rel=1e-9)
        assert result.unadjusted_pvalue <= result.pvalue <= min(1.0, 8 * result.unadjusted_pvalue)


def test_one_start_is_tonight_against_the_prediction_interval_of_its_history():
    means = np.array([1.00, 1.02, 0.99, 1.01, 0.98, 1.00, 1.03, 0.99, 1.01, 1.00, 1.06])
    result = recent_shift(means, recent=1)
    history = means[:-1]
    t = (means[-1] - history.mean()) / (history.std(ddof=1) * np.sqrt(1 + 1 / history.size))
    assert result.statistic == pytest.approx(t) and result.nights == 1 and result.history_size == 10
    assert result.pvalue == pytest.approx(2 * stats.t.sf(abs(t), history.size - 1))


def test_the_ratio_interval_is_fiellers_on_the_two_segments():
    means = np.r_[np.random.default_rng(13).normal(1.0, 0.01, 10), np.random.default_rng(14).normal(1.05, 0.01, 4)]
    result = recent_shift(means)
    assert result.nights == 4 and result.start == 10
    after, before = means[10:], means[:10]
    pooled = (after.var(ddof=1) * 3 + before.var(ddof=1) * 9) / 12
    low, high = fieller((after.mean(), pooled, 4), (before.mean(), pooled, 10), df=12)
    assert (result.ratio, result.low, result.high) == pytest.approx((after.mean() / before.mean(), low, high))


def test_a_step_is_found_within_nights_and_its_first_night_named():
    """A 5% step at a run-to-run sd of 1.6% (the spec §8 scenario). Measured on 4,000 series at p < 0.005: 61%
    after 3 nights, 77% after 4, 93% after 6, 97.5% after 8; tonight against its history alone (recent=1)
    finds 33% on the first night and, once the shifted nights are its history, 0.1% after 4."""
    rng = np.random.default_rng(15)
    for nights, least in ((4, 0.70), (8, 0.95)):
        means = rng.normal(1.0, 0.016, (2_000, 12 + nights))
        means[:, -nights:] += 0.05
        result = recent_shift(means)
        assert np.mean(result.pvalue < 0.005) > least
        assert np.mean(np.abs(result.start - 12) <= 1) > 0.9
        assert np.median(result.ratio) == pytest.approx(1.05, abs=0.005)
        assert np.mean(recent_shift(means, recent=1).pvalue < 0.005) < 0.01


def test_short_series_are_padded_and_too_short_ones_not_tried():
    series = np.random.default_rng(16).normal(1.0, 0.01, 7)
    padded = recent_shift(np.r_[np.full(5, np.nan), series])
    alone = recent_shift(series)
    assert (padded.start - 5, padded.statistic, padded.pvalue) == (alone.start, alone.statistic, alone.pvalue)
    too_short = recent_shift([np.nan, 1.0, 1.1, 1.0])
    assert too_short.start == -1 and np.isnan(too_short.pvalue) and np.isnan(too_short.ratio)
    both = recent_shift(np.vstack([np.r_[np.nan, np.nan, series[:5]], series]))
    assert both.start.shape == (2,) and (both.nights >= 1).all()


@pytest.mark.parametrize(("arguments", "message"), [
    ({"means": [1.0, np.inf, 1.0, 1.0]}, "`means` must not hold infinite"),
    ({"means": [1.0, np.nan, 1.0, 1.0]}, "padding at the start"),
    ({"means": [1.0] * 5, "history": 1}, "`history`"),
    ({"means": [1.0] * 5, "recent": 0}, "`recent`"),
    ({"means": [1.0] * 5, "history": 10, "min_history": 11}, "`min_history`"),
    ({"means": [1.0] * 5, "confidence": 1.5}, "confidence"),
])
def test_bad_input_names_the_parameter(arguments, message):
    with pytest.raises(ValueError, match=message):
        recent_shift(**arguments)


def alerted_by(level: float, nights_after: int, seed: int) -> tuple[float, float]:
    """Issue 14's scenario in the core alone: 300 series, 25 nights then a 5% step in half of them, night means
    with within-run sd 3% over 30 readings and run-to-run sd `level`. Each night every series is scanned, q by
    Benjamini–Hochberg across the run (scipy), flagged at q < 5% with a ratio beyond +2%. Returns the share of
    steps flagged within `nights_after` nights and the flags per series-night without a shift (nights 10 on)."""
    rng = np.random.default_rng(seed)
    sd = np.sqrt(level**2 + 0.03**2 / 30)
    stepped = np.arange(300) % 2 == 1
    nights = 25 + nights_after
    means = 1.0 + rng.normal(0.0, sd, (300, nights)) + np.where(stepped[:, None] & (np.arange(nights) >= 25), 0.05, 0)
    found = np.zeros(300, dtype=bool)
    false = unchanged = 0
    for night in range(10, nights):
        scan = recent_shift(means[:, :night + 1])
        flagged = (stats.false_discovery_control(scan.pvalue, method="bh") < 0.05) & (scan.ratio > 1.02)
        without_shift = ~stepped | (night < 25)
        false += int(np.sum(flagged & without_shift))
        unchanged += int(np.sum(without_shift))
        found |= flagged & stepped & (night >= 25)
    return float(found[stepped].mean()), false / unchanged


def test_issue_scenario_at_1_5_percent_steps_are_flagged_by_the_oracles_nights_plus_one():
    """The oracle (known mean and variances, one-sided 0.5%) needs 2 nights for 95% at 1.5%; the target is 3."""
    share, false = alerted_by(0.015, 3, seed=31)
    assert share >= 0.95 and false <= 0.005


@pytest.mark.xfail(strict=True, reason="issue 14's target at 3% run-to-run (95% of steps by night 8 = oracle 7 + 1) "
                                       "is not met by the scan alone: 91% here; 82% through the product. It is "
                                       "beyond any detector that learns the baseline from the 25 nights before "
                                       "the step, even knowing the step's night: 92% by night 8 (95% by 10) with "
                                       "the t test, 94.8% (95% by 9) with σ known; benchmarks/nightly_detection.py")
def test_issue_scenario_at_3_percent_steps_are_flagged_by_the_oracles_nights_plus_one():
    share, false = alerted_by(0.03, 8, seed=32)
    assert share >= 0.95 and false <= 0.005


def test_shift_since_is_scipys_pooled_t_test_at_the_given_start():
    rng = np.random.default_rng(15)
    means = rng.normal(5.0, 0.1, (6, 24))
    means[:2, :5] = np.nan  # shorter series, padded at the start
    nights = np.array([1, 3, 5, 8, 12, 20])
    result = shift_since(means, nights, history=10)
    for row, m in enumerate(nights):
        series = means[row][~np.isnan(means[row])]
        after, before = series[series.size - m:], series[max(0, series.size - m - 10):series.size - m]
        expected = stats.ttest_ind(after, before, equal_var=True)
        assert (result.nights[row], result.history_size[row]) == (m, before.size)
        assert result.start[row] == 24 - m
        assert result.statistic[row] == pytest.approx(expected.statistic, rel=1e-9)
        assert result.pvalue[row] == pytest.approx(expected.pvalue, rel=1e-9)
        assert result.unadjusted_pvalue[row] == result.pvalue[row]


def test_shift_since_needs_two_nights_of_history_and_names_bad_input():
    result = shift_since([1.0, 1.1, 1.2, 1.3], 3)
    assert result.start == -1 and np.isnan(result.pvalue) and np.isnan(result.ratio)
    with pytest.raises(ValueError, match="`nights`"):
        shift_since([1.0, 1.1, 1.2, 1.3], 0)
    with pytest.raises(ValueError, match="`means`"):
        shift_since([1.0, np.nan, 1.2], 1)


def test_a_prior_spread_is_pooled_as_a_one_way_anova_would_pool_it():
    """With the spread of an earlier level lent, the statistic at each start is the t test of the two segments with
    the pooled within-group variance of all three groups (the earlier level its own group): scipy's one-way ANOVA
    gives the same mean square within, and the t quantile its degrees of freedom."""
    rng = np.random.default_rng(21)
    earlier = rng.normal(5.0, 0.2, 16)  # 15 df: lent as 8 (PRIOR_DF_STEPS), scaled
    means = np.r_[rng.normal(6.0, 0.2, 4), rng.normal(6.6, 0.2, 2)]
    squares, df = shift_prior(earlier)

    result = shift_since(means, 2, history=10, prior=(squares, int(df)))

    after, before = means[-2:], means[:-2]
    within = ((after - after.mean()) ** 2).sum() + ((before - before.mean()) ** 2).sum()
    pooled = (within + squares * 8 / 15) / (after.size + before.size - 2 + 8)
    t = (after.mean() - before.mean()) / np.sqrt(pooled * (1 / 2 + 1 / 4))
    assert result.pooled_variance == pytest.approx(pooled, rel=1e-12)
    assert result.statistic == pytest.approx(t, rel=1e-12)
    assert result.pvalue == pytest.approx(2 * stats.t.sf(abs(t), 2 + 4 - 2 + 8), rel=1e-9)
    # The sum of squares is the earlier level's own: the within-group sum of squares of scipy's ANOVA of it alone.
    assert squares == pytest.approx(((earlier - earlier.mean()) ** 2).sum(), rel=1e-12) and df == 15


def test_with_a_prior_spread_and_three_nights_of_history_the_adjusted_p_value_stays_calibrated():
    rng = np.random.default_rng(22)
    earlier = rng.normal(0.0, 1.0, (20_000, 12))
    means = rng.normal(3.0, 1.0, (20_000, 8))  # a new level: the same spread, another mean
    prior = shift_prior(earlier)

    result = recent_shift(means, history=30, recent=5, min_history=3, prior=prior)

    for alpha in (0.05, 0.01):
        rejected = float(np.mean(result.pvalue < alpha))
        assert abs(rejected - alpha) < 3.5 * np.sqrt(alpha * (1 - alpha) / 20_000) + 0.1 * alpha, (alpha, rejected)


def test_a_shift_soon_after_another_is_found_with_the_earlier_levels_spread_and_not_without_it():
    rng = np.random.default_rng(23)
    earlier = rng.normal(1.0, 0.02, (2_000, 20))
    means = np.c_[rng.normal(1.2, 0.02, (2_000, 4)), rng.normal(1.26, 0.02, (2_000, 2))]  # +5% after 4 nights

    lent = recent_shift(means, history=30, recent=3, min_history=3, prior=shift_prior(earlier))
    alone = recent_shift(means, history=30, recent=3, min_history=3)

    assert np.mean(lent.pvalue < 0.01) > 0.6 > np.mean(alone.pvalue < 0.01) + 0.2


def test_a_sign_chooses_the_start_with_the_largest_statistic_of_that_direction():
    rng = np.random.default_rng(24)
    means = np.r_[np.zeros(12), np.full(3, 1.0), np.full(2, -0.5)] + rng.normal(0, 0.05, 17)
    statistics = {m: stats.ttest_ind(means[17 - m:], means[max(0, 17 - m - 12):17 - m]).statistic for m in range(1, 6)}

    for sign in (1, -1):
        chosen = recent_shift(means, history=12, recent=5, min_history=10, sign=sign)
        best = max(statistics, key=lambda m: sign * statistics[m])
        assert (chosen.nights, chosen.statistic) == (best, pytest.approx(statistics[best], rel=1e-9))
    either = recent_shift(means, history=12, recent=5, min_history=10)
    assert either.nights == max(statistics, key=lambda m: abs(statistics[m]))


def test_skipped_nights_are_never_chosen_even_when_every_start_tried_moved_the_other_way():
    # Every start tried (the oldest two of five) is below the history: with sign +1 their statistics are all
    # negative, and the skipped newest nights must still not be chosen (their statistics are not computed).
    rng = np.random.default_rng(31)
    means = np.r_[np.zeros(12), np.full(5, -1.0)] + rng.normal(0, 0.05, 17)
    statistics = {m: stats.ttest_ind(means[17 - m:], means[max(0, 17 - m - 12):17 - m]).statistic for m in (4, 5)}

    chosen = recent_shift(means, history=12, recent=5, min_history=10, sign=1, skip=3)
    best = max(statistics, key=statistics.get)
    assert (chosen.nights, chosen.statistic) == (best, pytest.approx(statistics[best], rel=1e-9))


def test_the_starts_tried_are_those_the_history_leaves_and_one_start_is_scipys_exact_t_test():
    # Three nights of a level and tonight: with at least three nights of history only tonight can start a shift,
    # however many `recent` allows, and its p-value is the plain two-sample t test's.
    means = np.array([1.00, 1.01, 0.99, 1.05])
    found = recent_shift(means, history=30, recent=4, min_history=3)

    assert found.starts_tried == 1 and found.nights == 1
    assert found.pvalue == pytest.approx(stats.ttest_ind(means[3:], means[:3]).pvalue, rel=1e-9)
    assert recent_shift(np.r_[np.zeros(12), 1.0] + np.linspace(0, 0.01, 13), history=12, recent=5,
                        min_history=10).starts_tried == 3


def test_the_newest_night_alone_is_scipys_t_test_weighted_and_alerts_within_its_share_of_the_level():
    # Weighted Bonferroni of two families of starts that do not overlap: the scan of the older starts (the newest
    # night among their nights, never a start: `skip=1`) and the newest night's own test. Where the newest night is
    # the likeliest start of all, its p-value is scipy's two-sample t test of tonight against the K nights before
    # it divided by the weight, where smaller than the older scan's; a decision at α then rejects at most
    # (1 + w)·α of A/A series, and at least what the older scan alone rejects.
    rng = np.random.default_rng(41)
    means = rng.normal(1.0, 0.02, (20_000, 40))
    weight, alpha = 0.3, 0.01
    every = recent_shift(means, history=30, recent=10, min_history=10)
    older = recent_shift(means, history=30, recent=10, min_history=10, skip=1)
    both = recent_shift(means, history=30, recent=10, min_history=10, newest_weight=weight)
    own = stats.ttest_ind(means[:, -1:], means[:, 9:-1], axis=1).pvalue
    likeliest = every.nights == 1
    newest = likeliest & (own / weight < older.pvalue)
    assert newest.any() and np.array_equal(both.newest_alone, newest)
    assert np.allclose(both.pvalue, np.where(newest, own / weight, older.pvalue), rtol=1e-9)
    assert np.allclose(both.unadjusted_pvalue[newest], own[newest], rtol=1e-9)
    assert np.array_equal(both.start, np.where(newest, 39, older.start))
    assert (both.starts_tried == 10).all() and (older.starts_tried == 9).all()
    rejected = float(np.mean(both.pvalue < alpha))
    error = 3.5 * np.sqrt(alpha * (1 + weight) / 20_000)
    assert np.mean(older.pvalue < alpha) <= rejected < (1 + weight) * alpha + error
    assert np.mean(older.pvalue < alpha) < alpha + 3.5 * np.sqrt(alpha / 20_000)  # the older scan at its level
    assert rejected == pytest.approx(np.mean((older.pvalue < alpha) | (likeliest & (own < weight * alpha))))


def test_the_newest_night_alone_finds_a_large_step_on_its_first_night_sooner():
    # 4,000 series with a 3% step on the newest night at 0.8% noise (a browser CI series, one value a push):
    # the newest night's own test finds more of them on their first night at the same level.
    rng = np.random.default_rng(42)
    means = rng.normal(1.0, 0.008, (4_000, 40))
    means[:, -1] *= 1.03
    scan = recent_shift(means, history=30, recent=10, min_history=10)
    both = recent_shift(means, history=30, recent=10, min_history=10, newest_weight=0.3)
    assert np.mean(both.pvalue < 0.01) > np.mean(scan.pvalue < 0.01) + 0.05


@pytest.mark.parametrize("arguments", [{"newest_weight": -0.1}, {"newest_weight": np.nan},
                                       {"newest_weight": 0.3, "skip": 1}, {"newest_weight": 0.3, "sign": 1}])
def test_a_newest_weight_names_the_parameter(arguments):
    with pytest.raises(ValueError, match="`newest_weight`"):
        recent_shift(np.linspace(1.0, 1.1, 20), **arguments)


def test_fourteen_first_nights_leave_fewer_noisy_steps_unfound_than_ten():
    # A 5% step at a run-to-run sd of 3% needs about 10 nights of evidence: with 10 first nights tried, the nights
    # after the tenth only slide the starts past the step's. Simulated with a known truth (the nightly detection's
    # parameters, flagged at p < 1% two-sided with the estimate beyond 2%): over the 15 nights after the step, 14
    # first nights find more steps, and reject A/A series no more often per night (the adjustment grows slowly).
    rng = np.random.default_rng(77)
    sd = np.sqrt(0.03**2 + 0.03**2 / 30)
    means = 1.0 + rng.normal(0.0, sd, (6_000, 40))
    stepped = np.arange(6_000) < 3_000
    means[stepped, 25:] *= 1.05

    def flags(starts):
        found, rejected = np.zeros(3_000, dtype=bool), []
        for night in range(25, 40):
            scan = recent_shift(means[:, :night + 1], history=30, recent=starts, min_history=10, clip=3.5,
                                newest_weight=0.5)
            flagged = (scan.pvalue < 0.01) & (np.abs(scan.ratio - 1.0) > 0.02)
            found |= flagged[stepped]
            rejected.append(flagged[~stepped].mean())
        return found.mean(), np.mean(rejected)

    (ten, ten_false), (fourteen, fourteen_false) = flags(10), flags(14)
    assert fourteen > ten + 0.01
    assert fourteen_false <= ten_false + 0.001
