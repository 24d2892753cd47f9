"""A step against a trend (results.stats.trend_step): its tests against the nested models' F tests fitted apart, its
p-values' calibration under each null by simulation, and its validation."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from results import stats


def test_each_t_test_is_the_f_test_of_the_models_with_and_without_its_term():
    """t² = F with 1 and n − 3 degrees of freedom: the partial F test of the line with a jump against the line (the
    jump's p-value) and against two means (the slope's), each model fitted on its own."""
    rng = np.random.default_rng(3)
    t = np.arange(40.0)
    values = np.exp(0.002 * t + 0.01 * (t >= 22) + rng.normal(0.0, 0.01, t.size))
    y, after = np.log(values), (t >= 22).astype(float)

    def rss(*columns):
        design = np.column_stack([np.ones(t.size), *columns])
        residuals = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        return residuals @ residuals

    full, df = rss(t, after), t.size - 3
    fit = stats.trend_step(values, 22)

    assert fit.step_pvalue == pytest.approx(scipy_stats.f.sf((rss(t) - full) / (full / df), 1, df), rel=1e-9)
    assert fit.slope_pvalue == pytest.approx(scipy_stats.f.sf((rss(after) - full) / (full / df), 1, df), rel=1e-9)
    assert fit.df == df


def test_a_line_without_a_jump_is_linregress_line():
    """With no jump in the values the fit's slope is the straight line's (scipy.stats.linregress), as a ratio."""
    t = np.arange(30.0)
    values = np.exp(0.01 + 0.003 * t + 0.002 * np.sin(t))
    line = scipy_stats.linregress(t, np.log(values))
    fit = stats.trend_step(values, 15)

    assert fit.slope == pytest.approx(np.expm1(line.slope), rel=0.05)
    assert fit.step == pytest.approx(1.0, abs=0.003)


def test_each_p_value_is_uniform_where_its_term_is_absent():
    """Seeded: on 2,000 series with a jump and no slope, the slope's p-values are uniform; with a slope and no jump,
    the jump's (Kolmogorov–Smirnov, and the rejections at 1% within their binomial bounds)."""
    rng = np.random.default_rng(11)
    t = np.arange(50.0)
    noise = rng.normal(0.0, 0.02, (2000, t.size))
    jumped = np.exp(0.05 * (t >= 20) + noise)
    sloped = np.exp(0.003 * t + noise[::-1])
    slope_p = np.array([stats.trend_step(row, 20).slope_pvalue for row in jumped])
    step_p = np.array([stats.trend_step(row, 20).step_pvalue for row in sloped])

    for pvalues in (slope_p, step_p):
        assert scipy_stats.kstest(pvalues, "uniform").pvalue > 0.01
        assert 6 <= np.sum(pvalues < 0.01) <= 38  # binomial(2000, 1%) 99.9% bounds


def test_a_trend_and_a_step_are_told_apart():
    rng = np.random.default_rng(5)
    t = np.arange(60.0)
    trend = stats.trend_step(np.exp(0.004 * t + rng.normal(0.0, 0.01, t.size)), 30)
    step = stats.trend_step(np.exp(0.05 * (t >= 30) + rng.normal(0.0, 0.01, t.size)), 30)

    assert trend.slope_pvalue < 1e-6 < 0.05 < trend.step_pvalue
    assert trend.slope == pytest.approx(0.004, rel=0.1)
    assert step.step_pvalue < 1e-6 < 0.05 < step.slope_pvalue
    assert step.step == pytest.approx(np.exp(0.05), rel=0.01)


