"""Tonight against the last K nights (spec §8): simulated histories with real run-to-run variation."""

import numpy as np
import pytest
from scipy import stats

from results.stats import compare_with_history, ratio_fieller_from_stats, verdict, welch_test


def nights(rng, *, count, k=10, between=0.02, within=0.03, subsessions=20, shift=0.0):
    """`count` series of K history nights and a candidate night; each night's mean moves by
    `between` (relative sd), its subsessions by `within`; the candidate is scaled by 1 + `shift`."""
    night_means = 1.0 + rng.normal(0, between, size=(count, k + 1))
    night_means[:, -1] *= 1.0 + shift
    samples = night_means[..., None] + rng.normal(0, within, size=(count, k + 1, subsessions))
    means = samples.mean(axis=-1)
    variances = samples.var(axis=-1, ddof=1)
    n = np.full(means.shape, subsessions)
    return (means[:, -1], variances[:, -1], n[:, -1]), (means[:, :-1], variances[:, :-1], n[:, :-1])


def test_with_equal_within_run_variance_it_is_the_textbook_prediction_interval_test():
    history = np.array([1.00, 1.03, 0.98, 1.01, 1.02, 0.97, 1.00, 1.04])
    candidate = 1.06
    # Equal within-run variances, below the spread of the nights: the candidate's variance becomes
    # σ_b² + w = S², so t = (x − x̄)/(S·sqrt(1 + 1/K)).
    result = compare_with_history(candidate, 0.0025, 25, history, np.full(8, 0.0025), np.full(8, 25))

    spread = history.std(ddof=1)
    expected = (candidate - history.mean()) / (spread * np.sqrt(1 + 1 / 8))
    assert result.statistic == pytest.approx(expected, rel=1e-12)
    assert result.pvalue == pytest.approx(2 * stats.t.sf(expected, 7), rel=1e-12)
    assert result.df == 7 and result.history_size == 8
    assert result.baseline == pytest.approx(history.mean())


def test_the_interval_is_fieller_on_the_candidate_and_history_variances():
    history_means = np.array([2.0, 2.1, 1.9, 2.05, 1.95])
    result = compare_with_history(2.2, 0.04, 10, history_means, np.full(5, 0.04), np.full(5, 10))

    between = max(history_means.var(ddof=1) - 0.004, 0)
    # Fieller with s_new² = between + s²/n and s_old² = S²/K, df = K − 1 (spec §6 formula).
    h2 = stats.t.ppf(0.975, 4) ** 2
    s_new2, s_old2 = between + 0.004, history_means.var(ddof=1) / 5
    a = history_means.mean() ** 2 - h2 * s_old2
    product = 2.2 * history_means.mean()
    root = np.sqrt(product**2 - a * (2.2**2 - h2 * s_new2))
    assert (result.low, result.high) == (pytest.approx((product - root) / a), pytest.approx((product + root) / a))
    assert result.between_variance == pytest.approx(between)


def test_history_aware_comparison_holds_its_false_alarm_rate_where_the_naive_one_cries_wolf():
    rng = np.random.default_rng(8)
    (mean, variance, n), (h_mean, h_variance, h_n) = nights(rng, count=4000)

    history = compare_with_history(mean, variance, n, h_mean, h_variance, h_n)
    naive_p = welch_test(mean, variance, n, h_mean[:, -1], h_variance[:, -1], h_n[:, -1]).pvalue
    naive = ratio_fieller_from_stats(mean, variance, n, h_mean[:, -1], h_variance[:, -1], h_n[:, -1])

    history_alarms = np.mean(history.pvalue < 0.05)
    # 4,000 A/A nights: the s.e. of a 5% rate is 0.34%.
    assert 0.035 <= history_alarms <= 0.065
    assert np.mean(naive_p < 0.05) > 0.5
    outside = lambda low, high: (low > 1) | (high < 1)  # noqa: E731
    assert 0.035 <= np.mean(outside(history.low, history.high)) <= 0.065
    assert np.mean(outside(naive.low, naive.high)) > 0.5


def test_a_practical_threshold_cuts_the_remaining_false_alarms():
    rng = np.random.default_rng(9)
    (mean, variance, n), history = nights(rng, count=4000, between=0.005, within=0.01)
    result = compare_with_history(mean, variance, n, *history)

    alarms_at = {theta: np.mean(verdict(result.low, result.high, threshold=theta) == "regression")
                 for theta in (0.0, 0.02)}

    assert alarms_at[0.0] == pytest.approx(0.025, abs=0.012)
    assert alarms_at[0.02] < 0.002


def test_a_five_percent_regression_is_found_at_the_rate_its_power_predicts():
    rng = np.random.default_rng(10)
    (mean, variance, n), history = nights(rng, count=2000, between=0.01, within=0.02, shift=0.05)
    result = compare_with_history(mean, variance, n, *history)

    # Power of the two-sided t-test at df 9 with noncentrality 0.05 / sqrt(σ_b² + σ_w²/n + σ_b²(1 + ...)/K).
    scale = np.sqrt(0.01**2 + 0.02**2 / 20) * np.sqrt(1 + 1 / 10)
    predicted = stats.nct.sf(stats.t.ppf(0.975, 9), 9, 0.05 / scale)
    assert np.mean(result.pvalue < 0.05) == pytest.approx(predicted, abs=0.03)
    assert np.mean(verdict(result.low, result.high, threshold=0.0) == "regression") == pytest.approx(predicted,
                                                                                                     abs=0.03)


