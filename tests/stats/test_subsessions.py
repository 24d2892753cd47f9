"""Autocorrelation, subsession analysis and the CI of one mean (spec §2, §3)."""

import numpy as np
import pytest
from scipy import stats

from results.stats import (
    NotEnoughSamples,
    StatisticsError,
    autocorrelation,
    mean_interval,
    required_subsessions,
    subsessions,
)

# Pilot's g_response_time (Ferrari 1978, p. 79), from
# tests/data/reference/pilot-bench.json (ascar-io/pilot-bench lib/test/unit_test_statistics.cc).
RESPONSE_TIME = np.array([
    1.21, 1.67, 1.71, 1.53, 2.03, 2.15, 1.88, 2.02, 1.75, 1.84, 1.61, 1.35,
    1.43, 1.64, 1.52, 1.44, 1.17, 1.42, 1.64, 1.86, 1.68, 1.91, 1.73, 2.18,
    2.27, 1.93, 2.19, 2.04, 1.92, 1.97, 1.65, 1.71, 1.89, 1.70, 1.62, 1.48,
    1.55, 1.39, 1.45, 1.67, 1.62, 1.77, 1.88, 1.82, 1.93, 2.09, 2.24, 2.16,
])


def block_means(x, q):
    return x.reshape(-1, q).mean(axis=1)


class TestAutocorrelation:
    def test_matches_the_spec_formula(self):
        x = np.random.default_rng(0).normal(size=200)
        d = x - x.mean()
        for lag in (1, 2, 5):
            assert autocorrelation(x, lag) == pytest.approx(np.sum(d[:-lag] * d[lag:]) / np.sum(d * d), rel=1e-12)

    @pytest.mark.parametrize(
        ("q", "expected"),
        [
            (1, 0.6365557436138444),  # pilot-bench.json pilot.r1_q1
            (2, 0.5589235176117249),  # pilot.r1_q2
            (3, 0.42024538535472183),  # pilot.r1_q3_not_in_upstream (derived, labelled so)
            (4, 0.08230986644266707),  # pilot.r1_q4
        ],
    )
    def test_pilot_block_autocorrelation(self, q, expected):
        # Pilot centres on the mean of all 48 samples; as q divides 48 that is the mean of the block means.
        assert autocorrelation(block_means(RESPONSE_TIME, q)) == pytest.approx(expected, rel=1e-12)

    def test_constant_series_is_reported_independent(self):
        assert autocorrelation([3.0] * 10) == 0.0

    def test_alternating_series_is_negatively_correlated(self):
        assert autocorrelation([1.0, -1.0] * 10) == pytest.approx(-0.95)

    @pytest.mark.parametrize(
        ("x", "lag", "match"),
        [
            ([], 1, "`x` must hold at least 2 samples"),
            ([1.0, 2.0], 2, "`x` must hold at least 3 samples"),
            ([1.0, np.nan, 2.0], 1, "`x` must not contain NaN or infinite"),
            ([1.0, np.inf, 2.0], 1, "`x` must not contain NaN or infinite"),
            ([[1.0, 2.0], [3.0, 4.0]], 1, "`x` must be one-dimensional"),
            ([1.0, 2.0, 3.0], 0, "`lag` must be at least 1"),
            ([1.0, 2.0, 3.0], 1.5, "`lag` must be an integer"),
            (["a", "b"], 1, "`x` must be numeric"),
            ([[1.0], [2.0, 3.0]], 1, "`x` must be a rectangular array"),
        ],
    )
    def test_validation(self, x, lag, match):
        with pytest.raises(ValueError, match=match):
            autocorrelation(x, lag)


