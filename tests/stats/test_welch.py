"""Welch's test from subsession statistics and the sample size it needs (spec §5)."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from results.stats import StatisticsError, welch_required_subsessions, welch_test

# The external reference vectors, copied from the project's shared reference set (see its README.md).
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "reference"


def reference(name):
    return json.loads((REFERENCE / name).read_text())


def from_samples(a, b):
    """Welch's test as R, Go and scipy compute it: the Welch–Satterthwaite ν at every size (the reference
    vectors' convention; the product uses Hsu's below 5 units, TestTinySamples)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return welch_test(a.mean(), a.var(ddof=1), a.size, b.mean(), b.var(ddof=1), b.size, small_side=2)


def welch_df(va, na, vb, nb):
    return (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))


class TestAgainstScipy:
    def test_random_inputs_vectorized(self):
        rng = np.random.default_rng(7)
        size = 500
        mean_a, mean_b = rng.normal(size=size), rng.normal(size=size)
        var_a, var_b = rng.gamma(2.0, size=size), rng.gamma(2.0, size=size)
        n_a, n_b = rng.integers(2, 60, size=size), rng.integers(2, 60, size=size)
        result = welch_test(mean_a, var_a, n_a, mean_b, var_b, n_b, small_side=2)
        expected = stats.ttest_ind_from_stats(
            mean_a, np.sqrt(var_a), n_a, mean_b, np.sqrt(var_b), n_b, equal_var=False
        )
        np.testing.assert_allclose(result.statistic, expected.statistic, rtol=1e-10)
        np.testing.assert_allclose(result.pvalue, expected.pvalue, rtol=1e-10, atol=1e-300)
        np.testing.assert_allclose(result.df, welch_df(var_a, n_a, var_b, n_b), rtol=1e-10)

    @pytest.mark.parametrize(
        ("a", "b"),
        [
            ([1.0, 2.0, 3.0], [2.0, 1.0, 3.0]),  # equal means
            ([1.0, 1.0, 1.0, 1.0], [0.5, 1.5, 2.5]),  # zero variance on one side
            ([1.0, 2.0], [5.0, 9.0]),  # n = 2 on both sides
        ],
    )
    def test_edge_inputs_agree_with_scipy(self, a, b):
        a, b = np.asarray(a), np.asarray(b)
        result = from_samples(a, b)
        expected = stats.ttest_ind_from_stats(
            a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, equal_var=False
        )
        assert result.statistic == pytest.approx(expected.statistic, rel=1e-10, abs=1e-12)
        assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-10)
        va, vb = a.var(ddof=1), b.var(ddof=1)
        assert result.df == pytest.approx(welch_df(va, a.size, vb, b.size), rel=1e-10)

    def test_zero_variance_on_one_side_uses_the_other_sides_df(self):
        assert from_samples([1.0] * 4, [0.5, 1.5, 2.5]).df == pytest.approx(2.0)

    def test_zero_variance_on_both_sides_equal_means(self):
        result = welch_test(1.0, 0.0, 3, 1.0, 0.0, 5)
        assert (result.statistic, result.pvalue, result.df) == (0.0, 1.0, 6.0)

    def test_zero_variance_on_both_sides_different_means(self):
        result = welch_test([1.0, 3.0], 0.0, 3, 2.0, 0.0, 5)
        np.testing.assert_array_equal(result.statistic, [-np.inf, np.inf])
        np.testing.assert_array_equal(result.pvalue, [0.0, 0.0])
        np.testing.assert_array_equal(result.confidence_interval(), [[-1.0, 1.0], [-1.0, 1.0]])


