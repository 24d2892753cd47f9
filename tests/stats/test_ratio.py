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
        # printed to 2 decimals. GraphPad's convention, ν = n + n − 2, given explicitly (the default is the
        # Welch test's ν, spec §5).
        result = ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=confidence, df=10)
        assert result.ratio == 2.0
        assert result.bounded
        assert result.confidence_interval() == pytest.approx(expected, abs=0.005)

    def test_each_series_may_have_its_own_confidence_level(self):
        # The same GraphPad quotient at its three published levels, in one call.
        result = ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=[0.90, 0.95, 0.99], df=10)
        np.testing.assert_allclose(result.low, [1.54, 1.46, 1.27], atol=0.005)
        np.testing.assert_allclose(result.high, [2.64, 2.83, 3.36], atol=0.005)
        np.testing.assert_array_equal(result.confidence_level, [0.90, 0.95, 0.99])
        with pytest.raises(ValueError, match=r"`confidence` must be strictly between 0 and 1; got 1.0"):
            ratio_fieller_from_stats(14.0, 9.0, 6, 7.0, 4.0, 6, confidence=[0.95, 1.0])

    def test_graphpad_samples(self):
        # dcstats-graphpad-fieller.json graphpad.samples_seed1984 (rtol 1e-6: GraphPad's t differs slightly).
        result = ratio_fieller_from_stats(
            13.8156018784828, 2.5318571014924607**2, 6, 7.373761350516429, 1.7214705715414245**2, 6, df=10
        )
        assert result.ratio == pytest.approx(1.873616628169721, rel=1e-12)
        assert (result.low, result.high) == pytest.approx((1.436957351945638, 2.487248647961153), rel=1e-6)

    def test_dcstats_regression(self):
        # dcstats-graphpad-fieller.json dcstats.test_regression_fieller: standard errors 3 and 2, Ntot 12.
        # A standard error s with n = 6 is a unit variance of 6 s².
        result = ratio_fieller_from_stats(14.0, 9.0 * 6, 6, 7.0, 4.0 * 6, 6, df=10)
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
        errors = np.array([var_new, var_old]) / n
        satterthwaite = errors.sum() ** 2 / (errors**2 / (n - 1)).sum()  # the Welch test's ν (spec §5)
        h = stats.t.ppf(0.95, satterthwaite)
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
        expected = from_samples(top_new, top_old, df=8 + 6 - 2)  # Kalibera & Jones's ν (spec §6)
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


def three_level(rng, mean, deviations, shape=(20, 10, 30)):
    """One balanced data set of `shape` (top level first) with normal random effects of the given standard
    deviations, bottom-up and relative to `mean` (measurement, execution, build)."""
    data = np.full(shape, float(mean))
    for level, deviation in enumerate(deviations):
        data += mean * deviation * rng.standard_normal(shape[: len(shape) - level] + (1,) * level)
    return data


def ratio_of_means(x, y, axis=-1):
    return x.mean(axis=axis) / y.mean(axis=axis)


# Where the variation sits (spec §6, revision 2026-11-23): all of it between builds, or all of it between
# measurements. Standard deviations relative to the mean: measurement, execution, build.
VARIATION_AT = {"top": (0.0, 0.0, 0.05), "bottom": (0.05, 0.0, 0.0)}


