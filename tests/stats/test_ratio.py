"""Fieller and hierarchical-bootstrap intervals for a ratio of means (K&J §6.2, §7.3; spec §6)."""

import numpy as np
import pytest
from scipy import stats

from results.stats import ratio_bootstrap, ratio_fieller, ratio_fieller_from_stats
from results.stats._ratio import _resample_means


def satterthwaite_df_at_ratio(x, y):
    """mratios' df: Welch–Satterthwaite with the denominator variance scaled by the estimated ratio²."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    rho = x.mean() / y.mean()
    return max(1.0, (vx + rho**2 * vy) ** 2 / (vx**2 / (x.size - 1) + rho**4 * vy**2 / (y.size - 1)))


def from_samples(x, y, **kwargs):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return ratio_fieller_from_stats(x.mean(), x.var(ddof=1), x.size, y.mean(), y.var(ddof=1), y.size, **kwargs)


class TestFieller:
    @pytest.mark.parametrize(
        ("confidence", "expected"),
        [(0.90, (1.54, 2.64)), (0.95, (1.46, 2.83)), (0.99, (1.27, 3.36))],
    )
    def test_graphpad_quotient(self, confidence, expected):
        # dcstats-graphpad-fieller.json graphpad.summary_14_7: A 14 ± 3 (n 6) / B 7 ± 2 (n 6), df = 10,
        # printed to 2 decimals.
        result = ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=confidence)
        assert result.ratio == 2.0
        assert result.bounded
        assert result.confidence_interval() == pytest.approx(expected, abs=0.005)

    def test_each_series_may_have_its_own_confidence_level(self):
        # The same GraphPad quotient at its three published levels, in one call.
        result = ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=[0.90, 0.95, 0.99])
        np.testing.assert_allclose(result.low, [1.54, 1.46, 1.27], atol=0.005)
        np.testing.assert_allclose(result.high, [2.64, 2.83, 3.36], atol=0.005)
        np.testing.assert_array_equal(result.confidence_level, [0.90, 0.95, 0.99])
        with pytest.raises(ValueError, match=r"`confidence` must be strictly between 0 and 1; got 1.0"):
            ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=[0.95, 1.0])

    def test_graphpad_samples(self):
        # dcstats-graphpad-fieller.json graphpad.samples_seed1984 (rtol 1e-6: GraphPad's t differs slightly).
        result = ratio_fieller_from_stats(
            13.8156018784828, 2.5318571014924607**2, 6, 7.373761350516429, 1.7214705715414245**2, 6
        )
        assert result.ratio == pytest.approx(1.873616628169721, rel=1e-12)
        assert (result.low, result.high) == pytest.approx((1.436957351945638, 2.487248647961153), rel=1e-6)

    def test_dcstats_regression(self):
        # dcstats-graphpad-fieller.json dcstats.test_regression_fieller: standard errors 3 and 2, Ntot 12.
        # A standard error s with n = 6 is a unit variance of 6 s².
        result = ratio_fieller_from_stats(14.0, 9.0 * 6, 6, 7.0, 4.0 * 6, 6)
        assert (result.low, result.high) == pytest.approx((0.889734, 5.836045), rel=1e-4)

    @pytest.mark.parametrize(
        ("x", "y", "expected"),
        [
            # mratios-fieller-ratio-ttest.json blog.set_seed_12345 (published; package code to 1e-15).
            (
                [1.5855288178438556, 1.7094660175095244, 0.8906966853189461, 0.5465028265372369, 1.6058874558403935],
                [0.18204403229627109, 2.6300985510683907, 1.7238158947747841, 1.7158402560566293, 1.0806779975258718],
                (0.40567630062619675, 2.6170008180516406),
            ),
            # man.Mutagenicity.two_sided_uneqvar_fieller.
            ([15, 20, 32, 33], [1, 2, 2, 2, 3, 3, 5], (5.171648139953217, 18.659526956469136)),
            # derived.go_GobEncode_new_over_old (regression value computed with the package code).
            (
                [11773189, 11942588, 11786159, 11628583, 11815924],
                [13552735, 13553943, 13606356, 13683198],
                (0.856705440616786, 0.8771867414713317),
            ),
        ],
    )
    def test_mratios_with_its_satterthwaite_df(self, x, y, expected):
        result = from_samples(x, y, df=satterthwaite_df_at_ratio(x, y))
        assert (result.low, result.high) == pytest.approx(expected, rel=1e-9)

    def test_limits_solve_the_fieller_quadratic(self):
        mean_new, var_new, mean_old, var_old, n = 3.0, 2.0, 2.0, 1.5, 8
        result = ratio_fieller_from_stats(mean_new, var_new, n, mean_old, var_old, n, confidence=0.9)
        h = stats.t.ppf(0.95, 2 * n - 2)
        for r in (result.low, result.high):
            assert (mean_new - r * mean_old) ** 2 == pytest.approx(h**2 * (var_new / n + r**2 * var_old / n))

    def test_unbounded_when_old_mean_is_not_significant(self):
        result = ratio_fieller_from_stats(5.0, 1.0, 5, 0.1, 4.0, 5)
        assert not result.bounded
        assert (result.low, result.high) == (-np.inf, np.inf)
        assert result.ratio == pytest.approx(50.0)

    def test_zero_old_mean_gives_infinite_ratio_and_unbounded_interval(self):
        result = ratio_fieller_from_stats(5.0, 1.0, 5, 0.0, 4.0, 5)
        assert (result.ratio, result.bounded, result.low, result.high) == (np.inf, False, -np.inf, np.inf)

    def test_zero_variance_collapses_to_the_ratio(self):
        result = ratio_fieller_from_stats(3.0, 0.0, 4, 2.0, 0.0, 4)
        assert (result.low, result.ratio, result.high) == (1.5, 1.5, 1.5)

    def test_vectorized_matches_one_at_a_time(self):
        rng = np.random.default_rng(5)
        size = 300
        args = (
            rng.normal(10, 1, size), rng.gamma(2, size=size), rng.integers(2, 30, size),
            rng.normal(3, 2, size), rng.gamma(2, size=size) * 4, rng.integers(2, 30, size),
        )
        together = ratio_fieller_from_stats(*args)
        assert together.bounded.dtype == bool and not together.bounded.all() and together.bounded.any()
        for i in range(0, size, 37):
            alone = ratio_fieller_from_stats(*(a[i] for a in args))
            assert (alone.low, alone.high, alone.bounded) == (together.low[i], together.high[i], together.bounded[i])
        assert not np.isnan(together.low).any() and not np.isnan(together.high).any()

    def test_hierarchical_data_uses_top_level_means(self):
        rng = np.random.default_rng(9)
        new, old = rng.normal(11, 1, (8, 3, 4)), rng.normal(10, 1, (6, 3, 5))
        top_new, top_old = new.mean(axis=(1, 2)), old.mean(axis=(1, 2))
        expected = from_samples(top_new, top_old)
        result = ratio_fieller(new, old)
        assert (result.ratio, result.low, result.high) == pytest.approx((expected.ratio, expected.low, expected.high))

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((1.0, 1.0, 1, 1.0, 1.0, 5), {}, "`n_new` must be at least 2"),
            ((1.0, 1.0, 5, 1.0, -1.0, 5), {}, "`variance_old` must be at least 0"),
            ((np.nan, 1.0, 5, 1.0, 1.0, 5), {}, "`mean_new` must not contain NaN"),
            ((1.0, 1.0, 5, 1.0, 1.0, 5), {"df": 0.0}, "`df` must be greater than 0"),
            ((1.0, 1.0, 5, 1.0, 1.0, 5), {"confidence": 0.0}, "`confidence` must be strictly between"),
        ],
    )
    def test_validation(self, args, kwargs, match):
        with pytest.raises(ValueError, match=match):
            ratio_fieller_from_stats(*args, **kwargs)

    @pytest.mark.parametrize(
        ("new", "old", "match"),
        [
            ([1.0], [1.0, 2.0], "`new` needs at least 2 repetitions"),
            ([[1.0, 2.0], [3.0]], [1.0, 2.0], "`new` must be balanced"),
            ([1.0, 2.0], [1.0, np.inf], "`old` must not contain NaN or infinite"),
        ],
    )
    def test_data_validation(self, new, old, match):
        with pytest.raises(ValueError, match=match):
            ratio_fieller(new, old)


class TestBootstrap:
    def test_seeded_and_reproducible(self):
        rng = np.random.default_rng(1)
        new, old = rng.normal(11, 1, (5, 4, 6)), rng.normal(10, 1, (5, 4, 6))
        first = ratio_bootstrap(new, old, n_resamples=500, rng=42)
        assert first == ratio_bootstrap(new, old, n_resamples=500, rng=np.random.default_rng(42))
        assert first != ratio_bootstrap(new, old, n_resamples=500, rng=43)
        assert first.ratio == pytest.approx(new.mean() / old.mean())
        assert first.low < first.ratio < first.high and first.bounded

    @pytest.mark.parametrize("shape", [(40,), (7, 9), (5, 4, 7), (4, 3, 3, 5), (20, 10, 50), (3, 1501)])
    def test_replicate_means_have_the_rrr_variance(self, shape):
        # Under RRR the variance of a replicate grand mean follows from the data alone: a resampled unit's
        # mean varies by the biased (ddof=0) variance of its children's means over their number, plus the
        # children's own resampling variance, so Var = sum_i B_i / P_i with B_i the mean biased variance
        # of level-i unit means within their parent and P_i the number of level-i units. This checks the
        # pair-sum table (even n_1), the extra single draw (odd n_1) and the plain path (n_1 = 1501).
        rng = np.random.default_rng(sum(shape))
        data = rng.lognormal(0.0, 0.5, shape)
        units = np.cumprod(shape)[::-1]
        expected, means = 0.0, data
        for level in range(len(shape)):
            expected += means.var(axis=-1).mean() / units[level]
            means = means.mean(axis=-1)
        replicates = _resample_means(data, 20_000, np.random.default_rng(0))
        # The sample variance of 20,000 replicates has a relative standard error of about 1%.
        assert replicates.var() == pytest.approx(expected, rel=0.04)
        assert replicates.mean() == pytest.approx(data.mean(), rel=0.01)

    def test_percentile_interval_of_the_replicate_ratios(self):
        rng = np.random.default_rng(4)
        new, old = rng.normal(2.0, 0.2, (6, 8)), rng.normal(1.0, 0.1, (6, 8))
        result = ratio_bootstrap(new, old, n_resamples=4000, rng=7, confidence=0.9)
        generator = np.random.default_rng(7)
        ratios = _resample_means(new, 4000, generator) / _resample_means(old, 4000, generator)
        assert (result.low, result.high) == tuple(np.quantile(ratios, [0.05, 0.95]))
        assert result.confidence_level == 0.9

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"n_resamples": 10}, "`n_resamples` must be at least 100"),
            ({"n_resamples": 1000.0}, "`n_resamples` must be an integer"),
            ({"confidence": 1.2}, "`confidence` must be strictly between"),
        ],
    )
    def test_validation(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            ratio_bootstrap([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], **kwargs)