class TestReferenceValues:
    # tests/data/reference/scipy-welch-ttest.json: R t.test(a, b, var.equal = FALSE), options(digits = 20).
    @pytest.mark.parametrize(
        ("a", "b", "t", "p"),
        [
            ([1.0, 2.0, 3.0], [1.1, 2.9, 4.2], -0.6864951273557263, 0.5361949075312669),
            ([1.0, 2.0, 3.0, 4.0], [1.1, 2.9, 4.2], -0.21086633159507231, 0.8435413913160825),
        ],
    )
    def test_r_t_test(self, a, b, t, p):
        result = from_samples(a, b)
        assert result.statistic == pytest.approx(t, rel=1e-12)
        assert result.pvalue == pytest.approx(p, rel=1e-12)

    def test_r_yuen_welch_df_and_90_percent_interval(self):
        # scipy-welch-ttest.json R.welch_ci (PairedData::yuen.t.test(tr = 0), 7 significant digits).
        a = [0.8823632920701925, 0.9731874438100194, 0.4549261967053305, 0.9789333529742129,
             0.06066770089265294, 0.4401336579468357, 0.5580601777127007, 0.40151434071728487,
             0.1445331532340064, 0.25860601166201114, 0.20202161806003072]
        b = [0.9345527735365652, 0.4268060306363982, 0.49751939110119126, 0.1415284608415639,
             0.7114349984808946, 0.776696668768975, 0.2050757842825015, 0.7870277154949904,
             0.9469185543350778, 0.32464958391511844, 0.38735820013889455, 0.3518746794712231,
             0.21731810804129814]
        result = from_samples(a, b)
        assert result.statistic == pytest.approx(-0.2314607, rel=1e-6)
        assert result.df == pytest.approx(19.894435, rel=1e-7)
        assert result.pvalue == pytest.approx(0.8193209, rel=1e-6)
        assert result.confidence_interval(0.9) == pytest.approx((-0.247220294, 0.188729943), rel=1e-7)

    def test_golang_internal_stats_welch(self):
        # golang-perf-benchstat.json ttest.welch (golang/perf internal/stats, relative tolerance 1e-8).
        result = from_samples([2, 1, 3, 4], [6, 5, 7, 9])
        assert result.statistic == pytest.approx(-3.9703446152237674, rel=1e-8)
        assert result.df == pytest.approx(5.584615384615385, rel=1e-8)
        assert result.pvalue == pytest.approx(0.00851286313137817, rel=1e-8)

    def test_golang_identical_samples(self):
        # golang-perf-benchstat.json ttest.same: t = 0, dof = 6, p = 1.
        result = from_samples([2, 1, 3, 4], [2, 1, 3, 4])
        assert (result.statistic, result.df, result.pvalue) == (0.0, pytest.approx(6.0), pytest.approx(1.0))

    def test_pilot_yale_body_temperature(self):
        # pilot-bench.json pilot.welch.yale_body_temp: p 0.024, CI of the difference [-0.54, -0.039], abs 0.001.
        result = welch_test(98.105, 0.699**2, 65, 98.394, 0.743**2, 65)
        assert result.pvalue == pytest.approx(0.024, abs=1e-3)
        assert result.confidence_interval() == pytest.approx((-0.54, -0.039), abs=1e-3)

    def test_pilot_speed_of_light(self):
        # pilot-bench.json pilot.welch.speed_of_light (Michelson/Newcomb), upstream tolerances; 99% CI.
        data = reference("pilot-bench.json")["data"]
        result = from_samples(data["vel1"], data["vel2"])
        assert result.df == pytest.approx(27.754, abs=1e-3)
        assert result.pvalue == pytest.approx(0.0003625357, abs=1e-10)
        assert result.confidence_interval(0.99) == pytest.approx((30.67544, 161.68977), abs=1e-5)

    def test_benchstat_v1_rows(self):
        # golang-perf-benchstat.json cases_benchstat_v1_oldnew: 72 real benchmark rows. benchstat removes
        # Tukey outliers (Hyndman-Fan type 8 quartiles = numpy "median_unbiased") and prints p with %.3f.
        rows = reference("golang-perf-benchstat.json")["cases_benchstat_v1_oldnew"]["rows"]
        assert len(rows) == 72

        def kept(values):
            values = np.asarray(values, float)
            q1, q3 = np.percentile(values, [25, 75], method="median_unbiased")
            spread = 1.5 * (q3 - q1)
            return values[(values >= q1 - spread) & (values <= q3 + spread)]

        for row in rows:
            old, new = kept(row["old_values"]), kept(row["new_values"])
            assert [old.size, new.size] == row["expected_ttest"]["n_after_outlier_removal"]
            result = from_samples(old, new)
            assert f"{result.pvalue:.3f}" == f"{row['expected_ttest']['p_3dp']:.3f}", row["benchmark"]