class TestBootstrap:
    @pytest.mark.parametrize("method", ["studentized", "bca", "rrr"])
    def test_seeded_and_reproducible(self, method):
        rng = np.random.default_rng(1)
        new, old = rng.normal(11, 1, (5, 4, 6)), rng.normal(10, 1, (5, 4, 6))
        first = ratio_bootstrap(new, old, n_resamples=500, rng=42, method=method)
        assert first == ratio_bootstrap(new, old, n_resamples=500, rng=np.random.default_rng(42), method=method)
        assert first != ratio_bootstrap(new, old, n_resamples=500, rng=43, method=method)
        assert first.ratio == pytest.approx(new.mean() / old.mean())
        assert first.low < first.ratio < first.high and first.bounded

    def test_default_is_the_studentized_top_level_interval(self):
        rng = np.random.default_rng(2)
        new, old = rng.normal(11, 1, (6, 3, 4)), rng.normal(10, 1, (7, 3, 4))
        default = ratio_bootstrap(new, old, n_resamples=500, rng=3)
        assert default == ratio_bootstrap(new, old, n_resamples=500, rng=3, method="studentized")
        assert default != ratio_bootstrap(new, old, n_resamples=500, rng=3, method="rrr")

    def test_studentized_is_the_bootstrap_t_of_the_top_level_means_by_hand(self):
        # An independent path: replicate by replicate in plain Python, the same draws (A's then B's indices).
        rng = np.random.default_rng(14)
        new, old = rng.lognormal(0.05, 0.3, (12, 4, 5)), rng.lognormal(0.0, 0.3, (9, 4, 6))
        result = ratio_bootstrap(new, old, n_resamples=400, rng=8, confidence=0.9)
        a, b = new.mean(axis=(1, 2)), old.mean(axis=(1, 2))

        def ratio_and_error(x, y):
            r = x.mean() / y.mean()
            return r, np.sqrt(x.var(ddof=1) / x.size + r**2 * y.var(ddof=1) / y.size) / abs(y.mean())

        estimate, error = ratio_and_error(a, b)
        draws = np.random.default_rng(8)
        index_a, index_b = draws.integers(0, a.size, (400, a.size)), draws.integers(0, b.size, (400, b.size))
        t = []
        for i in range(400):
            r, e = ratio_and_error(a[index_a[i]], b[index_b[i]])
            t.append((r - estimate) / e)
        low_t, high_t = np.quantile(t, [0.05, 0.95])
        assert (result.low, result.high) == pytest.approx((estimate - high_t * error, estimate - low_t * error))

    def test_bca_is_scipy_bca_on_the_top_level_means(self):
        # An independent path: scipy.stats.bootstrap called directly on the build means, same seed.
        # Log-normal builds make the BCa correction visible (it differs from the percentile interval).
        rng = np.random.default_rng(12)
        new, old = rng.lognormal(0.05, 0.3, (12, 4, 5)), rng.lognormal(0.0, 0.3, (9, 4, 6))
        result = ratio_bootstrap(new, old, n_resamples=2000, rng=21, confidence=0.9, method="bca")
        expected = stats.bootstrap(
            (new.mean(axis=(1, 2)), old.mean(axis=(1, 2))), ratio_of_means, n_resamples=2000, vectorized=True,
            confidence_level=0.9, method="BCa", rng=np.random.default_rng(21),
        )
        assert (result.low, result.high) == pytest.approx(tuple(expected.confidence_interval), rel=1e-12)
        assert result.ratio == pytest.approx(new.mean() / old.mean(), rel=1e-15)
        assert (result.bounded, result.confidence_level) == (True, 0.9)
        percentile = np.quantile(expected.bootstrap_distribution, [0.05, 0.95])
        assert abs(result.low - percentile[0]) > 1e-3 * result.ratio

    def test_bca_resamples_one_level_data_itself(self):
        rng = np.random.default_rng(13)
        new, old = rng.exponential(2.0, 40), rng.exponential(1.0, 25)
        result = ratio_bootstrap(new, old, n_resamples=1000, rng=5, method="bca")
        expected = stats.bootstrap((new, old), ratio_of_means, n_resamples=1000, vectorized=True, method="BCa",
                                   rng=np.random.default_rng(5))
        assert (result.low, result.high) == pytest.approx(tuple(expected.confidence_interval), rel=1e-12)

    def test_equal_top_level_means_give_a_point_interval(self):
        # Every build mean is 1.5 on one side and 2 on the other: every replicate is 0.75, and BCa's
        # acceleration would be 0/0.
        for method in ("studentized", "bca"):
            result = ratio_bootstrap([[1.0, 2.0], [2.0, 1.0], [1.5, 1.5]], [[1.0, 3.0], [3.0, 1.0]],
                                     n_resamples=500, rng=1, method=method)
            assert (result.low, result.ratio, result.high, result.bounded) == (0.75, 0.75, 0.75, True)

    def test_undefined_bca_falls_back_to_the_percentile_interval(self):
        # Leaving out the 3 of `old` leaves a mean of 0: the jackknife ratio, hence BCa's acceleration, is not
        # finite. No resample of three odd numbers sums to 0, so the replicates themselves are finite.
        new, old = [1.0, 2.0, 3.0], [-1.0, 1.0, 3.0]
        result = ratio_bootstrap(new, old, n_resamples=1000, rng=5, method="bca")
        expected = stats.bootstrap((np.array(new), np.array(old)), ratio_of_means, n_resamples=1000,
                                   vectorized=True, method="percentile", rng=np.random.default_rng(5))
        assert (result.low, result.high) == pytest.approx(tuple(expected.confidence_interval), rel=1e-12)
        assert result.bounded and np.isfinite(result.low) and np.isfinite(result.high)

    @pytest.mark.parametrize("method", ["studentized", "bca", "rrr"])
    @pytest.mark.parametrize(
        ("old", "ratio"),
        [
            ([-1.0, 1.0, 1.0, 1.0], 4.0),  # two of the four drawn as -1 (p = 0.21) give a replicate mean of 0
            ([-1.0, 1.0], np.inf),  # the grand mean of `old` is 0
        ],
    )
    def test_unbounded_when_an_old_mean_is_zero(self, method, old, ratio):
        result = ratio_bootstrap([1.0, 2.0, 3.0], old, n_resamples=500, rng=1, method=method)
        assert (result.ratio, result.low, result.high, result.bounded) == (ratio, -np.inf, np.inf, False)

    @pytest.mark.parametrize("variation", ["top", "bottom"])
    def test_default_covers_whichever_level_holds_the_variation(self, variation):
        # Known truth: 20 builds x 10 executions x 30 measurements, true ratio 1.05. 600 replications of
        # 999 resamples: the standard error of the coverage is about 0.009. Measured at 1,000 replications of
        # 1,999 resamples the default covers 0.941 (top) and 0.945 (bottom), inside the spec's [0.94, 0.965];
        # BCa on the same replicates 0.93 (it corrects bias and skew, not the narrowness of 20 units) and
        # "rrr" 0.998 with the variation at the bottom, where it counts the lower levels' variance again.
        rng = np.random.default_rng(2026)
        replications, hits = 600, 0
        for i in range(replications):
            new = three_level(rng, 1.05, VARIATION_AT[variation])
            old = three_level(rng, 1.0, VARIATION_AT[variation])
            result = ratio_bootstrap(new, old, n_resamples=999, rng=i)
            hits += result.low <= 1.05 <= result.high
        assert 0.925 <= hits / replications <= 0.975

    @pytest.mark.parametrize(("variation", "expected"), [("top", 1.0), ("bottom", 1.72)])
    def test_rrr_counts_the_lower_levels_variation_again(self, variation, expected):
        # With all the variation (σ²) between measurements, a top-level replicate mean varies by
        # (19/20) σ²/6000 and an RRR one by (29/30 + 9/10 + 19/20) σ²/6000 (the sum of
        # test_replicate_means_have_the_rrr_variance): the RRR
        # interval is sqrt(2.817 / 0.95) = 1.72 times as wide. With all of it between builds the lower levels
        # add nothing and the two agree.
        rng = np.random.default_rng(7)
        widths = []
        for i in range(8):
            new, old = three_level(rng, 1.05, VARIATION_AT[variation]), three_level(rng, 1.0, VARIATION_AT[variation])
            top = ratio_bootstrap(new, old, n_resamples=999, rng=i, method="bca")
            rrr = ratio_bootstrap(new, old, n_resamples=999, rng=i, method="rrr")
            widths.append((rrr.high - rrr.low) / (top.high - top.low))
        assert np.mean(widths) == pytest.approx(expected, rel=0.06)

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
        result = ratio_bootstrap(new, old, n_resamples=4000, rng=7, confidence=0.9, method="rrr")
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
            ({"method": "top"}, "`method` must be 'studentized', 'bca' or 'rrr'; got 'top'"),
            ({"method": None}, "`method` must be 'studentized', 'bca' or 'rrr'; got None"),
        ],
    )
    def test_validation(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            ratio_bootstrap([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], **kwargs)

    @pytest.mark.parametrize("method", ["studentized", "bca", "rrr"])
    @pytest.mark.parametrize(
        ("new", "old", "match"),
        [
            ([[1.0, 2.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]],
             r"`new` needs at least 2 repetitions at every level; got shape \(1, 3\)"),
            ([1.0, 2.0], [4.0], r"`old` needs at least 2 repetitions at every level; got shape \(1,\)"),
            ([[1.0, 2.0], [3.0]], [1.0, 2.0], "`new` must be balanced"),
            ([1.0, 2.0], [1.0, np.nan], "`old` must not contain NaN or infinite"),
            (5.0, [1.0, 2.0], "`new` must have at least one dimension"),
        ],
    )
    def test_data_validation(self, new, old, match, method):
        with pytest.raises(ValueError, match=match):
            ratio_bootstrap(new, old, method=method)