@pytest.mark.parametrize(("values", "slope_pvalue", "step_pvalue"), [
    ([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 1.0, 0.0),
    (np.exp(0.1 * (np.arange(12) >= 6)), 1.0, 0.0),
    (np.full(20, 5.0), 1.0, 1.0),
    (np.exp(0.01 * np.arange(40)), 0.0, 1.0),
    (1.01 ** np.arange(1000), 0.0, 1.0),
])
def test_a_perfect_fit_is_certain_of_the_terms_it_holds_and_of_no_other(values, slope_pvalue, step_pvalue):
    """Rounding leaves a perfect fit's residuals and zero coefficients near 1e-16, not 0: they are no evidence."""
    fit = stats.trend_step(values, len(values) // 2)

    assert (fit.slope_pvalue, fit.step_pvalue) == (slope_pvalue, step_pvalue)


@pytest.mark.parametrize(("x", "split", "message"), [
    ([1.0, 2.0, 3.0], 2, "`x` must hold at least 4"),
    ([1.0, 2.0, 0.0, 4.0], 2, "`x` must be positive"),
    ([1.0, 2.0, np.nan, 4.0], 2, "`x`"),
    ([1.0, 2.0, 3.0, 4.0], 1, "`split` must be at least 2"),
    ([1.0, 2.0, 3.0, 4.0], 3, "`split` must leave at least 2 values after it"),
    ([1.0, 2.0, 3.0, 4.0], 2.5, "`split` must be an integer"),
])
def test_bad_input_names_the_parameter(x, split, message):
    with pytest.raises(ValueError, match=message):
        stats.trend_step(x, split)


@pytest.mark.parametrize("seed", range(2, 8))
def test_a_staircase_read_through_its_drifts_is_one_drift_and_a_step_beside_it_stays_a_step(seed):
    """Seeded: 60 nights creeping +0.5% a night, cut every 8 nights as a scan would cut it, then a 6% jump at night
    60 and 30 flat nights, 1% noise. Read through the drifts, every cut of the creep is a drift and the jump is not;
    read once, between the cuts as given, 8 nights a side are often too few to show the slope at 0.1%."""
    rng = np.random.default_rng(seed)
    t = np.arange(90.0)
    values = np.exp(np.where(t < 60, 0.005 * t, 0.005 * 59 + 0.06) + rng.normal(0.0, 0.01, t.size))
    cuts = [8, 16, 24, 32, 40, 48, 60]
    options = {"step_level": 0.01, "slope_level": 0.001, "nights": 30, "nights_since": 10}

    once = stats.read_drifts(values, cuts, through_drifts=False, **options)
    through = stats.read_drifts(values, cuts, **options)

    assert through.drift.tolist() == [True] * 6 + [False]
    assert not once.drift[-1] and (seed == 7 or not once.drift[:6].all())
    fit = stats.trend_step(values[30:90], 30)  # the jump's window once every cut before it is a drift
    assert through.fits[-1] == fit


def test_a_cut_is_read_only_with_enough_nights_since_it_and_on_each_side():
    t = np.arange(40.0)
    values = np.exp(0.01 * t)
    reading = stats.read_drifts(values, [2, 20, 35], step_level=0.01, slope_level=0.001)

    assert reading.fits[0] is None  # 2 nights before it: fewer than 4
    assert reading.fits[2] is None  # 5 nights since it: fewer than 10
    assert reading.drift.tolist() == [False, True, False]


@pytest.mark.parametrize(("splits", "options", "message"), [
    ([5, 5], {}, "`splits` must be increasing"),
    ([0], {}, "`splits` must be increasing indices within"),
    ([20], {"step_level": 1.0}, "`step_level` must be strictly between 0 and 1"),
    ([20], {"slope_level": 0.0}, "`slope_level`"),
    ([20], {"nights": 3}, "`nights` must be at least 4"),
    ([20.5], {}, "`splits` must be integers"),
    ([20], {"nights_since": 0}, "`nights_since` must be at least 1"),
])
def test_bad_reading_input_names_the_parameter(splits, options, message):
    arguments = {"step_level": 0.01, "slope_level": 0.001, **options}
    with pytest.raises(ValueError, match=message):
        stats.read_drifts(np.ones(40), splits, **arguments)