class TestRequiredSubsessions:
    def test_smallest_m_resolves_the_difference(self):
        mean_a, var_a, mean_b, var_b, alpha = 10.0, 4.0, 10.5, 9.0, 0.01
        m = welch_required_subsessions(mean_a, var_a, mean_b, var_b, alpha=alpha)
        assert welch_test(mean_a, var_a, m, mean_b, var_b, m).pvalue <= alpha
        assert welch_test(mean_a, var_a, m - 1, mean_b, var_b, m - 1).pvalue > alpha

    def test_pilot_yale_sample_size_for_comparison(self):
        # pilot-bench.json pilot.eq_test_sample_size.yale: feeding the observed p back gives n = 65.
        observed = welch_test(98.105, 0.699**2, 65, 98.394, 0.743**2, 65)
        # Pilot: base side fixed (n = 65), t at the current Welch df, result TRUNCATED (65.00000000000003 -> 65).
        t = stats.t.ppf(observed.pvalue / 2, observed.df)
        pilot = 0.743**2 / ((0.289 / t) ** 2 - 0.699**2 / 65)
        assert int(pilot) == 65
        # Spec §5 rule (both sides grow, df at m): at alpha = p the answer sits exactly on the boundary
        # m = 65, so rounding decides between 65 and 66; a hair above p it is 65.
        alpha = observed.pvalue * (1 + 1e-9)
        assert welch_required_subsessions(98.105, 0.699**2, 98.394, 0.743**2, alpha=alpha) == 65

    def test_zero_variance_needs_the_minimum(self):
        assert welch_required_subsessions(1.0, 0.0, 2.0, 0.0) == 2

    def test_equal_means_cannot_be_resolved(self):
        with pytest.raises(StatisticsError, match="no difference to resolve"):
            welch_required_subsessions(1.0, 1.0, 1.0, 2.0)

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((1.0, -1.0, 2.0, 1.0), {}, "`variance_a` must be at least 0"),
            ((1.0, 1.0, np.nan, 1.0), {}, "`mean_b` must not contain NaN"),
            (([1.0, 2.0], 1.0, 2.0, 1.0), {}, "`mean_a` must be a single number"),
            ((1.0, 1.0, 2.0, 1.0), {"alpha": 0.0}, "`alpha` must be strictly between 0 and 1"),
        ],
    )
    def test_validation(self, args, kwargs, match):
        with pytest.raises(ValueError, match=match):
            welch_required_subsessions(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.0, 1.0, 1, 2.0, 1.0, 5), "`n_a` must be at least 2"),
        ((1.0, 1.0, 5, 2.0, 1.0, 0), "`n_b` must be at least 2"),
        ((1.0, -0.5, 5, 2.0, 1.0, 5), "`variance_a` must be at least 0"),
        ((1.0, 1.0, 5, 2.0, -1.0, 5), "`variance_b` must be at least 0"),
        ((np.inf, 1.0, 5, 2.0, 1.0, 5), "`mean_a` must not contain NaN or infinite"),
        ((1.0, 1.0, 5, 2.0, np.nan, 5), "`variance_b` must not contain NaN"),
        ((1.0, 1.0, 4.5, 2.0, 1.0, 5), "`n_a` must be a whole number"),
        (([1.0, 2.0], 1.0, 5, [1.0, 2.0, 3.0], 1.0, 5), "shape mismatch"),
    ],
)
def test_welch_validation(args, match):
    with pytest.raises(ValueError, match=match):
        welch_test(*args)


class TestTinySamples:
    """Spec §5 (revised): no significance claim may reject equal means in more than 1.2·α of tests, for any
    n_A, n_B >= 2. Welch's ν is liberal with 2–3 units on a side (0.100 at α = 0.05 for 2 vs 10)."""

    GRID = [(2, 10), (3, 3), (3, 30), (4, 20), (5, 15), (2, 2), (10, 40)]

    @staticmethod
    def false_positive_rate(n_a, n_b, sd_a, sd_b, *, small_side, alpha=0.05, replications=20_000, seed=0):
        rng = np.random.default_rng(seed)
        a = rng.normal(0.0, sd_a, (replications, n_a))
        b = rng.normal(0.0, sd_b, (replications, n_b))
        result = welch_test(a.mean(axis=1), a.var(axis=1, ddof=1), n_a, b.mean(axis=1), b.var(axis=1, ddof=1), n_b,
                            small_side=small_side)
        return np.mean(result.pvalue < alpha)

    @pytest.mark.parametrize(("n_a", "n_b"), GRID)
    @pytest.mark.parametrize("sd_a", [0.2, 1.0, 5.0])
    def test_false_positive_rate_stays_within_1_2_alpha(self, n_a, n_b, sd_a):
        # 20,000 tests: the rate's s.e. is 0.0015 at 0.05, so 0.06 is 6.5 s.e. above the level.
        assert self.false_positive_rate(n_a, n_b, sd_a, 1.0, small_side=5) <= 0.06

    def test_welch_satterthwaite_alone_is_liberal_where_the_rule_steps_in(self):
        # The case the rule exists for: 2 units with the larger variance against 10.
        assert self.false_positive_rate(2, 10, 5.0, 1.0, small_side=2) > 0.08

    def test_hsu_df_is_used_and_said_below_five_units(self):
        result = welch_test([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [3, 5, 4], 0.0, 2.0, [30, 30, 5])
        np.testing.assert_array_equal(result.conservative, [True, False, True])
        np.testing.assert_allclose(result.df[[0, 2]], [2.0, 3.0])
        np.testing.assert_allclose(result.pvalue[0], 2 * stats.t.sf(result.statistic[0], 2.0))
        expected = stats.ttest_ind_from_stats(1.0, 1.0, 5, 0.0, np.sqrt(2.0), 30, equal_var=False)
        assert result.pvalue[1] == pytest.approx(expected.pvalue, rel=1e-10)
        assert not result.conservative[1]