def test_many_series_are_compared_in_one_call():
    rng = np.random.default_rng(11)
    (mean, variance, n), history = nights(rng, count=7)
    together = compare_with_history(mean, variance, n, *history)

    one = compare_with_history(mean[3], variance[3], n[3], history[0][3], history[1][3], history[2][3])
    assert together.ratio.shape == (7,)
    assert (together.low[3], together.pvalue[3]) == (pytest.approx(one.low), pytest.approx(one.pvalue))


def test_an_identical_history_and_candidate_is_no_difference():
    result = compare_with_history(1.0, 0.0, 5, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [5, 5, 5])

    assert (result.statistic, result.pvalue, result.ratio) == (0.0, 1.0, 1.0)


@pytest.mark.parametrize(("arguments", "message"), [
    ((1.0, 0.1, 5, [1.0], [0.1], [5]), "at least 2 results"),
    ((1.0, 0.1, 5, [1.0, 1.1], [0.1], [5, 5]), "same shape"),
    ((1.0, -0.1, 5, [1.0, 1.1], [0.1, 0.1], [5, 5]), "`variance` must be at least 0"),
    ((1.0, 0.1, 0, [1.0, 1.1], [0.1, 0.1], [5, 5]), "`n` must be at least 1"),
    ((1.0, 0.1, 5, [1.0, np.nan], [0.1, 0.1], [5, 5]), "history_mean"),
    (([1.0, 2.0, 3.0], 0.1, 5, [[1.0, 1.1], [1.0, 1.1]], [[0.1] * 2] * 2, [[5] * 2] * 2), "does not match"),
])
def test_invalid_input_is_refused_with_the_parameter_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        compare_with_history(*arguments)


def test_confidence_must_be_a_probability():
    with pytest.raises(ValueError, match="confidence"):
        compare_with_history(1.0, 0.1, 5, [1.0, 1.1], [0.1, 0.1], [5, 5], confidence=95)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_prediction_band_holds_the_next_nights_mean_at_its_level(confidence):
    # Simulated nights with a known truth: the band must contain a new night's mean (drawn like the K
    # before it, nothing changed) in `confidence` of the series, within 3.5 simulation standard errors.
    rng = np.random.default_rng(11)
    count = 20_000
    candidate, history = nights(rng, count=count)
    result = compare_with_history(*candidate, *history, confidence=confidence)

    covered = np.mean((result.prediction_low <= candidate[0]) & (candidate[0] <= result.prediction_high))
    assert abs(covered - confidence) < 3.5 * np.sqrt(confidence * (1 - confidence) / count)
    assert np.all(result.prediction_low < result.baseline) and np.all(result.baseline < result.prediction_high)


def test_the_prediction_band_matches_the_textbook_interval_on_worked_numbers():
    # mean 3, S = sqrt(2.5), t(0.975, 4) = 2.7764451051977987 (scipy.stats.t.ppf), half = t·S·sqrt(1 + 1/5)
    history = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    result = compare_with_history(3.0, 1e-4, 20, history, np.full(5, 1e-4), np.full(5, 20))

    half = 2.7764451051977987 * np.sqrt(2.5) * np.sqrt(1.2)
    assert result.prediction_low == pytest.approx(3.0 - half) and result.prediction_high == pytest.approx(3.0 + half)


def test_series_of_different_lengths_and_levels_in_one_call_equal_their_own_calls():
    # NaN pads the shorter histories; each series its own level, threshold and direction.
    rng = np.random.default_rng(21)
    lengths, levels = [10, 4, 7, 2], [0.95, 0.9, 0.99, 0.95]
    thresholds, directions = [0.02, 0.0, 0.05, 0.02], ["lower_is_better", "higher_is_better"] * 2
    padded = np.full((4, 3, 10), np.nan)
    candidates = rng.normal(1.0, 0.02, (4, 3))
    candidates[:, 1] = np.abs(candidates[:, 1]) * 1e-3
    candidates[:, 2] = 20
    for i, k in enumerate(lengths):
        padded[i, 0, :k] = rng.normal(1.0, 0.02, k)
        padded[i, 1, :k] = 1e-3
        padded[i, 2, :k] = 20

    together = compare_with_history(*candidates.T, *padded.transpose(1, 0, 2), threshold=thresholds,
                                    direction=directions, confidence=levels)

    for i, k in enumerate(lengths):
        alone = compare_with_history(*candidates[i], *padded[i, :, :k], threshold=thresholds[i],
                                     direction=directions[i], confidence=levels[i])
        for name in ("ratio", "low", "high", "statistic", "pvalue", "df", "baseline", "prediction_low"):
            assert getattr(together, name)[i] == pytest.approx(getattr(alone, name), rel=1e-12), name
        assert together.verdict[i] == alone.verdict == verdict(alone.low, alone.high, threshold=thresholds[i],
                                                               direction=directions[i])
        assert together.history_size[i] == k and alone.df == k - 1


@pytest.mark.parametrize(("history", "message"), [
    ([[1.0, np.nan], [0.1, 0.1], [10, 10]], "NaN .missing. at the same places"),
    ([[1.0, np.nan], [0.1, np.nan], [10, np.nan]], "at least 2 results per series"),
    ([[1.0, 1.1], [0.1, 0.1], [10, 10.5]], "whole numbers"),
    ([[1.0, np.inf], [0.1, 0.1], [10, 10]], "must not hold infinite values"),
])
def test_history_arrays_are_checked_naming_the_parameter(history, message):
    with pytest.raises(ValueError, match=message):
        compare_with_history(1.0, 0.1, 10, *history)
