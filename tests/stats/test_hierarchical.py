"""Variance components and optimal repetition counts (Kalibera & Jones; spec §6)."""

import numpy as np
import pytest
from scipy import stats

from results.stats import (
    StatisticsError,
    plan_repetitions,
    predicted_half_width,
    variance_components,
)

# K&J §6.1, Table 6.1 transformed to two levels: 3 binaries x 4 measurements (printed in the paper).
TABLE_6_1 = [[9, 8, 5, 3], [10, 7, 6, 11], [1, 2, 12, 4]]


def simulate(rng, components, shape, size):
    """`size` balanced data sets; `components` are the true T_i^2 bottom-up, shape is top-down."""
    levels = len(shape)
    data = np.zeros((size,) + shape)
    for level, variance in enumerate(components):
        effect_shape = (size,) + shape[: levels - level] + (1,) * level
        data += np.sqrt(variance) * rng.standard_normal(effect_shape)
    return data


class TestVarianceComponents:
    def test_kalibera_jones_table_6_1(self):
        # Printed: binary means 6.3 / 8.5 / 4.8, S_2^2 (variance of binary means) 3.6,
        # S_1^2 (mean of measurement variances) 12.7, grand mean 6.5.
        result = variance_components(TABLE_6_1)
        assert result.mean == 6.5
        assert result.counts == (4, 3)
        assert result.biased == pytest.approx([12.7, 3.6], abs=0.05)
        assert np.mean([7.6, 5.7, 24.9]) == pytest.approx(result.biased[0], abs=0.05)
        assert result.unbiased == pytest.approx([result.biased[0], result.biased[1] - result.biased[0] / 4])

    def test_by_hand_three_levels(self):
        data = np.array([[[9, 5], [8, 3]], [[10, 6], [7, 11]], [[1, 12], [2, 4]]], dtype=float)
        result = variance_components(data)
        # S_1^2: mean of the six within-execution variances 8, 12.5, 8, 8, 60.5, 2.
        # S_2^2: mean over binaries of var(execution means) = mean(1.125, 0.5, 6.125).
        # S_3^2: var of binary means 6.25, 8.5, 4.75.
        np.testing.assert_allclose(result.biased, [16.5, 31 / 12, 3.5625])
        np.testing.assert_allclose(result.unbiased, [16.5, 31 / 12 - 16.5 / 2, 3.5625 - 31 / 24])
        assert result.droppable == (2,)

    def test_one_level_is_the_sample_variance(self):
        x = [1.0, 2.0, 4.0, 8.0]
        result = variance_components(x)
        assert result.biased == pytest.approx([np.var(x, ddof=1)])
        assert result.confidence_interval().half_width == pytest.approx(
            stats.t.ppf(0.975, 3) * np.sqrt(np.var(x, ddof=1) / 4)
        )

    def test_grand_mean_interval_uses_the_top_level(self):
        data = np.random.default_rng(3).normal(size=(6, 4, 5))
        result = variance_components(data).confidence_interval(0.9)
        top = data.mean(axis=(1, 2))
        assert result.half_width == pytest.approx(stats.t.ppf(0.95, 5) * top.std(ddof=1) / np.sqrt(6))

    def test_unbiased_by_simulation(self):
        rng = np.random.default_rng(11)
        truth = np.array([1.0, 0.5, 0.25])
        data = simulate(rng, truth, (6, 5, 4), 4000)
        estimates = np.array([variance_components(d).unbiased for d in data])
        # Standard errors of these means are below 1.5% of each component.
        np.testing.assert_allclose(estimates.mean(axis=0), truth, rtol=0.05)
        biased = np.array([variance_components(d).biased for d in data]).mean(axis=0)
        assert biased[2] > truth[2] * 1.15  # S_3^2 carries the lower levels: 0.25 + 0.5/5 + 1/20

    @pytest.mark.parametrize(
        ("data", "match"),
        [
            ([[1.0, 2.0], [3.0]], "`data` must be balanced"),
            ([[1.0, 2.0], [3.0, np.nan]], "`data` must not contain NaN"),
            ([[1.0, 2.0], [3.0, np.inf]], "`data` must not contain NaN or infinite"),
            ([[1.0, 2.0]], "at least 2 repetitions at every level"),
            ([1.0], "at least 2 repetitions at every level"),
            (5.0, "`data` must have at least one dimension"),
            ([["a", "b"], ["c", "d"]], "`data` must be numeric"),
        ],
    )
    def test_validation(self, data, match):
        with pytest.raises(ValueError, match=match):
            variance_components(data)


# K&J Table 8.2 relative variations (compilation / execution / measurement, % of the mean) and Table 8.5
# 95% half-widths (ours / default) for 3, 6 and 9 hours.
TABLE_8_5 = {
    "FFT NA OPT": ((3.4, 8.2, 1.4), [(3.3, 7.5), (2.0, 4.6), (1.5, 3.6)]),
    "FFT NA": ((3.4, 7.8, 1.4), [(3.2, 7.1), (1.9, 4.4), (1.5, 3.4)]),
    "FFT OPT": ((4.4, 8.2, 4.3), [(4.3, 8.6), (2.5, 5.3), (2.0, 4.1)]),
    "FFT": ((4.1, 6.7, 4.6), [(3.6, 7.6), (2.3, 4.7), (1.8, 3.7)]),
}
# K&J §8.5: a measurement takes 0.25 s, an execution 19 warm-up measurements, a build 20 minutes.
FFT_COSTS = [0.25, 19 * 0.25, 1200.0]