class TestSubsessions:
    def test_pilot_optimal_subsession_size_and_statistics(self):
        # pilot-bench.json: pilot.optimal_q = 4, pilot.var_q4, pilot.r1_q4, pilot.mean.
        result = subsessions(RESPONSE_TIME)
        assert result.subsession_size == 4
        assert result.n == 12
        assert result.variance == pytest.approx(0.05264711174242424, rel=1e-12)
        assert result.autocorrelation == pytest.approx(0.08230986644266707, rel=1e-12)
        assert result.mean == pytest.approx(1.756458333333333, rel=1e-14)
        np.testing.assert_allclose(result.means, block_means(RESPONSE_TIME, 4))

    def test_pilot_search_limit_is_min_subsessions_3(self):
        # Pilot searches q <= n/3, i.e. at least 3 subsessions; the answer is the same q = 4.
        assert subsessions(RESPONSE_TIME, min_subsessions=3).subsession_size == 4

    def test_pilot_ci_full_width(self):
        # pilot-bench.json pilot.ci_q4: FULL width 2 * t_{0.975,11} * sqrt(var_q4 / 12).
        interval = subsessions(RESPONSE_TIME).confidence_interval()
        assert 2 * interval.half_width == pytest.approx(0.29157062128900485, rel=1e-12)
        assert interval.df == 11

    def test_q1_variance_is_the_sample_variance(self):
        # pilot-bench.json pilot.var_q1.
        result = subsessions(RESPONSE_TIME, max_autocorrelation=0.99)
        assert result.subsession_size == 1
        assert result.variance == pytest.approx(0.07347442375886527, rel=1e-12)

    def test_remainder_is_dropped_from_the_oldest_samples(self):
        x = np.concatenate(([5.0], np.tile([1.0, 3.0], 10)))
        # q = 1 fails (alternating); q = 2 makes 10 identical blocks once the oldest sample is dropped
        # (dropping the newest instead would keep the 5.0 and give a mean of 2.1).
        result = subsessions(x)
        assert result.subsession_size == 2
        assert result.n == 10
        assert result.mean == 2.0
        assert result.variance == 0.0

    def test_not_enough_samples_says_how_many_more(self):
        ar = np.cumsum(np.random.default_rng(1).normal(size=25))  # a random walk: never uncorrelated
        with pytest.raises(NotEnoughSamples, match=r"more samples are needed to try subsession size 3") as info:
            subsessions(ar)
        assert info.value.needed == 5  # 10 subsessions of 3 need 30 samples
        assert isinstance(info.value, StatisticsError)

    def test_too_short_series_needs_min_subsessions_samples(self):
        with pytest.raises(NotEnoughSamples) as info:
            subsessions([1.0, 2.0, 3.0])
        assert info.value.needed == 7

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"max_autocorrelation": -0.1}, "`max_autocorrelation` must be at least 0"),
            ({"max_autocorrelation": 1.0}, "`max_autocorrelation` must be a number in"),
            ({"max_autocorrelation": np.nan}, "`max_autocorrelation` must not contain NaN"),
            ({"min_subsessions": 2}, "`min_subsessions` must be at least 3"),
        ],
    )
    def test_validation(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            subsessions(RESPONSE_TIME, **kwargs)

    def test_rejects_nan(self):
        with pytest.raises(ValueError, match="`x` must not contain NaN"):
            subsessions([1.0, np.nan] * 10)


class TestMeanInterval:
    def test_formula(self):
        result = mean_interval(10.0, 4.0, 16, confidence=0.9)
        half = stats.t.ppf(0.95, 15) * 0.5
        assert (result.low, result.high, result.half_width) == pytest.approx((10 - half, 10 + half, half))
        assert result.confidence_interval() == pytest.approx((10 - half, 10 + half))

    def test_kalibera_jones_table_6_2_old_system(self):
        # K&J §6.2 example: binary means 7.8, 12.3, 11.5 -> grand mean 10.5, S_3^2 = 5.8 (printed, rounded),
        # 95% CI 10.5 ± 4.3 * sqrt(5.8 / 3).
        result = mean_interval(10.5, 5.8, 3)
        assert result.half_width == pytest.approx(4.3 * np.sqrt(5.8 / 3), rel=0.01)

    def test_vectorized_over_series(self):
        result = mean_interval([1.0, 2.0], [1.0, 0.0], [5, 2])
        assert result.half_width[0] == pytest.approx(stats.t.ppf(0.975, 4) * np.sqrt(1 / 5))
        assert result.half_width[1] == 0.0
        np.testing.assert_array_equal(result.df, [4, 1])

    def test_each_series_may_have_its_own_confidence_level(self):
        levels = [0.8, 0.95, 0.999]
        result = mean_interval([1.0, 2.0, 3.0], [0.5, 1.0, 2.0], [4, 10, 30], confidence=levels)
        expected = [stats.t.interval(c, n - 1, loc=m, scale=np.sqrt(v / n))
                    for m, v, n, c in zip([1.0, 2.0, 3.0], [0.5, 1.0, 2.0], [4, 10, 30], levels)]
        np.testing.assert_allclose(np.column_stack([result.low, result.high]), expected, rtol=1e-12)
        # One level for many series broadcasts the other way.
        assert mean_interval(1.0, 1.0, 5, confidence=[0.9, 0.99]).half_width.shape == (2,)

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((1.0, -1.0, 5), {}, "`variance` must be at least 0"),
            ((1.0, 1.0, 1), {}, "`n` must be at least 2"),
            ((1.0, 1.0, 2.5), {}, "`n` must be a whole number"),
            ((np.nan, 1.0, 5), {}, "`mean` must not contain NaN"),
            ((1.0, 1.0, 5), {"confidence": 1.0}, "`confidence` must be strictly between 0 and 1"),
            ((1.0, 1.0, 5), {"confidence": 0}, "`confidence` must be strictly between 0 and 1"),
            ((1.0, 1.0, 5), {"confidence": "high"}, "`confidence` must be a number"),
            ((1.0, 1.0, 5), {"confidence": [0.9, np.nan]}, "`confidence` must be strictly between 0 and 1; got nan"),
            ((1.0, 1.0, 5), {"confidence": ["high"]}, "`confidence` must be numbers"),
        ],
    )
    def test_validation(self, args, kwargs, match):
        with pytest.raises(ValueError, match=match):
            mean_interval(*args, **kwargs)