class TestPlanRepetitions:
    def test_kalibera_jones_fft_six_hours(self):
        variances = np.array([4.6, 6.7, 4.1]) ** 2
        plan = plan_repetitions(variances, FFT_COSTS, budget=6 * 3600)
        # K&J §8.5: n_1 = 3, n_2 = 26, 16 builds, half-width about 2.3% of the mean.
        assert plan.counts == (3, 26, 16)
        assert plan.half_width == pytest.approx(2.3, abs=0.05)
        assert plan.cost <= 6 * 3600
        assert plan.droppable == ()

    @pytest.mark.parametrize("name", list(TABLE_8_5))
    def test_kalibera_jones_table_8_5(self, name):
        (compilation, execution, measurement), rows = TABLE_8_5[name]
        variances = np.array([measurement, execution, compilation]) ** 2
        for hours, (ours, default) in zip((3, 6, 9), rows):
            plan = plan_repetitions(variances, FFT_COSTS, budget=hours * 3600)
            assert plan.half_width == pytest.approx(ours, abs=0.2), (hours, plan)
            # The default design: one execution with one measurement (plus warm-up) per build.
            builds = int(hours * 3600 // (1200 + 20 * 0.25))
            assert predicted_half_width(variances, [1, 1, builds]) == pytest.approx(default, abs=0.2), hours

    def test_single_level_default_of_section_8_5(self):
        # "we can take about 17 samples within our 6 hours ... half-width about 4.7% of the mean".
        variances = np.array([4.6, 6.7, 4.1]) ** 2
        assert 6 * 3600 // 1205 == 17
        assert predicted_half_width(variances, [1, 1, 17]) == pytest.approx(4.7, abs=0.05)

    def test_counts_are_the_cauchy_schwarz_optimum(self):
        variances, costs = np.array([2.0, 1.0, 0.5]), np.array([1.0, 10.0, 300.0])
        plan = plan_repetitions(variances, costs, budget=1e5)
        exact = np.sqrt(costs[1:] * variances[:-1] / (costs[:-1] * variances[1:]))
        np.testing.assert_array_equal(plan.counts[:2], np.ceil(exact))
        # No neighbouring design of the same cost does better.
        for delta in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            counts = np.array(plan.counts[:2]) + delta
            unit = costs[2] + counts[1] * (costs[1] + counts[0] * costs[0])
            other = predicted_half_width(variances, [*counts, int(1e5 // unit)])
            assert other >= plan.half_width * 0.98

    def test_level_without_variation_is_repeated_once(self):
        # Executions add nothing (T_2^2 <= 0): one execution per build, its warm-up paid per build.
        plan = plan_repetitions([1.0, -0.1, 0.5], [1.0, 10.0, 100.0], budget=10_000)
        assert plan.droppable == (2,)
        assert plan.counts[1] == 1
        assert plan.counts[0] == int(np.ceil(np.sqrt(110 * 1.0 / 0.5)))
        assert plan.counts[2] == 10_000 // (100 + 10 + plan.counts[0])

    def test_top_level_without_variation_needs_one_unit(self):
        plan = plan_repetitions([1.0, 1.0, 0.0], [1.0, 10.0, 100.0], budget=10_000)
        assert plan.droppable == (3,)
        assert plan.counts[2] == 1
        # The one build's cost is paid once and does not enter the execution/measurement trade-off.
        assert plan.counts[0] == int(np.ceil(np.sqrt(10.0)))
        assert plan.counts[1] == (10_000 - 100) // (10 + plan.counts[0])

    def test_budget_too_small(self):
        with pytest.raises(StatisticsError, match="at least 2 are needed"):
            plan_repetitions([1.0, 1.0], [1.0, 1000.0], budget=1500)

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            (([1.0, 1.0], [1.0, 5.0]), {"budget": 0.0}, "`budget` must be greater than 0"),
            (([1.0, 1.0], [1.0, 5.0]), {"budget": -5.0}, "`budget` must be greater than 0"),
            (([1.0, 1.0], [0.0, 5.0]), {"budget": 100.0}, "`costs` must be positive for a measurement"),
            (([1.0, 1.0], [1.0, -5.0]), {"budget": 100.0}, "non-negative above it"),
            (([1.0, 1.0], [1.0]), {"budget": 100.0}, "`costs` must hold one cost per level"),
            (([], []), {"budget": 100.0}, "`variances` must be a non-empty 1-D sequence"),
            (([1.0, np.nan], [1.0, 5.0]), {"budget": 100.0}, "`variances` must not contain NaN"),
            (([1.0, 1.0], [1.0, 5.0]), {"budget": 100.0, "confidence": 95}, "`confidence` must be strictly"),
        ],
    )
    def test_validation(self, args, kwargs, match):
        with pytest.raises(ValueError, match=match):
            plan_repetitions(*args, **kwargs)

    @pytest.mark.parametrize(
        ("counts", "match"),
        [([1, 1], "`counts` must hold one whole number per level"), ([0, 1, 5], "at least 1 at every level")],
    )
    def test_predicted_half_width_validation(self, counts, match):
        with pytest.raises(ValueError, match=match):
            predicted_half_width([1.0, 1.0, 1.0], counts)