class TestRequiredSubsessions:
    def test_iterated_rule_is_the_smallest_m(self):
        variance, half_width = 2.0, 0.5
        m = required_subsessions(variance, half_width)
        assert stats.t.ppf(0.975, m - 1) * np.sqrt(variance / m) <= half_width
        assert stats.t.ppf(0.975, m - 2) * np.sqrt(variance / (m - 1)) > half_width

    def test_pilot_example_both_conventions(self):
        # pilot-bench.json pilot.optimal_sample_size: width = 10% of the mean, q = 4, Pilot says 34 subsessions.
        result = subsessions(RESPONSE_TIME)
        e = 0.1 * RESPONSE_TIME.mean() / 2
        # Pilot: t at the CURRENT number of subsessions (12), no iteration.
        pilot = int(np.ceil(result.variance * (stats.t.ppf(0.975, result.n - 1) / e) ** 2))
        assert pilot == 34
        # Spec §3 (this API): t at the candidate m, iterated.
        assert required_subsessions(result.variance, e) == 29

    def test_vectorized_and_zero_variance(self):
        np.testing.assert_array_equal(required_subsessions([0.0, 2.0], 0.5), [2, required_subsessions(2.0, 0.5)])

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((1.0, 0.0), {}, "`half_width` must be greater than 0"),
            ((-1.0, 1.0), {}, "`variance` must be at least 0"),
            ((1.0, np.inf), {}, "`half_width` must not contain NaN or infinite"),
            ((1.0, 1.0), {"confidence": 1.5}, "`confidence` must be strictly between 0 and 1"),
        ],
    )
    def test_validation(self, args, kwargs, match):
        with pytest.raises(ValueError, match=match):
            required_subsessions(*args, **kwargs)
